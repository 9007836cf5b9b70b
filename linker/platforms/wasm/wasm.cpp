// The wasm platform (wasm32-*): wasm-ld modules, each export a --export
// flag. wasm32-unknown-unknown: the inputs alone, no entry point.
// wasm32-wasi / wasm32-wasip1: a reactor module with wasi-libc, as clang's
// driver links one (wasi.h), its _initialize exported.
#include "linker/platforms/table.h"
#include "linker/platforms/wasm/wasi.h"

#include "exports/writers.h"
#include "linker/plan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Triple.h"

namespace hotlink::detail {

namespace {

class WasmLink final : public PlatformLink {
public:
  explicit WasmLink(bool wasi) : wasi_(wasi) {}

  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (!wasi_)
      return refuse_other_options(ctx, 0);
    if (ctx.request.cxx_runtime != CxxRuntime::Auto)
      return not_for_platform("--cxx-runtime", "hotlink links C modules for WASI (wasi-libc)", ctx.target().triple,
                              "drop the option");
    return refuse_other_options(ctx, kDriverRuntime);
  }

  // wasi-libc's reactor line, unless --no-default-libs.
  std::optional<Error> environment(PlanContext &ctx) override {
    if (!wasi_ || ctx.request.runtime == Runtime::None)
      return std::nullopt;
    auto env = wasi_environment(ctx.target(), ctx.request.sysroot);
    if (!env)
      return env.take_error();
    env_ = env.value();
    ctx.plan.runtime = env_->summary;
    ctx.plan.fingerprints.insert(ctx.plan.fingerprints.end(), env_->fingerprints.begin(), env_->fingerprints.end());
    return std::nullopt;
  }

  void head(PlanContext &ctx, const std::string &out_name) override {
    const LinkRequest &req = ctx.request;
    std::vector<Arg> &a = ctx.job().args;
    if (env_)
      for (const std::string &x : env_->before) // -m wasm32, -L, crt1-reactor.o, --entry _initialize
        a.push_back(plain(x));
    else
      a.push_back(plain("--no-entry"));
    a.push_back(keyed("--threads=" + std::to_string(req.threads), "<threads>"));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req.undefined == Undefined::Allow)
      a.push_back(plain("--allow-undefined"));
    if (!env_ && !req.sysroot.empty() && llvm::sys::fs::is_directory(req.sysroot + "/lib"))
      a.push_back(plain("-L" + req.sysroot + "/lib"));
  }

  std::optional<Error> export_file(PlanContext &ctx) override {
    if (!ctx.export_list)
      return std::nullopt;
    if (env_) // the reactor's entry, which runs the C constructors: wasm-ld exports it
      ctx.plan.exports.push_back(exports::Export{"_initialize", "_initialize", false});
    auto flags = exports::write_wasm_flags(ctx.plan.exports);
    if (!flags)
      return flags.take_error();
    for (const std::string &f : flags.value()) {
      ctx.job().args.push_back(plain(f));
      ctx.plan.export_file += f + "\n";
    }
    return std::nullopt;
  }

  std::optional<Error> runtime_libraries(PlanContext &ctx) override {
    if (env_)
      for (const std::string &x : env_->after) // -lc, compiler-rt's builtins
        ctx.job().args.push_back(plain(x));
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &, const std::string &) const override {
    return "add the object that defines it, or import it from the embedder (--allow-undefined)";
  }

private:
  bool wasi_;
  std::shared_ptr<const WasiEnvironment> env_;
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  info.arch = arch_of(t);
  if (info.arch != exports::Arch::Wasm32)
    return false;
  info.format = exports::Format::Wasm;
  info.flavor = "wasm-ld";
  info.extension = ".wasm";
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &target, const LinkRequest &) {
  return std::make_unique<WasmLink>(llvm::Triple(target.triple).isOSWASI());
}

} // namespace

const Platform &wasm_platform() {
  static const Platform p{"wasm", {"wasm32-unknown-unknown", "wasm32-wasip1", "wasm32-wasi"}, serves, start};
  return p;
}

} // namespace hotlink::detail
