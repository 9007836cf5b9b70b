#include "linker/platforms/mingw/runtime.h"
#include "base/memo.h"
#include "base/clock.h"

#include "linker/platforms/coff/sysroot.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace hotlink::detail {

namespace {

using llvm::StringRef;

// Splits the driver's line at the inputs and resolves what it names.
void resolve(MingwEnvironment &env, const DriverLine &line, const TargetInfo &target) {
  std::set<std::string> seen;
  auto record = [&](const std::string &path) {
    if (!seen.insert(path).second)
      return;
    env.summary.push_back(llvm::sys::path::filename(path).str());
    env.fingerprints.push_back(file_fingerprint(path));
  };
  bool first_object = true;
  for (std::size_t i = 0; i < line.args.size(); ++i) {
    const std::string &a = line.args[i];
    (i < line.input_position ? env.before : env.after).push_back(a);
    StringRef r(a);
    if (r.starts_with("-L")) {
      env.lib_dirs.push_back(a.substr(2));
    } else if (r.starts_with("-l")) {
      std::string path = find_coff_library(a.substr(2), env.lib_dirs, "", target.arch);
      if (!path.empty())
        record(path);
      else if (std::find(env.unresolved.begin(), env.unresolved.end(), a) == env.unresolved.end())
        env.unresolved.push_back(a);
    } else if (!r.starts_with("-") && (r.ends_with(".o") || r.ends_with(".obj"))) {
      bool exists = llvm::sys::fs::is_regular_file(a);
      if (first_object && !exists) {
        env.missing = "no mingw-w64 runtime for " + target.triple + " (clang's driver found no " + a +
                      (env.sysroot.empty() ? "" : " under " + env.sysroot) + ")";
        return;
      }
      first_object = false;
      if (exists)
        record(a);
      else
        env.unresolved.push_back(a);
    }
  }
  env.found = !first_object;
  if (!env.found && env.missing.empty())
    env.missing = "clang's driver named no startup object for " + target.triple;
}

// hotlink's --sysroot for Windows names the folder of import libraries
// (/usr/x86_64-w64-mingw32); clang's mingw driver wants the root that holds
// it and GCC's lib/gcc/<triple> (/usr). Given the former, the driver gets
// its parent.
std::string driver_sysroot(const std::string &sysroot) {
  if (sysroot.empty())
    return sysroot;
  std::string trimmed = sysroot;
  while (trimmed.size() > 1 && trimmed.back() == '/')
    trimmed.pop_back();
  StringRef name = llvm::sys::path::filename(trimmed);
  bool triple_folder = name.ends_with("-w64-mingw32") &&
                       llvm::sys::fs::is_regular_file(trimmed + "/lib/libkernel32.a") &&
                       !llvm::sys::fs::is_directory(trimmed + "/" + name.str());
  return triple_folder ? llvm::sys::path::parent_path(trimmed).str() : sysroot;
}

} // namespace

std::string mingw_package(const TargetInfo &target) {
  switch (target.arch) {
  case exports::Arch::X86: return "g++-mingw-w64-i686-posix";
  case exports::Arch::AArch64: return "an aarch64 mingw-w64 toolchain (Debian 12 has none)";
  default: return "g++-mingw-w64-x86-64-posix";
  }
}

Expected<std::shared_ptr<const MingwEnvironment>>
mingw_environment(const TargetInfo &target, const std::string &sysroot, CxxLibrary cxx) {
  static base::Memo<std::tuple<std::string, std::string, CxxLibrary>, std::shared_ptr<const MingwEnvironment>>
      known;
  return known.compute_once(
      std::make_tuple(target.triple, sysroot, cxx), [&]() -> Expected<std::shared_ptr<const MingwEnvironment>> {
        auto t0 = std::chrono::steady_clock::now();
        auto line = driver_link_line(target, driver_sysroot(sysroot), RuntimeSelection{cxx});
        if (!line)
          return line.take_error();
        auto env = std::make_shared<MingwEnvironment>();
        env->triple = target.triple;
        env->sysroot = sysroot;
        env->cxx = cxx;
        resolve(*env, *line, target);
        env->build_ms = base::ms_since(t0);
        return std::shared_ptr<const MingwEnvironment>(env);
      });
}

} // namespace hotlink::detail
