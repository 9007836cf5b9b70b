// hotlink: the command-line face of the library. Every subcommand is a thin
// layer over the public API; --json prints the same result for scripts.
//
// Exit codes: 0 success; 1 the operation failed (the link failed); 2 bad
// usage or bad input (unknown flag, missing or invalid input, unwritable
// output).
#include "exports/policy.h"
#include "exports/symbols.h"
#include "exports/writers.h"
#include "cache/cache.h"
#include "linker/implib.h"
#include "linker/linker.h"
#include "linker/service.h"
#include "loader/loader.h"
#include "loader/halide_abi.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

int print_version();

const char *kTopHelp = R"(hotlink: link JIT objects into shared objects in-process with lld.

usage: hotlink <command> [options]

commands:
  link      link objects into a .so / .dll / .dylib / wasm module
  exports   show what a link would export, or write the export file
  verify    check an artifact before it is loaded (and, with --load, load it)
  cache     show, check, prune or clear a cache directory (stats|verify|prune|clear)
  implib    make a Windows import library from a .def (link against a DLL without its SDK)
  keygen    make an Ed25519 key pair for signing artifacts and cache entries
  sign      sign an artifact (writes FILE.sig, which `verify --trusted-key` checks)
  targets   list the supported targets

Run `hotlink <command> --help` for a command's options; `hotlink --version`
prints hotlink's, lld's and LLVM's versions. An argument @FILE is replaced by
FILE's contents (a response file: GNU quoting, as lld and GCC read it).
exit codes: 0 success, 1 operation failed, 2 bad usage or bad input.
)";

const char *kLinkHelp = R"(usage: hotlink link [options] -o OUT INPUT...

Links INPUT objects/archives into OUT, a shared object for the target.

options:
  --target TRIPLE      target triple (default: the host); see `hotlink targets`
  -o OUT               the artifact to write (written atomically); also
                       -oOUT and --output OUT. --NAME=VALUE works for every
                       option below that takes a value; -shared is accepted
  --policy P           entry-points (default), all, list or none
  --export NAME        export NAME (repeatable), in any policy
  --include GLOB       also export defined symbols matching GLOB (repeatable)
  --exclude GLOB       never export symbols matching GLOB (repeatable)
  --def OUT.def        COFF: also write the .def used for the DLL
  --implib OUT.lib     COFF: also write the DLL's import library
  --def-in FILE.def    COFF: merge FILE.def into the exports (its entries win)
  --pdb OUT.pdb        COFF: also write the DLL's PDB (its CodeView record names it)
  --debug              COFF: link the inputs' CodeView debug info (a PDB beside OUT)
  -L DIR               add a library search directory (repeatable)
  -l LIB               link library LIB (repeatable)
  --sysroot DIR        sysroot for library lookup; COFF: a mingw-w64 sysroot
                       (/usr/x86_64-w64-mingw32) or an MSVC/SDK lib folder,
                       whose CRT and Win32 import libraries resolve calls
  --windows-crt C      COFF with --sysroot: ucrt (default) or msvcrt
  --exe --entry NAME   COFF: link a console executable starting at NAME
  --soname NAME        ELF: the soname (default: OUT's file name)
  --version-script F   ELF: a version script of yours (version nodes) merged with
                       the policy: the names its nodes list keep their versions
  --no-default-libs    ELF: link the inputs alone, without the target's C
                       library, startup objects and libgcc (a bare link)
  --cxx-runtime R      ELF: auto (default: libstdc++ when the inputs use C++),
                       libstdc++, libc++ or none
  --no-symbolic        ELF: leave the artifact's own definitions preemptible
                       (default: -Bsymbolic-non-weak, which PIE-built static
                       libraries such as Debian's .a files need)
  --exclude-member M   leave archive member M (MEMBER.o or LIB.a(MEMBER.o)) out
  -v, --verbose        print lld's command line, the runtime and each step's time
  --no-runtime-stubs   ELF: give lld the runtime's real shared libraries
                       instead of stubs (slower; the artifact is the same)
  --flag FLAG          pass FLAG to lld as is (repeatable)
  --allow-undefined    allow undefined symbols (COFF, wasm)
  --no-undefined       refuse undefined symbols (ELF, Mach-O)
  --no-support-objects do not generate _fltused/__chkstk for COFF
  --isolated           link in a worker process (hotlink-ld)
  --threads N          lld threads (default 1)
  --timeout-ms N       worker timeout (default 60000)
  --cache DIR          use (or create, 0700) the cache in DIR: a hit copies the
                       stored artifact to OUT without running lld
  --cache-max-bytes N  the cache's size limit (default 1G; K, M, G suffixes)
  --remote URL         with --cache: a Redis server shared with other hosts,
                       redis://HOST[:PORT][/DB] or redis+unix:///PATH; a local
                       miss asks it before linking, and what is linked here is
                       published to it (needs --sign-key). If it is down, slow
                       or returns garbage, the link goes on locally.
  --sign-key KEY       sign the cache entries this link stores and publishes
                       (a key from `hotlink keygen`; its .pub is trusted too)
  --trusted-key PUB    trust remote entries signed by PUB (repeatable). A remote
                       entry is used only when a trusted key signed it.
  --require-signed     with --sign-key: local entries, too, are used only when
                       a trusted key (or the sign key) signed them
  --remote-sync        publish before exiting the link (default: in the
                       background, drained for at most 5 s at exit)
  --remote-timeout-ms N  connect and reply timeout (default 500 and 2000)
  --remote-ttl SECONDS   how long published entries live (default 604800)
  --remote-max-bytes N   largest entry sent or accepted (default 64M)
  --json               print the result as JSON on stdout ("cache": "hit",
                       "remote-hit", "miss" or "off")
  -h, --help           this help

Policies: entry-points exports every function f that has an f_argv or
f_metadata companion, with its companions; all exports every defined
external symbol except linker/CRT machinery (COFF: read-only data too),
marking data DATA; list exports only --export/--include names; none leaves
exports to lld's default.

exit codes: 0 linked, 1 the link failed, 2 bad usage or bad input.
)";

const char *kExportsHelp = R"(usage: hotlink exports [options] INPUT...

Prints what `hotlink link` would export from INPUT objects/archives, or the
export file it would hand to lld.

options:
  --target TRIPLE      target (default: inferred from the first input)
  --policy P           entry-points (default), all or list
  --export NAME        export NAME (repeatable)
  --include GLOB       also export symbols matching GLOB (repeatable)
  --exclude GLOB       never export symbols matching GLOB (repeatable)
  --format F           list (default: C name, DATA mark, demangled name),
                       def, version-script, macho, wasm or json
  --library NAME       LIBRARY name for --format def (default: kernel.dll)
  -h, --help           this help

exit codes: 0 printed, 1 no export can be written (e.g. a hostile name),
2 bad usage or bad input.
)";

std::optional<std::string> read_text_file(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().str();
}

int usage_error(const std::string &msg, const char *help_cmd) {
  std::fprintf(stderr, "hotlink: %s\nRun `hotlink %s --help` for usage.\n",
               msg.c_str(), help_cmd);
  return kUsage;
}

int exit_code_for(hotlink::ErrorCode c) {
  using hotlink::ErrorCode;
  switch (c) {
  case ErrorCode::BadRequest: case ErrorCode::InputNotFound:
  case ErrorCode::InvalidInput: case ErrorCode::FormatMismatch:
  case ErrorCode::ArchMismatch: case ErrorCode::MixedFormats:
  case ErrorCode::BadSymbolName: case ErrorCode::MissingExport:
  case ErrorCode::OutputError: case ErrorCode::CacheUnsafe: case ErrorCode::KeyError:
    return kUsage;
  default:
    return kFailed;
  }
}

const char *severity_name(hotlink::Severity s) {
  switch (s) {
  case hotlink::Severity::Error: return "error";
  case hotlink::Severity::Warning: return "warning";
  case hotlink::Severity::Note: return "note";
  }
  return "note";
}

llvm::json::Value error_json(const hotlink::Error &e) {
  return llvm::json::Object{{"code", hotlink::to_string(e.code)},
                            {"message", e.message},
                            {"input", e.input},
                            {"symbol", e.symbol},
                            {"hint", e.hint}};
}

void print_json(const hotlink::LinkResult &r) {
  llvm::json::Array diags;
  for (const auto &d : r.diagnostics)
    diags.push_back(llvm::json::Object{{"severity", severity_name(d.severity)},
                                       {"message", d.message},
                                       {"file", d.file},
                                       {"symbol", d.symbol}});
  llvm::json::Array exports, support, syslibs, thunks;
  for (const std::string &e : r.exports)
    exports.push_back(e);
  for (const std::string &s : r.support_objects)
    support.push_back(s);
  for (const std::string &s : r.system_libraries)
    syslibs.push_back(s);
  for (const std::string &s : r.import_thunks)
    thunks.push_back(s);
  llvm::json::Object o{
      {"ok", r.ok()},
      {"target", r.target},
      {"artifact", r.artifact_path},
      {"exports", std::move(exports)},
      {"support_objects", std::move(support)},
      {"system_libraries", std::move(syslibs)},
      {"import_thunks", std::move(thunks)},
      {"windows_crt", r.windows_crt},
      {"export_file", r.export_file},
      {"def", r.def_path},
      {"implib", r.implib_path},
      {"pdb", r.pdb_path},
      {"executed_by", r.executed_by},
      {"cache", hotlink::to_string(r.cache)},
      {"cache_key", r.cache_key},
      {"diagnostics", std::move(diags)},
      {"timings_ms", llvm::json::Object{{"validate", r.timings.validate_ms},
                                        {"prepare", r.timings.prepare_ms},
                                        {"link", r.timings.link_ms},
                                        {"cache", r.timings.cache_ms},
                                        {"publish", r.timings.publish_ms},
                                        {"total", r.timings.total_ms}}},
  };
  if (r.error)
    o["error"] = error_json(*r.error);
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
  llvm::outs().flush();
}

// The export-policy flags `link` and `exports` share. Returns true when
// `a` was one of them (consuming its value); sets `error` on a bad value.
bool policy_flag(const std::string &a, int &i, int argc, char **argv,
                 hotlink::ExportPolicy &policy, std::string &error) {
  if (a != "--policy" && a != "--export" && a != "--include" && a != "--exclude")
    return false;
  if (i + 1 >= argc) {
    error = "option " + a + " needs a value";
    return true;
  }
  std::string v = argv[++i];
  if (a == "--policy") {
    if (!hotlink::exports::parse_mode(v, policy.mode))
      error = "--policy takes entry-points, all, list or none, not '" + v + "'";
  } else if (a == "--export") {
    policy.names.push_back(v);
  } else if (a == "--include") {
    policy.include.push_back(v);
  } else {
    policy.exclude.push_back(v);
  }
  return true;
}

bool parse_unsigned(const std::string &s, unsigned long &out) {
  if (s.empty() || s.size() > 9)
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  out = std::stoul(s);
  return true;
}

// "1048576", "64K", "512M", "2G".
bool parse_size(const std::string &s, std::uint64_t &out) {
  if (s.empty())
    return false;
  std::uint64_t mult = 1;
  std::string digits = s;
  switch (s.back()) {
  case 'K': case 'k': mult = 1ull << 10; digits.pop_back(); break;
  case 'M': case 'm': mult = 1ull << 20; digits.pop_back(); break;
  case 'G': case 'g': mult = 1ull << 30; digits.pop_back(); break;
  default: break;
  }
  if (digits.empty() || digits.size() > 12)
    return false;
  for (char c : digits)
    if (c < '0' || c > '9')
      return false;
  out = std::stoull(digits) * mult;
  return true;
}

// An error as --json or as text; returns the exit code its kind maps to.
int print_error(const hotlink::Error &e, bool json) {
  if (json)
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                              {"ok", false}, {"error", error_json(e)}}))
                 << "\n";
  else
    std::fprintf(stderr, "hotlink: %s\n", e.to_string().c_str());
  return exit_code_for(e.code);
}

// The options of `link` that take a value, in every spelling a linker user
// types: "--soname=NAME" and "-oFILE" become "--soname NAME" and "-o FILE";
// "--output" is "-o".
std::vector<std::string> link_arguments(int argc, char **argv) {
  static const char *kValued[] = {
      "--target", "--output", "--def", "--implib", "--def-in", "--pdb", "--sysroot", "--flag", "--threads",
      "--timeout-ms", "--cache", "--cache-max-bytes", "--windows-crt", "--entry", "--soname",
      "--version-script", "--cxx-runtime", "--exclude-member", "--policy", "--export", "--include",
      "--exclude", "--remote", "--sign-key", "--trusted-key", "--remote-timeout-ms", "--remote-ttl",
      "--remote-max-bytes"};
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::size_t eq = a.find('=');
    bool is_value = !out.empty() && (out.back() == "-o" || out.back() == "-L" || out.back() == "-l" ||
                                     std::find(std::begin(kValued), std::end(kValued), out.back()) != std::end(kValued));
    if (is_value) {
      out.push_back(a); // the value of the option before, whatever it looks like
    } else if (a.rfind("--", 0) == 0 && eq != std::string::npos &&
               std::find(std::begin(kValued), std::end(kValued), a.substr(0, eq)) != std::end(kValued)) {
      out.push_back(a.substr(0, eq) == "--output" ? "-o" : a.substr(0, eq));
      out.push_back(a.substr(eq + 1));
    } else if (a.size() > 2 && a.rfind("-o", 0) == 0) {
      out.push_back("-o");
      out.push_back(a.substr(2));
    } else {
      out.push_back(a == "--output" ? "-o" : a);
    }
  }
  return out;
}

int link_command(int argc, char **argv);

int cmd_link(int argc, char **argv) {
  std::vector<std::string> args = link_arguments(argc, argv);
  std::vector<char *> ptrs;
  for (std::string &a : args)
    ptrs.push_back(a.data());
  return link_command(static_cast<int>(ptrs.size()), ptrs.data());
}

int link_command(int argc, char **argv) {
  hotlink::LinkRequest req;
  bool json = false;
  std::string cache_dir, sign_key;
  std::vector<std::string> trusted_keys;
  hotlink::cache::Limits limits;
  std::optional<hotlink::cache::RemoteConfig> remote;
  auto remote_config = [&]() -> hotlink::cache::RemoteConfig & {
    if (!remote)
      remote.emplace();
    return *remote;
  };
  bool remote_sync = false, require_signed = false, verbose = false;
  std::optional<std::chrono::milliseconds> remote_timeout;
  std::optional<std::chrono::seconds> remote_ttl;
  std::optional<std::uint64_t> remote_max;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v, policy_error;
    if (policy_flag(a, i, argc, argv, req.exports, policy_error)) {
      if (!policy_error.empty())
        return usage_error(policy_error, "link");
    } else if (a == "-h" || a == "--help") {
      std::fputs(kLinkHelp, stdout);
      return kOk;
    } else if (a == "--json") {
      json = true;
    } else if (a == "-shared" || a == "--shared") {
      // What hotlink always makes; accepted so linker command lines carry over.
    } else if (a == "--version") {
      return print_version();
    } else if (a == "--isolated") {
      req.execution = hotlink::Execution::Isolated;
    } else if (a == "--allow-undefined") {
      req.undefined = hotlink::Undefined::Allow;
    } else if (a == "--no-undefined") {
      req.undefined = hotlink::Undefined::Error;
    } else if (a == "--no-support-objects") {
      req.support_objects = false;
    } else if (a == "--exe") {
      req.executable = true;
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "--debug") {
      req.debug = true;
    } else if (a == "--no-default-libs") {
      req.runtime = hotlink::Runtime::None;
    } else if (a == "--no-runtime-stubs") {
      req.runtime_stubs = false;
    } else if (a == "--no-symbolic") {
      req.symbolic = false;
    } else if (a == "--remote-sync") {
      remote_sync = true;
    } else if (a == "--require-signed") {
      require_signed = true;
    } else if (a == "--remote" || a == "--sign-key" || a == "--trusted-key" ||
               a == "--remote-timeout-ms" || a == "--remote-ttl" || a == "--remote-max-bytes") {
      if (!value(v))
        return usage_error("option " + a + " needs a value", "link");
      unsigned long n = 0;
      std::uint64_t size = 0;
      if (a == "--remote") remote_config().url = v;
      else if (a == "--sign-key") sign_key = v;
      else if (a == "--trusted-key") trusted_keys.push_back(v);
      else if (a == "--remote-max-bytes") {
        if (!parse_size(v, size) || size == 0)
          return usage_error("--remote-max-bytes takes a size such as 64M, not '" + v + "'", "link");
        remote_max = size;
      } else if (!parse_unsigned(v, n) || (a == "--remote-timeout-ms" && n == 0)) {
        return usage_error(a + " takes a " + (a == "--remote-ttl" ? "number" : "positive number") +
                               ", not '" + v + "'",
                           "link");
      } else if (a == "--remote-timeout-ms") {
        remote_timeout = std::chrono::milliseconds(n);
      } else {
        remote_ttl = std::chrono::seconds(n);
      }
    } else if (a == "--target" || a == "-o" || a == "-L" || a == "-l" ||
               a == "--sysroot" || a == "--flag" || a == "--threads" ||
               a == "--timeout-ms" || a == "--def" || a == "--implib" || a == "--def-in" ||
               a == "--cache" || a == "--cache-max-bytes" || a == "--windows-crt" ||
               a == "--entry" || a == "--soname" || a == "--version-script" ||
               a == "--cxx-runtime" || a == "--exclude-member" || a == "--pdb") {
      if (!value(v))
        return usage_error("option " + a + " needs a value", "link");
      unsigned long n = 0;
      if (a == "--target") req.target = v;
      else if (a == "-o") req.output_path = v;
      else if (a == "--def") req.def_output = v;
      else if (a == "--implib") req.implib_output = v;
      else if (a == "--def-in") req.def_input = v;
      else if (a == "-L") req.library_paths.push_back(v);
      else if (a == "-l") req.libraries.push_back(v);
      else if (a == "--sysroot") req.sysroot = v;
      else if (a == "--flag") req.extra_flags.push_back(v);
      else if (a == "--cache") cache_dir = v;
      else if (a == "--entry") req.entry = v;
      else if (a == "--soname") req.soname = v;
      else if (a == "--pdb") req.pdb_output = v;
      else if (a == "--version-script") req.version_script = v;
      else if (a == "--exclude-member") req.exclude_members.push_back(v);
      else if (a == "--cxx-runtime") {
        if (v == "auto") req.cxx_runtime = hotlink::CxxRuntime::Auto;
        else if (v == "libstdc++") req.cxx_runtime = hotlink::CxxRuntime::Libstdcxx;
        else if (v == "libc++") req.cxx_runtime = hotlink::CxxRuntime::Libcxx;
        else if (v == "none") req.cxx_runtime = hotlink::CxxRuntime::None;
        else return usage_error("--cxx-runtime takes auto, libstdc++, libc++ or none, not '" + v + "'", "link");
      }
      else if (a == "--windows-crt") {
        if (v == "ucrt") req.windows_crt = hotlink::WindowsCrt::Ucrt;
        else if (v == "msvcrt") req.windows_crt = hotlink::WindowsCrt::Msvcrt;
        else return usage_error("--windows-crt takes ucrt or msvcrt, not '" + v + "'", "link");
      }
      else if (a == "--cache-max-bytes") {
        if (!parse_size(v, limits.max_bytes) || limits.max_bytes == 0)
          return usage_error("--cache-max-bytes takes a size such as 512M, not '" + v + "'",
                             "link");
      } else if (a == "--threads") {
        if (!parse_unsigned(v, n) || n == 0 || n > 1024)
          return usage_error("--threads takes a number from 1 to 1024, not '" + v + "'", "link");
        req.threads = static_cast<unsigned>(n);
      } else {
        if (!parse_unsigned(v, n) || n == 0)
          return usage_error("--timeout-ms takes a positive number, not '" + v + "'", "link");
        req.timeout = std::chrono::milliseconds(n);
      }
    } else if (a.size() > 2 && (a.rfind("-L", 0) == 0 || a.rfind("-l", 0) == 0) &&
               a[2] != '-') {
      (a[1] == 'L' ? req.library_paths : req.libraries).push_back(a.substr(2));
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", "link");
    } else {
      req.inputs.push_back(hotlink::Input::file(a));
    }
  }
  if (req.output_path.empty())
    return usage_error("missing -o OUT", "link");
  if (req.inputs.empty())
    return usage_error("no input files", "link");

  if (cache_dir.empty() && (remote || !sign_key.empty() || !trusted_keys.empty() || require_signed))
    return usage_error(std::string(remote ? "--remote" : !sign_key.empty() ? "--sign-key" : "--trusted-key") +
                           " needs --cache DIR (signatures and the remote tier are the cache's; "
                           "sign a file with `hotlink sign`)",
                       "link");
  if (!remote && (remote_sync || remote_timeout || remote_ttl || remote_max))
    return usage_error("the --remote-* options need --remote URL", "link");
  hotlink::ServiceConfig config;
  if (!cache_dir.empty()) {
    hotlink::cache::Config cc;
    cc.dir = cache_dir;
    cc.limits = limits;
    cc.require_signed = require_signed;
    if (!sign_key.empty()) {
      auto k = hotlink::signature::read_secret_key(sign_key);
      if (!k)
        return print_error(k.error(), json);
      cc.sign_key = k.value();
    }
    for (const std::string &t : trusted_keys) {
      auto k = hotlink::signature::read_public_key(t);
      if (!k)
        return print_error(k.error(), json);
      cc.trusted_keys.push_back(k.value());
    }
    if (remote) {
      remote->synchronous_publish = remote_sync;
      if (remote_timeout)
        remote->connect_timeout = remote->io_timeout = *remote_timeout;
      if (remote_ttl)
        remote->ttl = *remote_ttl;
      if (remote_max)
        remote->max_entry_bytes = *remote_max;
      cc.remote = remote;
    }
    auto c = hotlink::cache::Cache::open(std::move(cc));
    if (!c)
      return print_error(c.error(), json);
    config.cache = std::move(c.value());
  }
  hotlink::LinkService service(config);
  hotlink::LinkResult r = service.link(req);
  if (verbose) {
    std::string line;
    for (const std::string &a : r.command)
      line += (line.empty() ? "" : " ") + (a.find_first_of(" \t\"'") == std::string::npos ? a : "'" + a + "'");
    std::fprintf(stderr, "lld: %s\n", line.empty() ? "(not run)" : line.c_str());
    if (!r.runtime.empty()) {
      std::string rt;
      for (const std::string &x : r.runtime)
        rt += " " + x;
      std::fprintf(stderr, "runtime:%s\n", rt.c_str());
    }
    const hotlink::Timings &t = r.timings;
    std::fprintf(stderr, "time: validate %.3f ms, prepare %.3f ms, lld %.3f ms, cache %.3f ms, publish %.3f ms, total %.3f ms\n",
                 t.validate_ms, t.prepare_ms, t.link_ms, t.cache_ms, t.publish_ms, t.total_ms);
  }
  if (json) {
    print_json(r);
  } else {
    for (const auto &d : r.diagnostics)
      if (d.severity != hotlink::Severity::Note || !r.ok())
        std::fprintf(stderr, "%s: %s\n", severity_name(d.severity), d.message.c_str());
    if (r.ok())
      std::printf("linked %s for %s (%s%s, %.2f ms)\n", r.artifact_path.c_str(),
                  r.target.c_str(),
                  r.cache == hotlink::CacheUse::Hit         ? "cache hit"
                  : r.cache == hotlink::CacheUse::RemoteHit ? "remote cache hit"
                                                            : r.executed_by.c_str(),
                  r.cache == hotlink::CacheUse::Miss ? ", cache miss: stored" : "",
                  r.timings.total_ms);
    else
      std::fprintf(stderr, "hotlink: %s\n", r.error->to_string().c_str());
  }
  return r.ok() ? kOk : exit_code_for(r.error->code);
}

// The triple hotlink would link an input for, from its format and arch.
std::string triple_for(hotlink::exports::Format f, hotlink::exports::Arch a) {
  using hotlink::exports::Arch;
  using hotlink::exports::Format;
  switch (f) {
  case Format::ELF: return a == Arch::AArch64 ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  case Format::COFF:
    return a == Arch::X86 ? "i686-pc-windows-msvc"
           : a == Arch::AArch64 ? "aarch64-pc-windows-msvc" : "x86_64-pc-windows-msvc";
  case Format::MachO: return a == Arch::AArch64 ? "arm64-apple-macos" : "x86_64-apple-macos";
  case Format::Wasm: return "wasm32-unknown-unknown";
  case Format::Unknown: break;
  }
  return {};
}

int cmd_exports(int argc, char **argv) {
  using namespace hotlink::exports;
  ExportPolicy policy;
  std::string target, format = "list", library = "kernel.dll";
  std::vector<std::string> inputs;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i], err;
    if (policy_flag(a, i, argc, argv, policy, err)) {
      if (!err.empty())
        return usage_error(err, "exports");
    } else if (a == "-h" || a == "--help") {
      return std::fputs(kExportsHelp, stdout), kOk;
    } else if (a == "--target" || a == "--format" || a == "--library") {
      if (i + 1 >= argc)
        return usage_error("option " + a + " needs a value", "exports");
      (a == "--target" ? target : a == "--format" ? format : library) = argv[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", "exports");
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty())
    return usage_error("no input files", "exports");
  if (policy.mode == ExportPolicy::Mode::None)
    return usage_error("--policy none exports nothing to show", "exports");
  const char *formats[] = {"list", "def", "version-script", "macho", "wasm", "json"};
  if (std::find(std::begin(formats), std::end(formats), format) == std::end(formats))
    return usage_error("--format takes list, def, version-script, macho, wasm or json, not '" + format + "'", "exports");

  std::vector<ObjectInfo> infos;
  for (const std::string &path : inputs) {
    auto buf = llvm::MemoryBuffer::getFile(path, false, false);
    if (!buf) {
      std::fprintf(stderr, "hotlink: %s\n",
                   hotlink::make_error(hotlink::ErrorCode::InputNotFound,
                                       "cannot read: " + buf.getError().message(), path)
                       .to_string().c_str());
      return kUsage;
    }
    auto info = read_object((*buf)->getBufferStart(), (*buf)->getBufferSize(), path);
    if (!info) {
      std::fprintf(stderr, "hotlink: %s\n", info.error().to_string().c_str());
      return kUsage;
    }
    infos.push_back(std::move(info.value()));
  }
  Format fmt = infos[0].format;
  Arch arch = infos[0].arch;
  if (!target.empty()) {
    // Reuse the linker's own checks: a throwaway plan is overkill; compare
    // the inferred triple's format and arch instead.
    std::string inferred = triple_for(fmt, arch);
    llvm::Triple want(llvm::Triple::normalize(target)), have(llvm::Triple::normalize(inferred));
    if (want.getArch() != have.getArch() || want.getObjectFormat() != have.getObjectFormat())
      return usage_error("the inputs are " + std::string(to_string(fmt)) + "/" + to_string(arch) +
                             ", not for " + target, "exports");
  }
  auto chosen = select_exports(infos, fmt, arch, policy);
  if (!chosen) {
    std::fprintf(stderr, "hotlink: %s\n", chosen.error().to_string().c_str());
    return exit_code_for(chosen.error().code);
  }
  const std::vector<Export> &list = chosen.value();
  auto print = [](hotlink::Expected<std::string> text) {
    if (!text) {
      std::fprintf(stderr, "hotlink: %s\n", text.error().to_string().c_str());
      return kFailed;
    }
    std::fputs(text.value().c_str(), stdout);
    return kOk;
  };
  if (format == "def") return print(write_def(list, library));
  if (format == "version-script") return print(write_version_script(list));
  if (format == "macho") return print(write_macho_list(list));
  if (format == "wasm") {
    auto flags = write_wasm_flags(list);
    if (!flags)
      return print(flags.take_error());
    std::string text;
    for (const std::string &f : flags.value())
      text += f + "\n";
    return print(text);
  }
  if (format == "json") {
    llvm::json::Array arr;
    for (const Export &e : list)
      arr.push_back(llvm::json::Object{{"name", e.name}, {"symbol", e.symbol},
                                       {"data", e.data}, {"demangled", demangle(e.name)}});
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(arr))) << "\n";
    return kOk;
  }
  for (const Export &e : list) {
    std::string d = demangle(e.name);
    std::printf("%s%s%s\n", e.name.c_str(), e.data ? "  DATA" : "",
                d != e.name ? ("  (" + d + ")").c_str() : "");
  }
  return kOk;
}

const char *kVerifyHelp = R"(usage: hotlink verify ARTIFACT [options]

Checks ARTIFACT the way the loader does before mapping it: a shared object
of this host's format and architecture, with the expected exports, the
expected hash, and no import this process cannot resolve.

options:
  --expect NAME        require export NAME (repeatable)
  --sha256 HEX         require this SHA-256 of the bytes
  --blake3 HEX         require this BLAKE3 of the bytes
  --load               also map a private copy and read every *_metadata()
                       entry point's Halide metadata
  --abi SPEC           with --load: require this argument list, e.g.
                       input:1:2:1:8,scale:0:0:2:32 (name:kind:dims:code:bits)
  --metadata SYMBOL    the metadata entry point for --abi (default: the
                       only *_metadata export)
  --trusted-key PUB    require a signature by PUB (repeatable: any of them);
                       the artifact must match the signed BLAKE3, size and
                       exports
  --signature FILE     the signed statement (default: ARTIFACT.sig, as
                       written by `hotlink sign`)
  --json               print the result as JSON
  -h, --help           this help

exit codes: 0 accepted, 1 refused (the reason is named), 2 bad usage.
)";

bool parse_abi(const std::string &spec, hotlink::loader::ExpectedAbi &abi) {
  std::size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    std::size_t end = spec.find(',', pos);
    std::string item = spec.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    std::vector<std::string> f;
    std::size_t p = 0;
    for (std::size_t c; (c = item.find(':', p)) != std::string::npos; p = c + 1)
      f.push_back(item.substr(p, c - p));
    f.push_back(item.substr(p));
    if (f.size() != 5 || f[0].empty())
      return false;
    hotlink::loader::AbiArgument a;
    a.name = f[0];
    unsigned long v[4];
    for (int i = 0; i < 4; ++i)
      if (!parse_unsigned(f[i + 1], v[i]))
        return false;
    a.kind = static_cast<int>(v[0]);
    a.dimensions = static_cast<int>(v[1]);
    a.type_code = static_cast<int>(v[2]);
    a.type_bits = static_cast<int>(v[3]);
    abi.arguments.push_back(a);
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  return !abi.arguments.empty();
}

// verify --load in text mode: each *_metadata() entry point's report, one
// argument a line, as the JSON output has it.
void print_metadata_text(const llvm::json::Array &metas) {
  static const char *kKinds[] = {"scalar", "input", "output"};
  static const char *kCodes[] = {"int", "uint", "float", "handle", "bfloat"};
  for (const llvm::json::Value &v : metas) {
    const llvm::json::Object &m = *v.getAsObject();
    const llvm::json::Array &args = *m.getArray("arguments");
    std::printf("%s: pipeline '%s', metadata version %lld, %zu arguments\n",
                m.getString("symbol").value_or("").str().c_str(), m.getString("name").value_or("").str().c_str(),
                static_cast<long long>(m.getInteger("version").value_or(0)), args.size());
    for (const llvm::json::Value &av : args) {
      const llvm::json::Object &a = *av.getAsObject();
      std::int64_t kind = a.getInteger("kind").value_or(-1), code = a.getInteger("type_code").value_or(-1);
      std::printf("  %-16s %-6s %s%lld, %lld dimensions\n", a.getString("name").value_or("").str().c_str(),
                  kind >= 0 && kind < 3 ? kKinds[kind] : "?", code >= 0 && code < 5 ? kCodes[code] : "type",
                  static_cast<long long>(a.getInteger("type_bits").value_or(0)),
                  static_cast<long long>(a.getInteger("dimensions").value_or(0)));
    }
  }
}

int cmd_verify(int argc, char **argv) {
  using namespace hotlink::loader;
  VerifyOptions opts;
  std::string artifact, metadata, abi_spec, signature_path;
  bool load = false, json = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      return std::fputs(kVerifyHelp, stdout), kOk;
    if (a == "--load") {
      load = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--expect" || a == "--sha256" || a == "--blake3" || a == "--abi" ||
               a == "--metadata" || a == "--trusted-key" || a == "--signature") {
      if (i + 1 >= argc)
        return usage_error("option " + a + " needs a value", "verify");
      std::string v = argv[++i];
      if (a == "--trusted-key") {
        auto k = hotlink::signature::read_public_key(v);
        if (!k)
          return print_error(k.error(), json);
        opts.trusted_keys.push_back(k.value());
      } else if (a == "--signature") signature_path = v;
      else if (a == "--expect") opts.expected_exports.push_back(v);
      else if (a == "--sha256") opts.sha256 = v;
      else if (a == "--blake3") opts.blake3 = v;
      else if (a == "--abi") abi_spec = v;
      else metadata = v;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", "verify");
    } else if (artifact.empty()) {
      artifact = a;
    } else {
      return usage_error("verify takes one artifact", "verify");
    }
  }
  if (artifact.empty())
    return usage_error("no artifact", "verify");
  if (!opts.sha256.empty() && !opts.blake3.empty())
    return usage_error("give --sha256 or --blake3, not both", "verify");
  for (const std::string *h : {&opts.sha256, &opts.blake3})
    if (!h->empty() && (h->size() != 64 || h->find_first_not_of("0123456789abcdefABCDEF") != std::string::npos))
      return usage_error("a hash is 64 hex digits, not '" + *h + "'", "verify");
  ExpectedAbi abi;
  if (!abi_spec.empty() && !parse_abi(abi_spec, abi))
    return usage_error("--abi takes name:kind:dims:code:bits[,...], not '" + abi_spec + "'", "verify");
  if (!abi_spec.empty() && !load)
    return usage_error("--abi needs --load (the metadata is read from the mapped image)", "verify");

  if (!signature_path.empty() && opts.trusted_keys.empty())
    return usage_error("--signature needs --trusted-key (the keys whose signature counts)", "verify");
  llvm::json::Object out{{"artifact", artifact}};
  std::optional<hotlink::Error> refusal;
  std::vector<std::string> exports_list;
  llvm::json::Array metas;
  auto bytes = read_artifact_file(artifact);
  if (bytes && !opts.trusted_keys.empty()) {
    if (signature_path.empty())
      signature_path = artifact + ".sig";
    auto text = read_text_file(signature_path);
    if (!text)
      refusal = hotlink::make_error(hotlink::ErrorCode::Unsigned,
                                    "has no signature: cannot read " + signature_path, artifact,
                                    "--signature", "sign it with `hotlink sign --key KEY " + artifact +
                                                       "`, or name its statement with --signature");
    else
      opts.statement = text.value();
  }
  if (refusal) {
  } else if (!bytes) {
    refusal = bytes.error();
  } else if (auto v = verify(bytes.value(), artifact, opts); !v) {
    refusal = v.error();
  } else {
    exports_list = v->info.exports;
    if (!v->signer.empty())
      out["signer"] = v->signer;
    out["sha256"] = v->sha256.empty() ? sha256_hex(bytes.value()) : v->sha256;
    out["blake3"] = v->blake3.empty() ? blake3_hex(bytes.value()) : v->blake3;
    if (load) {
      auto lib = load_private(bytes.value(), artifact);
      if (!lib)
        refusal = lib.error();
      std::vector<std::string> meta_syms;
      for (const std::string &e : exports_list)
        if (e.size() > 9 && e.compare(e.size() - 9, 9, "_metadata") == 0)
          meta_syms.push_back(e);
      if (!refusal && !abi_spec.empty()) {
        if (metadata.empty() && meta_syms.size() == 1)
          metadata = meta_syms[0];
        if (metadata.empty())
          return usage_error("name the metadata entry point with --metadata", "verify");
        refusal = check_abi(*lib.value(), metadata, abi);
      }
      for (const std::string &m : meta_syms) {
        if (refusal)
          break;
        auto fn = reinterpret_cast<const hotlink::loader::halide_abi::halide_filter_metadata_t *(*)()>(lib.value()->symbol(m));
        const hotlink::loader::halide_abi::halide_filter_metadata_t *md = fn ? fn() : nullptr;
        if (!md || (md->num_arguments > 0 && !md->arguments) || md->num_arguments < 0) {
          refusal = hotlink::make_error(hotlink::ErrorCode::AbiMismatch, "returns malformed metadata", artifact, m);
          break;
        }
        llvm::json::Array args;
        for (int i = 0; i < md->num_arguments; ++i) {
          const auto &a = md->arguments[i];
          // std::string copies: the strings live in the image, which is
          // unmapped before the JSON is printed.
          args.push_back(llvm::json::Object{{"name", std::string(a.name ? a.name : "")}, {"kind", a.kind},
                                            {"dimensions", a.dimensions}, {"type_code", int(a.type.code)},
                                            {"type_bits", int(a.type.bits)}});
        }
        metas.push_back(llvm::json::Object{{"symbol", m}, {"version", md->version},
                                           {"name", std::string(md->name ? md->name : "")},
                                           {"arguments", std::move(args)}});
      }
    }
  }
  out["ok"] = !refusal;
  llvm::json::Array ex;
  for (const std::string &e : exports_list)
    ex.push_back(e);
  out["exports"] = std::move(ex);
  if (load)
    out["metadata"] = std::move(metas);
  if (refusal)
    out["error"] = error_json(*refusal);
  if (json) {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out))) << "\n";
    llvm::outs().flush();
  } else if (refusal) {
    std::fprintf(stderr, "hotlink: refused: %s\n", refusal->to_string().c_str());
  } else {
    std::printf("accepted %s (%zu exports%s%s)\n", artifact.c_str(), exports_list.size(),
                load ? ", loaded" : "", opts.trusted_keys.empty() ? "" : ", signed by a trusted key");
    if (const llvm::json::Array *m = out.getArray("metadata"))
      print_metadata_text(*m);
  }
  if (!refusal)
    return kOk;
  return refusal->code == hotlink::ErrorCode::InputNotFound ? kUsage : kFailed;
}

const char *kCacheHelp = R"(usage: hotlink cache stats|verify|prune|clear --dir DIR [options]

  stats    counters (hits, misses, corrupt entries, evictions, stores) kept by
           every process using DIR, and its size now
  verify   read every entry fully and check it against its manifest; corrupt
           entries are removed (exit 1 if any was found)
  prune    enforce the limits below (least recently used first) and remove
           temporaries and partial entries left by killed processes
  clear    remove every entry

options:
  --dir DIR          the cache directory (required)
  --max-bytes N      prune: size limit (default 1G; K, M, G suffixes)
  --max-entries N    prune: entry limit (default: none)
  --max-age SECONDS  prune: remove entries unused for longer (default: none)
  --json             print the result as JSON on stdout
  -h, --help         this help

exit codes: 0 done, 1 corrupt entries found (verify) or an entry stayed in
use (clear), 2 bad usage or a directory that is not a safe cache.
)";

// The option loop `cache` and `implib` share: -h/--help, --json, and
// OPTION VALUE pairs for the names in `valued`, handed to `on_value`
// (which returns -1 to go on, or an exit code). Returns -1 to go on.
int parse_options(int argc, char **argv, int start, const char *cmd, const char *help,
                  const std::vector<std::string> &valued, bool &json,
                  const std::function<int(const std::string &, const std::string &)> &on_value) {
  for (int i = start; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      return std::fputs(help, stdout), kOk;
    if (a == "--json") {
      json = true;
      continue;
    }
    if (std::find(valued.begin(), valued.end(), a) == valued.end())
      return usage_error("unknown option '" + a + "'", cmd);
    if (i + 1 >= argc)
      return usage_error("option " + a + " needs a value", cmd);
    int rc = on_value(a, argv[++i]);
    if (rc >= 0)
      return rc;
  }
  return -1;
}

int cmd_cache(int argc, char **argv) {
  if (argc < 1)
    return usage_error("name an action: stats, verify, prune or clear", "cache");
  std::string action = argv[0];
  if (action == "-h" || action == "--help")
    return std::fputs(kCacheHelp, stdout), kOk;
  if (action != "stats" && action != "verify" && action != "prune" && action != "clear")
    return usage_error("unknown cache action '" + action + "' (stats, verify, prune, clear)",
                       "cache");
  hotlink::cache::Config config;
  bool json = false;
  int rc0 = parse_options(
      argc, argv, 1, "cache", kCacheHelp, {"--dir", "--max-bytes", "--max-entries", "--max-age"},
      json, [&](const std::string &a, const std::string &v) {
        unsigned long n = 0;
        if (a == "--dir") {
          config.dir = v;
        } else if (a == "--max-bytes") {
          if (!parse_size(v, config.limits.max_bytes) || config.limits.max_bytes == 0)
            return usage_error("--max-bytes takes a size such as 512M, not '" + v + "'", "cache");
        } else if (!parse_unsigned(v, n)) {
          return usage_error(a + " takes a number, not '" + v + "'", "cache");
        } else if (a == "--max-entries") {
          config.limits.max_entries = n;
        } else {
          config.limits.max_age = std::chrono::seconds(n);
        }
        return -1;
      });
  if (rc0 >= 0)
    return rc0;
  if (config.dir.empty())
    return usage_error("missing --dir DIR", "cache");
  config.create = false; // inspecting: a mistyped DIR must not become a cache
  auto opened = hotlink::cache::Cache::open(config);
  if (!opened) {
    int rc = print_error(opened.error(), json);
    return opened.error().code == hotlink::ErrorCode::InputNotFound ? kUsage : rc;
  }
  hotlink::cache::Cache &cache = *opened.value();
  llvm::json::Object out{{"dir", cache.config().dir}, {"ok", true}};
  int rc = kOk;
  std::string text;
  if (action == "stats") {
    hotlink::cache::Stats st = cache.stats();
    std::uint64_t lookups = st.hits + st.misses;
    out["hits"] = static_cast<std::int64_t>(st.hits);
    out["misses"] = static_cast<std::int64_t>(st.misses);
    out["corrupt"] = static_cast<std::int64_t>(st.corrupt);
    out["evictions"] = static_cast<std::int64_t>(st.evictions);
    out["stores"] = static_cast<std::int64_t>(st.stores);
    out["store_errors"] = static_cast<std::int64_t>(st.store_errors);
    out["lock_timeouts"] = static_cast<std::int64_t>(st.lock_timeouts);
    out["saved_ms"] = st.saved_ms;
    out["bytes"] = static_cast<std::int64_t>(st.bytes);
    out["entries"] = static_cast<std::int64_t>(st.entries);
    out["refused"] = static_cast<std::int64_t>(st.refused);
    out["remote"] = llvm::json::Object{
        {"hits", static_cast<std::int64_t>(st.remote_hits)},
        {"misses", static_cast<std::int64_t>(st.remote_misses)},
        {"errors", static_cast<std::int64_t>(st.remote_errors)},
        {"refused", static_cast<std::int64_t>(st.remote_refused)},
        {"skipped", static_cast<std::int64_t>(st.remote_skipped)},
        {"published", static_cast<std::int64_t>(st.published)},
        {"publish_errors", static_cast<std::int64_t>(st.publish_errors)}};
    text = llvm::formatv("cache {0}\n  entries       {1}\n  bytes         {2}\n"
                         "  hits          {3}\n  misses        {4}\n  hit rate      {5}\n"
                         "  stores        {6} ({7} failed)\n  corrupt       {8} (removed)\n"
                         "  evictions     {9}\n  lock timeouts {10}\n  time saved    {11:f1} ms\n",
                         cache.config().dir, st.entries, st.bytes, st.hits, st.misses,
                         lookups ? llvm::formatv("{0:f1}%", 100.0 * st.hits / lookups).str()
                                 : std::string("-"),
                         st.stores, st.store_errors, st.corrupt, st.evictions, st.lock_timeouts, st.saved_ms)
               .str();
    text += llvm::formatv("  refused       {0} (signature)\n  remote        {1} hits, {2} misses, "
                          "{3} errors, {4} refused, {5} skipped (backoff)\n"
                          "  published     {6} ({7} failed)\n",
                          st.refused, st.remote_hits, st.remote_misses, st.remote_errors,
                          st.remote_refused, st.remote_skipped, st.published, st.publish_errors)
                .str();
  } else if (action == "verify") {
    hotlink::cache::VerifyReport r = cache.verify();
    llvm::json::Array bad;
    text = llvm::formatv("checked {0} entries: {1} ok, {2} corrupt (removed)\n", r.checked, r.ok,
                         r.corrupt.size())
               .str();
    for (const auto &[key, why] : r.corrupt) {
      bad.push_back(llvm::json::Object{{"key", key}, {"reason", why}});
      text += "  " + key + ": " + why + "\n";
    }
    out["checked"] = static_cast<std::int64_t>(r.checked);
    out["valid"] = static_cast<std::int64_t>(r.ok);
    out["corrupt"] = std::move(bad);
    if (!r.corrupt.empty()) {
      rc = kFailed;
      out["ok"] = false;
    }
  } else if (action == "prune") {
    hotlink::cache::PruneReport r = cache.prune();
    out["evicted"] = static_cast<std::int64_t>(r.evicted);
    out["evicted_bytes"] = static_cast<std::int64_t>(r.evicted_bytes);
    out["skipped_in_use"] = static_cast<std::int64_t>(r.skipped_in_use);
    out["temporaries_removed"] = static_cast<std::int64_t>(r.temporaries_removed);
    out["orphans_removed"] = static_cast<std::int64_t>(r.orphans_removed);
    out["bytes"] = static_cast<std::int64_t>(r.bytes);
    out["entries"] = static_cast<std::int64_t>(r.entries);
    text = llvm::formatv("evicted {0} entries ({1} bytes), {2} in use kept; removed {3} "
                         "temporaries and {4} partial files; {5} entries, {6} bytes remain\n",
                         r.evicted, r.evicted_bytes, r.skipped_in_use, r.temporaries_removed,
                         r.orphans_removed, r.entries, r.bytes)
               .str();
  } else {
    if (auto err = cache.clear()) {
      out["ok"] = false;
      out["error"] = error_json(*err);
      rc = kFailed;
      text = "hotlink: " + err->to_string() + "\n";
    } else {
      text = "cleared " + cache.config().dir + "\n";
    }
  }
  if (json) {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out))) << "\n";
    llvm::outs().flush();
  } else {
    std::fputs(text.c_str(), rc == kOk ? stdout : stderr);
  }
  return rc;
}

const char *kImplibHelp = R"(usage: hotlink implib --def FILE.def --machine x64|x86|arm64 -o OUT.lib [options]

Writes the import library of the DLL that FILE.def describes, as
`llvm-lib /def:` does, so that objects can be linked against the DLL
without its SDK (hotlink link -l OUT.lib ...).

options:
  --dll NAME     the DLL's file name (default: the .def's LIBRARY line)
  --mingw        read the .def as llvm-dlltool does (mingw-w64 .def files:
                 on i386, ExitProcess@4 means _ExitProcess@4)
  --json         print the result as JSON on stdout
  -h, --help     this help

exit codes: 0 written, 2 bad usage or a bad .def (the error names the line).
)";

int cmd_implib(int argc, char **argv) {
  std::string def, machine, out, dll;
  bool json = false, mingw = false;
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i)
    if (std::string(argv[i]) == "--mingw")
      mingw = true;
    else
      rest.push_back(argv[i]);
  argc = static_cast<int>(rest.size());
  argv = rest.data();
  int rc0 = parse_options(argc, argv, 0, "implib", kImplibHelp, {"--def", "--machine", "-o", "--dll"},
                          json, [&](const std::string &a, const std::string &v) {
                            (a == "--def" ? def : a == "--machine" ? machine : a == "-o" ? out : dll) = v;
                            return -1;
                          });
  if (rc0 >= 0)
    return rc0;
  if (def.empty() || machine.empty() || out.empty())
    return usage_error("--def, --machine and -o are required", "implib");
  auto text = llvm::MemoryBuffer::getFile(def, /*IsText=*/true);
  auto fail = [&](const hotlink::Error &e) { return print_error(e, json); };
  if (!text)
    return fail(hotlink::make_error(hotlink::ErrorCode::InputNotFound,
                                    "cannot read: " + text.getError().message(), def, "--def",
                                    "check the path"));
  auto lib = hotlink::import_library_from_def((*text)->getBuffer().str(), def, machine, dll, mingw);
  if (!lib)
    return fail(lib.error());
  // Atomically: a temporary beside OUT, then rename.
  std::string temp = out + ".tmp-" + std::to_string(::getpid());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec, llvm::sys::fs::OF_None);
    if (!ec) {
      os.write(reinterpret_cast<const char *>(lib->bytes.data()), lib->bytes.size());
      os.close();
      if (os.has_error())
        ec = os.error();
    }
    if (ec || std::rename(temp.c_str(), out.c_str()) != 0) {
      std::remove(temp.c_str());
      return fail(hotlink::make_error(hotlink::ErrorCode::OutputError,
                                      "cannot write: " + (ec ? ec.message() : std::string(std::strerror(errno))),
                                      out, "-o", "choose a directory you can write to"));
    }
  }
  if (json) {
    llvm::json::Array ex;
    for (const std::string &e : lib->exports)
      ex.push_back(e);
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                              {"ok", true}, {"implib", out},
                                              {"dll", lib->dll_name}, {"exports", std::move(ex)}}))
                 << "\n";
  } else {
    std::printf("wrote %s: %zu imports from %s\n", out.c_str(), lib->exports.size(),
                lib->dll_name.c_str());
  }
  return kOk;
}

int cmd_targets(int argc, char **argv) {
  for (const std::string &t : hotlink::supported_targets())
    std::printf("%s\n", t.c_str());
  std::printf("host: %s\n", hotlink::host_target().c_str());
  return kOk;
}

} // namespace

const char *kKeygenHelp = R"(usage: hotlink keygen -o KEY [--force]

Makes an Ed25519 key pair: KEY, the secret signing key (mode 0600; never
share it), and KEY.pub, the public key consumers pass to --trusted-key.
An existing KEY is not replaced unless --force is given.

exit codes: 0 written, 1 cannot write, 2 bad usage.
)";

int cmd_keygen(int argc, char **argv) {
  std::string out;
  bool force = false, json = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      return std::fputs(kKeygenHelp, stdout), kOk;
    if (a == "--force") force = true;
    else if (a == "--json") json = true;
    else if (a == "-o" && i + 1 < argc) out = argv[++i];
    else if (a == "-o") return usage_error("option -o needs a value", "keygen");
    else return usage_error("unknown option '" + a + "'", "keygen");
  }
  if (out.empty())
    return usage_error("missing -o KEY", "keygen");
  auto key = hotlink::signature::SecretKey::generate();
  if (auto err = hotlink::signature::write_key_pair(key, out, force))
    return print_error(*err, json);
  std::string pub = key.public_key().hex();
  if (json)
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                               {"ok", true}, {"secret_key", out},
                                               {"public_key", out + ".pub"}, {"key", pub}}))
                 << "\n";
  else
    std::printf("wrote %s (secret, mode 0600) and %s.pub (public key %s)\n", out.c_str(), out.c_str(),
                pub.c_str());
  return kOk;
}

const char *kSignHelp = R"(usage: hotlink sign --key KEY ARTIFACT [-o FILE.sig]

Signs ARTIFACT (any target's .so, .dll, .dylib or wasm module) with KEY: writes
a statement of its size, BLAKE3 and export list, signed with Ed25519, to
ARTIFACT.sig (or FILE.sig). `hotlink verify --trusted-key KEY.pub` and the
loader (VerifyOptions::trusted_keys) accept the artifact only with it.
Signing an existing .sig again adds a signature.

options:
  --key KEY     the secret key (from `hotlink keygen`; must be mode 0600)
  -o FILE.sig   where to write the statement (default: ARTIFACT.sig)
  --json        print the result as JSON
  -h, --help    this help

exit codes: 0 signed, 1 cannot write, 2 bad usage or bad input.
)";

int cmd_sign(int argc, char **argv) {
  std::string key_path, artifact, out;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      return std::fputs(kSignHelp, stdout), kOk;
    if (a == "--json") {
      json = true;
    } else if (a == "--key" || a == "-o") {
      if (i + 1 >= argc)
        return usage_error("option " + a + " needs a value", "sign");
      (a == "--key" ? key_path : out) = argv[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", "sign");
    } else if (artifact.empty()) {
      artifact = a;
    } else {
      return usage_error("sign takes one artifact", "sign");
    }
  }
  if (artifact.empty())
    return usage_error("no artifact", "sign");
  if (key_path.empty())
    return usage_error("missing --key KEY (make one with `hotlink keygen -o KEY`)", "sign");
  if (out.empty())
    out = artifact + ".sig";
  auto key = hotlink::signature::read_secret_key(key_path);
  if (!key)
    return print_error(key.error(), json);
  auto bytes = hotlink::loader::read_artifact_file(artifact);
  if (!bytes)
    return print_error(bytes.error(), json);
  auto info = hotlink::exports::read_artifact(bytes->data(), bytes->size(), artifact);
  if (!info)
    return print_error(info.error(), json);
  if (info->kind != hotlink::exports::FileKind::SharedObject)
    return print_error(hotlink::make_error(hotlink::ErrorCode::NotASharedObject,
                                           "is not a linked artifact", artifact, {},
                                           "sign the shared object `hotlink link` wrote"),
                       json);
  std::string name = artifact.substr(artifact.rfind('/') == std::string::npos ? 0 : artifact.rfind('/') + 1);
  std::string json_text = hotlink::signature::artifact_statement_json(
      bytes.value(), name, info->exports, triple_for(info->format, info->arch));
  std::string statement = hotlink::signature::seal(json_text);
  // A statement of these very bytes already there gets one more signature.
  if (auto old = read_text_file(out)) {
    auto parsed = hotlink::signature::parse_statement(*old, out);
    if (parsed && parsed->json == json_text)
      statement = *old;
  }
  statement += key->sign_line(json_text) + "\n";
  std::string temp = out + ".tmp-" + std::to_string(::getpid());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    if (!ec)
      os << statement;
    os.close();
    if (ec || os.has_error() || std::rename(temp.c_str(), out.c_str()) != 0) {
      std::remove(temp.c_str());
      return print_error(hotlink::make_error(hotlink::ErrorCode::OutputError,
                                             "cannot write the signature: " +
                                                 (ec ? ec.message() : std::string(std::strerror(errno))),
                                             out),
                         json);
    }
  }
  std::string signer = key->public_key().hex();
  if (json)
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                               {"ok", true}, {"artifact", artifact}, {"signature", out},
                                               {"signer", signer},
                                               {"blake3", hotlink::loader::blake3_hex(bytes.value())}}))
                 << "\n";
  else
    std::printf("signed %s (%zu exports) with %s: %s\n", artifact.c_str(), info->exports.size(),
                signer.substr(0, 16).c_str(), out.c_str());
  return kOk;
}

namespace {
// `hotlink --version`: what a bug report needs.
int print_version() {
  std::printf("hotlink %s\n  lld:  %s\n  LLVM: %s\n  host: %s\n", hotlink::version().c_str(),
              hotlink::lld_version().c_str(), hotlink::llvm_version().c_str(), hotlink::host_target().c_str());
  return kOk;
}
} // namespace

int main(int argc_in, char **argv_in) {
  // @FILE arguments are replaced by FILE's contents, split and quoted as lld
  // and GCC do (GNU rules: quotes, backslash escapes, nested @files).
  llvm::BumpPtrAllocator alloc;
  llvm::SmallVector<const char *, 64> expanded(argv_in, argv_in + argc_in);
  llvm::cl::ExpansionContext rsp(alloc, llvm::cl::TokenizeGNUCommandLine);
  if (llvm::Error e = rsp.expandResponseFiles(expanded)) {
    std::fprintf(stderr, "hotlink: error: %s (hint: check the @FILE argument)\n",
                 llvm::toString(std::move(e)).c_str());
    return kUsage;
  }
  std::vector<char *> args;
  for (const char *a : expanded)
    args.push_back(const_cast<char *>(a));
  int argc = static_cast<int>(args.size());
  char **argv = args.data();

  if (argc < 2)
    return std::fputs(kTopHelp, stderr), kUsage;
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help")
    return std::fputs(kTopHelp, stdout), kOk;
  if (cmd == "--version" || cmd == "version")
    return print_version();
  if (cmd == "link")
    return cmd_link(argc - 2, argv + 2);
  if (cmd == "exports")
    return cmd_exports(argc - 2, argv + 2);
  if (cmd == "verify")
    return cmd_verify(argc - 2, argv + 2);
  if (cmd == "cache")
    return cmd_cache(argc - 2, argv + 2);
  if (cmd == "implib")
    return cmd_implib(argc - 2, argv + 2);
  if (cmd == "targets")
    return cmd_targets(argc - 2, argv + 2);
  if (cmd == "keygen")
    return cmd_keygen(argc - 2, argv + 2);
  if (cmd == "sign")
    return cmd_sign(argc - 2, argv + 2);
  std::fprintf(stderr, "hotlink: unknown command '%s'\n\n%s", cmd.c_str(), kTopHelp);
  return kUsage;
}
