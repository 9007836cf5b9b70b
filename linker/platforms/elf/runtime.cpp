// The runtime environment of ELF links: clang's driver computes the link
// line, hotlink resolves it to files once, and each link gets interface
// stubs of its shared libraries (see runtime.h).
#include "linker/platforms/elf/runtime.h"
#include "linker/platforms/clang_driver.h"
#include "base/clock.h"

#include "hotlink/symbols.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <tuple>


namespace hotlink::detail {

const char *to_string(CxxLibrary c) {
  switch (c) {
  case CxxLibrary::None: return "none";
  case CxxLibrary::Libstdcxx: return "libstdc++";
  case CxxLibrary::Libcxx: return "libc++";
  }
  return "none";
}

const char *to_string(OpenMpLibrary o) {
  switch (o) {
  case OpenMpLibrary::None: return "none";
  case OpenMpLibrary::Libomp: return "libomp";
  case OpenMpLibrary::Libgomp: return "libgomp";
  }
  return "none";
}

bool is_cxx_runtime_symbol(std::string_view n) {
  auto starts = [&](std::string_view p) { return n.substr(0, p.size()) == p; };
  return starts("_Z") || starts("__cxa_") || starts("__gxx_personality") ||
         starts("__dynamic_cast");
}

namespace {

using llvm::StringRef;

} // namespace

// ---------------------------------------------------------------------------
// 1. The driver's link line.

Expected<DriverLine> driver_link_line(const TargetInfo &target, const std::string &sysroot,
                                      const RuntimeSelection &selection) {
  std::vector<std::string> args = {"clang", "--target=" + target.triple, "-shared",
                                   "-fuse-ld=lld"};
  if (!sysroot.empty())
    args.push_back("--sysroot=" + sysroot);
  switch (selection.cxx) {
  case CxxLibrary::None: break;
  case CxxLibrary::Libstdcxx: args.push_back("--driver-mode=g++"); args.push_back("-stdlib=libstdc++"); break;
  case CxxLibrary::Libcxx: args.push_back("--driver-mode=g++"); args.push_back("-stdlib=libc++"); break;
  }
  if (selection.openmp != OpenMpLibrary::None)
    args.push_back(std::string("-fopenmp=") + to_string(selection.openmp));
  args.push_back(kDriverInputs);
  // After the inputs, as gfortran's libgfortran.spec and `-lm` on a
  // command line put them.
  if (selection.fortran)
    args.push_back("-lgfortran");
  if (selection.quadmath)
    args.push_back("-lquadmath");
  if (selection.libm || selection.fortran)
    args.push_back("-lm");
  auto job = driver_link_job(target.triple, args, "--target", "check the target and --sysroot");
  if (!job) {
    Error e = job.take_error();
    e.message = "cannot make a link line for " + target.triple + ": " + e.message;
    return e;
  }
  DriverLine line;
  line.args = std::move(job->before);
  line.input_position = line.args.size();
  line.args.insert(line.args.end(), job->after.begin(), job->after.end());
  return line;
}

namespace {

// ---------------------------------------------------------------------------
// 2. Resolving the line to files, as lld would (Driver.cpp's searchLibrary,
// ScriptParser.cpp's addFile): only what libraries' linker scripts use.

bool exists(const std::string &p) { return llvm::sys::fs::exists(p); }

constexpr const char *kOtherMachine = " is for another machine";

class Resolver {
public:
  Resolver(RuntimeEnvironment &env, const std::vector<std::string> &search)
      : env_(env), search_(search) {}

  // Appends `path` (a file the line names) to `out`; false when it is not
  // something stubs can stand in for (then the line is passed as is).
  bool add_file(const std::string &path, bool as_needed, std::vector<RuntimeItem> &out, int depth = 0) {
    if (depth > 8)
      return fail("linker scripts nest too deeply at " + path);
    // A line names libgcc.a, libgcc_s.so and libc.so's libraries more
    // than once: each file is read once.
    if (seen_.count("archive " + path))
      return true; // lld resolves archives in any order: a repeated one adds nothing
    if (auto known = soname_of_.find(path); known != soname_of_.end())
      return again(known->second, as_needed);
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buf)
      return fail("cannot read " + path);
    StringRef bytes = (*buf)->getBuffer();
    fingerprint(path);
    switch (llvm::identify_magic(bytes)) {
    case llvm::file_magic::elf_shared_object: {
      auto lib = read_shared_library(path);
      if (!lib)
        return fail(lib.error().message);
      if (lib->machine != machine_)
        return fail(path + kOtherMachine);
      soname_of_[path] = lib->soname;
      if (seen_.count("soname " + lib->soname))
        return again(lib->soname, as_needed);
      seen_["soname " + lib->soname] = {&out, out.size()};
      out.push_back({RuntimeItem::Kind::Shared, path, as_needed, int(env_.shared.size())});
      env_.shared.push_back(std::move(lib.value()));
      env_.summary.push_back(env_.shared.back().soname);
      return true;
    }
    case llvm::file_magic::elf_relocatable: {
      auto info = exports::read_object(bytes.data(), bytes.size(), path);
      if (!info)
        return fail(info.error().message);
      for (const exports::Symbol &s : info->symbols)
        env_.startup_names.push_back(s.name);
      out.push_back({RuntimeItem::Kind::Object, path, false, -1});
      env_.summary.push_back(llvm::sys::path::filename(path).str());
      return true;
    }
    case llvm::file_magic::archive: {
      seen_["archive " + path] = {&out, out.size()};
      auto archive = llvm::object::Archive::create(llvm::MemoryBufferRef(bytes, path));
      if (!archive)
        return fail(path + ": " + llvm::toString(archive.takeError()));
      ArchiveSymbols a;
      a.path = path;
      for (const llvm::object::Archive::Symbol &sym : (*archive)->symbols())
        a.defined.insert(sym.getName());
      out.push_back({RuntimeItem::Kind::Archive, path, false, int(env_.archives.size())});
      env_.archives.push_back(std::move(a));
      env_.summary.push_back(llvm::sys::path::filename(path).str());
      return true;
    }
    default:
      return script(path, bytes, as_needed, out, depth);
    }
  }

  // -lNAME (or -l:FILE), searched as lld searches.
  bool add_library(const std::string &name, bool as_needed, bool is_static,
                   std::vector<RuntimeItem> &out, int depth = 0) {
    std::string found;
    if (!name.empty() && name[0] == ':')
      found = search(name.substr(1));
    else
      for (const std::string &dir : search_) {
        if (!is_static && exists(in_dir(dir, "lib" + name + ".so"))) {
          found = in_dir(dir, "lib" + name + ".so");
          break;
        }
        if (exists(in_dir(dir, "lib" + name + ".a"))) {
          found = in_dir(dir, "lib" + name + ".a");
          break;
        }
      }
    if (found.empty()) {
      not_found.push_back(name);
      return fail("-l" + name + " is not in the library directories");
    }
    if (!add_file(found, as_needed, out, depth)) {
      if (llvm::StringRef(why).ends_with(kOtherMachine))
        not_found.push_back(name); // lld would refuse it as incompatible
      return false;
    }
    return true;
  }

  std::string why;
  std::vector<std::string> not_found;
  std::uint16_t machine_ = 0;

private:
  bool fail(std::string w) {
    if (why.empty())
      why = std::move(w);
    return false;
  }

  std::string in_dir(const std::string &dir, const std::string &file) const {
    std::string d = dir;
    if (StringRef(d).starts_with("="))
      d = env_.sysroot + d.substr(1);
    else if (StringRef(d).starts_with("$SYSROOT"))
      d = env_.sysroot + d.substr(8);
    return d + "/" + file;
  }

  std::string search(const std::string &file) const {
    for (const std::string &dir : search_)
      if (exists(in_dir(dir, file)))
        return in_dir(dir, file);
    return {};
  }

  // lld keeps the first library of a soname, needed if any occurrence
  // was not --as-needed: a repeated one adds nothing but its flag.
  bool again(const std::string &soname, bool as_needed) {
    auto seen = seen_.find("soname " + soname);
    RuntimeItem &first = (*seen->second.first)[seen->second.second];
    first.as_needed = first.as_needed && as_needed;
    return true;
  }

  void fingerprint(const std::string &path) {
    std::string fp = file_fingerprint(path);
    if (!fp.empty())
      env_.fingerprints.push_back(std::move(fp));
  }

  // As lld decides it (ScriptParser's isUnderSysroot): some parent of the
  // script's path, as written, is the sysroot directory.
  bool under_sysroot(const std::string &path) const {
    if (env_.sysroot.empty())
      return false;
    for (StringRef p = path; !p.empty(); p = llvm::sys::path::parent_path(p))
      if (llvm::sys::fs::equivalent(env_.sysroot, p))
        return true;
    return false;
  }

  // A library's linker script: OUTPUT_FORMAT, GROUP, INPUT and AS_NEEDED
  // are all that libc.so, libm.so and libgcc_s.so use; anything else
  // passes the line to lld as is.
  bool script(const std::string &path, StringRef text, bool as_needed,
              std::vector<RuntimeItem> &out, int depth) {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < text.size();) {
      char c = text[i];
      if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
        std::size_t end = text.find("*/", i + 2);
        if (end == StringRef::npos)
          return fail("unterminated comment in " + path);
        i = end + 2;
      } else if (c == '(' || c == ')') {
        tokens.push_back(std::string(1, c));
        ++i;
      } else if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
        ++i;
      } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
        return fail(path + " is neither an object, an archive, a shared object nor a linker script");
      } else {
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) &&
               text[j] != '(' && text[j] != ')' && text[j] != ',')
          ++j;
        tokens.push_back(text.substr(i, j - i).str());
        i = j;
      }
    }
    bool sysroot_prefix = under_sysroot(path);
    std::string dir = llvm::sys::path::parent_path(path).str();
    std::size_t i = 0;
    std::function<bool(bool, int)> list = [&](bool needed, int level) -> bool {
      // After "(": entries up to the matching ")".
      while (i < tokens.size() && tokens[i] != ")") {
        const std::string &t = tokens[i++];
        if (t == "AS_NEEDED") {
          if (i >= tokens.size() || tokens[i] != "(")
            return fail("AS_NEEDED without ( in " + path);
          ++i;
          if (!list(true, level + 1))
            return false;
          continue;
        }
        if (StringRef(t).starts_with("-l")) {
          if (!add_library(t.substr(2), needed, false, out, depth + 1))
            return false;
          continue;
        }
        std::string file;
        if (sysroot_prefix && StringRef(t).starts_with("/"))
          file = env_.sysroot + t;
        else if (StringRef(t).starts_with("/"))
          file = t;
        else if (StringRef(t).starts_with("="))
          file = env_.sysroot.empty() ? t.substr(1) : env_.sysroot + "/" + t.substr(1);
        else if (exists(dir + "/" + t))
          file = dir + "/" + t;
        else
          file = search(t);
        if (file.empty() || !exists(file))
          return fail("cannot find " + t + " named by " + path);
        if (!add_file(file, needed, out, depth + 1))
          return false;
      }
      if (i >= tokens.size())
        return fail("unbalanced ( in " + path);
      ++i; // ")"
      return true;
    };
    while (i < tokens.size()) {
      const std::string &cmd = tokens[i++];
      if (i >= tokens.size() || tokens[i] != "(")
        return fail("unsupported linker script command '" + cmd + "' in " + path);
      ++i;
      if (cmd == "OUTPUT_FORMAT" || cmd == "OUTPUT_ARCH") {
        while (i < tokens.size() && tokens[i] != ")")
          ++i;
        ++i;
      } else if (cmd == "GROUP" || cmd == "INPUT") {
        if (!list(as_needed, 0))
          return false;
      } else {
        return fail("unsupported linker script command '" + cmd + "' in " + path);
      }
    }
    return true;
  }

  RuntimeEnvironment &env_;
  const std::vector<std::string> &search_;
  std::map<std::string, std::pair<std::vector<RuntimeItem> *, std::size_t>> seen_;
  std::map<std::string, std::string> soname_of_; // shared objects read, by path
};

// lld's options whose value is the next argument (among those a driver's
// link line can hold before or after the inputs).
bool takes_value(StringRef a) {
  return a == "-m" || a == "-z" || a == "-L" || a == "-l" || a == "-T" || a == "-e" ||
         a == "-u" || a == "-soname" || a == "-rpath" || a == "-dynamic-linker" ||
         a == "--dynamic-linker" || a == "-plugin" || a == "-plugin-opt" || a == "-y" ||
         a == "--version-script" || a == "-hash-style";
}

// Resolves the line's libraries and scripts to files. On failure the
// environment still links, with the line as the driver gave it.
void expand(RuntimeEnvironment &env, const TargetInfo &target) {
  std::vector<std::string> search;
  for (std::size_t i = 0; i < env.line.size(); ++i) {
    StringRef a(env.line[i]);
    if (a == "-L" && i + 1 < env.line.size())
      search.push_back(env.line[i + 1]);
    else if (a.starts_with("-L") && a.size() > 2)
      search.push_back(a.substr(2).str());
  }
  env.search_dirs = search;
  Resolver r(env, search);
  r.machine_ = elf_machine(target);
  bool as_needed = false, is_static = false;
  std::vector<std::pair<bool, bool>> states;
  bool ok = true;
  for (std::size_t i = 0; i < env.line.size() && ok; ++i) {
    std::vector<RuntimeItem> &out = i < env.input_position ? env.before : env.after;
    StringRef a(env.line[i]);
    if (a == "--as-needed") as_needed = true;
    else if (a == "--no-as-needed") as_needed = false;
    else if (a == "-Bstatic" || a == "-static" || a == "-dn" || a == "-non_shared") is_static = true;
    else if (a == "-Bdynamic" || a == "-dy" || a == "-call_shared") is_static = false;
    else if (a == "--push-state") states.emplace_back(as_needed, is_static);
    else if (a == "--pop-state") {
      if (!states.empty()) {
        std::tie(as_needed, is_static) = states.back();
        states.pop_back();
      }
    } else if (a == "--start-group" || a == "--end-group" || a == "-(" || a == "-)") {
      // lld resolves archives in any order
    } else if (a == "-L" && i + 1 < env.line.size()) {
      ++i;
    } else if (a.starts_with("-L")) {
      // searched above
    } else if (a == "-l" && i + 1 < env.line.size()) {
      ok = r.add_library(env.line[++i], as_needed, is_static, out);
    } else if (a.starts_with("-l")) {
      ok = r.add_library(a.substr(2).str(), as_needed, is_static, out);
    } else if (a.starts_with("-")) {
      out.push_back({RuntimeItem::Kind::Flag, a.str(), false, -1});
      if (takes_value(a) && i + 1 < env.line.size())
        out.push_back({RuntimeItem::Kind::Flag, env.line[++i], false, -1});
    } else {
      ok = exists(a.str()) ? r.add_file(a.str(), as_needed, out)
                           : (r.why = a.str() + " does not exist", false);
    }
  }
  env.expanded = ok;
  env.not_found = r.not_found;
  if (!ok) {
    env.not_expanded = r.why;
    env.before.clear();
    env.after.clear();
  }
}

// Whether the line finds a C library for the target: -lc must resolve to a
// libc.so of the target's machine (a cross line without its toolchain
// keeps host directories such as /usr/lib, and bare startup object names).
void find_libc(RuntimeEnvironment &env, const TargetInfo &target) {
  const RuntimeEnvironment *resolved = &env;
  RuntimeEnvironment probe;
  if (!env.expanded) {
    // Resolve -lc alone, in the line's directories.
    probe.sysroot = env.sysroot;
    const std::vector<std::string> &search = env.search_dirs;
    Resolver r(probe, search);
    r.machine_ = elf_machine(target);
    std::vector<RuntimeItem> items;
    if (!r.add_library("c", false, false, items)) {
      env.missing = "no C library for " + target.triple + " (" + r.why + "; searched:";
      for (const std::string &d : search)
        env.missing += " " + d;
      env.missing += ")";
      return;
    }
    resolved = &probe;
  }
  for (const SharedLibrary &s : resolved->shared)
    if (StringRef(s.soname).starts_with("libc.so")) {
      env.has_libc = true;
      return;
    }
  env.missing = "no libc.so for " + target.triple + " on the link line";
}

struct EnvKey {
  std::string triple, sysroot;
  RuntimeSelection selection;
  bool operator<(const EnvKey &o) const {
    return std::tie(triple, sysroot, selection) < std::tie(o.triple, o.sysroot, o.selection);
  }
};

std::mutex g_env_mutex;
std::map<EnvKey, std::shared_ptr<const RuntimeEnvironment>> g_envs;

} // namespace

std::uint16_t elf_machine(const TargetInfo &t) {
  return t.arch == exports::Arch::AArch64 ? llvm::ELF::EM_AARCH64 : llvm::ELF::EM_X86_64;
}

bool environment_defines(const RuntimeEnvironment &env, std::string_view name) {
  llvm::StringRef n(name.data(), name.size());
  for (const SharedLibrary &s : env.shared)
    if (s.defines(n))
      return true;
  std::uint32_t hash = llvm::StringMapImpl::hash(n); // once for every archive's table
  for (const ArchiveSymbols &a : env.archives)
    if (a.defined.find(n, hash) != a.defined.end())
      return true;
  return false;
}

bool library_definitions(const std::string &path, const std::string &sysroot, std::uint16_t machine,
                         const std::function<void(llvm::StringRef)> &each) {
  RuntimeEnvironment scratch;
  scratch.sysroot = sysroot;
  std::vector<std::string> no_search;
  Resolver r(scratch, no_search);
  r.machine_ = machine;
  std::vector<RuntimeItem> items;
  if (!r.add_file(path, false, items))
    return false;
  for (const SharedLibrary &s : scratch.shared)
    s.each_defined(each);
  for (const ArchiveSymbols &a : scratch.archives)
    for (const auto &d : a.defined)
      each(d.getKey());
  return true;
}

std::string file_fingerprint(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return {};
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

Expected<std::shared_ptr<const RuntimeEnvironment>>
runtime_environment(const TargetInfo &target, const std::string &sysroot, const RuntimeSelection &selection) {
  EnvKey key{target.triple, sysroot, selection};
  std::lock_guard<std::mutex> lock(g_env_mutex);
  auto it = g_envs.find(key);
  if (it != g_envs.end())
    return it->second;
  auto t0 = std::chrono::steady_clock::now();
  auto line = driver_link_line(target, sysroot, selection);
  if (!line)
    return line.take_error();
  auto env = std::make_shared<RuntimeEnvironment>();
  env->triple = target.triple;
  env->sysroot = sysroot;
  env->selection = selection;
  env->line = std::move(line->args);
  env->input_position = line->input_position;
  expand(*env, target);
  find_libc(*env, target);
  // A shared library's reference to a name an archive defines extracts
  // that member in lld as an input's would: such archives are always
  // linked, and the stubs carry those references.
  for (ArchiveSymbols &a : env->archives)
    for (const SharedLibrary &s : env->shared)
      for (const auto &u : s.undefined)
        if (a.defined.count(u.getKey()))
          a.shared_references.push_back(u.getKey().str());
  env->build_ms = base::ms_since(t0);
  g_envs.emplace(key, env);
  return std::shared_ptr<const RuntimeEnvironment>(env);
}

const std::vector<std::string> &ArchiveSymbols::names() const {
  std::call_once(lazy->once, [&] {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    auto info = buf ? exports::read_object((*buf)->getBufferStart(), (*buf)->getBufferSize(), path)
                    : Expected<exports::ObjectInfo>(make_error(ErrorCode::InputNotFound, "gone", path));
    if (info) {
      for (const exports::Symbol &s : info->symbols)
        lazy->names.push_back(s.name);
    } else {
      for (const auto &d : defined) // unreadable now: what it defines, at least
        lazy->names.push_back(d.getKey().str());
    }
  });
  return lazy->names;
}

// ---------------------------------------------------------------------------
// 3. One link's arguments.

namespace {

RuntimeLink compute_runtime_link(const RuntimeEnvironment &env,
                                 std::unordered_set<std::string_view> names, RuntimeChoice choice) {
  RuntimeLink rl;
  auto plain = [](const std::string &s) { return Arg{s, false, {}, {}}; };
  if (choice.exact || !env.expanded) {
    for (std::size_t i = 0; i < env.line.size(); ++i)
      (i < env.input_position ? rl.before : rl.after).push_back(plain(env.line[i]));
    rl.used = env.summary;
    rl.adds_objects = true;
    return rl;
  }
  // The names lld can meet: the inputs', the startup objects' (when they
  // are linked), and those of every archive something among them
  // references (members are extracted for such names; an archive nothing
  // references adds nothing). An archive member can need the startup
  // objects in turn (libc_nonshared.a's atexit uses __dso_handle).
  std::vector<bool> archive_in(env.archives.size(), false);
  bool startup = false;
  for (bool grew = true; grew;) {
    grew = false;
    if (!startup && (choice.startup_objects || names.count("__dso_handle"))) {
      startup = grew = true;
      for (const std::string &n : env.startup_names)
        names.insert(n);
    }
    grew = false;
    for (std::size_t a = 0; a < env.archives.size(); ++a) {
      if (archive_in[a])
        continue;
      const ArchiveSymbols &arch = env.archives[a];
      bool needed = !arch.shared_references.empty();
      for (auto n = names.begin(); !needed && n != names.end(); ++n)
        needed = arch.defined.count(llvm::StringRef(n->data(), n->size())) != 0;
      if (!needed)
        continue;
      archive_in[a] = true;
      for (const std::string &n : arch.names())
        names.insert(n);
      for (const std::string &n : arch.shared_references)
        names.insert(n); // so that the stubs carry those references
      grew = true;
    }
  }
  std::vector<std::string_view> sorted(names.begin(), names.end());
  std::sort(sorted.begin(), sorted.end());
  bool as_needed = false;
  auto emit = [&](const std::vector<RuntimeItem> &items, std::vector<Arg> &out) {
    for (const RuntimeItem &it : items) {
      switch (it.kind) {
      case RuntimeItem::Kind::Flag:
        out.push_back(plain(it.text));
        break;
      case RuntimeItem::Kind::Object: // the startup objects
        if (!startup)
          break;
        rl.adds_objects = true;
        out.push_back(plain(it.text));
        rl.used.push_back(llvm::sys::path::filename(it.text).str());
        break;
      case RuntimeItem::Kind::Archive:
        if (!archive_in[it.index])
          break;
        rl.adds_objects = true;
        out.push_back(plain(it.text));
        rl.used.push_back(llvm::sys::path::filename(it.text).str());
        break;
      case RuntimeItem::Kind::Shared: {
        const SharedLibrary &lib = env.shared[it.index];
        // An --as-needed library that defines nothing the link names
        // would not be needed: leaving it out changes nothing.
        if (it.as_needed && std::none_of(sorted.begin(), sorted.end(), [&](std::string_view n) {
              return lib.defines(llvm::StringRef(n.data(), n.size()));
            }))
          break;
        if (it.as_needed != as_needed) {
          out.push_back(plain(it.as_needed ? "--as-needed" : "--no-as-needed"));
          as_needed = it.as_needed;
        }
        std::string name = "rt" + std::to_string(it.index) + "-" + lib.soname;
        rl.files.push_back(JobFile::own(name, write_stub(lib, sorted)));
        rl.files.back().keyed = false; // follows from the inputs and the fingerprints
        out.push_back(Arg{{}, true, name, "<stub of " + lib.path + ">"});
        rl.display_names.emplace_back(name, lib.path);
        rl.used.push_back(lib.soname);
        break;
      }
      }
    }
  };
  emit(env.before, rl.before);
  emit(env.after, rl.after);
  if (as_needed)
    rl.after.push_back(plain("--no-as-needed"));
  return rl;
}

} // namespace

std::shared_ptr<const RuntimeLink> runtime_link(const RuntimeEnvironment &env,
                                                const std::unordered_set<std::string_view> &names,
                                                RuntimeChoice choice) {
  // The memo key: the choice, then (unless the line goes as it is) the
  // sorted names.
  bool as_is = choice.exact || !env.expanded;
  std::string key = as_is ? "exact" : choice.startup_objects ? "startup" : "needed";
  if (!as_is) {
    std::vector<std::string_view> sorted(names.begin(), names.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::string_view n : sorted) {
      key += '\0';
      key.append(n.data(), n.size());
    }
  }
  {
    std::lock_guard<std::mutex> lock(env.memo_mutex);
    auto it = env.memo.find(key);
    if (it != env.memo.end())
      return it->second;
  }
  auto rl = std::make_shared<const RuntimeLink>(compute_runtime_link(env, names, choice));
  std::lock_guard<std::mutex> lock(env.memo_mutex);
  if (env.memo.size() >= 256)
    env.memo.clear(); // a bound: held answers stay valid through their shared_ptr
  env.memo.emplace(std::move(key), rl);
  return rl;
}

} // namespace hotlink::detail
