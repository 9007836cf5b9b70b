// windows_dll: from a JIT object to kernel.dll + kernel.def + kernel.lib, on
// a Linux host.
//
//   windows_dll [OUT_DIR] [SYSROOT]
//
// The kernel is LLVM IR compiled in memory for x86_64-pc-windows-msvc. It
// calls the C runtime (malloc, memcpy, cosf, free), so it is linked against
// a Windows sysroot: by default Debian's mingw-w64 one
// (/usr/x86_64-w64-mingw32, package mingw-w64-x86-64-dev). hotlink finds
// the exports (wave, wave_argv), writes the DLL, its .def and its import
// library, and says which system libraries it used.
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "samples/jit.h"

#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <string>

namespace {

// wave(in, out, n): out[i] = 2 cos(in[i]), through a heap copy of `in`.
const char *kKernel = R"IR(
declare float @cosf(float)
declare ptr @malloc(i64)
declare void @free(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define i32 @wave(ptr %in, ptr %out, i32 %n) {
entry:
  %bytes32 = mul i32 %n, 4
  %bytes = zext i32 %bytes32 to i64
  %tmp = call ptr @malloc(i64 %bytes)
  %null = icmp eq ptr %tmp, null
  br i1 %null, label %fail, label %copy
copy:
  call void @llvm.memcpy.p0.p0.i64(ptr %tmp, ptr %in, i64 %bytes, i1 false)
  %empty = icmp sle i32 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i32 [ 0, %copy ], [ %next, %loop ]
  %pi = getelementptr float, ptr %tmp, i32 %i
  %x = load float, ptr %pi
  %c = call float @cosf(float %x)
  %y = fmul float %c, 2.0
  %po = getelementptr float, ptr %out, i32 %i
  store float %y, ptr %po
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  call void @free(ptr %tmp)
  ret i32 %n
fail:
  ret i32 -1
}

define i32 @wave_argv(ptr %args) {
  %p0 = load ptr, ptr %args
  %a1 = getelementptr ptr, ptr %args, i32 1
  %p1 = load ptr, ptr %a1
  %a2 = getelementptr ptr, ptr %args, i32 2
  %p2 = load ptr, ptr %a2
  %in = load ptr, ptr %p0
  %out = load ptr, ptr %p1
  %n = load i32, ptr %p2
  %r = call i32 @wave(ptr %in, ptr %out, i32 %n)
  ret i32 %r
}
)IR";

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

} // namespace

int main(int argc, char **argv) {
  std::string out = argc > 1 ? argv[1] : "windows_dll_out";
  std::string sysroot = argc > 2 ? argv[2] : "/usr/x86_64-w64-mingw32";
  const std::string triple = "x86_64-pc-windows-msvc";

  if (auto ec = llvm::sys::fs::create_directories(out)) {
    std::fprintf(stderr, "windows_dll: cannot create %s: %s\n", out.c_str(), ec.message().c_str());
    return 1;
  }
  auto obj = samples::compile_ir(kKernel, triple);
  if (!obj) {
    std::fprintf(stderr, "windows_dll: %s\n", obj.error().to_string().c_str());
    return 1;
  }
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.target = triple;
  req.inputs.push_back(hotlink::Input::memory("wave.obj", std::move(obj.value())));
  req.sysroot = sysroot;
  req.output_path = out + "/kernel.dll";
  req.coff.def_output = out + "/kernel.def";
  req.coff.implib_output = out + "/kernel.lib";
  hotlink::LinkResult r = service.link(req);
  for (const hotlink::Diagnostic &d : r.diagnostics)
    std::fprintf(stderr, "%s: %s\n", d.severity == hotlink::Severity::Note ? "note" : "warning",
                 d.message.c_str());
  if (!r.ok()) {
    std::fprintf(stderr, "windows_dll: %s\n", r.error->to_string().c_str());
    return 1;
  }
  std::printf("linked %s, %s and %s in %.2f ms\n", r.artifact_path.c_str(), r.def_path.c_str(),
              r.implib_path.c_str(), r.timings.total_ms);
  std::printf("CRT: %s; system libraries used: %s; import thunks made: %s; support objects: %s\n",
              r.windows_crt.c_str(), join(r.system_libraries).c_str(),
              join(r.import_thunks).c_str(), join(r.support_objects).c_str());

  // The export table, read back from the DLL itself.
  FILE *f = std::fopen(r.artifact_path.c_str(), "rb");
  std::vector<std::uint8_t> dll;
  for (int c; f && (c = std::fgetc(f)) != EOF;)
    dll.push_back(static_cast<std::uint8_t>(c));
  if (f)
    std::fclose(f);
  auto info = hotlink::exports::read_artifact(dll.data(), dll.size(), r.artifact_path);
  if (!info) {
    std::fprintf(stderr, "windows_dll: %s\n", info.error().to_string().c_str());
    return 1;
  }
  std::printf("export table of kernel.dll (%zu bytes):\n", dll.size());
  for (const std::string &e : info->exports)
    std::printf("  %s\n", e.c_str());
  std::printf("kernel.def:\n%s", r.export_file.c_str());
  return info->exports == std::vector<std::string>{"wave", "wave_argv"} ? 0 : 1;
}
