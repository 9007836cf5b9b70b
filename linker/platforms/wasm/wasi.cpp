// wasi-libc's link line from clang's driver (see wasi.h).
#include "linker/platforms/wasm/wasi.h"
#include "base/memo.h"
#include "linker/platforms/clang_driver.h"
#include "linker/platforms/elf/runtime.h" // file_fingerprint

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <mutex>

namespace hotlink::detail {

namespace {

struct DriverLine {
  std::vector<std::string> before, after, dirs;
};

Expected<DriverLine> reactor_line(const std::string &triple, const std::string &sysroot) {
  std::vector<std::string> args = {"clang", "--target=" + triple, "-mexec-model=reactor", "-Wno-deprecated"};
  if (!sysroot.empty())
    args.push_back("--sysroot=" + sysroot);
  args.push_back(kDriverInputs);
  auto job = driver_link_job(triple, args, "--target", "check the target and --sysroot");
  if (!job)
    return job.take_error();
  DriverLine line{std::move(job->before), std::move(job->after), {}};
  for (const std::vector<std::string> *part : {&line.before, &line.after})
    for (const std::string &a : *part)
      if (llvm::StringRef(a).starts_with("-L"))
        line.dirs.push_back(a.substr(2));
  return line;
}

// What the line names that is not there: crt1-reactor.o and libc.a
// (wasi-libc), the builtins archive (compiler-rt for wasm32).
std::string missing_from(const DriverLine &line) {
  for (const std::string &a : line.before)
    if (llvm::StringRef(a).ends_with("crt1-reactor.o") && !llvm::sys::fs::exists(a))
      return "libc";
  if (find_library_file(line.dirs, {"libc.a"}).empty())
    return "libc";
  for (const std::string &a : line.after)
    if (llvm::StringRef(a).ends_with(".a") && !llvm::sys::fs::exists(a))
      return a;
  return {};
}

Expected<std::shared_ptr<const WasiEnvironment>> compute(const TargetInfo &target, const std::string &sysroot) {
  auto line = reactor_line(target.triple, sysroot);
  if (line && !missing_from(*line).empty() && llvm::Triple(target.triple).getOS() == llvm::Triple::WASIp1) {
    // Debian 12 installs wasi-libc as wasm32-wasi, the spelling before wasip1.
    auto older = reactor_line("wasm32-unknown-wasi", sysroot);
    if (older && missing_from(*older).empty())
      line = std::move(older);
  }
  if (!line)
    return line.take_error();
  std::string missing = missing_from(*line);
  if (missing == "libc") {
    std::string dirs;
    for (const std::string &d : line->dirs)
      dirs += (dirs.empty() ? "" : ", ") + d;
    return make_error(ErrorCode::InputNotFound,
                      target.triple + " links against wasi-libc (crt1-reactor.o, libc.a), and it is not in " +
                          (dirs.empty() ? std::string("the driver's directories") : dirs),
                      {}, "--sysroot",
                      "install Debian's wasi-libc, give a WASI sysroot with --sysroot, or pass --no-default-libs "
                      "for a module without a C library");
  }
  if (!missing.empty())
    return make_error(ErrorCode::InputNotFound,
                      target.triple + " links compiler-rt's builtins for wasm32, and " + missing + " is missing", {},
                      "--no-default-libs",
                      "install Debian's libclang-rt-22-dev-wasm32, or pass --no-default-libs for a module without "
                      "a C library");
  auto env = std::make_shared<WasiEnvironment>();
  env->before = std::move(line->before);
  env->after = std::move(line->after);
  // The files the line names, in its order (-lNAME as the archive wasm-ld
  // finds for it).
  for (const std::vector<std::string> *part : {&env->before, &env->after})
    for (const std::string &a : *part) {
      llvm::StringRef arg(a);
      std::string file = arg.starts_with("-l") ? find_library_file(line->dirs, {"lib" + a.substr(2) + ".a"})
                         : arg.starts_with("-") ? std::string()
                                                : a;
      if (file.empty() || !llvm::sys::fs::exists(file))
        continue;
      env->summary.push_back(llvm::sys::path::filename(file).str());
      env->fingerprints.push_back(file_fingerprint(file));
    }
  return std::shared_ptr<const WasiEnvironment>(env);
}

} // namespace

Expected<std::shared_ptr<const WasiEnvironment>> wasi_environment(const TargetInfo &target,
                                                                  const std::string &sysroot) {
  static base::Memo<std::pair<std::string, std::string>, std::shared_ptr<const WasiEnvironment>> known;
  return known.compute_once({target.triple, sysroot}, [&] { return compute(target, sysroot); });
}

} // namespace hotlink::detail
