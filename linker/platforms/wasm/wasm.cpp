// The wasm platform (wasm32-*): wasm-ld modules with no entry point, each
// export a --export flag.
#include "linker/platforms/table.h"

#include "exports/writers.h"
#include "linker/plan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Triple.h"

namespace hotlink::detail {

namespace {

class WasmLink final : public PlatformLink {
public:
  std::optional<Error> check_request(const PlanContext &ctx) override { return refuse_other_options(ctx, 0); }

  void head(PlanContext &ctx, const std::string &out_name) override {
    const LinkRequest &req = ctx.request;
    std::vector<Arg> &a = ctx.job().args;
    a.push_back(plain("--no-entry"));
    a.push_back(keyed("--threads=" + std::to_string(req.threads), "<threads>"));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req.undefined == Undefined::Allow)
      a.push_back(plain("--allow-undefined"));
    if (!req.sysroot.empty() && llvm::sys::fs::is_directory(req.sysroot + "/lib"))
      a.push_back(plain("-L" + req.sysroot + "/lib"));
  }

  std::optional<Error> export_file(PlanContext &ctx) override {
    if (!ctx.export_list)
      return std::nullopt;
    auto flags = exports::write_wasm_flags(ctx.plan.exports);
    if (!flags)
      return flags.take_error();
    for (const std::string &f : flags.value()) {
      ctx.job().args.push_back(plain(f));
      ctx.plan.export_file += f + "\n";
    }
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &, const std::string &) const override {
    return "add the object that defines it, or import it from the embedder (--allow-undefined)";
  }
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

std::unique_ptr<PlatformLink> start(const TargetInfo &, const LinkRequest &) { return std::make_unique<WasmLink>(); }

} // namespace

const Platform &wasm_platform() {
  static const Platform p{"wasm", {"wasm32-unknown-unknown"}, serves, start};
  return p;
}

} // namespace hotlink::detail
