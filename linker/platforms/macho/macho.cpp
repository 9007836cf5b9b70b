// The Mach-O platform (*-apple-macos): ld64.lld dylibs that need no SDK
// (chained fixups from macOS 13, -undefined dynamic_lookup), exports as an
// exported-symbols list.
#include "linker/platforms/table.h"

#include "exports/writers.h"
#include "linker/plan.h"
#include "verify/structure.h"

#include "llvm/TargetParser/Triple.h"

namespace hotlink::detail {

namespace {

class MachOLink final : public PlatformLink {
public:
  std::optional<Error> check_request(const PlanContext &ctx) override { return refuse_other_options(ctx, 0); }

  void head(PlanContext &ctx, const std::string &out_name) override {
    const LinkRequest &req = ctx.request;
    std::vector<Arg> &a = ctx.job().args;
    for (const char *s : {"-dylib", "-arch"})
      a.push_back(plain(s));
    a.push_back(plain(ctx.target().arch == exports::Arch::AArch64 ? "arm64" : "x86_64"));
    for (const char *s : {"-platform_version", "macos", "13.0", "13.0", "-undefined"})
      a.push_back(plain(s));
    a.push_back(plain(req.undefined == Undefined::Error ? "error" : "dynamic_lookup"));
    a.push_back(plain("-install_name"));
    a.push_back(plain("@rpath/" + out_name));
    a.push_back(keyed("--threads=" + std::to_string(req.threads), "<threads>"));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (!req.sysroot.empty()) {
      a.push_back(plain("-syslibroot"));
      a.push_back(plain(req.sysroot));
    }
  }

  std::optional<Error> export_file(PlanContext &ctx) override {
    if (!ctx.export_list)
      return std::nullopt;
    Plan &plan = ctx.plan;
    auto list = exports::write_macho_list(plan.exports);
    if (!list)
      return list.take_error();
    plan.export_file = list.value();
    ctx.add_file("exports.txt", plan.export_file);
    std::vector<Arg> &a = ctx.job().args;
    a.push_back(plain("-exported_symbols_list"));
    a.push_back(in_dir("", "exports.txt"));
    if (ctx.any_archive)
      for (const exports::Export &e : plan.exports) {
        a.push_back(plain("-u"));
        a.push_back(plain(e.symbol));
      }
    return std::nullopt;
  }

  std::vector<Arg> whole_archive_begin() const override { return {plain("-force_load")}; }
  std::vector<Arg> whole_archive_end() const override { return {}; }

  std::vector<std::string> library_files(const std::string &name) const override {
    return {"lib" + name + ".tbd", "lib" + name + ".dylib", "lib" + name + ".a"};
  }

  std::string undefined_hint(const LinkRequest &, const std::string &) const override {
    return "add the object or library that defines it, or leave it to dyld (drop --no-undefined)";
  }
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  info.arch = arch_of(t);
  if (!t.isMacOSX() || (info.arch != exports::Arch::X86_64 && info.arch != exports::Arch::AArch64))
    return false;
  info.format = exports::Format::MachO;
  info.flavor = "ld64.lld";
  info.extension = ".dylib";
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &, const LinkRequest &) { return std::make_unique<MachOLink>(); }

// What dyld needs (verify/structure.h): an MH_DYLIB with its install
// name, build version, a way to bind its imports, and on arm64 an ad-hoc
// code signature whose page hashes match.
std::optional<Error> check_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                    const hotlink::VerifyOptions &) {
  auto s = hotlink::check_macho_dylib(bytes, name);
  if (!s)
    return s.take_error();
  return std::nullopt;
}

} // namespace

const Platform &macho_platform() {
  static const Platform p{"macho", {"x86_64-apple-macos", "arm64-apple-macos"}, serves, start, nullptr,
                          check_artifact};
  return p;
}

} // namespace hotlink::detail
