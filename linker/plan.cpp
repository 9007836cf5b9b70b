#include "linker/plan.h"

#include "exports/names.h"
#include "exports/symbols.h"
#include "exports/writers.h"
#include "linker/support.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <unordered_set>
#include <sys/stat.h>
#include <unistd.h>

// lld/Common/Version.h includes a Version.inc that Debian's liblld-22-dev
// does not ship; the function itself is in liblldCommon.
namespace lld {
std::string getLLDVersion();
}

namespace hotlink::detail {

using exports::Format;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

// A file name for an in-memory input inside the scratch directory: unique by
// index, readable in lld's messages, and free of path syntax.
std::string scratch_name(std::size_t index, const std::string &name) {
  std::string base = llvm::sys::path::filename(name).str();
  std::string clean;
  for (char c : base.substr(0, 64))
    clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
              c == '_' || c == '-')
                 ? c
                 : '_';
  return "in" + std::to_string(index) + "-" + (clean.empty() ? "input" : clean);
}

Arg plain(std::string s) { return Arg{std::move(s), false, {}}; }
Arg in_dir(std::string before, std::string name) {
  return Arg{std::move(before), true, std::move(name)};
}

bool is_dir(const std::string &p) { return llvm::sys::fs::is_directory(p); }

} // namespace

Expected<Plan> plan_link(const LinkRequest &req, Timings &timings, bool digest_inputs) {
  auto t0 = std::chrono::steady_clock::now();
  Plan plan;
  auto target = resolve_target(req.target);
  if (!target)
    return target.take_error();
  plan.target = *target;
  const TargetInfo &tgt = plan.target;

  if (req.inputs.empty())
    return make_error(ErrorCode::BadRequest, "the link has no inputs", {}, {},
                      "pass at least one object file");
  if (req.threads == 0)
    return make_error(ErrorCode::BadRequest, "threads must be at least 1", {},
                      "--threads");

  // 1. Read and check every input.
  struct Loaded {
    const Input *input;
    std::string display;
    std::string path; // absolute path for file inputs
    exports::ObjectInfo info;
  };
  std::vector<Loaded> loaded;
  for (const Input &in : req.inputs) {
    Loaded l{&in, in.name.empty() ? in.path : in.name, {}, {}};
    std::unique_ptr<llvm::MemoryBuffer> buf;
    const void *data = in.bytes.data();
    std::size_t size = in.bytes.size();
    if (!in.in_memory()) {
      llvm::SmallString<256> abs(in.path);
      llvm::sys::fs::make_absolute(abs);
      l.path = abs.str().str();
      if (is_dir(l.path))
        return make_error(ErrorCode::InvalidInput, "is a directory", l.display,
                          {}, "pass an object file or archive");
      auto b = llvm::MemoryBuffer::getFile(l.path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
      if (!b)
        return make_error(ErrorCode::InputNotFound,
                          "cannot read: " + b.getError().message(), l.display,
                          {}, "check that the path exists and is readable");
      buf = std::move(*b);
      data = buf->getBufferStart();
      size = buf->getBufferSize();
    }
    auto info = exports::read_object(data, size, l.display,
                                     /*branch_info=*/!req.sysroot.empty());
    if (!info)
      return info.take_error();
    if (digest_inputs)
      plan.input_digests.push_back(cache::KeyBuilder::digest(data, size));
    plan.job.input_bytes += size;
    l.info = std::move(info.value());
    loaded.push_back(std::move(l));
  }
  for (const Loaded &l : loaded) {
    if (l.info.format != loaded.front().info.format)
      return make_error(
          ErrorCode::MixedFormats,
          std::string("is ") + exports::to_string(l.info.format) + " but '" +
              loaded.front().display + "' is " +
              exports::to_string(loaded.front().info.format),
          l.display, {}, "link objects of one format (and target) at a time");
  }
  for (const Loaded &l : loaded) {
    if (l.info.format != tgt.format)
      return make_error(ErrorCode::FormatMismatch,
                        std::string("is a ") + exports::to_string(l.info.format) +
                            " object, but the target " + tgt.triple +
                            " links " + exports::to_string(tgt.format),
                        l.display, {},
                        "compile it for the target, or pick the target that "
                        "matches it with --target");
    if (l.info.arch != tgt.arch)
      return make_error(ErrorCode::ArchMismatch,
                        std::string("is built for ") +
                            exports::to_string(l.info.arch) +
                            ", but the target " + tgt.triple + " is " +
                            exports::to_string(tgt.arch),
                        l.display, {},
                        "compile it for the target, or pick the target that "
                        "matches it with --target");
  }

  // 2. Exports: the policy over every input's symbols, then a user .def.
  bool any_archive = false;
  std::vector<exports::ObjectInfo> infos;
  infos.reserve(loaded.size());
  for (Loaded &l : loaded) {
    any_archive |= l.info.kind == exports::FileKind::Archive;
    infos.push_back(std::move(l.info)); // loaded[i] is infos[i] from here on
  }
  auto defines = [&](const std::string &sym) {
    for (const exports::ObjectInfo &in : infos)
      for (const exports::Symbol &s : in.symbols)
        if (s.defined && s.name == sym)
          return true;
    return false;
  };
  auto references = [&](const std::string &sym) {
    for (const exports::ObjectInfo &in : infos)
      for (const exports::Symbol &s : in.symbols)
        if (!s.defined && s.name == sym)
          return true;
    return false;
  };
  bool export_list = req.exports.mode != exports::ExportPolicy::Mode::None;
  if (export_list) {
    auto chosen = exports::select_exports(infos, tgt.format, tgt.arch, req.exports);
    if (!chosen)
      return chosen.take_error();
    plan.exports = std::move(chosen.value());
  }
  if (!req.def_input.empty() || !req.def_output.empty() || !req.implib_output.empty()) {
    if (tgt.format != Format::COFF)
      return make_error(ErrorCode::BadRequest,
                        ".def files and import libraries are for COFF targets, not " + tgt.triple,
                        {}, !req.def_input.empty() ? "--def-in" : !req.def_output.empty() ? "--def" : "--implib",
                        "drop the option, or link for a -windows-msvc target");
  }
  if (!req.def_output.empty() && !export_list && req.def_input.empty())
    return make_error(ErrorCode::BadRequest, "a .def needs an export list, and the policy is 'none'",
                      {}, "--def", "choose an export policy other than none");
  if (!req.def_input.empty()) {
    auto text = llvm::MemoryBuffer::getFile(req.def_input, /*IsText=*/true);
    if (!text)
      return make_error(ErrorCode::InputNotFound, "cannot read: " + text.getError().message(),
                        req.def_input, "--def-in", "check the path");
    auto def = exports::parse_def((*text)->getBuffer().str(), tgt.arch, req.def_input);
    if (!def)
      return def.take_error();
    exports::DefMerge merged = exports::merge_def(plan.exports, def.value());
    std::unordered_set<std::string_view> defined;
    for (const exports::ObjectInfo &in : infos)
      for (const exports::Symbol &s : in.symbols)
        if (s.defined)
          defined.insert(s.name);
    for (const exports::Export &e : merged.exports)
      if (!defined.count(e.symbol) && !defined.count(exports::decorate(tgt.format, tgt.arch, e.symbol)))
        return make_error(ErrorCode::MissingExport,
                          "is exported by the .def but no input defines it", req.def_input,
                          e.name, "remove it from the .def, or add the object that defines it");
    plan.exports = std::move(merged.exports);
    plan.warnings = std::move(merged.conflicts);
    export_list = true;
  }
  for (const std::string &f : req.extra_flags)
    if (f.find("mllvm") != std::string::npos ||
        f.find("plugin-opt") != std::string::npos)
      plan.needs_worker = true;
  for (const std::string &p : req.library_paths)
    if (!is_dir(p))
      return make_error(ErrorCode::BadRequest, "library path is not a directory",
                        p, "-L", "pass an existing directory");
  if (!req.sysroot.empty() && !is_dir(req.sysroot))
    return make_error(ErrorCode::BadRequest, "sysroot is not a directory",
                      req.sysroot, "--sysroot", "pass an existing directory");
  if (req.executable && tgt.format != Format::COFF)
    return make_error(ErrorCode::BadRequest,
                      "executables are linked for COFF targets only, not " + tgt.triple, {},
                      "--exe", "link a shared object, or target -windows-msvc");
  if (req.executable && req.entry.empty())
    return make_error(ErrorCode::BadRequest, "an executable needs an entry point", {}, "--entry",
                      "name the function the program starts at (--entry NAME)");
  if (tgt.format == Format::COFF && !req.sysroot.empty()) {
    std::vector<std::string> names;
    for (const Loaded &l : loaded)
      names.push_back(l.display);
    std::vector<std::string> provided;
    if (req.support_objects)
      provided = support_symbols(tgt);
    auto w = plan_windows_libraries(tgt, req, infos, names, provided);
    if (!w)
      return w.take_error();
    plan.windows = std::move(w.value());
    plan.diagnostics = plan.windows->diagnostics;
  }
  timings.validate_ms = ms_since(t0);
  auto t1 = std::chrono::steady_clock::now();

  // 3. Build the job.
  Job &job = plan.job;
  job.flavor = tgt.flavor;
  std::string out_name;
  if (!req.output_path.empty())
    out_name = llvm::sys::path::filename(req.output_path).str();
  if (out_name.empty())
    out_name = "hotlink" + tgt.extension;
  job.output_name = out_name;
  std::vector<Arg> &a = job.args;
  const std::string threads = std::to_string(req.threads);

  switch (tgt.format) {
  case Format::ELF:
    a.push_back(plain("-shared"));
    a.push_back(plain(tgt.arch == exports::Arch::AArch64 ? "-maarch64linux"
                                                         : "-melf_x86_64"));
    a.push_back(plain("--threads=" + threads));
    a.push_back(plain("-soname=" + out_name));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req.undefined == Undefined::Error)
      a.push_back(plain("-zdefs"));
    if (!req.sysroot.empty())
      a.push_back(plain("--sysroot=" + req.sysroot));
    break;
  case Format::COFF:
    if (req.executable) {
      a.push_back(plain("-entry:" + req.entry));
      a.push_back(plain("-subsystem:console"));
    } else {
      a.push_back(plain("-dll"));
      a.push_back(plain("-noentry"));
    }
    a.push_back(plain("-nodefaultlib"));
    a.push_back(plain("-Brepro"));
    a.push_back(plain(tgt.arch == exports::Arch::X86_64 ? "-machine:x64"
                      : tgt.arch == exports::Arch::X86  ? "-machine:x86"
                                                        : "-machine:arm64"));
    if (tgt.arch == exports::Arch::X86)
      a.push_back(plain("-safeseh:no"));
    a.push_back(plain("-threads:" + threads));
    a.push_back(in_dir("-out:", out_name));
    if (req.undefined == Undefined::Allow)
      a.push_back(plain("-force:unresolved"));
    if (plan.windows)
      for (const std::string &d : plan.windows->lib_dirs)
        a.push_back(plain("-libpath:" + d));
    break;
  case Format::MachO:
    a.push_back(plain("-dylib"));
    a.push_back(plain("-arch"));
    a.push_back(plain(tgt.arch == exports::Arch::AArch64 ? "arm64" : "x86_64"));
    a.push_back(plain("-platform_version"));
    a.push_back(plain("macos"));
    a.push_back(plain("13.0"));
    a.push_back(plain("13.0"));
    a.push_back(plain("-undefined"));
    a.push_back(plain(req.undefined == Undefined::Error ? "error"
                                                         : "dynamic_lookup"));
    a.push_back(plain("-install_name"));
    a.push_back(plain("@rpath/" + out_name));
    a.push_back(plain("--threads=" + threads));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (!req.sysroot.empty()) {
      a.push_back(plain("-syslibroot"));
      a.push_back(plain(req.sysroot));
    }
    break;
  case Format::Wasm:
    a.push_back(plain("--no-entry"));
    a.push_back(plain("--threads=" + threads));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req.undefined == Undefined::Allow)
      a.push_back(plain("--allow-undefined"));
    if (!req.sysroot.empty() && is_dir(req.sysroot + "/lib"))
      a.push_back(plain("-L" + req.sysroot + "/lib"));
    break;
  case Format::Unknown:
    break;
  }

  // Exports: the format's export list, written by exports/ (which refuses
  // any name that could change the list's meaning).
  auto add_file = [&](const char *name, const std::string &text) {
    job.files.push_back(JobFile::own(name, std::vector<std::uint8_t>(text.begin(), text.end())));
  };
  if (export_list) {
    switch (tgt.format) {
    case Format::ELF: {
      auto script = exports::write_version_script(plan.exports);
      if (!script)
        return script.take_error();
      plan.export_file = script.value();
      add_file("exports.ver", plan.export_file);
      a.push_back(in_dir("--version-script=", "exports.ver"));
      if (any_archive) // pull in archive members that define exports
        for (const exports::Export &e : plan.exports)
          a.push_back(plain("--undefined=" + e.symbol));
      break;
    }
    case Format::COFF: {
      auto def = exports::write_def(plan.exports, out_name);
      if (!def)
        return def.take_error();
      plan.export_file = def.value();
      add_file("exports.def", plan.export_file);
      a.push_back(in_dir("-def:", "exports.def"));
      break;
    }
    case Format::MachO: {
      auto list = exports::write_macho_list(plan.exports);
      if (!list)
        return list.take_error();
      plan.export_file = list.value();
      add_file("exports.txt", plan.export_file);
      a.push_back(plain("-exported_symbols_list"));
      a.push_back(in_dir("", "exports.txt"));
      if (any_archive)
        for (const exports::Export &e : plan.exports) {
          a.push_back(plain("-u"));
          a.push_back(plain(e.symbol));
        }
      break;
    }
    case Format::Wasm: {
      auto flags = exports::write_wasm_flags(plan.exports);
      if (!flags)
        return flags.take_error();
      for (const std::string &f : flags.value()) {
        a.push_back(plain(f));
        plan.export_file += f + "\n";
      }
      break;
    }
    case Format::Unknown:
      break;
    }
  }
  if (tgt.format == Format::COFF) {
    if (req.implib_output.empty() && !req.want_implib) {
      a.push_back(plain("-noimplib"));
    } else {
      job.implib_name = llvm::sys::path::stem(out_name).str() + ".lib";
      a.push_back(in_dir("-implib:", job.implib_name));
    }
  }

  for (const std::string &p : req.library_paths)
    a.push_back(plain((tgt.format == Format::COFF ? "-libpath:" : "-L") + p));

  // Inputs, in order.
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    const Loaded &l = loaded[i];
    if (l.input->in_memory()) {
      std::string n = scratch_name(i, l.display);
      job.files.push_back(JobFile::borrow(n, l.input->bytes));
      a.push_back(in_dir("", n));
      job.display_names.emplace_back(n, l.display);
    } else {
      a.push_back(plain(l.path));
      job.display_names.emplace_back(l.path, l.display);
    }
  }

  // Support objects: only what an input references and nothing defines.
  if (req.support_objects) {
    for (const std::string &sym : support_symbols(tgt)) {
      if (!references(sym) || defines(sym))
        continue;
      auto obj = support_object(tgt, sym);
      if (!obj)
        return obj.take_error();
      std::string n = "support-" + sym + ".obj";
      job.files.push_back(JobFile::own(n, std::move(obj.value())));
      a.push_back(in_dir("", n));
      job.display_names.emplace_back(n, "<hotlink support object " + sym + ">");
      plan.support_objects.push_back(sym);
    }
  }

  for (const std::string &lib : req.libraries) {
    bool path_like = lib.find('/') != std::string::npos;
    if (path_like)
      a.push_back(plain(lib));
    else if (tgt.format == Format::COFF)
      a.push_back(plain(llvm::sys::path::has_extension(lib) ? lib : lib + ".lib"));
    else
      a.push_back(plain("-l" + lib));
  }
  // The sysroot's libraries after the user's, and the thunks for functions
  // they offer only as __imp_ entries.
  if (plan.windows) {
    if (!plan.windows->thunks.empty()) {
      auto obj = import_thunks(tgt, plan.windows->thunks);
      if (!obj)
        return obj.take_error();
      job.files.push_back(JobFile::own("import-thunks.obj", std::move(obj.value())));
      a.push_back(in_dir("", "import-thunks.obj"));
      job.display_names.emplace_back("import-thunks.obj", "<hotlink import thunks>");
    }
    for (const std::string &lib : plan.windows->link)
      a.push_back(plain(lib));
  }
  for (const std::string &f : req.extra_flags)
    a.push_back(plain(f));
  timings.prepare_ms = ms_since(t1);
  return plan;
}

// ---------------------------------------------------------------------------
// Diagnostics.

namespace {

bool starts_with(const std::string &s, const std::string &p) {
  return s.compare(0, p.size(), p) == 0;
}

std::string after(const std::string &s, const std::string &marker) {
  std::size_t p = s.find(marker);
  if (p == std::string::npos)
    return {};
  std::string rest = s.substr(p + marker.size());
  std::size_t nl = rest.find('\n');
  return nl == std::string::npos ? rest : rest.substr(0, nl);
}

} // namespace

std::vector<Diagnostic> parse_diagnostics(const Job &job,
                                          const std::string &text) {
  std::vector<Diagnostic> out;
  const std::string prefix = job.flavor + ": ";
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line =
        text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty())
      continue;
    std::string body = starts_with(line, prefix) ? line.substr(prefix.size()) : line;
    Severity sev;
    bool starts = true;
    if (starts_with(body, "error: "))
      sev = Severity::Error, body = body.substr(7);
    else if (starts_with(body, "warning: "))
      sev = Severity::Warning, body = body.substr(9);
    else if (starts_with(line, prefix))
      sev = Severity::Note;
    else
      starts = false;
    if (!starts && !out.empty()) {
      out.back().message += "\n" + line; // ">>> referenced by ..." lines
      continue;
    }
    out.push_back(Diagnostic{starts ? sev : Severity::Note, body, {}, {}});
  }
  for (Diagnostic &d : out) {
    for (const char *marker :
         {"undefined symbol: ", "duplicate symbol: ", "symbol not found: "}) {
      std::string s = after(d.message, marker);
      if (!s.empty()) {
        d.symbol = s;
        break;
      }
    }
    // Map lld's paths back to input names; the first one named is the file.
    std::size_t first = std::string::npos;
    for (const auto &[printed, shown] : job.display_names) {
      std::size_t p = d.message.find(printed);
      if (p == std::string::npos)
        continue;
      if (p < first) {
        first = p;
        d.file = shown;
      }
      for (std::size_t q = p; q != std::string::npos;
           q = d.message.find(printed, q + shown.size()))
        d.message.replace(q, printed.size(), shown);
    }
  }
  return out;
}

Error link_error(const std::vector<Diagnostic> &diags,
                 const std::string &fallback) {
  for (const Diagnostic &d : diags) {
    if (d.severity != Severity::Error)
      continue;
    ErrorCode code = ErrorCode::LinkFailed;
    std::string hint = "see the diagnostics for lld's full report";
    if (d.message.find("undefined symbol") != std::string::npos) {
      code = ErrorCode::UndefinedSymbol;
      hint = "add the object or library that defines it, or allow undefined "
             "symbols where the target permits (--allow-undefined); for a Windows "
             "DLL calling the CRT or Win32, link against a sysroot (--sysroot "
             "/usr/x86_64-w64-mingw32, Debian mingw-w64-x86-64-dev)";
    } else if (d.message.find("duplicate symbol") != std::string::npos) {
      code = ErrorCode::DuplicateSymbol;
      hint = "remove one of the definitions, or make it weak or static";
    }
    std::string first_line = d.message.substr(0, d.message.find('\n'));
    return make_error(code, "lld: " + first_line, d.file, d.symbol, hint);
  }
  return make_error(ErrorCode::LinkFailed, fallback);
}

// ---------------------------------------------------------------------------
// Output publishing.

Expected<OutputReservation> OutputReservation::reserve(const std::string &path) {
  OutputReservation r;
  r.path_ = path;
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (llvm::sys::path::filename(path).empty() || is_dir(path))
    return make_error(ErrorCode::OutputError, "the output path names a directory",
                      path, "-o", "name a file");
  std::string base = llvm::sys::path::filename(path).str();
  for (int attempt = 0; attempt < 100 && r.fd_ < 0; ++attempt) {
    r.temp_ = std::string(dir.str()) + "/." + base + ".hotlink-" +
              std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) +
              "-" + std::to_string(attempt) + ".tmp";
    r.fd_ = ::open(r.temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (r.fd_ < 0 && errno != EEXIST)
      break;
  }
  if (r.fd_ < 0) {
    int e = errno;
    r.temp_.clear();
    return make_error(ErrorCode::OutputError,
                      std::string("cannot write in the output directory '") +
                          dir.str().str() + "': " + std::strerror(e),
                      path, "-o", "choose a directory that exists and that you can write to");
  }
  return r;
}

OutputReservation::OutputReservation(OutputReservation &&o) noexcept
    : path_(std::move(o.path_)), temp_(std::move(o.temp_)), fd_(o.fd_) {
  o.fd_ = -1;
  o.temp_.clear();
}

OutputReservation::~OutputReservation() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty())
    ::unlink(temp_.c_str());
}

std::optional<Error> OutputReservation::publish(const std::vector<std::uint8_t> &b) {
  auto fail = [&](const char *what) {
    return make_error(ErrorCode::OutputError,
                      std::string(what) + " '" + temp_ + "': " + std::strerror(errno),
                      path_, "-o", "check free space and permissions of the output directory");
  };
  std::size_t off = 0;
  while (off < b.size()) {
    ssize_t n = ::write(fd_, b.data() + off, b.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail("cannot write");
    off += static_cast<std::size_t>(n);
  }
  // Like a linker's output: readable and executable by all, writable by the
  // owner. (Reading the umask would race with other threads.)
  ::fchmod(fd_, 0755);
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0)
    return fail("cannot close");
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    return fail("cannot rename");
  temp_.clear();
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The cache key.

namespace {

// The file lld would pick for `-l name` (first match in the search paths),
// so that a changed library changes the key; empty when not found (the name
// and paths alone are hashed then).
std::string find_library(const LinkRequest &req, const TargetInfo &tgt, const std::string &lib) {
  if (lib.find('/') != std::string::npos)
    return lib;
  std::vector<std::string> names;
  switch (tgt.format) {
  case Format::ELF: names = {"lib" + lib + ".so", "lib" + lib + ".a"}; break;
  case Format::COFF: names = {lib, lib + ".lib", "lib" + lib + ".a"}; break;
  case Format::MachO: names = {"lib" + lib + ".tbd", "lib" + lib + ".dylib", "lib" + lib + ".a"}; break;
  case Format::Wasm: names = {"lib" + lib + ".a"}; break;
  case Format::Unknown: break;
  }
  std::vector<std::string> dirs = req.library_paths;
  if (!req.sysroot.empty()) {
    dirs.push_back(req.sysroot + "/lib");
    dirs.push_back(req.sysroot);
  }
  for (const std::string &d : dirs)
    for (const std::string &n : names) {
      std::string p = d + "/" + n;
      if (llvm::sys::fs::is_regular_file(p))
        return p;
    }
  return {};
}

} // namespace

std::string lld_version() { return lld::getLLDVersion(); }

cache::Key link_key(const LinkRequest &req, const Plan &plan) {
  const TargetInfo &tgt = plan.target;
  cache::KeyBuilder k("hotlink link");
  k.add("cache-format", std::uint64_t(1));
  k.add("hotlink", HOTLINK_VERSION_STRING);
  k.add("lld", lld::getLLDVersion());
  k.add("target", tgt.triple);
  k.add("flavor", tgt.flavor);
  k.add("output-name", plan.job.output_name);
  k.add("undefined", static_cast<std::uint64_t>(req.undefined));
  k.add("implib", std::uint64_t(!plan.job.implib_name.empty()));
  k.add("sysroot", req.sysroot);
  k.add("executable", req.executable ? "entry:" + req.entry : std::string("no"));
  if (plan.windows) {
    k.add("windows-crt", plan.windows->crt);
    for (const std::string &f : plan.windows->fingerprints)
      k.add("system-library", f);
    for (const std::string &t : plan.windows->thunks)
      k.add("import-thunk", t);
  }
  for (const std::string &p : req.library_paths)
    k.add("library-path", p);
  for (const std::string &lib : req.libraries) {
    k.add("library", lib);
    std::string found = find_library(req, tgt, lib);
    if (found.empty())
      continue;
    auto buf = llvm::MemoryBuffer::getFile(found, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (buf)
      k.add_digest("library-bytes", (*buf)->getBufferStart(), (*buf)->getBufferSize());
  }
  for (const exports::Export &e : plan.exports)
    k.add("export", e.name + "\n" + e.symbol + "\n" + (e.data ? "data" : "code"));
  k.add("export-file", plan.export_file);
  for (const std::string &s : plan.support_objects)
    k.add("support-object", s);
  k.add("inputs", static_cast<std::uint64_t>(plan.input_digests.size()));
  for (const std::string &d : plan.input_digests)
    k.add("input", d);
  for (const std::string &f : req.extra_flags)
    k.add("flag", f);
  return k.finish();
}

} // namespace hotlink::detail
