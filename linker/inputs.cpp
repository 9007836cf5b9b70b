#include "linker/inputs.h"
#include "base/text.h"
#include "hotlink/symbols.h"
#include "exports/fatbin.h"
#include "exports/recovery.h"
#include "image/image.h"

#include "linker/llvm_options.h"
#include "linker/plan.h"

#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>

namespace hotlink::detail {

namespace {

// "an ELF object", "a COFF object".
std::string a_or_an(const char *word) {
  return std::string(std::strchr("AEIOUaeiou", word[0]) ? "an " : "a ") + word;
}

// An ELF shared library among the inputs, as ld.lld takes one by path
// (`k.o libdep.so`): linked against where it stands, a DT_NEEDED on its
// soname, or on the path as given when it has none; nothing of it is
// exported. nullopt: not one (read_object reads or refuses the input).
std::optional<Expected<exports::ObjectInfo>> shared_library(const LoadedInput &l) {
  const auto *b = static_cast<const unsigned char *>(l.data);
  if (l.size < 18 || std::memcmp(b, "\x7f" "ELF", 4) != 0)
    return std::nullopt;
  unsigned type = b[5] == 2 ? (b[16] << 8 | b[17]) : (b[17] << 8 | b[16]); // e_type, by EI_DATA
  if (type != 3) // ET_DYN
    return std::nullopt;
  auto art = exports::read_artifact(l.data, l.size, l.display);
  if (!art || art->kind != exports::FileKind::SharedObject)
    return std::nullopt;
  if (l.input->in_memory() || l.streamed)
    return make_error(ErrorCode::InvalidInput,
                      "is an ELF shared library given as bytes; the link records a shared library by its path "
                      "(or its soname)",
                      l.display, {}, "pass it as a file (Input::file), or by name with -l and -L");
  exports::ObjectInfo info;
  info.format = art->format;
  info.arch = art->arch;
  info.kind = exports::FileKind::SharedObject;
  return info;
}

// In a device link, a host object carrying device code: what the images
// it carries hold (nvcc -rdc=true -c's fat binary: nvJitLink takes the
// object whole; clang -fgpu-rdc's offload images: the engine hands it the
// image for the link's architecture); an archive: what its members'
// device code holds. nullopt: neither.
std::optional<Expected<exports::ObjectInfo>> carried_device_code(LoadedInput &l) {
  if (l.size >= 8 && std::memcmp(l.data, "!<arch>\n", 8) == 0) // libcudadevrt.a, an archive of such objects
    return exports::read_device_archive(l.data, l.size, l.display);
  auto images = exports::carried_images(l.data, l.size, l.display);
  if (!images)
    return images.take_error();
  if (images->empty())
    return std::nullopt;
  l.device = std::move(*images);
  return exports::read_images(l.device, l.display);
}

} // namespace

std::optional<Error> read_inputs(PlanContext &ctx) {
  ctx.inputs.reserve(ctx.request.inputs.size());
  std::optional<exports::RecoveryScope> recovery;
  for (const Input &in : ctx.request.inputs) {
    LoadedInput l;
    l.input = &in;
    l.display = in.name.empty() ? in.path : in.name;
    l.data = in.bytes.data();
    l.size = in.bytes.size();
    if (!in.in_memory()) {
      llvm::SmallString<256> abs(in.path);
      llvm::sys::fs::make_absolute(abs);
      l.path = abs.str().str();
      llvm::sys::fs::file_status st;
      if (!llvm::sys::fs::status(l.path, st)) {
        if (st.type() == llvm::sys::fs::file_type::directory_file)
          return make_error(ErrorCode::InvalidInput, "is a directory", l.display, {},
                            "pass an object file or archive");
        l.streamed = st.type() != llvm::sys::fs::file_type::regular_file;
      }
      auto b = llvm::MemoryBuffer::getFile(l.path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
      if (!b)
        return make_error(ErrorCode::InputNotFound, "cannot read: " + b.getError().message(), l.display,
                          {}, "check that the path exists and is readable");
      l.file = std::move(*b);
      l.data = l.file->getBufferStart();
      l.size = l.file->getBufferSize();
    }
    auto known = ctx.target().arch == exports::Arch::NVPTX64 ? carried_device_code(l) : shared_library(l);
    if (!known && ctx.target().arch != exports::Arch::NVPTX64)
      if (auto own = image::read_elf_object(l.data, l.size, l.display)) // the host's objects, without LLVM
        known = std::move(*own);
    if (!known && !recovery)
      recovery.emplace(); // LLVM's readers: crash recovery on once for all of them
    auto info = known ? std::move(*known)
                      : exports::read_object(l.data, l.size, l.display, /*branch_info=*/!ctx.request.sysroot.empty());
    if (!info)
      return info.take_error();
    l.info = std::move(info.value());
    ctx.plan.job.input_bytes += l.size + l.info.alignment_padding;
    ctx.inputs.push_back(std::move(l));
  }
  return std::nullopt;
}

std::optional<Error> check_inputs(PlanContext &ctx) {
  const TargetInfo &tgt = ctx.target();
  const LoadedInput &first = ctx.inputs.front();
  for (const LoadedInput &l : ctx.inputs)
    if (l.info.format != first.info.format)
      return make_error(ErrorCode::MixedFormats,
                        std::string("is ") + exports::to_string(l.info.format) + " but '" + first.display +
                            "' is " + exports::to_string(first.info.format),
                        l.display, {}, "link objects of one format (and target) at a time");
  for (const LoadedInput &l : ctx.inputs) {
    if (l.info.format != tgt.format)
      return make_error(ErrorCode::FormatMismatch,
                        "is " + a_or_an(exports::to_string(l.info.format)) + " object, but the target " +
                            tgt.triple + " links " + exports::to_string(tgt.format),
                        l.display, {},
                        "compile it for the target, or pick the target that matches it with --target");
    if (l.info.arch != tgt.arch && tgt.arch == exports::Arch::NVPTX64 && l.info.format == exports::Format::ELF)
      return make_error(ErrorCode::ArchMismatch,
                        std::string("is a host object for ") + exports::to_string(l.info.arch) +
                            " that carries no device code",
                        l.display, {}, "compile it with nvcc -rdc=true -c, or give PTX, a cubin or a fat binary");
    if (l.info.arch != tgt.arch)
      return make_error(ErrorCode::ArchMismatch,
                        std::string("is built for ") + exports::to_string(l.info.arch) + ", but the target " +
                            tgt.triple + " is " + exports::to_string(tgt.arch),
                        l.display, {},
                        "compile it for the target, or pick the target that matches it with --target");
    // A GPU code object is an ELF shared library too, which no device link takes.
    if (l.shared() && (tgt.arch == exports::Arch::AMDGCN || tgt.arch == exports::Arch::NVPTX64))
      return make_error(ErrorCode::InvalidInput, "is a linked image, not a relocatable object", l.display, {},
                        "pass the objects or bitcode it was linked from");
    ctx.any_archive |= l.info.kind == exports::FileKind::Archive;
    ctx.any_shared |= l.shared();
    ctx.any_bitcode |= l.info.bitcode;
  }
  // LTO's code generation reads LLVM's options, which an in-process link
  // leaves as the host set them (llvm_options.h): with any set, bitcode
  // is compiled in a worker, where they have their defaults.
  if (ctx.any_bitcode && host_llvm_options_set())
    ctx.plan.needs_worker = true;
  return std::nullopt;
}

std::optional<Error> exclude_members(PlanContext &ctx) {
  if (ctx.request.exclude_members.empty())
    return std::nullopt;
  std::vector<bool> used(ctx.request.exclude_members.size(), false);
  for (LoadedInput &l : ctx.inputs) {
    if (l.info.kind != exports::FileKind::Archive)
      continue;
    std::string archive = llvm::sys::path::filename(l.display).str();
    auto excluded = [&](const std::string &member) {
      for (std::size_t i = 0; i < ctx.request.exclude_members.size(); ++i) {
        llvm::StringRef pat(ctx.request.exclude_members[i]);
        std::string member_pat = pat.str();
        if (pat.ends_with(")") && pat.contains('(')) {
          if (pat.substr(0, pat.find('(')) != archive)
            continue;
          member_pat = pat.substr(pat.find('(') + 1).drop_back().str();
        }
        auto g = llvm::GlobPattern::create(member_pat);
        if (g ? g->match(member) : (llvm::consumeError(g.takeError()), member == member_pat)) {
          used[i] = true;
          return true;
        }
      }
      return false;
    };
    llvm::MemoryBufferRef buf(llvm::StringRef(static_cast<const char *>(l.data), l.size), l.display);
    auto a = llvm::object::Archive::create(buf);
    if (!a)
      return make_error(ErrorCode::InvalidInput, "cannot reread the archive: " + llvm::toString(a.takeError()),
                        l.display);
    std::vector<llvm::NewArchiveMember> keep;
    llvm::Error err = llvm::Error::success();
    for (const llvm::object::Archive::Child &c : (*a)->children(err)) {
      auto name = c.getName();
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (excluded(name->str())) {
        l.excluded.push_back(name->str());
        continue;
      }
      auto m = llvm::NewArchiveMember::getOldMember(c, /*Deterministic=*/true);
      if (!m)
        return make_error(ErrorCode::InvalidInput, "cannot copy member '" + name->str() + "': " +
                                                       llvm::toString(m.takeError()),
                          l.display);
      keep.push_back(std::move(*m));
    }
    if (err)
      return make_error(ErrorCode::InvalidInput, "corrupt archive: " + llvm::toString(std::move(err)), l.display);
    if (l.excluded.empty())
      continue;
    auto out = llvm::writeArchiveToBuffer(keep, llvm::SymtabWritingMode::NormalSymtab,
                                          llvm::object::Archive::K_GNU, /*Deterministic=*/true,
                                          /*Thin=*/false);
    if (!out)
      return make_error(ErrorCode::Internal, "cannot write the archive without its excluded members: " +
                                                 llvm::toString(out.takeError()),
                        l.display);
    l.filtered.assign((*out)->getBufferStart(), (*out)->getBufferEnd());
    auto &syms = l.info.symbols;
    for (const exports::Symbol &s : syms)
      if (s.defined && std::find(l.excluded.begin(), l.excluded.end(), s.member) != l.excluded.end())
        ctx.excluded_definitions.emplace(s.name, s.member + " of " + archive);
    syms.erase(std::remove_if(syms.begin(), syms.end(),
                              [&](const exports::Symbol &s) {
                                return std::find(l.excluded.begin(), l.excluded.end(), s.member) !=
                                       l.excluded.end();
                              }),
               syms.end());
  }
  for (std::size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      return make_error(ErrorCode::BadRequest, "names no member of any archive input",
                        ctx.request.exclude_members[i], "--exclude-member",
                        "name a member as it appears in `ar t LIB.a` (MEMBER.o or LIB.a(MEMBER.o))");
  // A name another input (or a kept member) defines too is not lost.
  for (const LoadedInput &l : ctx.inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (s.defined)
        ctx.excluded_definitions.erase(s.name);
  return std::nullopt;
}

namespace {

// Who needs the names a left-out member defined: member -> (name -> the
// kept members or inputs that reference it).
using Needs = std::map<std::string, std::map<std::string, std::vector<std::string>>>;

Needs lost_references(const PlanContext &ctx) {
  Needs needs;
  for (const LoadedInput &l : ctx.inputs)
    for (const exports::Symbol &s : l.info.symbols) {
      if (s.defined || s.weak)
        continue;
      auto lost = ctx.excluded_definitions.find(s.name);
      if (lost == ctx.excluded_definitions.end())
        continue;
      std::vector<std::string> &who = needs[lost->second][s.name];
      std::string user = s.member.empty() ? llvm::sys::path::filename(l.display).str() : s.member;
      if (std::find(who.begin(), who.end(), user) == who.end())
        who.push_back(user);
    }
  return needs;
}

} // namespace

std::optional<Error> check_excluded(PlanContext &ctx, std::optional<Error> select_error) {
  if (select_error) {
    auto lost = ctx.excluded_definitions.find(select_error->symbol);
    if (select_error->code == ErrorCode::MissingExport && lost != ctx.excluded_definitions.end()) {
      select_error->message = "is to be exported, and " + lost->second +
                              " defines it, which --exclude-member leaves out";
      select_error->hint = "drop the export, or keep the member (a -fPIC build of the library can keep every one)";
    }
    return select_error;
  }
  for (const auto &[member, names] : lost_references(ctx)) {
    std::vector<std::string> parts, symbols;
    for (const auto &[name, users] : names) {
      parts.push_back(name + " (needed by " + base::list_some(users, 3) + ")");
      symbols.push_back(name);
    }
    ctx.plan.diagnostics.push_back(Diagnostic{
        Severity::Warning,
        "leaving out " + member + " leaves " + std::to_string(names.size()) + " name" +
            (names.size() == 1 ? "" : "s") + " it defines undefined: " + base::list_some(parts, parts.size()) +
            "; the artifact then loads only into a process that defines them (keep the member: rebuild the "
            "library with -fPIC)",
        member.substr(member.rfind(" of ") + 4), symbols.front()});
  }
  return std::nullopt;
}

} // namespace hotlink::detail
