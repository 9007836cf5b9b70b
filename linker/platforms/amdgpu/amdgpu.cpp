// The AMDGPU platform (amdgcn-amd-amdhsa): GPU code objects for the HSA
// runtime, linked as clang's ROCm toolchain links them (`ld.lld
// --no-undefined -shared -plugin-opt=mcpu=...`), the kernels as exports,
// the device libraries lazily through LTO, nothing left undefined.
#include "linker/platforms/amdgpu/code_object.h"
#include "linker/platforms/amdgpu/device_libs.h"
#include "linker/platforms/amdgpu/target_id.h"
#include "linker/platforms/table.h"

#include "exports/writers.h"
#include "linker/plan.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Archive.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/TargetParser.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <set>

namespace hotlink::detail {

namespace {

using amdgpu::CodeObject;

constexpr unsigned kOldestVersion = 4, kNewestVersion = 6;

// "gfx90a", "gfx90a:xnack+": a target ID of a processor LLVM knows, in
// canonical form (features sorted), or an error naming --mcpu.
Expected<std::string> parse_target_id(const std::string &triple, const std::string &spelled) {
  if (spelled.empty())
    return make_error(ErrorCode::BadRequest, "a code object is built for one processor, and none was given", {},
                      "--mcpu", "pass the processor as an AMD target ID, e.g. --mcpu gfx90a or gfx90a:xnack+");
  auto id = amdgpu::parse_target_id(spelled);
  if (!id) {
    llvm::SmallVector<llvm::StringRef, 64> known;
    llvm::AMDGPU::fillValidArchListAMDGCN(known);
    std::string list;
    for (llvm::StringRef k : known)
      if (k.starts_with("gfx9") || k.starts_with("gfx10") || k.starts_with("gfx11"))
        list += (list.empty() ? "" : " ") + k.str();
    return make_error(ErrorCode::BadRequest,
                      "'" + spelled + "' is not an AMD target ID: a processor LLVM knows, then :xnack+/- or "
                                      ":sramecc+/- where the processor has them",
                      {}, "--mcpu", "e.g. gfx90a, gfx90a:xnack+, gfx1030; processors: " + list);
  }
  return id->canonical();
}

// What one input (or archive member) was built for.
struct Built {
  std::string display;
  std::string target_id; // empty: the input names no processor (bitcode)
  unsigned version = 0;  // 0: the input names none (bitcode)
  std::vector<std::string> kernels;
};

Expected<Built> read_built(const void *data, std::size_t size, const std::string &display) {
  Built b;
  b.display = display;
  llvm::StringRef bytes(static_cast<const char *>(data), size);
  if (llvm::identify_magic(bytes) == llvm::file_magic::bitcode) {
    auto t = amdgpu::read_bitcode_target(data, size, display);
    if (!t)
      return t.take_error();
    b.target_id = t->target_id;
    b.version = t->version;
    b.kernels = std::move(t->kernels);
    return b;
  }
  auto co = amdgpu::read_code_object(data, size, display);
  if (!co)
    return co.take_error();
  if (co->shared)
    return make_error(ErrorCode::InvalidInput, "is a linked code object, not an object to link", display, {},
                      "pass the objects or bitcode it was linked from");
  b.target_id = co->target_id;
  b.version = co->version;
  for (const amdgpu::Kernel &k : co->kernels)
    b.kernels.push_back(k.name);
  return b;
}

// Every object of an input: itself, or an archive's members.
Expected<std::vector<Built>> read_input(const LoadedInput &l) {
  std::vector<Built> out;
  if (!l.archive()) {
    auto b = read_built(l.data, l.size, l.display);
    if (!b)
      return b.take_error();
    out.push_back(std::move(*b));
    return out;
  }
  llvm::MemoryBufferRef buf(llvm::StringRef(static_cast<const char *>(l.data), l.size), l.display);
  auto archive = llvm::object::Archive::create(buf);
  if (!archive)
    return make_error(ErrorCode::InvalidInput, "cannot read the archive: " + llvm::toString(archive.takeError()),
                      l.display);
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child &c : (*archive)->children(err)) {
    auto name = c.getName();
    auto mem = c.getMemoryBufferRef();
    if (!name || !mem) {
      if (!name) llvm::consumeError(name.takeError());
      if (!mem) llvm::consumeError(mem.takeError());
      continue;
    }
    if (name->starts_with("/") || name->empty()) // symbol tables
      continue;
    auto b = read_built(mem->getBufferStart(), mem->getBufferSize(), l.display + "(" + name->str() + ")");
    if (!b)
      return b.take_error();
    b->kernels.clear(); // an archive's kernels are linked only when referenced
    out.push_back(std::move(*b));
  }
  if (err)
    return make_error(ErrorCode::InvalidInput, "corrupt archive: " + llvm::toString(std::move(err)), l.display);
  return out;
}

class AmdgpuLink final : public PlatformLink {
public:
  explicit AmdgpuLink(std::string triple) : triple_(std::move(triple)) {}

  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (auto err = refuse_other_options(ctx, kGpuOptions))
      return err;
    const LinkRequest &req = ctx.request;
    if (req.undefined == Undefined::Allow)
      return not_for_platform("--allow-undefined", "a code object cannot import anything at load time", triple_,
                              "define every symbol in an input, or link the device libraries (--device-libs auto)");
    if (!req.gpu.device_libs_dir.empty() && !llvm::sys::fs::is_directory(req.gpu.device_libs_dir))
      return make_error(ErrorCode::BadRequest, "the device library folder does not exist", req.gpu.device_libs_dir,
                        "--device-libs", "pass the folder that holds ocml.bc (Debian: /usr/lib/x86_64-linux-gnu/amdgcn/bitcode)");
    auto tid = parse_target_id(triple_, req.gpu.processor);
    if (!tid)
      return tid.take_error();
    target_id_ = *tid;
    return std::nullopt;
  }

  // Each input's processor must be one the target ID allows, and every
  // input of one code object version (a supported one).
  std::optional<Error> check_inputs(PlanContext &ctx) override {
    const Built *first_versioned = nullptr;
    for (const LoadedInput &l : ctx.inputs) {
      auto built = read_input(l);
      if (!built)
        return built.take_error();
      for (Built &b : *built)
        built_.push_back(std::move(b));
    }
    for (const Built &b : built_) {
      if (!b.target_id.empty() && !amdgpu::compatible_target_ids(b.target_id, target_id_))
        return make_error(ErrorCode::ArchMismatch,
                          "was compiled for " + b.target_id + ", which the target ID " + target_id_ +
                              " does not allow" + feature_note(b.target_id),
                          b.display, "--mcpu",
                          "link it with --mcpu " + b.target_id + ", or recompile it with -mcpu=" + target_id_);
      if (!b.version)
        continue;
      if (b.version < kOldestVersion || b.version > kNewestVersion)
        return make_error(ErrorCode::InvalidInput,
                          "is code object version " + std::to_string(b.version) + "; hotlink links versions " +
                              std::to_string(kOldestVersion) + " to " + std::to_string(kNewestVersion),
                          b.display, {}, "recompile it with -mcode-object-version=4, 5 or 6");
      if (first_versioned && b.version != first_versioned->version)
        return make_error(ErrorCode::InvalidInput,
                          "is code object version " + std::to_string(b.version) + ", but '" +
                              first_versioned->display + "' is version " + std::to_string(first_versioned->version),
                          b.display, {}, "compile every input with the same -mcode-object-version");
      if (!first_versioned)
        first_versioned = &b;
    }
    version_ = first_versioned ? first_versioned->version : 0;
    return std::nullopt;
  }

  // The kernels (each entry point and its NAME.kd descriptor) and the
  // names the policy adds; any other policy as for every platform.
  std::optional<Error> select_exports(PlanContext &ctx) override {
    const ExportPolicy &policy = ctx.request.exports;
    if (policy.mode != ExportPolicy::Mode::EntryPoints)
      return select_policy_exports(ctx);
    std::set<std::string> seen;
    std::vector<exports::Export> out;
    for (const Built &b : built_)
      for (const std::string &k : b.kernels)
        if (seen.insert(k).second) {
          out.push_back({k, k, false});
          out.push_back({k + ".kd", k + ".kd", true});
        }
    user_named_ = !policy.names.empty() || !policy.include.empty();
    if (user_named_) {
      ExportPolicy named = ExportPolicy::list(policy.names);
      named.include = policy.include;
      named.exclude = policy.exclude;
      auto chosen = ctx.with_infos([&](const std::vector<exports::ObjectInfo> &all) {
        return exports::select_exports(all, exports::Format::ELF, exports::Arch::AMDGCN, named);
      });
      if (!chosen)
        return chosen.take_error();
      for (exports::Export &e : *chosen)
        if (seen.insert(e.name).second)
          out.push_back(std::move(e));
    }
    if (out.empty())
      return make_error(ErrorCode::MissingExport, "the inputs define no kernel", ctx.inputs.front().display, {},
                        "mark the entry points __attribute__((amdgpu_kernel)) (OpenCL: kernel), or name exports");
    ctx.plan.exports = std::move(out);
    return std::nullopt;
  }

  // The driver's line for the target ID, and the device libraries when
  // something is left undefined.
  std::optional<Error> environment(PlanContext &ctx) override {
    auto line = amdgpu::link_line(triple_, target_id_);
    if (!line)
      return line.take_error();
    line_ = *line;
    const GpuOptions &gpu = ctx.request.gpu;
    if (gpu.device_libs == DeviceLibs::None || ctx.undefined_names().empty())
      return std::nullopt;
    auto libs = amdgpu::device_libraries(triple_, target_id_, version_, gpu.device_libs_dir, language(ctx));
    if (!libs)
      return libs.take_error();
    device_libs_ = *libs;
    for (const std::string &lib : device_libs_) {
      ctx.plan.runtime.push_back(llvm::sys::path::filename(lib).str());
      if (ctx.digest)
        ctx.fingerprint_file("device-library " + llvm::sys::path::filename(lib).str(), lib);
    }
    return std::nullopt;
  }

  void head(PlanContext &ctx, const std::string &out_name) override {
    std::vector<Arg> &a = ctx.job().args;
    for (const std::string &s : line_.before)
      a.push_back(plain(s));
    a.push_back(keyed("--threads=" + std::to_string(ctx.request.threads), "<threads>"));
    // The device libraries are compiled for the inputs' code object
    // version, or lld refuses their mix ("incompatible ABI version").
    if (!device_libs_.empty() && version_)
      a.push_back(plain("-plugin-opt=-amdhsa-code-object-version=" + std::to_string(version_)));
    a.push_back(plain("-o"));
    // A code object has no soname: its output's name changes no byte, so
    // the cache key holds none (two names of one link are one entry).
    Arg out = in_dir("", out_name);
    out.key = "<output>";
    a.push_back(std::move(out));
    ctx.job().output_name_in_image = false;
  }

  // lld exports every visible global of a code object (the kernels) by
  // itself: a version script only when other names were asked for, or
  // when the device libraries are linked: their globals (__ockl_*,
  // __get_scratch_lds, ...) are theirs, not the code object's, and
  // clang's line, which links them into each compile
  // (-mlink-builtin-bitcode), internalizes them. Every visible definition
  // of the inputs stays exported (kernels, __device__ variables a runtime
  // looks up by name).
  std::optional<Error> export_file(PlanContext &ctx) override {
    if (!ctx.export_list)
      return std::nullopt;
    bool named = ctx.request.exports.mode != ExportPolicy::Mode::EntryPoints || user_named_;
    if (!named && device_libs_.empty())
      return std::nullopt;
    std::vector<exports::Export> list = ctx.plan.exports;
    if (!named) {
      std::set<std::string> seen;
      for (const exports::Export &e : list)
        seen.insert(e.symbol);
      for (const LoadedInput &l : ctx.inputs)
        for (const exports::Symbol &sym : l.info.symbols)
          if (sym.defined && !sym.hidden && seen.insert(sym.name).second)
            list.push_back({sym.name, sym.name, sym.data});
    }
    auto script = exports::write_version_script(list);
    if (!script)
      return script.take_error();
    ctx.plan.export_file = *script;
    ctx.add_file("exports.ver", *script);
    ctx.job().args.push_back(in_dir("--version-script=", "exports.ver"));
    // A bitcode kernel's NAME.kd descriptor is made by LTO's code
    // generation, after lld checked the script's names; the policy has
    // checked every name it chose already.
    ctx.job().args.push_back(plain("--undefined-version"));
    return std::nullopt;
  }

  bool links_in_memory() const override { return true; }

  std::optional<Error> runtime_libraries(PlanContext &ctx) override {
    std::vector<Arg> &a = ctx.job().args;
    if (!device_libs_.empty()) {
      a.push_back(plain("--start-lib"));
      for (const std::string &lib : device_libs_)
        a.push_back(keyed(lib, "<device-library " + llvm::sys::path::filename(lib).str() + ">"));
      a.push_back(plain("--end-lib"));
    }
    for (const std::string &s : line_.after)
      a.push_back(plain(s));
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &req, const std::string &symbol) const override {
    std::string s = symbol;
    bool device_lib = s.rfind("__ocml_", 0) == 0 || s.rfind("__ockl_", 0) == 0 || s.rfind("__oclc_", 0) == 0;
    if (device_lib && req.gpu.device_libs == DeviceLibs::None)
      return "it is a device-library function: link them (drop --device-libs none)";
    return "a code object cannot import anything at load time: define it in an input (or an archive of "
           "device objects)";
  }

private:
  // HIP when an input carries the compilation unit ID clang gives every
  // HIP device compile (__hip_cuid_*); otherwise OpenCL's set, as before.
  static amdgpu::DeviceLanguage language(const PlanContext &ctx) {
    for (const LoadedInput &l : ctx.inputs)
      for (const exports::Symbol &sym : l.info.symbols)
        if (sym.defined && sym.name.rfind("__hip_cuid_", 0) == 0)
          return amdgpu::DeviceLanguage::Hip;
    return amdgpu::DeviceLanguage::OpenCL;
  }

  // Why a feature setting conflicts, in words.
  std::string feature_note(const std::string &input) const {
    return input.find(':') != std::string::npos && target_id_.find(':') == std::string::npos
               ? " (a target ID without a feature setting runs with either, so its inputs must too)"
               : "";
  }

  std::string triple_;
  std::string target_id_;
  unsigned version_ = 0;
  std::vector<Built> built_;
  bool user_named_ = false;
  amdgpu::LinkLine line_;
  std::vector<std::string> device_libs_;
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  if (t.getArch() != llvm::Triple::amdgcn || t.getOS() != llvm::Triple::AMDHSA)
    return false;
  info.arch = exports::Arch::AMDGCN;
  info.format = exports::Format::ELF;
  info.flavor = "ld.lld";
  info.extension = ".hsaco";
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &target, const LinkRequest &) {
  return std::make_unique<AmdgpuLink>(target.triple);
}

// What the HSA loader requires of a code object, checked on its bytes.
std::optional<Error> check_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                    const hotlink::VerifyOptions &options) {
  auto co = amdgpu::read_code_object(bytes.data(), bytes.size(), name);
  if (!co)
    return co.take_error();
  if (!co->shared)
    return make_error(ErrorCode::NotASharedObject, "is a relocatable object, not a code object (ET_DYN)", name, {},
                      "link it: hotlink link --target amdgcn-amd-amdhsa --mcpu ...");
  if (co->version < kOldestVersion || co->version > kNewestVersion)
    return make_error(ErrorCode::InvalidInput, "is code object version " + std::to_string(co->version) +
                                                   ", which hotlink does not verify (4 to 6)",
                      name);
  if (!options.processor.empty()) {
    auto want = parse_target_id("amdgcn-amd-amdhsa", options.processor);
    if (!want)
      return want.take_error();
    if (!amdgpu::compatible_target_ids(co->target_id, *want))
      return make_error(ErrorCode::ArchMismatch,
                        "is built for " + co->target_id + ", which does not run as " + *want, name, "--mcpu",
                        "link it again with --mcpu " + *want);
  }
  if (!co->has_metadata)
    return make_error(ErrorCode::InvalidInput, "has no NT_AMDGPU_METADATA note: the HSA loader finds no kernel in it",
                      name);
  if (!co->undefined.empty())
    return make_error(ErrorCode::UnresolvedSymbol, "leaves a symbol undefined, which no code object may", name,
                      co->undefined.front(), "link what defines it");
  if (!co->bad_relocations.empty())
    return make_error(ErrorCode::InvalidInput, "has a dynamic relocation the HSA loader does not apply", name,
                      co->bad_relocations.front());
  for (const std::string &e : options.expected_exports) {
    if (llvm::StringRef(e).ends_with(".kd"))
      continue;
    bool listed = std::any_of(co->kernels.begin(), co->kernels.end(), [&](const amdgpu::Kernel &k) {
      return k.name == e;
    });
    if (!listed)
      return make_error(ErrorCode::MissingExport, "is not a kernel of the NT_AMDGPU_METADATA note", name, e,
                        "check the kernel's name (hotlink exports lists them)");
  }
  return std::nullopt;
}

Expected<ArtifactDescription> describe(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  auto co = amdgpu::read_code_object(bytes.data(), bytes.size(), name);
  if (!co)
    return co.take_error();
  ArtifactDescription d;
  d.properties = {{"target_id", co->target_id}, {"code_object_version", std::to_string(co->version)}};
  if (!co->metadata_target.empty())
    d.properties.push_back({"metadata_target", co->metadata_target});
  for (const amdgpu::Kernel &k : co->kernels) {
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    d.exports.push_back({k.name,
                         {{"symbol", k.symbol},
                          {"kernarg_segment_size", n(k.kernarg_segment_size)},
                          {"group_segment_fixed_size", n(k.group_segment_fixed_size)},
                          {"private_segment_fixed_size", n(k.private_segment_fixed_size)},
                          {"sgpr_count", n(k.sgpr_count)},
                          {"vgpr_count", n(k.vgpr_count)},
                          {"agpr_count", n(k.agpr_count)},
                          {"wavefront_size", n(k.wavefront_size)}}});
  }
  return d;
}

} // namespace

const Platform &amdgpu_platform() {
  static const Platform p{
      "amdgpu",       {"amdgcn-amd-amdhsa"}, serves, start, /*warm_up_object=*/nullptr, check_artifact, describe,
      /*processor=*/true};
  return p;
}

} // namespace hotlink::detail
