// The NVIDIA platform (nvptx64-nvidia-cuda): a cubin for one SM
// architecture, linked in-process by NVIDIA's nvJitLink (nvjitlink.h) from
// PTX, relocatable cubins, LTO-IR and fat binaries (alone, or carried by
// host objects and archives), as the CUDA driver loads it: the kernels as
// exports, nothing left unresolved. nvJitLink is not lld: the platform
// plans a job whose engine (engine() below) hands its inputs to nvJitLink.
#include "linker/platforms/nvptx/cubin.h"
#include "linker/platforms/nvptx/images.h"
#include "linker/platforms/nvptx/nvjitlink.h"
#include "linker/platforms/table.h"

#include "exports/fatbin.h"
#include "exports/ptx.h"
#include "linker/plan.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <set>
#include <sys/stat.h>

namespace hotlink::detail {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

using nvptx::sm_number;

Expected<std::string> parse_arch(const std::string &spelled) {
  if (spelled.empty())
    return make_error(ErrorCode::BadRequest, "a cubin is built for one SM architecture, and none was given", {},
                      "--mcpu", "pass the GPU's architecture, e.g. --mcpu sm_90 (H100) or sm_80 (A100)");
  if (!sm_number(spelled))
    return make_error(ErrorCode::BadRequest, "'" + spelled + "' is not an NVIDIA SM architecture", {}, "--mcpu",
                      "e.g. sm_80, sm_90, sm_90a, sm_100f");
  return spelled;
}

// What one input holds for nvJitLink.
struct Built {
  std::string display;
  std::string target;               // PTX: its .target
  std::vector<std::string> kernels; // PTX: its .entry names
  bool lto = false;                 // LTO-IR: compiled at the link, its kernels known after it
};

// The kernels of a relocatable cubin (ptxas -c, nvcc -rdc): its entry
// functions (STO_CUDA_ENTRY). Its other global functions are device
// functions another input calls (a __device__ function, CUB's
// __cuda_sm70_shflsync_down_p), no kernel of the link.
Expected<std::vector<std::string>> cubin_kernels(const std::uint8_t *data, std::size_t size, const std::string &name) {
  auto c = cubin::read(data, size, name);
  if (!c)
    return c.take_error();
  std::vector<std::string> out;
  for (const cubin::Kernel &k : c->kernels)
    out.push_back(k.name);
  return out;
}

// The image of the input's images (a fat binary's, or what a host object
// carries) that nvJitLink takes for `sm` (images.h), and its kernels.
Expected<Built> read_images_built(const LoadedInput &l, const std::vector<exports::FatbinImage> &images, unsigned sm,
                                  const std::string &arch) {
  nvptx::Choice chosen = nvptx::choose_image(images, sm);
  Built b;
  b.display = l.display;
  if (!chosen.image)
    return make_error(ErrorCode::ArchMismatch,
                      (l.device.empty() ? "holds no image that runs as " : "is a host object with no device code for ") +
                          arch + " (it has " + chosen.has + ")",
                      l.display, "--mcpu", "link it for an architecture it holds, or add an image for " + arch);
  const exports::FatbinImage &image = *chosen.image;
  if (image.kind == exports::FatbinImage::Kind::LtoIr) {
    b.lto = true;
    return b;
  }
  if (image.kind == exports::FatbinImage::Kind::Cubin) {
    auto kernels = cubin_kernels(image.bytes.data(), image.bytes.size(), l.display);
    if (!kernels)
      return kernels.take_error();
    b.kernels = std::move(*kernels);
    return b;
  }
  auto m = exports::read_ptx_module(image.bytes.data(), image.bytes.size(), l.display);
  if (!m)
    return m.take_error();
  b.target = m->target;
  b.kernels = m->kernels;
  return b;
}

Expected<Built> read_built(const LoadedInput &l, unsigned sm, const std::string &arch) {
  if (!l.device.empty())
    return read_images_built(l, l.device, sm, arch);
  Built b;
  b.display = l.display;
  if (exports::looks_like_ptx(l.data, l.size)) {
    auto m = exports::read_ptx_module(l.data, l.size, l.display);
    if (!m)
      return m.take_error();
    b.target = m->target;
    b.kernels = m->kernels;
    return b;
  }
  if (exports::looks_like_fatbin(l.data, l.size)) {
    auto images = exports::read_fatbin_images(l.data, l.size, l.display);
    if (!images)
      return images.take_error();
    return read_images_built(l, *images, sm, arch);
  }
  if (l.info.nvidia_lto) {
    b.lto = true;
    return b;
  }
  if (cubin::is_cubin(l.data, l.size)) {
    auto kernels = cubin_kernels(static_cast<const std::uint8_t *>(l.data), l.size, l.display);
    if (!kernels)
      return kernels.take_error();
    b.kernels = std::move(*kernels);
    return b;
  }
  return make_error(ErrorCode::InvalidInput,
                    "is neither PTX, a CUDA object (a cubin ptxas -c made), LTO-IR, a fat binary nor a host object "
                    "carrying one",
                    l.display, {},
                    "give PTX (clang -x cuda --cuda-device-only -S), ptxas -c's relocatable cubin, nvcc -dlto -ltoir's "
                    "LTO-IR, a .fatbin or nvcc -rdc=true -c's object");
}

class NvptxLink final : public PlatformLink {
public:
  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (auto err = refuse_other_options(ctx, kGpuOptions))
      return err;
    const LinkRequest &req = ctx.request;
    if (req.undefined == Undefined::Allow)
      return not_for_platform("--allow-undefined", "a cubin cannot import anything at load time", kTriple,
                              "define every function in a PTX module or object of the link");
    if (!req.gpu.device_libs_dir.empty())
      return not_for_platform("--device-libs", "device libraries are linked into the PTX by its compiler", kTriple,
                              "drop --device-libs");
    auto arch = parse_arch(req.gpu.processor);
    if (!arch)
      return arch.take_error();
    arch_ = *arch;
    return std::nullopt;
  }

  // PTX written for a later architecture than the link's does not compile
  // for it: refused here, naming both, before nvJitLink says less.
  std::optional<Error> check_inputs(PlanContext &ctx) override {
    for (const LoadedInput &l : ctx.inputs) {
      if (l.archive()) { // a library: nvJitLink links the members the link needs, whose kernels are not its exports
        lto_ = lto_ || l.info.nvidia_lto;
        continue;
      }
      auto b = read_built(l, sm_number(arch_), arch_);
      if (!b)
        return b.take_error();
      lto_ = lto_ || b->lto;
      if (!b->target.empty() && sm_number(b->target) > sm_number(arch_))
        return make_error(ErrorCode::ArchMismatch,
                          "is PTX for " + b->target + ", which does not compile for " + arch_, l.display, "--mcpu",
                          "link it with --mcpu " + b->target + " or later, or compile it for " + arch_);
      built_.push_back(std::move(*b));
    }
    return std::nullopt;
  }

  // A link with LTO-IR has its kernels read from the cubin it makes
  // (exports_from_artifact): an export named by the request is checked
  // there.
  std::optional<Error> select_exports(PlanContext &ctx) override {
    if (lto_) {
      if (ctx.request.exports.mode == ExportPolicy::Mode::List)
        listed_ = ctx.request.exports.names;
      return std::nullopt;
    }
    if (ctx.request.exports.mode != ExportPolicy::Mode::EntryPoints)
      return select_policy_exports(ctx);
    std::set<std::string> seen;
    for (const Built &b : built_)
      for (const std::string &k : b.kernels)
        if (seen.insert(k).second)
          ctx.plan.exports.push_back({k, k, false});
    if (ctx.plan.exports.empty())
      return make_error(ErrorCode::MissingExport, "the inputs define no kernel", ctx.inputs.front().display, {},
                        "mark the entry points __global__ (PTX: .entry), or name exports");
    return std::nullopt;
  }

  // nvJitLink itself: the key holds its file (whose real name carries its
  // exact version) and size; finding it loads nothing.
  std::optional<Error> environment(PlanContext &ctx) override {
    auto lib = nvjitlink::find_library();
    if (!lib)
      return lib.take_error();
    ctx.plan.runtime.push_back("nvJitLink");
    ctx.job().args.push_back(keyed("", "nvjitlink " + *lib + " " + std::to_string(file_size(*lib))));
    return std::nullopt;
  }

  void head(PlanContext &ctx, const std::string &out_name) override {
    std::vector<Arg> &a = ctx.job().args;
    a.push_back(plain("-arch=" + arch_));
    if (lto_)
      a.push_back(plain("-lto")); // what nvlink -dlto does: the LTO-IR compiled as one program
    a.push_back(plain("-o"));
    Arg out = in_dir("", out_name); // a cubin names no file: its output's name changes no byte
    out.key = "<output>";
    a.push_back(std::move(out));
    ctx.job().output_name_in_image = false;
  }

  // -L: searched here, by library(); nvJitLink takes no folders.
  Arg library_path(const std::string &dir) const override { return keyed("", "-L " + dir); }

  // -l NAME: libNAME.a (or -l:FILE) in the -L folders, handed to nvJitLink
  // as a library like an archive given by path (the toolkit's lib64 holds
  // libcudadevrt.a).
  Expected<Arg> library(PlanContext &ctx, const std::string &name) override {
    std::string file = name.rfind(':', 0) == 0 ? name.substr(1) : "lib" + name + ".a";
    std::string found = find_library_file(ctx.request.library_paths, {file});
    if (found.empty())
      return make_error(ErrorCode::InputNotFound, "no " + file + " in the library folders", name, "-l",
                        "add -L with the folder that holds it (libcudadevrt.a: the CUDA toolkit's lib64)");
    auto bytes = llvm::MemoryBuffer::getFile(found, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!bytes)
      return make_error(ErrorCode::InputNotFound, "cannot read " + found + ": " + bytes.getError().message(), name, "-l");
    auto info = exports::read_device_archive((*bytes)->getBufferStart(), (*bytes)->getBufferSize(), found);
    if (!info)
      return info.take_error();
    if (ctx.digest)
      ctx.fingerprint_file("library " + name, found);
    return plain(found);
  }

  // nvJitLink keeps every kernel and every function a kernel calls: no list.
  std::optional<Error> export_file(PlanContext &) override { return std::nullopt; }

  bool links_whole_archives() const override { return false; }

  std::optional<Error> exports_from_artifact(const std::vector<std::uint8_t> &artifact,
                                             std::vector<std::string> &exports) override {
    if (!lto_)
      return std::nullopt;
    auto c = cubin::read(artifact.data(), artifact.size(), "the linked cubin");
    if (!c)
      return c.take_error();
    for (const cubin::Kernel &k : c->kernels)
      if (std::find(exports.begin(), exports.end(), k.name) == exports.end())
        exports.push_back(k.name);
    for (const std::string &n : listed_)
      if (std::find(exports.begin(), exports.end(), n) == exports.end())
        return make_error(ErrorCode::MissingExport, "is not a kernel of the linked cubin", {}, n,
                          "check the kernel's name: hotlink link --json lists the kernels of a link");
    if (exports.empty())
      return make_error(ErrorCode::MissingExport, "the inputs define no kernel", {}, {},
                        "mark the entry points __global__, or name exports");
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &, const std::string &) const override {
    return "a cubin cannot import anything at load time: give the PTX module or object that defines it";
  }

private:
  static std::uint64_t file_size(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? std::uint64_t(st.st_size) : 0;
  }

  std::string arch_;
  std::vector<Built> built_;
  bool lto_ = false;                // an input's chosen image is LTO-IR: nvJitLink's -lto
  std::vector<std::string> listed_; // exports the request names, checked against the LTO link's cubin
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  if (t.getArch() != llvm::Triple::nvptx64 || t.getOS() != llvm::Triple::CUDA)
    return false;
  info.arch = exports::Arch::NVPTX64;
  info.format = exports::Format::ELF;
  info.flavor = "nvjitlink";
  info.extension = ".cubin";
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &, const LinkRequest &) { return std::make_unique<NvptxLink>(); }

// What the CUDA driver requires of a cubin, checked on its bytes: linked
// (not relocatable), for the architecture asked (an sm_90 cubin does not
// load on an sm_80 GPU, an sm_80 one does on an sm_86), its kernels,
// nothing unresolved.
std::optional<Error> nvptx_check_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                          const hotlink::VerifyOptions &options) {
  auto c = cubin::read(bytes.data(), bytes.size(), name);
  if (!c)
    return c.take_error();
  if (!c->executable)
    return make_error(ErrorCode::NotASharedObject, "is a relocatable cubin, not a linked one (ET_EXEC)", name, {},
                      "link it: hotlink link --target nvptx64-nvidia-cuda --mcpu sm_NN");
  if (!options.processor.empty()) {
    auto want = parse_arch(options.processor);
    if (!want)
      return want.take_error();
    unsigned sm = sm_number(*want); // the driver's rule: the same major architecture, no later minor one
    if (c->sm / 10 != sm / 10 || c->sm > sm)
      return make_error(ErrorCode::ArchMismatch,
                        "is built for sm_" + std::to_string(c->sm) + ", which does not load as " + *want, name,
                        "--mcpu", "link it again with --mcpu " + *want);
  }
  if (!c->undefined.empty())
    return make_error(ErrorCode::UnresolvedSymbol, "leaves a symbol unresolved, which no cubin may", name,
                      c->undefined.front(), "link the PTX module or object that defines it");
  for (const std::string &e : options.expected_exports)
    if (std::none_of(c->kernels.begin(), c->kernels.end(), [&](const cubin::Kernel &k) { return k.name == e; }))
      return make_error(ErrorCode::MissingExport, "is not a kernel of the cubin", name, e,
                        "check the kernel's name (hotlink exports lists them)");
  return std::nullopt;
}

// One image's kernels, each with the architecture it is for: PTX's
// .entry names (ptx_target), or a cubin's kernels (arch) with the
// resources its sections record.
Expected<ArtifactDescription> describe_image(const std::uint8_t *data, std::size_t size, const std::string &name) {
  ArtifactDescription d;
  if (exports::looks_like_ptx(data, size)) {
    auto m = exports::read_ptx_module(data, size, name);
    if (!m)
      return m.take_error();
    d.properties = {{"ptx_target", m->target}};
    for (const std::string &k : m->kernels)
      d.exports.push_back({k, {{"ptx_target", m->target}}});
    return d;
  }
  auto c = cubin::read(data, size, name);
  if (!c)
    return c.take_error();
  std::string arch = "sm_" + std::to_string(c->sm);
  d.properties = {{"arch", arch}};
  auto n = [](std::uint64_t v) { return std::to_string(v); };
  for (const auto &[bank, bytes] : c->constant_banks)
    d.properties.push_back({"constant_bank_" + n(bank), n(bytes)});
  for (const cubin::Kernel &k : c->kernels)
    d.exports.push_back({k.name,
                         {{"arch", arch},
                          {"registers", n(k.registers)},
                          {"shared_bytes", n(k.shared_bytes)},
                          {"frame_size", n(k.frame_size)},
                          {"min_stack_size", n(k.min_stack_size)},
                          {"param_bytes", n(k.param_bytes)}}});
  return d;
}

// Each image's of a fat binary; LTO-IR's names are sealed: its image is
// listed as the artifact's "lto_ir" property (lto_90), with no kernels.
Expected<ArtifactDescription> describe_images(const std::vector<exports::FatbinImage> &images, const std::string &name) {
  ArtifactDescription d;
  d.properties = {{"images", std::to_string(images.size())}};
  for (const exports::FatbinImage &image : images) {
    if (image.kind == exports::FatbinImage::Kind::LtoIr) {
      d.properties.push_back({"lto_ir", "lto_" + std::to_string(image.sm)});
      continue;
    }
    auto one = describe_image(image.bytes.data(), image.bytes.size(), name);
    if (!one)
      return one.take_error();
    for (ExportDetails &e : one->exports)
      d.exports.push_back(std::move(e));
  }
  return d;
}

Expected<ArtifactDescription> describe_fatbin(std::string_view fatbin, const std::string &name) {
  auto images = exports::read_fatbin_images(fatbin.data(), fatbin.size(), name);
  if (!images)
    return images.take_error();
  return describe_images(*images, name);
}

// Device code alone (a cubin, PTX, LTO-IR, a fat binary) or carried (a
// host object's fat binary, or clang's offload images).
Expected<ArtifactDescription> describe_device(std::string_view bytes, const std::string &name) {
  const auto *data = reinterpret_cast<const std::uint8_t *>(bytes.data());
  if (exports::looks_like_lto_ir(data, bytes.size()))
    return ArtifactDescription{{{"lto_ir", "its architecture sealed too"}}, {}};
  if (exports::looks_like_fatbin(data, bytes.size()))
    return describe_fatbin(bytes, name);
  if (!exports::looks_like_ptx(data, bytes.size()) && !cubin::is_cubin(data, bytes.size())) {
    auto carried = exports::carried_images(data, bytes.size(), name);
    if (!carried)
      return carried.take_error();
    if (!carried->empty())
      return describe_images(*carried, name);
    if (bytes.substr(0, 4) == "\x7f" "ELF")
      return make_error(ErrorCode::ArchMismatch, "is a host object that carries no device code", name, {},
                        "compile it with nvcc -rdc=true -c (or -dlto), or give its cubin, PTX or fat binary");
  }
  return describe_image(data, bytes.size(), name);
}

// A cubin's, a PTX module's, each image's of a fat binary, alone or
// carried by a host object, or each device member's of an archive (its
// kernels with the member's name as "member").
Expected<ArtifactDescription> nvptx_describe(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  std::string_view all(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (all.substr(0, 8) != "!<arch>\n")
    return describe_device(all, name);
  auto members = exports::device_members(bytes.data(), bytes.size(), name);
  if (!members)
    return members.take_error();
  ArtifactDescription d;
  for (const exports::DeviceMember &m : *members) {
    auto one = describe_device(m.device, name + "(" + m.name + ")");
    if (!one)
      return one.take_error();
    for (auto &p : one->properties)
      if (p.first == "lto_ir")
        d.properties.push_back({"lto_ir", m.name + ": " + p.second});
    for (ExportDetails &e : one->exports) {
      e.properties.push_back({"member", m.name});
      d.exports.push_back(std::move(e));
    }
  }
  return d;
}

// What the CUDA driver loads of a fat binary, or of the one a host object
// carries (nvcc -c's .nv_fatbin): the image for --mcpu (images.h).
Expected<std::optional<std::vector<std::uint8_t>>> nvptx_carried_image(const std::vector<std::uint8_t> &bytes,
                                                                      const std::string &name,
                                                                      const hotlink::VerifyOptions &options) {
  using Found = std::optional<std::vector<std::uint8_t>>;
  std::vector<exports::FatbinImage> images;
  if (exports::looks_like_fatbin(bytes.data(), bytes.size())) {
    auto read = exports::read_fatbin_images(bytes.data(), bytes.size(), name);
    if (!read)
      return read.take_error();
    images = std::move(*read);
  } else if (!cubin::is_cubin(bytes.data(), bytes.size())) {
    auto read = exports::carried_images(bytes.data(), bytes.size(), name);
    if (!read)
      return read.take_error();
    images = std::move(*read);
  }
  if (images.empty())
    return Found();
  if (options.processor.empty())
    return make_error(ErrorCode::BadRequest, "holds device images for several architectures: --mcpu picks one", name,
                      "--mcpu", "pass the GPU's architecture, e.g. --mcpu sm_90");
  auto arch = parse_arch(options.processor);
  if (!arch)
    return arch.take_error();
  nvptx::Choice chosen = nvptx::choose_image(images, sm_number(*arch));
  if (!chosen.image || chosen.image->kind != exports::FatbinImage::Kind::Cubin)
    return make_error(ErrorCode::ArchMismatch,
                      "holds no cubin for " + *arch + " (it has " + chosen.has +
                          "): what the driver would compile at load, verify cannot check",
                      name, "--mcpu", "verify it for an architecture it holds a cubin of");
  return Found(chosen.image->bytes);
}

} // namespace

const Platform &nvptx_platform() {
  static const Platform p{"nvptx",
                          {kTriple},
                          serves,
                          start,
                          /*warm_up_object=*/nullptr,
                          nvptx_check_artifact,
                          nvptx_describe,
                          /*processor=*/true,
                          nvptx_carried_image};
  return p;
}

} // namespace hotlink::detail
