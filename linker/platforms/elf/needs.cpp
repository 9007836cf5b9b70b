// The runtimes an ELF link's inputs call, and the homes of what they leave
// undefined (see needs.h).
#include "linker/platforms/elf/needs.h"

#include "linker/plan.h"
#include "base/text.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <unordered_set>

namespace hotlink::detail {

namespace {

// ---------------------------------------------------------------------------
// 1. What the inputs call: the selection before libm.

OpenMpLibrary openmp_library(const LinkRequest &req, const SymbolScan &scan) {
  switch (req.openmp_runtime) {
  case OpenMpRuntime::Libomp: return OpenMpLibrary::Libomp;
  case OpenMpRuntime::Libgomp: return OpenMpLibrary::Libgomp;
  case OpenMpRuntime::None: return OpenMpLibrary::None;
  case OpenMpRuntime::Auto: break;
  }
  if (!scan.kmpc.empty())
    return OpenMpLibrary::Libomp; // libomp implements GOMP_* as well
  if (!scan.gomp.empty())
    return OpenMpLibrary::Libgomp;
  return scan.omp_api.empty() ? OpenMpLibrary::None : OpenMpLibrary::Libomp;
}

std::string quoted_call(std::string_view name, const char *what) {
  return name.empty() ? std::string("asked for") : "the inputs call " + std::string(name) + " (" + what + ")";
}

std::string why_openmp(const RuntimeSelection &sel, const SymbolScan &scan) {
  if (sel.openmp == OpenMpLibrary::Libomp)
    return quoted_call(!scan.kmpc.empty() ? scan.kmpc : scan.omp_api, "the OpenMP runtime");
  return quoted_call(!scan.gomp.empty() ? scan.gomp : scan.omp_api, "GCC's OpenMP runtime");
}

// The Debian package that installs a library for lld, where one does.
std::string package_for(const std::string &lib, const TargetInfo &target) {
  bool cross = target.arch == exports::Arch::AArch64;
  if (lib == "omp")
    return cross ? "Debian 12 has no aarch64 libomp; pass --openmp-runtime libgomp for GCC-built objects"
                 : "install libomp-22-dev";
  if (lib == "gomp")
    return cross ? "install libgcc-12-dev-arm64-cross" : "install libgcc-12-dev";
  if (lib == "gfortran" || lib == "quadmath")
    return cross ? "install libgfortran-12-dev-arm64-cross" : "install libgfortran-12-dev";
  return "install it for " + target.triple;
}

// A library the selection asked for that the target's directories do not
// hold: an error naming what called it (the link would succeed and the
// artifact fail to load, or lld would stop without saying why).
std::optional<Error> check_found(const RuntimeEnvironment &env, const RuntimeSelection &sel, const SymbolScan &scan,
                                 const TargetInfo &target) {
  for (const std::string &lib : env.not_found) {
    std::string why, flag;
    if ((lib == "omp" || lib == "gomp") && sel.openmp != OpenMpLibrary::None) {
      why = why_openmp(sel, scan);
      flag = "--openmp-runtime";
    } else if ((lib == "gfortran" || lib == "quadmath") && sel.fortran) {
      why = quoted_call(scan.gfortran, "gfortran's runtime");
      flag = "--no-default-libs";
    } else {
      continue;
    }
    std::string dirs;
    for (const std::string &d : env.search_dirs)
      dirs += " " + d;
    return make_error(ErrorCode::InputNotFound,
                      why + " and lib" + lib + " is not installed for " + target.triple + " (searched:" + dirs + ")",
                      {}, flag,
                      package_for(lib, target) + ", give its directory with -L, or pass " + flag +
                          (flag == "--openmp-runtime" ? " none" : "") + " to leave it to the loading process");
  }
  return std::nullopt;
}

Expected<std::shared_ptr<const RuntimeEnvironment>> environment_for(const PlanContext &ctx,
                                                                    const RuntimeSelection &sel,
                                                                    const SymbolScan &scan) {
  auto env = runtime_environment(ctx.target(), ctx.request.sysroot, sel);
  if (!env)
    return env.take_error();
  if ((*env)->has_libc)
    if (auto err = check_found(**env, sel, scan, ctx.target()))
      return *err;
  return env;
}

// The selection's additions, as LinkResult::runtime_added says them.
void say_selection(const RuntimeSelection &sel, const SymbolScan &scan, std::vector<std::string> &added) {
  if (sel.cxx != CxxLibrary::None)
    added.push_back(std::string(to_string(sel.cxx)) + " (--driver-mode=g++): the inputs use the C++ runtime");
  if (sel.openmp != OpenMpLibrary::None)
    added.push_back(std::string("-fopenmp=") + to_string(sel.openmp) + ": " + why_openmp(sel, scan));
  if (sel.fortran)
    added.push_back("-lgfortran -lm: " + quoted_call(scan.gfortran, "gfortran's runtime"));
}

// ---------------------------------------------------------------------------
// 2. What the link leaves undefined, and where it is defined.

// Non-weak names the inputs reference that neither they nor the
// environment define, sorted. Nothing is collected for a link whose
// references the environment all resolves (most kernels).
std::vector<std::string_view> left_undefined(const PlanContext &ctx, const RuntimeEnvironment &env) {
  std::vector<std::string_view> out;
  for (const LoadedInput &l : ctx.inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (!s.defined && !s.weak && !environment_defines(env, base_name(s.name)) &&
          !ctx.excluded_definitions.count(s.name)) // check_excluded warned
        out.push_back(base_name(s.name));
  if (out.empty())
    return out;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::unordered_set<std::string_view> defined = ctx.defined_names();
  out.erase(std::remove_if(out.begin(), out.end(), [&](std::string_view n) { return defined.count(n) != 0; }),
            out.end());
  return out;
}

// lld's search order: the user's -L, then the line's directories (which
// hold the sysroot's).
std::vector<std::string> search_dirs(const PlanContext &ctx, const RuntimeEnvironment &env) {
  std::vector<std::string> dirs = ctx.request.library_paths;
  dirs.insert(dirs.end(), env.search_dirs.begin(), env.search_dirs.end());
  return dirs;
}

// Whether the user's libraries include `home` (by -l name or path), or
// define `name` themselves (a library given by path, or by -l:FILE, which
// lld looks up as that file name in the search folders: read only when a
// name has a home elsewhere, which most warm links never ask).
class UserLibraries {
public:
  UserLibraries(const PlanContext &ctx, std::uint16_t machine, const std::vector<std::string> &dirs)
      : ctx_(ctx), machine_(machine) {
    for (const std::string &l : ctx.request.libraries) {
      llvm::StringRef lib(l);
      if (lib.starts_with(":")) {
        for (const std::string &d : dirs)
          if (llvm::sys::fs::is_regular_file(d + "/" + lib.drop_front(1))) {
            paths_.insert(d + "/" + lib.drop_front(1).str());
            break;
          }
        continue;
      }
      (lib.contains('/') || lib.ends_with(".a") || lib.ends_with(".so") ? paths_ : names_).insert(l);
    }
    for (const LoadedInput &l : ctx.inputs) // shared libraries among the inputs (`k.o libdep.so`)
      if (l.shared())
        paths_.insert(l.path);
  }
  bool covers(std::string_view name, const LibraryHome &home) {
    if (names_.count(home.name) || paths_.count(home.path))
      return true;
    if (!read_) {
      read_ = true;
      for (const std::string &p : paths_)
        library_definitions(p, ctx_.request.sysroot, machine_, [&](llvm::StringRef n) { defined_.insert(n.str()); });
    }
    return defined_.count(std::string(name)) != 0;
  }

private:
  const PlanContext &ctx_;
  std::uint16_t machine_;
  std::unordered_set<std::string> names_, paths_, defined_;
  bool read_ = false;
};

Diagnostic homeless_warning(std::string_view name, const LibraryHome &home) {
  std::string file = llvm::sys::path::filename(home.path).str();
  return Diagnostic{Severity::Warning,
                    std::string(name) + " is left undefined for the loading process to provide, and " + file +
                        " (" + home.path + ") defines it: add -l " + home.name +
                        " to link it, or load the artifact into a process that has it",
                    {}, std::string(name)};
}

} // namespace

Expected<RuntimeNeeds> runtime_needs(const PlanContext &ctx, const SymbolScan &scan) {
  RuntimeNeeds needs;
  RuntimeSelection sel;
  sel.cxx = cxx_library(ctx, scan);
  sel.openmp = openmp_library(ctx.request, scan);
  sel.fortran = !scan.gfortran.empty();
  auto env = environment_for(ctx, sel, scan);
  if (!env && sel.openmp == OpenMpLibrary::Libomp && ctx.request.openmp_runtime == OpenMpRuntime::Auto &&
      scan.kmpc.empty() && scan.gomp.empty()) {
    sel.openmp = OpenMpLibrary::Libgomp; // the OpenMP API alone: GCC's runtime where LLVM's is missing
    env = environment_for(ctx, sel, scan);
  }
  if (!env)
    return env.take_error();
  if (!(*env)->has_libc) {
    needs.env = env.value(); // the planner links bare and warns why
    return needs;
  }
  // A line hotlink could not resolve to files goes to lld as it is, and
  // what its libraries define is not known.
  std::vector<std::string_view> left;
  if ((*env)->expanded)
    left = left_undefined(ctx, **env);
  std::vector<std::string_view> libm_names, quadmath_names;
  if (!left.empty()) {
    std::vector<std::string> dirs = search_dirs(ctx, **env);
    LibrarySearch search(dirs, ctx.request.library_paths.size(), ctx.request.sysroot, elf_machine(ctx.target()));
    UserLibraries user(ctx, elf_machine(ctx.target()), dirs);
    for (std::string_view name : left) {
      const LibraryHome *home = search.home(name);
      if (!home || user.covers(name, *home))
        continue;
      if (home->name == "m")
        libm_names.push_back(name);
      else if (home->name == "quadmath" && sel.fortran)
        quadmath_names.push_back(name);
      else {
        needs.warnings.push_back(homeless_warning(name, *home));
        needs.homes.emplace(std::string(name), *home);
      }
    }
  }
  say_selection(sel, scan, needs.added);
  if (!libm_names.empty() || !quadmath_names.empty()) {
    sel.libm = !libm_names.empty();
    sel.quadmath = !quadmath_names.empty();
    env = environment_for(ctx, sel, scan);
    if (!env)
      return env.take_error();
    if (sel.libm)
      needs.added.push_back("-lm: " + base::list_some(libm_names, 8) + (libm_names.size() == 1 ? " is" : " are") +
                            " libm's");
    if (sel.quadmath)
      needs.added.push_back("-lquadmath: " + base::list_some(quadmath_names, 8) +
                            (quadmath_names.size() == 1 ? " is" : " are") + " libquadmath's");
  }
  needs.env = env.value();
  return needs;
}

} // namespace hotlink::detail
