// Planning a link: a short pipeline of named steps, each with one job, in
// the order lld's LinkerDriver::link reads: the target, the request's
// options, the inputs, the exports, the runtime environment, then lld's
// arguments.
#include "linker/plan.h"
#include "base/clock.h"

#include "exports/names.h"
#include "exports/symbols.h"
#include "exports/version_script.h"
#include "exports/writers.h"
#include "linker/llvm_options.h"
#include "linker/mingw.h"
#include "linker/msvc_cxx.h"
#include "linker/windows.h"
#include "linker/runtime.h"
#include "linker/support.h"

#include "llvm/LTO/LTO.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_set>

namespace hotlink::detail {

using exports::Format;

namespace {


// A file name for an in-memory input inside the scratch directory: unique by
// index, readable in lld's messages, and free of path syntax.
std::string scratch_name(std::size_t index, const std::string &name) {
  std::string base = llvm::sys::path::filename(name).str();
  std::string clean;
  for (char c : base.substr(0, 64))
    clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return "in" + std::to_string(index) + "-" + (clean.empty() ? "input" : clean);
}

Arg plain(std::string s) { return Arg{std::move(s), false, {}, {}}; }
Arg keyed(std::string s, std::string key) { return Arg{std::move(s), false, {}, std::move(key)}; }
Arg in_dir(std::string before, std::string name) { return Arg{std::move(before), true, std::move(name), {}}; }

bool is_dir(const std::string &p) { return llvm::sys::fs::is_directory(p); }

// "an ELF object", "a COFF object".
std::string a_or_an(const char *word) {
  return std::string(std::strchr("AEIOUaeiou", word[0]) ? "an " : "a ") + word;
}

std::string_view base_name(std::string_view symbol) { return symbol.substr(0, symbol.find('@')); }

// One input as read: its bytes (borrowed from the request or a file read
// here, or an archive rewritten without excluded members) and symbols.
struct Loaded {
  const Input *input = nullptr;
  std::string display;
  std::string path; // absolute path for file inputs
  std::unique_ptr<llvm::MemoryBuffer> file;
  const void *data = nullptr;
  std::size_t size = 0;
  std::vector<std::uint8_t> filtered; // an archive without excluded members
  std::vector<std::string> excluded;  // those members
  exports::ObjectInfo info;
};

#define HOTLINK_STEP(step)                                                                         \
  if (auto err = (step))                                                                           \
    return std::move(*err);

class Planner {
public:
  Planner(const LinkRequest &req, Timings &timings, bool digest)
      : req_(req), timings_(timings), digest_(digest) {}

  Expected<Plan> run() {
    auto t0 = std::chrono::steady_clock::now();
    HOTLINK_STEP(resolve_target());
    HOTLINK_STEP(check_request());
    HOTLINK_STEP(read_inputs());
    HOTLINK_STEP(check_inputs());
    HOTLINK_STEP(exclude_members());
    HOTLINK_STEP(select_exports());
    HOTLINK_STEP(merge_def());
    HOTLINK_STEP(merge_version_script());
    HOTLINK_STEP(runtime_environment());
    HOTLINK_STEP(windows_libraries());
    timings_.validate_ms = base::ms_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    target_flags();
    HOTLINK_STEP(export_file());
    inputs();
    HOTLINK_STEP(support_objects());
    libraries();
    HOTLINK_STEP(extra_flags());
    timings_.prepare_ms = base::ms_since(t1);
    return std::move(plan_);
  }

private:
  // --- 1. The target and the request's own options -------------------------

  std::optional<Error> resolve_target() {
    auto target = detail::resolve_target(req_.target);
    if (!target)
      return target.take_error();
    plan_.target = *target;
    return std::nullopt;
  }

  bool elf() const { return plan_.target.format == Format::ELF; }
  bool coff() const { return plan_.target.format == Format::COFF; }
  bool mingw() const { return coff() && plan_.target.mingw; }
  // An lld-link option: as it is, or through lld's MinGW driver.
  Arg link_flag(const std::string &s) const { return plain(mingw() ? "--Xlink=" + s : s); }
  Arg link_file(const std::string &before, const std::string &name) const {
    return in_dir(mingw() ? "--Xlink=" + before : before, name);
  }

  std::optional<Error> check_request() {
    const TargetInfo &tgt = plan_.target;
    if (req_.inputs.empty())
      return make_error(ErrorCode::BadRequest, "the link has no inputs", {}, {},
                        "pass at least one object file");
    if (req_.threads == 0)
      return make_error(ErrorCode::BadRequest, "threads must be at least 1", {}, "--threads");
    if ((!req_.def_input.empty() || !req_.def_output.empty() || !req_.implib_output.empty()) && !coff())
      return make_error(ErrorCode::BadRequest,
                        ".def files and import libraries are for COFF targets, not " + tgt.triple, {},
                        !req_.def_input.empty() ? "--def-in" : !req_.def_output.empty() ? "--def" : "--implib",
                        "drop the option, or link for a -windows-msvc target");
    if ((!req_.pdb_output.empty() || req_.debug) && !coff())
      return make_error(ErrorCode::BadRequest, "PDBs are for COFF targets, not " + tgt.triple +
                                                   " (an ELF or Mach-O artifact keeps its debug info itself)",
                        {}, !req_.pdb_output.empty() ? "--pdb" : "--debug", "drop the option");
    if (!req_.def_output.empty() && req_.exports.mode == exports::ExportPolicy::Mode::None &&
        req_.def_input.empty())
      return make_error(ErrorCode::BadRequest, "a .def needs an export list, and the policy is 'none'",
                        {}, "--def", "choose an export policy other than none");
    for (const auto &[set, flag] : {std::pair{!req_.soname.empty(), "--soname"},
                                    std::pair{!req_.version_script.empty(), "--version-script"},
                                    std::pair{req_.cxx_runtime != CxxRuntime::Auto, "--cxx-runtime"},
                                    std::pair{req_.runtime != Runtime::Auto, "--no-default-libs"}})
      if (set && !elf())
        return make_error(ErrorCode::BadRequest, std::string(flag) + " is for ELF targets, not " + tgt.triple,
                          {}, flag, "drop the option, or link for a -linux-gnu target");
    for (char c : req_.soname)
      if (static_cast<unsigned char>(c) < 0x20 || c == '/')
        return make_error(ErrorCode::BadRequest, "a soname is a file name: no '/' or control characters",
                          req_.soname, "--soname", "pass a name like libfoo.so.1");
    if (!req_.version_script.empty() && !llvm::sys::fs::is_regular_file(req_.version_script))
      return make_error(ErrorCode::InputNotFound, "the version script cannot be read", req_.version_script,
                        "--version-script", "check the path");
    for (const std::string &f : req_.extra_flags)
      if (f.find("mllvm") != std::string::npos || f.find("plugin-opt") != std::string::npos)
        plan_.needs_worker = true;
    for (const std::string &p : req_.library_paths)
      if (!is_dir(p))
        return make_error(ErrorCode::BadRequest, "library path is not a directory", p, "-L",
                          "pass an existing directory");
    if (!req_.sysroot.empty() && !is_dir(req_.sysroot))
      return make_error(ErrorCode::BadRequest, "sysroot is not a directory", req_.sysroot, "--sysroot",
                        "pass an existing directory");
    if (req_.executable && mingw())
      return make_error(ErrorCode::BadRequest, "executables are linked for -windows-msvc targets only, not " + tgt.triple,
                        {}, "--exe", "link the host for x86_64-pc-windows-msvc; it loads GNU-ABI DLLs as any other");
    if (req_.executable && !coff())
      return make_error(ErrorCode::BadRequest, "executables are linked for COFF targets only, not " + tgt.triple,
                        {}, "--exe", "link a shared object, or target -windows-msvc");
    if (req_.executable && req_.entry.empty())
      return make_error(ErrorCode::BadRequest, "an executable needs an entry point", {}, "--entry",
                        "name the function the program starts at (--entry NAME)");
    return std::nullopt;
  }

  // --- 2. The inputs --------------------------------------------------------

  std::optional<Error> read_inputs() {
    loaded_.reserve(req_.inputs.size());
    for (const Input &in : req_.inputs) {
      Loaded l;
      l.input = &in;
      l.display = in.name.empty() ? in.path : in.name;
      l.data = in.bytes.data();
      l.size = in.bytes.size();
      if (!in.in_memory()) {
        llvm::SmallString<256> abs(in.path);
        llvm::sys::fs::make_absolute(abs);
        l.path = abs.str().str();
        if (is_dir(l.path))
          return make_error(ErrorCode::InvalidInput, "is a directory", l.display, {},
                            "pass an object file or archive");
        auto b = llvm::MemoryBuffer::getFile(l.path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
        if (!b)
          return make_error(ErrorCode::InputNotFound, "cannot read: " + b.getError().message(), l.display,
                            {}, "check that the path exists and is readable");
        l.file = std::move(*b);
        l.data = l.file->getBufferStart();
        l.size = l.file->getBufferSize();
      }
      auto info = exports::read_object(l.data, l.size, l.display, /*branch_info=*/!req_.sysroot.empty());
      if (!info)
        return info.take_error();
      l.info = std::move(info.value());
      plan_.job.input_bytes += l.size;
      loaded_.push_back(std::move(l));
    }
    return std::nullopt;
  }

  std::optional<Error> check_inputs() {
    const TargetInfo &tgt = plan_.target;
    const Loaded &first = loaded_.front();
    for (const Loaded &l : loaded_)
      if (l.info.format != first.info.format)
        return make_error(ErrorCode::MixedFormats,
                          std::string("is ") + exports::to_string(l.info.format) + " but '" + first.display +
                              "' is " + exports::to_string(first.info.format),
                          l.display, {}, "link objects of one format (and target) at a time");
    for (const Loaded &l : loaded_) {
      if (l.info.format != tgt.format)
        return make_error(ErrorCode::FormatMismatch,
                          "is " + a_or_an(exports::to_string(l.info.format)) + " object, but the target " +
                              tgt.triple + " links " + exports::to_string(tgt.format),
                          l.display, {},
                          "compile it for the target, or pick the target that matches it with --target");
      if (l.info.arch != tgt.arch)
        return make_error(ErrorCode::ArchMismatch,
                          std::string("is built for ") + exports::to_string(l.info.arch) + ", but the target " +
                              tgt.triple + " is " + exports::to_string(tgt.arch),
                          l.display, {},
                          "compile it for the target, or pick the target that matches it with --target");
      any_archive_ |= l.info.kind == exports::FileKind::Archive;
      any_bitcode_ |= l.info.bitcode;
    }
    // LTO's code generation reads LLVM's options, which an in-process link
    // leaves as the host set them (llvm_options.h): with any set, bitcode
    // is compiled in a worker, where they have their defaults.
    if (any_bitcode_ && host_llvm_options_set())
      plan_.needs_worker = true;
    return std::nullopt;
  }

  // Archive members the request leaves out: each archive input that has
  // one is rewritten without it (in memory), and its symbols are dropped.
  std::optional<Error> exclude_members() {
    if (req_.exclude_members.empty())
      return std::nullopt;
    std::vector<bool> used(req_.exclude_members.size(), false);
    for (Loaded &l : loaded_) {
      if (l.info.kind != exports::FileKind::Archive)
        continue;
      std::string archive = llvm::sys::path::filename(l.display).str();
      auto excluded = [&](const std::string &member) {
        for (std::size_t i = 0; i < req_.exclude_members.size(); ++i) {
          llvm::StringRef pat(req_.exclude_members[i]);
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
                          req_.exclude_members[i], "--exclude-member",
                          "name a member as it appears in `ar t LIB.a` (MEMBER.o or LIB.a(MEMBER.o))");
    return std::nullopt;
  }

  // --- 3. Exports -----------------------------------------------------------

  // Calls f with every input's ObjectInfo, lent for the call (moved out
  // and back: a large object's symbols are not copied).
  template <class F> auto with_infos(F f) {
    std::vector<exports::ObjectInfo> all;
    all.reserve(loaded_.size());
    for (Loaded &l : loaded_)
      all.push_back(std::move(l.info));
    auto result = f(const_cast<const std::vector<exports::ObjectInfo> &>(all));
    for (std::size_t i = 0; i < loaded_.size(); ++i)
      loaded_[i].info = std::move(all[i]);
    return result;
  }

  std::optional<Error> select_exports() {
    export_list_ = req_.exports.mode != exports::ExportPolicy::Mode::None;
    if (!export_list_)
      return std::nullopt;
    const TargetInfo &tgt = plan_.target;
    auto chosen = with_infos([&](const std::vector<exports::ObjectInfo> &all) {
      return exports::select_exports(all, tgt.format, tgt.arch, req_.exports);
    });
    if (!chosen)
      return chosen.take_error();
    plan_.exports = std::move(chosen.value());
    return std::nullopt;
  }

  std::optional<Error> merge_def() {
    if (req_.def_input.empty())
      return std::nullopt;
    const TargetInfo &tgt = plan_.target;
    auto text = llvm::MemoryBuffer::getFile(req_.def_input, /*IsText=*/true);
    if (!text)
      return make_error(ErrorCode::InputNotFound, "cannot read: " + text.getError().message(), req_.def_input,
                        "--def-in", "check the path");
    auto def = exports::parse_def((*text)->getBuffer().str(), tgt.arch, req_.def_input);
    if (!def)
      return def.take_error();
    exports::DefMerge merged = exports::merge_def(plan_.exports, def.value());
    std::unordered_set<std::string_view> defined;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (s.defined)
          defined.insert(s.name);
    for (const exports::Export &e : merged.exports)
      if (!defined.count(e.symbol) && !defined.count(exports::decorate(tgt.format, tgt.arch, e.symbol)))
        return make_error(ErrorCode::MissingExport, "is exported by the .def but no input defines it",
                          req_.def_input, e.name, "remove it from the .def, or add the object that defines it");
    plan_.exports = std::move(merged.exports);
    plan_.warnings = std::move(merged.conflicts);
    export_list_ = true;
    return std::nullopt;
  }

  // A user's version script: its nodes claim some names (exported with
  // their versions, by the script itself); the policy's other exports go
  // into hotlink's anonymous node, which also makes everything else local.
  std::optional<Error> merge_version_script() {
    if (req_.version_script.empty())
      return std::nullopt;
    auto text = llvm::MemoryBuffer::getFile(req_.version_script, /*IsText=*/true);
    if (!text)
      return make_error(ErrorCode::InputNotFound, "cannot read: " + text.getError().message(),
                        req_.version_script, "--version-script", "check the path");
    user_script_ = (*text)->getBuffer().str();
    auto nodes = exports::parse_version_script(user_script_, req_.version_script);
    if (!nodes)
      return nodes.take_error();
    std::unordered_set<std::string> exported;
    std::vector<exports::Export> unclaimed;
    for (const exports::Export &e : plan_.exports) {
      exported.insert(e.symbol);
      if (!exports::claiming_node(*nodes, e.symbol, exports::demangle(e.symbol)) &&
          !exports::names_local(*nodes, e.symbol))
        unclaimed.push_back(e);
    }
    std::vector<exports::Export> claimed_extra;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (s.defined && !s.hidden && !exported.count(s.name) &&
            exports::claiming_node(*nodes, s.name, exports::demangle(s.name))) {
          exported.insert(s.name);
          claimed_extra.push_back({s.name, s.name, s.data});
        }
    anonymous_exports_ = std::move(unclaimed);
    plan_.exports.insert(plan_.exports.end(), claimed_extra.begin(), claimed_extra.end());
    std::sort(plan_.exports.begin(), plan_.exports.end(),
              [](const exports::Export &a, const exports::Export &b) { return a.name < b.name; });
    has_user_script_ = true;
    return std::nullopt;
  }

  // --- 4. The runtime environment -------------------------------------------

  // One pass over the inputs' symbols for what the runtime step needs:
  // every undefined name, versions stripped (what the stubs must hold),
  // whether one looks like the C++ runtime's, and whether an input defines
  // a .symver'ed name.
  struct SymbolScan {
    std::unordered_set<std::string_view> undefined;
    bool cxx_reference = false, versioned_definition = false;
  };
  SymbolScan scan_symbols() const {
    SymbolScan scan;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols) {
        if (s.defined) {
          scan.versioned_definition |= s.name.find('@') != std::string::npos;
          continue;
        }
        scan.undefined.insert(base_name(s.name));
        scan.cxx_reference |= is_cxx_runtime_symbol(s.name);
      }
    return scan;
  }

  // The names the inputs define.
  std::unordered_set<std::string_view> defined_names() const {
    std::unordered_set<std::string_view> defined;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (s.defined)
          defined.insert(s.name);
    return defined;
  }

  CxxLibrary cxx_library(const SymbolScan &scan) const {
    switch (req_.cxx_runtime) {
    case CxxRuntime::Libstdcxx: return CxxLibrary::Libstdcxx;
    case CxxRuntime::Libcxx: return CxxLibrary::Libcxx;
    case CxxRuntime::None: return CxxLibrary::None;
    case CxxRuntime::Auto: break;
    }
    if (!scan.cxx_reference)
      return CxxLibrary::None;
    // A C++ name another input defines is not the runtime's.
    std::unordered_set<std::string_view> defined = defined_names();
    for (std::string_view n : scan.undefined)
      if (is_cxx_runtime_symbol(n) && !defined.count(n))
        return CxxLibrary::Libstdcxx;
    return CxxLibrary::None;
  }

  std::optional<Error> runtime_environment() {
    if (mingw())
      return mingw_runtime();
    if (!elf())
      return std::nullopt;
    SymbolScan scan = scan_symbols();
    std::unordered_set<std::string_view> &names = scan.undefined;
    if (any_bitcode_) {
      // LTO code generation may call runtime functions the bitcode does not
      // name (memcpy, __udivti3, ...): the stubs hold them all.
      llvm::Triple triple(plan_.target.triple);
      for (const char *n : llvm::lto::LTO::getRuntimeLibcallSymbols(triple))
        names.insert(n);
    }
    CxxLibrary cxx = cxx_library(scan);
    if (req_.runtime == Runtime::None) {
      warn_bare(names, nullptr);
      return std::nullopt;
    }
    auto env = detail::runtime_environment(plan_.target, req_.sysroot, cxx);
    if (!env)
      return env.take_error();
    if (!(*env)->has_libc) {
      warn_bare(names, env->get());
      return std::nullopt;
    }
    // The stubs hold what hotlink can see the link naming; libraries,
    // search paths and raw flags of the user's can name more.
    RuntimeChoice choice;
    choice.exact = !req_.runtime_stubs || !req_.libraries.empty() || !req_.library_paths.empty() ||
                   !req_.extra_flags.empty() || scan.versioned_definition;
    choice.startup_objects = req_.startup_objects == StartupObjects::Always || any_bitcode_ ||
                             names.count("__gmon_start__") || names.count("mcount") ||
                             names.count("__fentry__");
    for (const Loaded &l : loaded_)
      choice.startup_objects |= l.info.startup_sections;
    runtime_ = runtime_link(**env, names, choice);
    env_ = env.value();
    plan_.keep_alive = runtime_;
    plan_.runtime = runtime_->used;
    plan_.fingerprints.insert(plan_.fingerprints.end(), (*env)->fingerprints.begin(),
                              (*env)->fingerprints.end());
    return std::nullopt;
  }

  // *-w64-mingw32: the runtime `clang -shared` links, with libstdc++ when
  // the inputs use the C++ runtime.
  std::optional<Error> mingw_runtime() {
    if (req_.runtime == Runtime::None)
      return std::nullopt;
    CxxLibrary cxx = cxx_library(scan_symbols());
    auto env = mingw_environment(plan_.target, req_.sysroot, cxx);
    if (!env)
      return env.take_error();
    if (!(*env)->found) {
      plan_.diagnostics.push_back(Diagnostic{
          Severity::Warning,
          (*env)->missing + ": linked without the mingw-w64 runtime (no DLL entry point, C runtime or libgcc); " +
              "install " + mingw_package(plan_.target) + " or give its root with --sysroot",
          {}, {}});
      return std::nullopt;
    }
    if (!(*env)->unresolved.empty()) {
      std::string list;
      for (const std::string &u : (*env)->unresolved)
        list += (list.empty() ? "" : ", ") + u;
      return make_error(ErrorCode::InputNotFound,
                        "the mingw-w64 runtime for " + plan_.target.triple + " is incomplete: " + list +
                            " not found" + (req_.sysroot.empty() ? "" : " under " + req_.sysroot),
                        req_.sysroot, "--sysroot",
                        "install " + mingw_package(plan_.target) +
                            (req_.sysroot.empty() ? "" : ", or give the root that holds lib/gcc/<triple>/") +
                            (cxx == CxxLibrary::None ? "" : " (C++ needs its libstdc++)"));
    }
    mingw_ = env.value();
    plan_.runtime = mingw_->summary;
    plan_.fingerprints.insert(plan_.fingerprints.end(), mingw_->fingerprints.begin(), mingw_->fingerprints.end());
    return std::nullopt;
  }

  // A link without a C library: references to C library functions bind
  // at load time to whatever the process has, without symbol versions.
  void warn_bare(const std::unordered_set<std::string_view> &undefined, const RuntimeEnvironment *env) {
    std::unordered_set<std::string_view> defined = defined_names();
    std::vector<std::string> named;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (!s.defined && !s.weak && !defined.count(s.name))
          named.push_back(std::string(base_name(s.name)));
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    if (named.empty())
      return;
    std::string list;
    for (std::size_t i = 0; i < named.size() && i < 12; ++i)
      list += (i ? ", " : "") + named[i];
    if (named.size() > 12)
      list += " and " + std::to_string(named.size() - 12) + " more";
    std::string why = env ? env->missing + "; " : "";
    std::string fix = req_.runtime == Runtime::None
                          ? "drop --no-default-libs to link the target's C library"
                          : "install the target's C library (for aarch64-linux-gnu: Debian libc6-dev-arm64-cross "
                            "libgcc-12-dev-arm64-cross) or give its root with --sysroot";
    plan_.diagnostics.push_back(Diagnostic{
        Severity::Warning,
        why + "linked without a C library: " + list +
            (named.size() == 1 ? " is" : " are") +
            " left to the loading process and bind without symbol versions (glibc then gives the oldest "
            "version of each function, which can behave differently); " + fix,
        {}, named.front()});
  }

  std::optional<Error> windows_libraries() {
    if (!coff() || mingw())
      return std::nullopt;
    std::vector<std::string> undefined = undefined_names();
    crt_entry_ = needs_crt_entry(undefined);
    if (req_.sysroot.empty()) {
      warn_initializers_without_crt();
      return std::nullopt;
    }
    std::vector<std::string> names;
    for (const Loaded &l : loaded_)
      names.push_back(l.display);
    std::vector<std::string> provided;
    if (req_.support_objects)
      provided = support_symbols(plan_.target);
    HOTLINK_STEP(msvc_cxx_runtime(undefined, provided));
    auto w = with_infos([&](const std::vector<exports::ObjectInfo> &all) {
      return plan_windows_libraries(plan_.target, req_, all, names, provided);
    });
    if (!w)
      return w.take_error();
    plan_.windows = std::move(w.value());
    plan_.diagnostics.insert(plan_.diagnostics.end(), plan_.windows->diagnostics.begin(),
                             plan_.windows->diagnostics.end());
    for (const std::string &f : plan_.windows->fingerprints)
      plan_.fingerprints.push_back(f);
    return std::nullopt;
  }

  // The names the inputs reference and none of them defines.
  std::vector<std::string> undefined_names() const {
    std::unordered_set<std::string_view> defined = defined_names();
    std::vector<std::string> out;
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (!s.defined && !defined.count(s.name))
          out.push_back(s.name);
    return out;
  }

  // A DLL (MSVC ABI) needs an entry point that runs its static
  // initializers (.CRT$XI* / .CRT$XC*), the exit functions it registers
  // (static destructors) and its own DllMain, as MSVC's CRT links one.
  bool needs_crt_entry(const std::vector<std::string> &undefined) const {
    if (req_.executable)
      return false;
    for (const Loaded &l : loaded_)
      if (l.info.startup_sections)
        return true;
    const std::string dllmain = plan_.target.arch == exports::Arch::X86 ? "_DllMain@12" : "DllMain";
    if (defines(dllmain))
      return true;
    for (const std::string &u : undefined)
      if (is_exit_registration(u))
        return true;
    return false;
  }

  // Without a sysroot there is no CRT to run static constructors: say so
  // rather than link a DLL whose globals are never constructed.
  void warn_initializers_without_crt() {
    if (!crt_entry_)
      return;
    plan_.diagnostics.push_back(Diagnostic{
        Severity::Warning,
        "the inputs have static initializers, exit functions or a DllMain, which need the C runtime's DLL entry "
        "point; without a sysroot the DLL has none and they never run: link with --sysroot (e.g. /usr/" +
            std::string(plan_.target.arch == exports::Arch::X86 ? "i686" : "x86_64") + "-w64-mingw32)",
        {}, {}});
    crt_entry_ = false;
  }

  // MSVC-ABI C++ against a mingw-w64 sysroot: hotlink's C++ runtime pieces
  // (msvc_cxx.h), when the inputs reference them or need the entry point.
  std::optional<Error> msvc_cxx_runtime(const std::vector<std::string> &undefined,
                                        std::vector<std::string> &provided) {
    bool cxx = false;
    for (const std::string &u : undefined)
      cxx |= may_need_msvc_cxx(u);
    if ((!cxx && !crt_entry_) || sysroot_layout(req_.sysroot, plan_.target.arch) != "mingw-w64")
      return std::nullopt;
    std::string crt = req_.windows_crt == WindowsCrt::Msvcrt ? "msvcrt" : "ucrt";
    auto rt = detail::msvc_cxx_runtime(plan_.target, crt);
    if (!rt)
      return rt.take_error();
    std::unordered_set<std::string> provides((*rt)->provides.begin(), (*rt)->provides.end());
    // With msvcrt, what it lacks comes from an import library after it.
    bool used = crt_entry_ || (cxx && !(*rt)->after_crt.empty());
    for (const std::string &u : undefined)
      used |= provides.count(u) > 0;
    if (!used)
      return std::nullopt;
    msvc_cxx_ = rt.value();
    provided.insert(provided.end(), (*rt)->provides.begin(), (*rt)->provides.end());
    return std::nullopt;
  }

  // --- 5. lld's arguments ---------------------------------------------------

  void target_flags() {
    const TargetInfo &tgt = plan_.target;
    Job &job = plan_.job;
    job.flavor = tgt.flavor;
    std::string out_name;
    if (!req_.output_path.empty())
      out_name = llvm::sys::path::filename(req_.output_path).str();
    if (out_name.empty())
      out_name = "hotlink" + tgt.extension;
    job.output_name = out_name;
    std::vector<Arg> &a = job.args;
    const std::string threads = std::to_string(req_.threads);
    switch (tgt.format) {
    case Format::ELF:
      if (env_) {
        // The driver's line up to the inputs: its flags (-shared, -m,
        // --hash-style, --build-id, --eh-frame-hdr, --sysroot) and the
        // startup objects.
        a.insert(a.end(), runtime_->before.begin(), runtime_->before.end());
      } else {
        a.push_back(plain("-shared"));
        a.push_back(plain(tgt.arch == exports::Arch::AArch64 ? "-maarch64linux" : "-melf_x86_64"));
        a.push_back(plain("--hash-style=gnu"));
        a.push_back(plain("--build-id"));
        a.push_back(plain("--eh-frame-hdr"));
        if (!req_.sysroot.empty())
          a.push_back(plain("--sysroot=" + req_.sysroot));
      }
      a.push_back(keyed("--threads=" + threads, "<threads>"));
      if (any_bitcode_)
        a.push_back(keyed("--thinlto-jobs=" + threads, "<threads>"));
      a.push_back(plain("-soname=" + (req_.soname.empty() ? out_name : req_.soname)));
      a.push_back(plain("-o"));
      a.push_back(in_dir("", out_name));
      if (req_.undefined == Undefined::Error)
        a.push_back(plain("-zdefs"));
      if (req_.symbolic)
        a.push_back(plain("-Bsymbolic-non-weak"));
      break;
    case Format::COFF:
      if (mingw()) {
        mingw_flags(out_name, threads);
        break;
      }
      if (req_.executable) {
        a.push_back(plain("-entry:" + req_.entry));
        a.push_back(plain("-subsystem:console"));
      } else {
        a.push_back(plain("-dll"));
        a.push_back(plain(crt_entry_ ? "-entry:_DllMainCRTStartup" : "-noentry"));
      }
      a.push_back(plain("-nodefaultlib"));
      a.push_back(plain("-Brepro"));
      a.push_back(plain(tgt.arch == exports::Arch::X86_64 ? "-machine:x64"
                        : tgt.arch == exports::Arch::X86  ? "-machine:x86"
                                                          : "-machine:arm64"));
      if (tgt.arch == exports::Arch::X86)
        a.push_back(plain("-safeseh:no"));
      a.push_back(keyed("-threads:" + threads, "<threads>"));
      a.push_back(in_dir("-out:", out_name));
      if (req_.undefined == Undefined::Allow)
        a.push_back(plain("-force:unresolved"));
      if (plan_.windows)
        for (const std::string &d : plan_.windows->lib_dirs)
          a.push_back(plain("-libpath:" + d));
      break;
    case Format::MachO:
      for (const char *s : {"-dylib", "-arch"})
        a.push_back(plain(s));
      a.push_back(plain(tgt.arch == exports::Arch::AArch64 ? "arm64" : "x86_64"));
      for (const char *s : {"-platform_version", "macos", "13.0", "13.0", "-undefined"})
        a.push_back(plain(s));
      a.push_back(plain(req_.undefined == Undefined::Error ? "error" : "dynamic_lookup"));
      a.push_back(plain("-install_name"));
      a.push_back(plain("@rpath/" + out_name));
      a.push_back(keyed("--threads=" + threads, "<threads>"));
      a.push_back(plain("-o"));
      a.push_back(in_dir("", out_name));
      if (!req_.sysroot.empty()) {
        a.push_back(plain("-syslibroot"));
        a.push_back(plain(req_.sysroot));
      }
      break;
    case Format::Wasm:
      a.push_back(plain("--no-entry"));
      a.push_back(keyed("--threads=" + threads, "<threads>"));
      a.push_back(plain("-o"));
      a.push_back(in_dir("", out_name));
      if (req_.undefined == Undefined::Allow)
        a.push_back(plain("--allow-undefined"));
      if (!req_.sysroot.empty() && is_dir(req_.sysroot + "/lib"))
        a.push_back(plain("-L" + req_.sysroot + "/lib"));
      break;
    case Format::Unknown:
      break;
    }
  }

  // lld's MinGW driver: the mingw driver's line up to the inputs (-m,
  // --shared, the entry point, the startup objects, -L), or a bare DLL.
  void mingw_flags(const std::string &out_name, const std::string &threads) {
    std::vector<Arg> &a = plan_.job.args;
    if (mingw_) {
      for (const std::string &s : mingw_->before)
        a.push_back(plain(s));
    } else {
      a.push_back(plain("-m"));
      a.push_back(plain(plan_.target.arch == exports::Arch::X86       ? "i386pe"
                        : plan_.target.arch == exports::Arch::AArch64 ? "arm64pe"
                                                                      : "i386pep"));
      a.push_back(plain("--shared"));
      a.push_back(link_flag("-noentry"));
    }
    a.push_back(keyed("--threads=" + threads, "<threads>"));
    a.push_back(plain("--exclude-all-symbols")); // the export list says what is exported
    a.push_back(link_flag("-Brepro"));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req_.undefined == Undefined::Allow)
      a.push_back(link_flag("-force:unresolved"));
  }

  void add_file(const char *name, const std::string &text) {
    plan_.job.files.push_back(JobFile::own(name, std::vector<std::uint8_t>(text.begin(), text.end())));
  }

  // With `all` or `none` every member of an archive input goes in (an
  // archive never yields an empty artifact); with a list, the members that
  // define an export are pulled in by name.
  bool whole_archives() const {
    return req_.exports.mode == exports::ExportPolicy::Mode::All ||
           req_.exports.mode == exports::ExportPolicy::Mode::None;
  }

  // The format's export list, written by exports/ (which refuses any name
  // that could change the list's meaning).
  std::optional<Error> export_file() {
    const TargetInfo &tgt = plan_.target;
    std::vector<Arg> &a = plan_.job.args;
    if (export_list_) {
      switch (tgt.format) {
      case Format::ELF: {
        auto script = exports::write_version_script(has_user_script_ ? anonymous_exports_ : plan_.exports);
        if (!script)
          return script.take_error();
        plan_.export_file = script.value();
        add_file("exports.ver", plan_.export_file);
        a.push_back(in_dir("--version-script=", "exports.ver"));
        if (any_archive_ && !whole_archives())
          for (const exports::Export &e : plan_.exports)
            a.push_back(plain("--undefined=" + e.symbol));
        break;
      }
      case Format::COFF: {
        auto def = exports::write_def(plan_.exports, plan_.job.output_name);
        if (!def)
          return def.take_error();
        plan_.export_file = def.value();
        add_file("exports.def", plan_.export_file);
        a.push_back(link_file("-def:", "exports.def"));
        break;
      }
      case Format::MachO: {
        auto list = exports::write_macho_list(plan_.exports);
        if (!list)
          return list.take_error();
        plan_.export_file = list.value();
        add_file("exports.txt", plan_.export_file);
        a.push_back(plain("-exported_symbols_list"));
        a.push_back(in_dir("", "exports.txt"));
        if (any_archive_)
          for (const exports::Export &e : plan_.exports) {
            a.push_back(plain("-u"));
            a.push_back(plain(e.symbol));
          }
        break;
      }
      case Format::Wasm: {
        auto flags = exports::write_wasm_flags(plan_.exports);
        if (!flags)
          return flags.take_error();
        for (const std::string &f : flags.value()) {
          a.push_back(plain(f));
          plan_.export_file += f + "\n";
        }
        break;
      }
      case Format::Unknown:
        break;
      }
    }
    if (has_user_script_) {
      add_file("user.ver", user_script_);
      a.push_back(in_dir("--version-script=", "user.ver"));
      plan_.export_file += "# merged with " + req_.version_script + ":\n" + user_script_;
    }
    if (coff()) {
      if (req_.implib_output.empty() && !req_.want_implib) {
        a.push_back(link_flag("-noimplib"));
      } else {
        plan_.job.implib_name = llvm::sys::path::stem(plan_.job.output_name).str() + ".lib";
        a.push_back(link_file("-implib:", plan_.job.implib_name));
      }
      pdb();
    }
    return std::nullopt;
  }

  // COFF: the PDB is written in the scratch directory under the name it is
  // published by, which the DLL's CodeView record names (debuggers look
  // for that name beside the DLL); -Brepro makes its GUID follow from the
  // content.
  void pdb() {
    if (req_.pdb_output.empty() && !req_.debug)
      return;
    if (!req_.pdb_output.empty()) {
      plan_.pdb_path = req_.pdb_output;
    } else if (!req_.output_path.empty()) {
      llvm::SmallString<256> p(req_.output_path);
      llvm::sys::path::replace_extension(p, ".pdb");
      plan_.pdb_path = p.str().str();
    }
    std::string file = !plan_.pdb_path.empty() ? llvm::sys::path::filename(plan_.pdb_path).str()
                                               : llvm::sys::path::stem(plan_.job.output_name).str() + ".pdb";
    plan_.job.pdb_name = file;
    std::vector<Arg> &a = plan_.job.args;
    a.push_back(link_flag("-debug"));
    a.push_back(link_file("-pdb:", file));
    a.push_back(link_flag("-pdbaltpath:" + file));
    bool codeview = false;
    for (const Loaded &l : loaded_)
      codeview |= l.info.codeview;
    if (!codeview)
      plan_.diagnostics.push_back(Diagnostic{
          Severity::Warning,
          "no input carries CodeView debug info, so the PDB holds public symbols only; compile with "
          "-g -gcodeview (clang) or /Z7 (MSVC)",
          {}, {}});
  }

  // The inputs in order; in-memory ones (and rewritten archives) become
  // scratch files. The key sees each input as its bytes, never its name.
  void inputs() {
    Job &job = plan_.job;
    std::vector<Arg> &a = job.args;
    for (const std::string &p : req_.library_paths)
      a.push_back(plain((coff() && !mingw() ? "-libpath:" : "-L") + p));
    bool whole = whole_archives() && plan_.target.format != Format::COFF;
    for (std::size_t i = 0; i < loaded_.size(); ++i) {
      Loaded &l = loaded_[i];
      bool archive = l.info.kind == exports::FileKind::Archive;
      std::string key = "<input " + std::to_string(i) + ">";
      for (const std::string &m : l.excluded)
        key += " -" + m;
      if (archive && whole)
        a.push_back(plain(plan_.target.format == Format::MachO ? "-force_load" : "--whole-archive"));
      if (!l.filtered.empty()) {
        std::string n = scratch_name(i, l.display);
        job.files.push_back(JobFile::own(n, std::move(l.filtered)));
        job.files.back().keyed = false;
        a.push_back(Arg{{}, true, n, key});
        job.display_names.emplace_back(n, l.display);
      } else if (l.input->in_memory()) {
        std::string n = scratch_name(i, l.display);
        job.files.push_back(JobFile::borrow(n, l.input->bytes));
        job.files.back().keyed = false;
        a.push_back(Arg{{}, true, n, key});
        job.display_names.emplace_back(n, l.display);
      } else {
        a.push_back(keyed(l.path, key));
        job.display_names.emplace_back(l.path, l.display);
      }
      if (archive && whole && plan_.target.format != Format::MachO)
        a.push_back(plain("--no-whole-archive"));
      if (digest_)
        plan_.input_digests.push_back(cache::KeyBuilder::digest(l.data, l.size));
    }
  }

  bool references(const std::string &sym) const {
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (!s.defined && s.name == sym)
          return true;
    return false;
  }
  bool defines(const std::string &sym) const {
    for (const Loaded &l : loaded_)
      for (const exports::Symbol &s : l.info.symbols)
        if (s.defined && s.name == sym)
          return true;
    return false;
  }

  // COFF support objects: only what an input references and nothing defines.
  std::optional<Error> support_objects() {
    if (!req_.support_objects || mingw_) // the mingw runtime has them all
      return std::nullopt;
    Job &job = plan_.job;
    for (const std::string &sym : support_symbols(plan_.target)) {
      if (!references(sym) || defines(sym))
        continue;
      auto obj = support_object(plan_.target, sym);
      if (!obj)
        return obj.take_error();
      std::string n = "support-" + sym + ".obj";
      job.files.push_back(JobFile::own(n, std::move(obj.value())));
      job.args.push_back(in_dir("", n));
      job.display_names.emplace_back(n, "<hotlink support object " + sym + ">");
      plan_.support_objects.push_back(sym);
    }
    return std::nullopt;
  }

  // Where a COFF -l is looked for before the sysroot: -L, then the mingw
  // runtime's folders.
  std::vector<std::string> coff_library_paths() const {
    std::vector<std::string> dirs = req_.library_paths;
    if (mingw_)
      dirs.insert(dirs.end(), mingw_->lib_dirs.begin(), mingw_->lib_dirs.end());
    return dirs;
  }

  // The user's -l libraries, then the runtime environment's (ELF) or the
  // sysroot's (COFF), as a driver orders them.
  void libraries() {
    Job &job = plan_.job;
    std::vector<Arg> &a = job.args;
    for (const std::string &lib : req_.libraries) {
      bool path_like = lib.find('/') != std::string::npos;
      if (path_like) {
        a.push_back(plain(lib));
      } else if (coff()) {
        std::vector<std::string> looked;
        std::string path = find_coff_library(lib, coff_library_paths(), req_.sysroot, plan_.target.arch, &looked);
        if (path.empty() && !library_error_) {
          std::string where, names;
          for (const std::string &d : looked)
            where += (where.empty() ? "" : ", ") + d;
          for (const std::string &n : coff_library_candidates(lib))
            names += (names.empty() ? "" : ", ") + n;
          library_error_ = make_error(
              ErrorCode::InputNotFound,
              "library '" + lib + "' not found (looked for " + names + (where.empty() ? "" : " in " + where) + ")",
              {}, "-l " + lib,
              req_.sysroot.empty() ? "add its folder with -L DIR, or give a sysroot (--sysroot /usr/" +
                                         std::string(plan_.target.arch == exports::Arch::X86 ? "i686" : "x86_64") +
                                         "-w64-mingw32)"
                                   : "add its folder with -L DIR, or name the file");
        }
        a.push_back(plain(path.empty() ? lib + ".lib" : path));
      } else {
        a.push_back(plain("-l" + lib));
      }
      if (digest_)
        fingerprint_library(lib);
    }
    if (mingw_)
      for (const std::string &s : mingw_->after)
        a.push_back(plain(s));
    if (env_) {
      a.insert(a.end(), runtime_->after.begin(), runtime_->after.end());
      for (const JobFile &f : runtime_->files) {
        job.files.push_back(JobFile::borrow(f.name, f.bytes()));
        job.files.back().keyed = false;
      }
      for (auto &d : runtime_->display_names)
        job.display_names.push_back(d);
    }
    if (plan_.windows) {
      if (!plan_.windows->thunks.empty()) {
        auto obj = import_thunks(plan_.target, plan_.windows->thunks);
        if (obj) {
          job.files.push_back(JobFile::own("import-thunks.obj", std::move(obj.value())));
          a.push_back(in_dir("", "import-thunks.obj"));
          job.display_names.emplace_back("import-thunks.obj", "<hotlink import thunks>");
        } else {
          thunk_error_ = obj.take_error();
        }
      }
      if (msvc_cxx_)
        add_libraries(msvc_cxx_->before_crt, "<hotlink MSVC C++ runtime: ");
      for (const std::string &lib : plan_.windows->link)
        a.push_back(plain(lib));
      if (msvc_cxx_)
        add_libraries(msvc_cxx_->after_crt, "<hotlink MSVC C++ runtime: ");
    }
  }

  void add_libraries(const std::vector<MsvcCxxRuntime::Library> &libs, const std::string &shown) {
    for (const MsvcCxxRuntime::Library &lib : libs) {
      plan_.job.files.push_back(JobFile::borrow(lib.name, lib.bytes));
      plan_.job.args.push_back(in_dir("", lib.name));
      plan_.job.display_names.emplace_back(lib.name, shown + lib.name + ">");
      plan_.runtime.push_back(lib.name);
    }
  }

  std::optional<Error> extra_flags() {
    if (library_error_)
      return std::move(library_error_);
    if (thunk_error_)
      return std::move(thunk_error_);
    for (const std::string &f : req_.extra_flags)
      plan_.job.args.push_back(plain(f));
    return std::nullopt;
  }

  // The file lld would pick for `-l name` (first match in the search
  // paths), hashed so that a changed library changes the key.
  void fingerprint_library(const std::string &lib) {
    std::string found;
    if (lib.find('/') != std::string::npos) {
      found = lib;
    } else if (coff()) {
      found = find_coff_library(lib, coff_library_paths(), req_.sysroot, plan_.target.arch);
    } else {
      std::vector<std::string> names;
      switch (plan_.target.format) {
      case Format::ELF: names = {"lib" + lib + ".so", "lib" + lib + ".a"}; break;
      case Format::MachO: names = {"lib" + lib + ".tbd", "lib" + lib + ".dylib", "lib" + lib + ".a"}; break;
      case Format::Wasm: names = {"lib" + lib + ".a"}; break;
      case Format::COFF: break; // above
      case Format::Unknown: break;
      }
      std::vector<std::string> dirs = req_.library_paths;
      if (!req_.sysroot.empty()) {
        dirs.push_back(req_.sysroot + "/lib");
        dirs.push_back(req_.sysroot);
      }
      for (const std::string &d : dirs)
        for (const std::string &n : names)
          if (found.empty() && llvm::sys::fs::is_regular_file(d + "/" + n))
            found = d + "/" + n;
    }
    if (found.empty())
      return;
    auto buf = llvm::MemoryBuffer::getFile(found, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (buf)
      plan_.fingerprints.push_back("library " + lib + " " +
                                   cache::KeyBuilder::digest((*buf)->getBufferStart(), (*buf)->getBufferSize()));
  }

  const LinkRequest &req_;
  Timings &timings_;
  bool digest_;
  Plan plan_;
  std::vector<Loaded> loaded_;
  bool any_archive_ = false, any_bitcode_ = false;
  bool export_list_ = false;
  bool has_user_script_ = false;
  std::string user_script_;
  std::vector<exports::Export> anonymous_exports_;
  std::shared_ptr<const RuntimeEnvironment> env_;
  std::shared_ptr<const RuntimeLink> runtime_;
  std::shared_ptr<const MingwEnvironment> mingw_;
  std::shared_ptr<const MsvcCxxRuntime> msvc_cxx_;
  bool crt_entry_ = false; // COFF DLL: -entry:_DllMainCRTStartup
  std::optional<Error> thunk_error_;
  std::optional<Error> library_error_; // a COFF -l that names no file
};

#undef HOTLINK_STEP

} // namespace

Expected<Plan> plan_link(const LinkRequest &req, Timings &timings, bool digest_inputs) {
  return Planner(req, timings, digest_inputs).run();
}

} // namespace hotlink::detail
