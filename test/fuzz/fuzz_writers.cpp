// The export writers fed arbitrary symbol names (NUL-separated in the
// input). For each format the output must read back, with the consumer's
// own rules (oracles.h, or LLVM's .def parser), as exactly the names given
// and nothing else; or the writer must refuse, naming one of the names
// with BadSymbolName. A refusal must also agree with check_name().
#include "exports/names.h"
#include "exports/writers.h"
#include "test/fuzz/oracles.h"

#include <cstdio>
#include <cstdlib>

using namespace hotlink;
using namespace hotlink::exports;

namespace {
[[noreturn]] void fail(const char *format, const std::string &what) {
  std::fprintf(stderr, "fuzz_writers (%s): %s\n", format, what.c_str());
  std::abort();
}

// A refusal is right only if some name really is unwritable, and the
// error names such a name.
void check_refusal(const char *format, const Error &e, const std::vector<Export> &exports, Format f,
                   bool symbol_spelling) {
  if (e.code != ErrorCode::BadSymbolName)
    fail(format, "refused with " + e.to_string());
  for (const Export &x : exports)
    if (auto own = check_name(symbol_spelling ? x.symbol : x.name, f); own && own->symbol == e.symbol)
      return; // (Error::symbol shows the name with its bytes escaped)
  fail(format, "refused a name it should write, or named another: " + e.to_string());
}

void expect_names(const char *format, const std::optional<std::vector<std::string>> &got,
                  const std::vector<std::string> &want, const std::string &text) {
  if (!got)
    fail(format, "the consumer would not read this as literal names:\n" + text);
  if (*got != want)
    fail(format, "read back " + std::to_string(got->size()) + " names, not the " +
                     std::to_string(want.size()) + " given:\n" + text);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<std::string> names;
  std::string cur;
  for (std::size_t i = 0; i < size && names.size() < 64; ++i) {
    if (data[i] == 0) {
      names.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  names.push_back(cur);

  std::vector<Export> plain, macho;
  for (std::size_t i = 0; i < names.size(); ++i) {
    plain.push_back(Export{names[i], names[i], i % 2 == 1});
    macho.push_back(Export{names[i], "_" + names[i], false});
  }
  std::vector<std::string> underscored;
  for (const std::string &n : names)
    underscored.push_back("_" + n);

  if (auto vs = write_version_script(plain))
    expect_names("version script", fuzz::read_version_script(vs.value()), names, vs.value());
  else
    check_refusal("version script", vs.error(), plain, Format::ELF, true);

  if (auto ml = write_macho_list(macho))
    expect_names("mach-o list", fuzz::read_macho_list(ml.value()), underscored, ml.value());
  else
    check_refusal("mach-o list", ml.error(), macho, Format::MachO, true);

  if (auto wf = write_wasm_flags(plain)) {
    std::string shown;
    for (const std::string &f : wf.value())
      shown += f + "\n";
    expect_names("wasm flags", fuzz::read_wasm_flags(wf.value()), names, shown);
  } else {
    check_refusal("wasm flags", wf.error(), plain, Format::Wasm, true);
  }

  for (Arch arch : {Arch::X86_64, Arch::X86}) {
    auto def = write_def(plain, "fuzz.dll", arch == Arch::X86 ? 1 : 0);
    if (!def) {
      check_refusal(".def", def.error(), plain, Format::COFF, false);
      continue;
    }
    auto parsed = parse_def(def.value(), arch, "written.def");
    if (!parsed)
      fail(".def", "LLVM's parser refuses what write_def wrote:\n" + def.value());
    std::vector<std::string> got;
    for (std::size_t i = 0; i < parsed->exports.size(); ++i) {
      const DefExport &e = parsed->exports[i];
      got.push_back(e.name);
      if (i < plain.size() && (e.data != plain[i].data || (!e.internal.empty() && e.internal != e.name)))
        fail(".def", "'" + e.name + "' read back with another DATA mark or target:\n" + def.value());
    }
    expect_names(".def", got, names, def.value());
  }
  return 0;
}
