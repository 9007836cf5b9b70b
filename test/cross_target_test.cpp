// Artifacts for other targets, run by a real loader where this host has one:
// wasm modules instantiated by Node.js.
#include "linker/linker.h"
#include "linker/service.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <cstring>

namespace hotlink {
namespace {

using test::Bytes;

// Instantiates a module with Node.js, supplying env.host_offset, and calls
// f(6) and f_argv through linear memory (a fresh page, so that nothing the
// module placed there is overwritten). Prints one JSON line.
const char *kNodeRunner = R"JS(
const fs = require('fs');
const bytes = fs.readFileSync(process.argv[2]);
const env = { host_offset: () => 100 };
WebAssembly.instantiate(bytes, { env }).then(({ instance, module }) => {
  const e = instance.exports;
  const base = e.memory.grow(1) * 65536;
  const mem = new DataView(e.memory.buffer);
  mem.setInt32(base + 16, 6, true);        // the input
  mem.setUint32(base, base + 16, true);    // args[0] -> input
  mem.setUint32(base + 4, base + 20, true); // args[1] -> output
  const rc = e.f_argv(base);
  console.log(JSON.stringify({
    exports: Object.keys(e).sort(),
    imports: WebAssembly.Module.imports(module).map(i => i.module + '.' + i.name),
    f: e.f(6), argv_rc: rc, argv_out: mem.getInt32(base + 20, true) }));
}).catch(err => { console.error(String(err)); process.exit(1); });
)JS";

TEST(WasmInNode, LinkedKernelIsInstantiatedAndCalled) {
  Bytes obj = test::compile_c("wasm32-unknown-unknown",
                              "extern int host_offset(void);\n"
                              "int f(int x) { return x * 7 + host_offset(); }\n"
                              "int f_argv(void **a) { *(int *)a[1] = f(*(int *)a[0]); return 0; }\n"
                              "int internal_helper(int x) { return x; }\n");
  LinkService svc;
  LinkRequest req;
  req.target = "wasm32-unknown-unknown";
  req.inputs.push_back(Input::memory("kernel.o", obj));
  req.undefined = Undefined::Allow; // host_offset comes from the embedder
  std::string dir = test::temp_dir();
  req.output_path = dir + "/kernel.wasm";
  LinkResult r = svc.link(req);
  ASSERT_TRUE(r.ok()) << r.error->to_string();

  std::string script = dir + "/run.js";
  test::write_file(script, Bytes(kNodeRunner, kNodeRunner + std::strlen(kNodeRunner)));
  test::Run run = test::run({HOTLINK_TEST_NODE, script, req.output_path});
  ASSERT_EQ(run.code, 0) << run.err;
  auto v = llvm::json::parse(run.out);
  ASSERT_TRUE(bool(v)) << run.out;
  const llvm::json::Object &o = *v->getAsObject();
  std::vector<std::string> exports;
  for (const llvm::json::Value &e : *o.getArray("exports"))
    exports.push_back(e.getAsString()->str());
  // The entry-point policy: f and f_argv (and the memory), not the helper.
  EXPECT_EQ(exports, (std::vector<std::string>{"f", "f_argv", "memory"}));
  ASSERT_EQ(o.getArray("imports")->size(), 1u);
  EXPECT_EQ((*o.getArray("imports"))[0].getAsString(), llvm::StringRef("env.host_offset"));
  EXPECT_EQ(o.getInteger("f"), 142);
  EXPECT_EQ(o.getInteger("argv_rc"), 0);
  EXPECT_EQ(o.getInteger("argv_out"), 142);
}

} // namespace
} // namespace hotlink
