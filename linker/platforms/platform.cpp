// The target table, and what every platform shares: the plan context's
// queries and the default -l lookup.
#include "linker/platforms/platform.h"
#include "base/memo.h"

#include "exports/object_file.h"
#include "linker/plan.h"
#include "linker/platforms/table.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <mutex>

namespace hotlink {

std::vector<std::string> supported_targets() {
  std::vector<std::string> out;
  for (const detail::Platform *p : detail::platforms())
    for (const char *t : p->triples)
      out.push_back(t);
  return out;
}

std::string triple_for(exports::Format format, exports::Arch arch) { return detail::triple_for(format, arch); }

Expected<TargetFormat> target_format(const std::string &triple) {
  auto t = detail::resolve_target(triple);
  if (!t)
    return t.take_error();
  return TargetFormat{t->format, t->arch};
}

namespace detail {

// --- The table -------------------------------------------------------------------

const std::vector<const Platform *> &platforms() {
  static const std::vector<const Platform *> table = {&elf_platform(), &msvc_platform(), &mingw_platform(),
                                                      &macho_platform(), &wasm_platform(), &amdgpu_platform(),
                                                      &nvptx_platform()};
  return table;
}

const Engine *engine_for(const std::string &flavor) {
  for (const Engine *e : {&nvjitlink_engine()})
    if (flavor == e->flavor)
      return e;
  return nullptr;
}

std::string linker_name(const std::string &flavor) {
  const Engine *e = engine_for(flavor);
  return e ? e->shown : "lld";
}

namespace {

Expected<TargetInfo> resolve_uncached(const std::string &spelled) {
  std::string s = spelled.empty() ? host_target() : spelled;
  llvm::Triple t(llvm::Triple::normalize(s));
  for (const Platform *p : platforms()) {
    TargetInfo info;
    info.triple = t.str();
    if (p->serves(t, info)) {
      info.platform = p;
      return info;
    }
  }
  std::string list;
  for (const std::string &x : supported_targets())
    list += (list.empty() ? "" : ", ") + x;
  return make_error(ErrorCode::BadRequest, "unsupported target '" + s + "'", {}, "--target", "use one of: " + list);
}

} // namespace

// Memoized: a JIT names the same one or two triples in every request.
Expected<TargetInfo> resolve_target(const std::string &spelled) {
  static base::Memo<std::string, TargetInfo> known(64);
  if (auto hit = known.find(spelled))
    return *hit;
  auto info = resolve_uncached(spelled);
  if (info)
    known.keep(spelled, info.value());
  return info;
}

exports::Arch arch_of(const llvm::Triple &t) { return exports::arch_of(t.getArch()); }

std::string triple_for(exports::Format format, exports::Arch arch) {
  for (const Platform *p : platforms())
    for (const char *t : p->triples) {
      auto info = resolve_target(t);
      if (info && info->format == format && info->arch == arch)
        return t;
    }
  return {};
}

// --- The plan context --------------------------------------------------------------

const TargetInfo &PlanContext::target() const { return plan.target; }
Job &PlanContext::job() { return plan.job; }

bool PlanContext::references(const std::string &sym) const {
  for (const LoadedInput &l : inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (!s.defined && s.name == sym)
        return true;
  return false;
}

bool PlanContext::defines(const std::string &sym) const {
  for (const LoadedInput &l : inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (s.defined && s.name == sym)
        return true;
  return false;
}

std::unordered_set<std::string_view> PlanContext::defined_names() const {
  std::unordered_set<std::string_view> defined;
  bool elf = target().format == exports::Format::ELF;
  for (const LoadedInput &l : inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (s.defined) {
        defined.insert(s.name);
        // ELF .symver: foo@@v2 is the default version, which a reference
        // to foo binds to.
        if (std::size_t at = elf ? s.name.find("@@") : std::string::npos; at != std::string::npos && at > 0)
          defined.insert(std::string_view(s.name).substr(0, at));
      }
  return defined;
}

std::vector<std::string> PlanContext::undefined_names() const {
  std::unordered_set<std::string_view> defined = defined_names();
  std::vector<std::string> out;
  for (const LoadedInput &l : inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (!s.defined && !defined.count(s.name))
        out.push_back(s.name);
  return out;
}

bool PlanContext::policy_takes_whole_archives() const {
  auto mode = request.exports.mode;
  return mode == exports::ExportPolicy::Mode::All || mode == exports::ExportPolicy::Mode::None;
}

void PlanContext::add_file(const std::string &name, const std::string &text) {
  plan.job.files.push_back(JobFile::own(name, std::vector<std::uint8_t>(text.begin(), text.end())));
}

void PlanContext::fingerprint_file(const std::string &label, const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (buf)
    plan.fingerprints.push_back(label + " " +
                                cache::KeyBuilder::digest((*buf)->getBufferStart(), (*buf)->getBufferSize()));
}

// --- What platforms share ------------------------------------------------------------

std::string find_library_file(const std::vector<std::string> &dirs, const std::vector<std::string> &file_names) {
  for (const std::string &d : dirs)
    for (const std::string &n : file_names)
      if (llvm::sys::fs::is_regular_file(d + "/" + n))
        return d + "/" + n;
  return {};
}

std::optional<Error> select_policy_exports(PlanContext &ctx) {
  if (!ctx.export_list)
    return std::nullopt;
  const TargetInfo &tgt = ctx.target();
  auto chosen = ctx.with_infos([&](const std::vector<exports::ObjectInfo> &all) {
    return exports::select_exports(all, tgt.format, tgt.arch, ctx.request.exports);
  });
  if (!chosen)
    return chosen.take_error();
  ctx.plan.exports = std::move(chosen.value());
  return std::nullopt;
}

std::optional<Error> PlatformLink::select_exports(PlanContext &ctx) { return select_policy_exports(ctx); }

std::vector<std::string> PlatformLink::library_files(const std::string &name) const {
  return {"lib" + name + ".a"};
}

// -l NAME as lld finds it: the first match in -L, then the sysroot.
Expected<Arg> PlatformLink::library(PlanContext &ctx, const std::string &name) {
  if (ctx.digest) {
    std::vector<std::string> dirs = ctx.request.library_paths;
    if (!ctx.request.sysroot.empty()) {
      dirs.push_back(ctx.request.sysroot + "/lib");
      dirs.push_back(ctx.request.sysroot);
    }
    // -l:FILE names the file itself.
    std::string found = find_library_file(dirs, name.rfind(':', 0) == 0 ? std::vector<std::string>{name.substr(1)}
                                                                        : library_files(name));
    if (!found.empty())
      ctx.fingerprint_file("library " + name, found);
  }
  return plain("-l" + name);
}

Error not_for_platform(const std::string &flag, const std::string &what, const std::string &triple,
                       const std::string &hint) {
  return make_error(ErrorCode::BadRequest, what + ", not " + triple, {}, flag, hint);
}

std::optional<Error> refuse_other_options(const PlanContext &ctx, unsigned accepted) {
  const LinkRequest &req = ctx.request;
  const std::string &triple = ctx.target().triple;
  if (!(accepted & kCoffOptions)) {
    if (!req.coff.def_input.empty() || !req.coff.def_output.empty() || !req.coff.implib_output.empty())
      return not_for_platform(!req.coff.def_input.empty()    ? "--def-in"
                              : !req.coff.def_output.empty() ? "--def"
                                                        : "--implib",
                              ".def files and import libraries are for COFF targets", triple,
                              "drop the option, or link for a -windows-msvc target");
    if (!req.coff.pdb_output.empty() || req.coff.debug)
      return not_for_platform(!req.coff.pdb_output.empty() ? "--pdb" : "--debug",
                              "PDBs are for COFF targets", triple + " (an ELF or Mach-O artifact keeps its debug info itself)",
                              "drop the option");
  }
  if (!(accepted & kElfOptions))
    for (const auto &[set, flag] : {std::pair{!req.elf.soname.empty(), "--soname"},
                                    std::pair{!req.elf.version_script.empty(), "--version-script"},
                                    std::pair{req.openmp_runtime != OpenMpRuntime::Auto, "--openmp-runtime"}})
      if (set)
        return not_for_platform(flag, std::string(flag) + " is for ELF targets", triple,
                                "drop the option, or link for a -linux-gnu target");
  if (!(accepted & kDriverRuntime))
    for (const auto &[set, flag] : {std::pair{req.cxx_runtime != CxxRuntime::Auto, "--cxx-runtime"},
                                    std::pair{req.runtime != Runtime::Auto, "--no-default-libs"}})
      if (set)
        return not_for_platform(flag, std::string(flag) + " is for ELF and -w64-mingw32 targets", triple,
                                "drop the option, or link for a -linux-gnu target");
  if (!(accepted & kGpuOptions))
    for (const auto &[set, flag] : {std::pair{!req.gpu.processor.empty(), "--mcpu"},
                                    std::pair{req.gpu.device_libs != DeviceLibs::Auto || !req.gpu.device_libs_dir.empty(),
                                              "--device-libs"}})
      if (set)
        return not_for_platform(flag, std::string(flag) + " is for GPU device targets", triple,
                                "drop the option, or link for amdgcn-amd-amdhsa");
  if (req.coff.executable && !(accepted & kExecutable))
    return ctx.target().format == exports::Format::COFF
               ? not_for_platform("--exe", "executables are linked for -windows-msvc targets only", triple,
                                  "link the host for x86_64-pc-windows-msvc; it loads GNU-ABI DLLs as any other")
               : not_for_platform("--exe", "executables are linked for COFF targets only", triple,
                                  "link a shared object, or target -windows-msvc");
  return std::nullopt;
}

} // namespace detail
} // namespace hotlink
