// The MSVC platform (*-windows-msvc): lld-link with no default libraries;
// against a sysroot (mingw-w64's import libraries, or an MSVC / Windows SDK
// layout: coff/sysroot.h) CRT and Win32 calls resolve, and C++ gets
// hotlink's MSVC C++ runtime (cxx_runtime.h) with a DLL entry point that
// runs static constructors.
#include "linker/platforms/coff/coff_link.h"
#include "linker/platforms/coff/support.h"
#include "linker/platforms/coff/sysroot.h"
#include "linker/platforms/msvc/cxx_runtime.h"
#include "linker/platforms/table.h"

#include "linker/plan.h"

#include "llvm/TargetParser/Triple.h"

#include <unordered_set>

namespace hotlink::detail {

namespace {

class MsvcLink final : public CoffLink {
public:
  explicit MsvcLink(exports::Arch arch) : CoffLink(/*mingw=*/false), arch_(arch) {}

  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (auto err = refuse_other_options(ctx, kCoffOptions | kExecutable))
      return err;
    if (auto err = check_coff_options(ctx))
      return err;
    if (ctx.request.coff.executable && ctx.request.coff.entry.empty())
      return make_error(ErrorCode::BadRequest, "an executable needs an entry point", {}, "--entry",
                        "name the function the program starts at (--entry NAME)");
    return std::nullopt;
  }

  std::optional<Error> environment(PlanContext &ctx) override {
    const LinkRequest &req = ctx.request;
    std::vector<std::string> undefined = ctx.undefined_names();
    crt_entry_ = needs_crt_entry(ctx, undefined);
    if (req.sysroot.empty()) {
      warn_initializers_without_crt(ctx);
      return std::nullopt;
    }
    std::vector<std::string> names;
    for (const LoadedInput &l : ctx.inputs)
      names.push_back(l.display);
    std::vector<std::string> provided;
    if (req.coff.support_objects)
      provided = support_symbols(ctx.target());
    if (auto err = cxx_runtime(ctx, undefined, provided))
      return err;
    auto w = ctx.with_infos([&](const std::vector<exports::ObjectInfo> &all) {
      return plan_windows_libraries(ctx.target(), req, all, names, provided);
    });
    if (!w)
      return w.take_error();
    windows_ = std::move(w.value());
    Plan &plan = ctx.plan;
    plan.diagnostics.insert(plan.diagnostics.end(), windows_->diagnostics.begin(), windows_->diagnostics.end());
    plan.fingerprints.insert(plan.fingerprints.end(), windows_->fingerprints.begin(), windows_->fingerprints.end());
    plan.system_libraries = windows_->used;
    plan.import_thunks = windows_->thunks;
    plan.windows_crt = windows_->crt;
    return std::nullopt;
  }

  void head(PlanContext &ctx, const std::string &out_name) override {
    const LinkRequest &req = ctx.request;
    exports::Arch arch = ctx.target().arch;
    std::vector<Arg> &a = ctx.job().args;
    if (req.coff.executable) {
      a.push_back(plain("-entry:" + req.coff.entry));
      a.push_back(plain("-subsystem:console"));
    } else {
      a.push_back(plain("-dll"));
      a.push_back(plain(crt_entry_ ? "-entry:_DllMainCRTStartup" : "-noentry"));
    }
    a.push_back(plain("-nodefaultlib"));
    a.push_back(plain("-Brepro"));
    a.push_back(plain(arch == exports::Arch::X86_64 ? "-machine:x64"
                      : arch == exports::Arch::X86  ? "-machine:x86"
                                                    : "-machine:arm64"));
    if (arch == exports::Arch::X86)
      a.push_back(plain("-safeseh:no"));
    a.push_back(keyed("-threads:" + std::to_string(req.threads), "<threads>"));
    a.push_back(in_dir("-out:", out_name));
    if (req.undefined == Undefined::Allow)
      a.push_back(plain("-force:unresolved"));
    if (windows_)
      for (const std::string &d : windows_->lib_dirs)
        a.push_back(plain("-libpath:" + d));
  }

  std::optional<Error> runtime_libraries(PlanContext &ctx) override {
    if (!windows_)
      return std::nullopt;
    Job &job = ctx.job();
    if (!windows_->thunks.empty()) {
      auto obj = import_thunks(ctx.target(), windows_->thunks);
      if (!obj)
        return obj.take_error();
      job.files.push_back(JobFile::own("import-thunks.obj", std::move(obj.value())));
      job.args.push_back(in_dir("", "import-thunks.obj"));
      job.display_names.emplace_back("import-thunks.obj", "<hotlink import thunks>");
    }
    if (cxx_)
      add_libraries(ctx, cxx_->before_crt);
    for (const std::string &lib : windows_->link)
      job.args.push_back(plain(lib));
    if (cxx_)
      add_libraries(ctx, cxx_->after_crt);
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &req, const std::string &symbol) const override {
    exports::Arch arch = arch_;
    if (!req.sysroot.empty()) {
      std::string lib = sysroot_library_defining(req.sysroot, arch, symbol);
      if (!lib.empty())
        return "defined in " + lib + " of the sysroot; add -l " + library_name(lib);
      return "add the object or library that defines it (-l NAME; the sysroot's libraries do not "
             "define it), or allow undefined symbols (--allow-undefined)";
    }
    std::string mingw = mingw_sysroot(arch);
    std::string lib = sysroot_library_defining(mingw, arch, symbol);
    if (!lib.empty())
      return "no sysroot was given: the mingw-w64 sysroot defines it in " + lib + "; link with --sysroot " + mingw +
             (library_name(lib) == "kernel32" || lib.find("crt") != std::string::npos ? ""
                                                                                       : " -l " + library_name(lib));
    return "add the object or library that defines it, or allow undefined symbols (--allow-undefined); for a "
           "Windows DLL calling the CRT or Win32, link against a sysroot (--sysroot " + mingw +
           (arch == exports::Arch::AArch64 ? "" : std::string(", Debian mingw-w64-") +
                                                      (arch == exports::Arch::X86 ? "i686" : "x86-64") + "-dev") +
           ")";
  }

private:
  // A DLL (MSVC ABI) needs an entry point that runs its static
  // initializers (.CRT$XI* / .CRT$XC*), the exit functions it registers
  // (static destructors) and its own DllMain, as MSVC's CRT links one.
  static bool needs_crt_entry(const PlanContext &ctx, const std::vector<std::string> &undefined) {
    if (ctx.request.coff.executable)
      return false;
    for (const LoadedInput &l : ctx.inputs)
      if (l.info.startup_sections)
        return true;
    if (ctx.defines(ctx.target().arch == exports::Arch::X86 ? "_DllMain@12" : "DllMain"))
      return true;
    for (const std::string &u : undefined)
      if (is_exit_registration(u))
        return true;
    return false;
  }

  // Without a sysroot there is no CRT to run static constructors: say so
  // rather than link a DLL whose globals are never constructed.
  void warn_initializers_without_crt(PlanContext &ctx) {
    if (!crt_entry_)
      return;
    ctx.plan.diagnostics.push_back(Diagnostic{
        Severity::Warning,
        "the inputs have static initializers, exit functions or a DllMain, which need the C runtime's DLL entry "
        "point; without a sysroot the DLL has none and they never run: link with --sysroot (e.g. " +
            mingw_sysroot(ctx.target().arch) + ")",
        {}, {}});
    crt_entry_ = false;
  }

  // MSVC-ABI C++ against a mingw-w64 sysroot: hotlink's C++ runtime pieces
  // (cxx_runtime.h), when the inputs reference them or need the entry point.
  std::optional<Error> cxx_runtime(PlanContext &ctx, const std::vector<std::string> &undefined,
                                   std::vector<std::string> &provided) {
    bool cxx = false;
    for (const std::string &u : undefined)
      cxx |= may_need_msvc_cxx(u);
    if ((!cxx && !crt_entry_) || sysroot_layout(ctx.request.sysroot, ctx.target().arch) != "mingw-w64")
      return std::nullopt;
    std::string crt = ctx.request.coff.windows_crt == WindowsCrt::Msvcrt ? "msvcrt" : "ucrt";
    auto rt = msvc_cxx_runtime(ctx.target(), crt);
    if (!rt)
      return rt.take_error();
    std::unordered_set<std::string> provides((*rt)->provides.begin(), (*rt)->provides.end());
    // With msvcrt, what it lacks comes from an import library after it.
    bool used = crt_entry_ || (cxx && !(*rt)->after_crt.empty());
    for (const std::string &u : undefined)
      used |= provides.count(u) > 0;
    if (!used)
      return std::nullopt;
    cxx_ = rt.value();
    provided.insert(provided.end(), (*rt)->provides.begin(), (*rt)->provides.end());
    return std::nullopt;
  }

  void add_libraries(PlanContext &ctx, const std::vector<MsvcCxxRuntime::Library> &libs) {
    Job &job = ctx.job();
    for (const MsvcCxxRuntime::Library &lib : libs) {
      job.files.push_back(JobFile::borrow(lib.name, lib.bytes));
      job.args.push_back(in_dir("", lib.name));
      job.display_names.emplace_back(lib.name, "<hotlink MSVC C++ runtime: " + lib.name + ">");
      ctx.plan.runtime.push_back(lib.name);
    }
  }

  exports::Arch arch_;
  std::optional<WindowsLibraries> windows_;
  std::shared_ptr<const MsvcCxxRuntime> cxx_;
  bool crt_entry_ = false; // -entry:_DllMainCRTStartup
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  info.arch = arch_of(t);
  if (!t.isOSWindows() || !t.isWindowsMSVCEnvironment() || info.arch == exports::Arch::Unknown ||
      info.arch == exports::Arch::Wasm32)
    return false;
  info.format = exports::Format::COFF;
  info.flavor = "lld-link";
  info.extension = ".dll";
  info.export_file_is_companion = true;
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &target, const LinkRequest &) {
  return std::make_unique<MsvcLink>(target.arch);
}

} // namespace

const Platform &msvc_platform() {
  static const Platform p{
      "msvc", {"x86_64-pc-windows-msvc", "i686-pc-windows-msvc", "aarch64-pc-windows-msvc"}, serves, start};
  return p;
}

} // namespace hotlink::detail
