#include "linker/platforms/coff/sysroot.h"
#include "base/memo.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/COFFImportFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_set>

#include <sys/stat.h>

namespace hotlink::detail {

using exports::Arch;

namespace {

bool is_dir(const std::string &p) { return llvm::sys::fs::is_directory(p); }

const char *mingw_dir(Arch a) {
  switch (a) {
  case Arch::X86: return "i686-w64-mingw32";
  case Arch::AArch64: return "aarch64-w64-mingw32";
  default: return "x86_64-w64-mingw32";
  }
}

} // namespace

std::string mingw_sysroot(Arch arch) { return std::string("/usr/") + mingw_dir(arch); }

namespace {

const char *msvc_arch(Arch a) {
  switch (a) {
  case Arch::X86: return "x86";
  case Arch::AArch64: return "arm64";
  default: return "x64";
  }
}

// What hotlink needs of an import library: its symbol table and the machine
// of its first COFF member (0 if unknown). Read once per (path, size,
// mtime) per process.
struct ArchiveIndex {
  std::unordered_set<std::string> symbols;
  std::uint16_t machine = 0;
};

std::shared_ptr<const ArchiveIndex> archive_index(const std::string &path,
                                                  std::string &fingerprint) {
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st))
    return nullptr;
  fingerprint = path + ":" + std::to_string(st.getSize()) + ":" +
                std::to_string(llvm::sys::toTimeT(st.getLastModificationTime()));
  static base::Memo<std::string, std::shared_ptr<const ArchiveIndex>> memo;
  if (auto hit = memo.find(fingerprint))
    return *hit;
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return nullptr;
  auto archive = llvm::object::Archive::create((*buf)->getMemBufferRef());
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return nullptr;
  }
  auto index = std::make_shared<ArchiveIndex>();
  for (const llvm::object::Archive::Symbol &s : (*archive)->symbols())
    index->symbols.insert(s.getName().str());
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child &c : (*archive)->children(err)) {
    auto ref = c.getMemoryBufferRef();
    if (!ref) {
      llvm::consumeError(ref.takeError());
      continue;
    }
    auto bin = llvm::object::createBinary(*ref);
    if (!bin) {
      llvm::consumeError(bin.takeError());
      continue;
    }
    if (auto *imp = llvm::dyn_cast<llvm::object::COFFImportFile>(bin->get()))
      index->machine = imp->getMachine();
    else if (auto *obj = llvm::dyn_cast<llvm::object::COFFObjectFile>(bin->get()))
      index->machine = obj->getMachine();
    if (index->machine)
      break;
  }
  llvm::consumeError(std::move(err));
  memo.keep(fingerprint, index, /*replace=*/true);
  return index;
}

std::uint16_t machine_of(Arch a) {
  switch (a) {
  case Arch::X86: return llvm::COFF::IMAGE_FILE_MACHINE_I386;
  case Arch::AArch64: return llvm::COFF::IMAGE_FILE_MACHINE_ARM64;
  default: return llvm::COFF::IMAGE_FILE_MACHINE_AMD64;
  }
}

const char *machine_name(std::uint16_t m) {
  switch (m) {
  case llvm::COFF::IMAGE_FILE_MACHINE_I386: return "x86";
  case llvm::COFF::IMAGE_FILE_MACHINE_ARM64: return "arm64";
  case llvm::COFF::IMAGE_FILE_MACHINE_AMD64: return "x64";
  default: return "an unknown machine";
  }
}

// The sysroot's library folders and how a library name maps to a file.
struct Layout {
  std::string kind;
  std::vector<std::string> dirs;
  std::vector<std::pair<std::string, std::int64_t>> visited; // dir, mtime (ns)
  std::map<std::string, std::string> files; // lowercase file name -> path

  std::string find(const std::string &name) const { // name without prefix/extension
    std::string lower = llvm::StringRef(name).lower();
    for (const std::string &candidate :
         kind == "mingw-w64" ? std::vector<std::string>{"lib" + lower + ".a", lower + ".lib"}
                             : std::vector<std::string>{lower + ".lib"}) {
      auto it = files.find(candidate);
      if (it != files.end())
        return it->second;
    }
    return {};
  }
};

std::int64_t mtime_ns(const std::string &dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return -1;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void index_dir(const std::string &dir, Layout &l) {
  std::error_code ec;
  bool any = false;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string file = llvm::sys::path::filename(it->path()).str();
    std::string lower = llvm::StringRef(file).lower();
    if (!llvm::StringRef(lower).ends_with(".a") && !llvm::StringRef(lower).ends_with(".lib"))
      continue;
    l.files.emplace(lower, it->path()); // the first folder wins
    any = true;
  }
  if (any)
    l.dirs.push_back(dir);
}

// Looks for a mingw-w64 layout, then an MSVC / Windows SDK one.
std::optional<Layout> scan_layout(const std::string &root, Arch arch) {
  std::vector<std::pair<std::string, std::int64_t>> probed;
  for (const std::string &d : {root, root + "/lib", root + "/" + mingw_dir(arch) + "/lib"}) {
    probed.emplace_back(d, mtime_ns(d));
    if (llvm::sys::fs::exists(d + "/libkernel32.a")) {
      Layout l;
      l.kind = "mingw-w64";
      l.visited = std::move(probed);
      index_dir(d, l);
      return l;
    }
  }
  // MSVC: folders up to four levels down that hold .lib files, skipping
  // folders named for another architecture (Windows Kits/10/Lib/<ver>/um/x64,
  // VC/Tools/MSVC/<ver>/lib/x64, or a flat folder).
  Layout l;
  l.kind = "msvc";
  std::set<std::string> others = {"x86", "x64", "arm64", "arm", "arm64ec"};
  others.erase(msvc_arch(arch));
  std::vector<std::pair<std::string, int>> todo = {{root, 0}};
  while (!todo.empty()) {
    auto [dir, depth] = todo.back();
    todo.pop_back();
    l.visited.emplace_back(dir, mtime_ns(dir));
    index_dir(dir, l);
    if (depth == 4)
      continue;
    std::error_code ec;
    std::vector<std::string> subdirs;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (is_dir(it->path()) &&
          !others.count(llvm::StringRef(llvm::sys::path::filename(it->path())).lower()))
        subdirs.push_back(it->path());
    std::sort(subdirs.rbegin(), subdirs.rend()); // visited in name order
    for (const std::string &s : subdirs)
      todo.emplace_back(s, depth + 1);
  }
  if (l.files.count("kernel32.lib"))
    return l;
  return std::nullopt;
}

// scan_layout() once per sysroot and arch per process, and again only when
// a folder it looked at changed: the link path must not list the ~900
// files of a mingw-w64 lib folder every time.
std::optional<Layout> detect(const std::string &root, Arch arch) {
  static base::Memo<std::string, Layout> memo;
  std::string key = root + "|" + msvc_arch(arch);
  auto unchanged = [](const Layout &l) {
    return std::all_of(l.visited.begin(), l.visited.end(), [](const auto &v) { return mtime_ns(v.first) == v.second; });
  };
  if (auto hit = memo.find(key, unchanged))
    return *hit;
  auto l = scan_layout(root, arch);
  if (l)
    memo.keep(key, *l, /*replace=*/true);
  return l;
}

bool is_crt_name(const std::string &n) {
  static const std::set<std::string> crt = {"msvcrt", "msvcrtd", "libcmt", "libcmtd", "ucrt",
                                            "ucrtd", "libucrt", "libucrtd", "vcruntime",
                                            "vcruntimed", "libvcruntime", "libvcruntimed",
                                            "msvcprt", "libcpmt"};
  return crt.count(n) != 0;
}

} // namespace

std::vector<std::string> coff_library_candidates(const std::string &name) {
  if (llvm::sys::path::has_extension(name))
    return {name};
  return {"lib" + name + ".dll.a", name + ".dll.a", "lib" + name + ".a", name + ".lib", "lib" + name + ".lib"};
}

std::string find_coff_library(const std::string &name, const std::vector<std::string> &library_paths,
                              const std::string &sysroot, Arch arch, std::vector<std::string> *looked) {
  if (name.find('/') != std::string::npos)
    return name;
  std::vector<std::string> dirs = library_paths;
  if (!sysroot.empty())
    if (auto layout = detect(sysroot, arch))
      dirs.insert(dirs.end(), layout->dirs.begin(), layout->dirs.end());
  std::vector<std::string> candidates = coff_library_candidates(name);
  for (const std::string &dir : dirs) {
    if (looked)
      looked->push_back(dir);
    for (const std::string &c : candidates)
      if (llvm::sys::fs::is_regular_file(dir + "/" + c))
        return dir + "/" + c;
  }
  return {};
}

std::string sysroot_layout(const std::string &sysroot, Arch arch) {
  auto layout = detect(sysroot, arch);
  return layout ? layout->kind : std::string();
}

std::string sysroot_library_defining(const std::string &sysroot, Arch arch, const std::string &symbol) {
  auto layout = detect(sysroot, arch);
  if (!layout || symbol.empty())
    return {};
  for (const auto &[file, path] : layout->files) {
    std::string unused;
    auto index = archive_index(path, unused);
    if (index && (index->symbols.count(symbol) || index->symbols.count("__imp_" + symbol)))
      return llvm::sys::path::filename(path).str();
  }
  return {};
}

namespace {

// The sysroot's layout, refused when it has no import libraries for the
// target's architecture (lld would fail later with a less helpful message).
Expected<Layout> check_sysroot(const TargetInfo &tgt, const std::string &sysroot) {
  auto layout = detect(sysroot, tgt.arch);
  if (!layout)
    return make_error(ErrorCode::BadRequest,
                      "has no Windows import libraries for " + std::string(msvc_arch(tgt.arch)) +
                          " (no libkernel32.a, nor kernel32.lib in an MSVC / Windows SDK layout)",
                      sysroot, "--sysroot",
                      "pass a mingw-w64 sysroot (Debian: " + mingw_sysroot(tgt.arch) +
                          (tgt.arch == Arch::AArch64 ? std::string()
                                                     : std::string(" from mingw-w64-") +
                                                           (tgt.arch == Arch::X86 ? "i686" : "x86-64") + "-dev") +
                          ") or the folder holding the SDK's um/ and ucrt/ libraries");
  std::string kernel32 = layout->find("kernel32"), unused;
  auto kernel32_index = archive_index(kernel32, unused);
  std::uint16_t m = kernel32_index ? kernel32_index->machine : 0;
  if (m && m != machine_of(tgt.arch))
    return make_error(ErrorCode::ArchMismatch,
                      "holds import libraries for " + std::string(machine_name(m)) + " (" + kernel32 +
                          "), but the target " + tgt.triple + " is " + msvc_arch(tgt.arch),
                      sysroot, "--sysroot",
                      std::string("pass the sysroot for ") + msvc_arch(tgt.arch) + " (mingw-w64: " +
                          mingw_sysroot(tgt.arch) + ")");
  return std::move(*layout);
}

// The CRT's import libraries, kernel32, and what /DEFAULTLIB directives
// name: CRT names map to the chosen CRT; others are linked when the
// sysroot has them and reported when it does not.
std::optional<Error> choose_libraries(const Layout &layout, const LinkRequest &req,
                                      const std::vector<exports::ObjectInfo> &inputs,
                                      const std::vector<std::string> &names, WindowsLibraries &w) {
  w.crt = req.coff.windows_crt == WindowsCrt::Msvcrt ? "msvcrt" : "ucrt";
  std::vector<std::string> crt_libs;
  if (w.layout == "mingw-w64")
    crt_libs = {w.crt == "ucrt" ? "ucrtbase" : "msvcrt"};
  else
    crt_libs = w.crt == "ucrt" ? std::vector<std::string>{"ucrt", "vcruntime"} : std::vector<std::string>{"msvcrt"};
  std::vector<std::string> wanted = crt_libs;
  wanted.push_back("kernel32");
  std::set<std::string> reported;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (const std::string &lib : inputs[i].default_libs) {
      if (!reported.insert(lib).second)
        continue;
      if (is_crt_name(lib))
        w.diagnostics.push_back(Diagnostic{Severity::Note,
                                           "asks for the CRT library " + lib + " (/DEFAULTLIB); linked against the " +
                                               w.crt + " import library of the " + w.layout + " sysroot (" +
                                               crt_libs.front() + ")",
                                           names[i], lib});
      else if (!layout.find(lib).empty())
        wanted.push_back(lib);
      else
        w.diagnostics.push_back(Diagnostic{Severity::Warning,
                                           "asks for " + lib + " (/DEFAULTLIB), which the sysroot does not have; "
                                           "ignored (a symbol only it would define is reported as undefined)",
                                           names[i], lib});
    }
  for (const std::string &name : wanted) {
    std::string path = layout.find(name);
    if (path.empty()) {
      if (name == "kernel32" || name == crt_libs.front())
        return make_error(ErrorCode::BadRequest, "has no " + name + " import library for the " + w.crt + " CRT",
                          req.sysroot, "--sysroot", "use a complete sysroot, or choose the other CRT (windows_crt)");
      continue;
    }
    if (std::find(w.link.begin(), w.link.end(), path) == w.link.end())
      w.link.push_back(path);
  }
  return std::nullopt;
}

// The names the inputs leave undefined (nothing of theirs or hotlink's
// defines them), and those of them that some relocation reads as data.
struct Undefined {
  std::vector<std::string> names;
  std::unordered_set<std::string> not_branch;
};
Undefined undefined_of(const std::vector<exports::ObjectInfo> &inputs, const std::vector<std::string> &provided) {
  std::unordered_set<std::string> defined(provided.begin(), provided.end());
  for (const exports::ObjectInfo &in : inputs)
    for (const exports::Symbol &s : in.symbols)
      if (s.defined)
        defined.insert(s.name);
  Undefined u;
  std::unordered_set<std::string> seen;
  for (const exports::ObjectInfo &in : inputs)
    for (const exports::Symbol &s : in.symbols)
      if (!s.defined && !defined.count(s.name)) {
        if (seen.insert(s.name).second)
          u.names.push_back(s.name);
        if (!s.branch_only)
          u.not_branch.insert(s.name);
      }
  return u;
}

// Which library resolves each undefined symbol, and which functions are
// only importable through __imp_ (a thunk makes them callable). The user's
// libraries come first in the link, so they are scanned first (and may
// need thunks too); only the sysroot's are reported as used.
void resolve_undefined(const LinkRequest &req, Arch arch, const Undefined &undefined, WindowsLibraries &w) {
  std::vector<std::string> scan;
  for (const std::string &lib : req.libraries) {
    std::string path = find_coff_library(lib, req.library_paths, req.sysroot, arch);
    if (!path.empty())
      scan.push_back(path);
  }
  std::size_t first_system = scan.size();
  scan.insert(scan.end(), w.link.begin(), w.link.end());
  std::vector<bool> resolved(undefined.names.size(), false);
  for (std::size_t li = 0; li < scan.size(); ++li) {
    const std::string &path = scan[li];
    std::string fp;
    auto index = archive_index(path, fp);
    if (!fp.empty() && li >= first_system)
      w.fingerprints.push_back(fp);
    if (!index)
      continue;
    bool used = false;
    for (std::size_t i = 0; i < undefined.names.size(); ++i) {
      const std::string &u = undefined.names[i];
      if (resolved[i])
        continue;
      if (index->symbols.count(u)) {
        resolved[i] = used = true;
      } else if (!llvm::StringRef(u).starts_with("__imp_") && index->symbols.count("__imp_" + u)) {
        resolved[i] = true;
        if (undefined.not_branch.count(u)) { // read as data: a jump thunk cannot stand in for it
          w.diagnostics.push_back(Diagnostic{Severity::Warning,
                                             "is read as data, but " + llvm::sys::path::filename(path).str() +
                                                 " offers it only as __imp_" + u + "; declare it __declspec(dllimport)",
                                             {}, u});
          continue;
        }
        used = true;
        w.thunks.push_back(u);
      }
    }
    if (used && li >= first_system)
      w.used.push_back(llvm::sys::path::filename(path).str());
  }
  std::sort(w.thunks.begin(), w.thunks.end());
}

} // namespace

Expected<WindowsLibraries> plan_windows_libraries(const TargetInfo &tgt, const LinkRequest &req,
                                                  const std::vector<exports::ObjectInfo> &inputs,
                                                  const std::vector<std::string> &names,
                                                  const std::vector<std::string> &provided) {
  auto layout = check_sysroot(tgt, req.sysroot);
  if (!layout)
    return layout.take_error();
  WindowsLibraries w;
  w.layout = layout->kind;
  w.lib_dirs = layout->dirs;
  if (auto err = choose_libraries(*layout, req, inputs, names, w))
    return std::move(*err);
  resolve_undefined(req, tgt.arch, undefined_of(inputs, provided), w);
  return w;
}

} // namespace hotlink::detail
