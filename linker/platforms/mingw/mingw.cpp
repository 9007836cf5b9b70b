// The mingw platform (*-w64-mingw32): GNU-ABI objects linked through lld's
// MinGW driver with the runtime a mingw driver links (runtime.h), or a bare
// DLL when no toolchain is installed.
#include "linker/platforms/coff/coff_link.h"
#include "linker/platforms/coff/sysroot.h"
#include "linker/platforms/elf/runtime.h"
#include "linker/platforms/mingw/runtime.h"
#include "linker/platforms/table.h"

#include "linker/plan.h"

#include "llvm/TargetParser/Triple.h"

namespace hotlink::detail {

namespace {

class MingwLink final : public CoffLink {
public:
  explicit MingwLink(exports::Arch arch) : CoffLink(/*mingw=*/true), arch_(arch) {}

  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (auto err = refuse_other_options(ctx, kCoffOptions | kDriverRuntime))
      return err;
    return check_coff_options(ctx);
  }

  // The runtime `clang -shared` links, with libstdc++ when the inputs use
  // the C++ runtime.
  std::optional<Error> environment(PlanContext &ctx) override {
    const LinkRequest &req = ctx.request;
    if (req.runtime == Runtime::None)
      return std::nullopt;
    CxxLibrary cxx = cxx_library(ctx, scan_symbols(ctx));
    auto env = mingw_environment(ctx.target(), req.sysroot, cxx);
    if (!env)
      return env.take_error();
    if (!(*env)->found) {
      ctx.plan.diagnostics.push_back(Diagnostic{
          Severity::Warning,
          (*env)->missing + ": linked without the mingw-w64 runtime (no DLL entry point, C runtime or libgcc); " +
              "install " + mingw_package(ctx.target()) + " or give its root with --sysroot",
          {}, {}});
      return std::nullopt;
    }
    if (!(*env)->unresolved.empty()) {
      std::string list;
      for (const std::string &u : (*env)->unresolved)
        list += (list.empty() ? "" : ", ") + u;
      return make_error(ErrorCode::InputNotFound,
                        "the mingw-w64 runtime for " + ctx.target().triple + " is incomplete: " + list +
                            " not found" + (req.sysroot.empty() ? "" : " under " + req.sysroot),
                        req.sysroot, "--sysroot",
                        "install " + mingw_package(ctx.target()) +
                            (req.sysroot.empty() ? "" : ", or give the root that holds lib/gcc/<triple>/") +
                            (cxx == CxxLibrary::None ? "" : " (C++ needs its libstdc++)"));
    }
    env_ = env.value();
    ctx.plan.runtime = env_->summary;
    ctx.plan.fingerprints.insert(ctx.plan.fingerprints.end(), env_->fingerprints.begin(), env_->fingerprints.end());
    return std::nullopt;
  }

  // The mingw driver's line up to the inputs (-m, --shared, the entry
  // point, the startup objects, -L), or a bare DLL.
  void head(PlanContext &ctx, const std::string &out_name) override {
    std::vector<Arg> &a = ctx.job().args;
    if (env_) {
      for (const std::string &s : env_->before)
        a.push_back(plain(s));
    } else {
      a.push_back(plain("-m"));
      a.push_back(plain(arch_ == exports::Arch::X86       ? "i386pe"
                        : arch_ == exports::Arch::AArch64 ? "arm64pe"
                                                          : "i386pep"));
      a.push_back(plain("--shared"));
      a.push_back(link_flag("-noentry"));
    }
    a.push_back(keyed("--threads=" + std::to_string(ctx.request.threads), "<threads>"));
    a.push_back(plain("--exclude-all-symbols")); // the export list says what is exported
    a.push_back(link_flag("-Brepro"));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (ctx.request.undefined == Undefined::Allow)
      a.push_back(link_flag("-force:unresolved"));
  }

  std::optional<Error> runtime_libraries(PlanContext &ctx) override {
    if (env_)
      for (const std::string &s : env_->after)
        ctx.job().args.push_back(plain(s));
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &req, const std::string &symbol) const override {
    // The runtime's libraries are linked already: name one it does not link.
    std::string root = !req.sysroot.empty() ? req.sysroot : mingw_sysroot(arch_);
    std::string lib = sysroot_library_defining(root, arch_, symbol);
    if (!lib.empty())
      return "defined in " + lib + " of the mingw-w64 sysroot (" + root + "); add -l " + library_name(lib);
    return "add the object or library that defines it (-l NAME, -L DIR), or allow undefined symbols "
           "(--allow-undefined)";
  }

protected:
  std::vector<std::string> library_dirs(const PlanContext &ctx) const override {
    std::vector<std::string> dirs = ctx.request.library_paths;
    if (env_)
      dirs.insert(dirs.end(), env_->lib_dirs.begin(), env_->lib_dirs.end());
    return dirs;
  }
  bool runtime_has_support_symbols() const override { return env_ != nullptr; }

private:
  exports::Arch arch_;
  std::shared_ptr<const MingwEnvironment> env_;
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  info.arch = arch_of(t);
  if (!t.isOSWindows() || !t.isWindowsGNUEnvironment() || info.arch == exports::Arch::Unknown ||
      info.arch == exports::Arch::Wasm32)
    return false;
  info.format = exports::Format::COFF;
  info.flavor = "ld.lld"; // with -m i386pep: lld's MinGW driver
  info.extension = ".dll";
  info.export_file_is_companion = true;
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &target, const LinkRequest &) {
  return std::make_unique<MingwLink>(target.arch);
}

} // namespace

const Platform &mingw_platform() {
  static const Platform p{
      "mingw", {"x86_64-w64-mingw32", "i686-w64-mingw32", "aarch64-w64-mingw32"}, serves, start};
  return p;
}

} // namespace hotlink::detail
