// hotlink link: objects in, a shared object (or a COFF executable) out.
#include "tools/cli.h"

#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/signature.h"

#include <algorithm>
#include <cstdio>

namespace hotlink::cli {

namespace {

const char *kUsageLine = "hotlink link [options] -o OUT INPUT...";
const char *kDescription = "Links INPUT objects/archives into OUT, a shared object for the target.";
const char *kFooter = R"(Linker spellings work: -oOUT, --output OUT, --NAME=VALUE, -lLIB, -LDIR, and
-shared (accepted: it is what hotlink makes). An argument @FILE is replaced by
FILE's contents.

exit codes: 0 linked, 1 the link failed (undefined or duplicate symbols, lld
errors, a worker that crashed or timed out), 2 bad usage or bad input.)";

// What `link` reads from its command line, as given.
struct Options {
  LinkRequest req;
  PolicyOptions policy;
  std::vector<std::string> inputs;
  bool json = false, verbose = false, isolated = false, allow_undefined = false, no_undefined = false;
  bool no_support_objects = false, no_default_libs = false, no_runtime_stubs = false, no_symbolic = false;
  std::string cxx_runtime = "auto", openmp_runtime = "auto", windows_crt, device_libs;
  // The cache and its remote tier.
  std::string cache_dir, cache_max_bytes, sign_key, remote_url, remote_max_bytes, remote_auth_file;
  std::vector<std::string> trusted_keys;
  bool remote_sync = false, require_signed = false;
  std::optional<unsigned> remote_timeout_ms, remote_ttl;
  unsigned timeout_ms = 60000;
};

// -L, -l, the sysroot and what lld is told as is.
void add_library_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  const char *libs = "Libraries and runtime";
  app.add_option("-L", r.library_paths, "add a library search directory (repeatable)")
      ->allow_extra_args(false)->type_name("DIR")->group(libs);
  app.add_option("-l", r.libraries, "link library LIB (repeatable)")
      ->allow_extra_args(false)->type_name("LIB")->group(libs);
  app.add_option("--sysroot", r.sysroot,
                 "sysroot for library lookup; -windows-msvc: a mingw-w64 sysroot (/usr/x86_64-w64-mingw32) or "
                 "an MSVC/SDK lib folder, whose CRT and Win32 import libraries resolve calls; -w64-mingw32: that "
                 "folder or the toolchain root holding it (/usr)")
      ->type_name("DIR")->group(libs);
  app.add_option("--exclude-member", r.exclude_members, "leave archive member M (MEMBER.o or LIB.a(MEMBER.o)) out")
      ->allow_extra_args(false)->type_name("M")->group(libs);
  app.add_option("--flag", r.extra_flags, "pass FLAG to lld as is (repeatable)")
      ->allow_extra_args(false)->type_name("FLAG")->group(libs);
  app.add_flag("--allow-undefined", o.allow_undefined, "allow undefined symbols (COFF, wasm)")->group(libs);
  app.add_flag("--no-undefined", o.no_undefined, "refuse undefined symbols (ELF, Mach-O)")->group(libs);

}

// The ELF family's options (LinkRequest::elf) and the runtime environment.
void add_elf_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  const char *elf = "ELF";
  app.add_option("--soname", r.elf.soname, "the soname (default: OUT's file name)")->type_name("NAME")->group(elf);
  app.add_option("--version-script", r.elf.version_script,
                 "a version script of yours (version nodes) merged with the policy: the names its nodes "
                 "list keep their versions")
      ->type_name("FILE")->group(elf);
  app.add_flag("--no-default-libs", o.no_default_libs,
               "link the inputs alone, without the target's C library, startup objects and libgcc (a bare "
               "link; also for -w64-mingw32)")
      ->group(elf);
  app.add_option("--cxx-runtime", o.cxx_runtime,
                 "auto (default: libstdc++ when the inputs use C++; also for -w64-mingw32), libstdc++, libc++ "
                 "or none")
      ->type_name("R")->group(elf);
  app.add_option("--openmp-runtime", o.openmp_runtime,
                 "auto (default: libomp for clang's OpenMP objects and mixed links, libgomp for GCC's alone), "
                 "libomp, libgomp or none")
      ->type_name("R")->group(elf);
  app.add_flag("--no-symbolic", o.no_symbolic,
               "leave the artifact's own definitions preemptible (default: -Bsymbolic-non-weak, which "
               "PIE-built static libraries such as Debian's .a files need)")
      ->group(elf);
  app.add_flag("--no-runtime-stubs", o.no_runtime_stubs,
               "give lld the runtime's real shared libraries instead of stubs (slower; the artifact is the "
               "same)")
      ->group(elf);

}

// The COFF family's options (LinkRequest::coff).
void add_coff_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  const char *coff = "COFF";
  app.add_option("--def", r.coff.def_output, "also write the .def used for the DLL")->type_name("OUT.def")->group(coff);
  app.add_option("--implib", r.coff.implib_output, "also write the DLL's import library")
      ->type_name("OUT.lib")->group(coff);
  app.add_option("--def-in", r.coff.def_input, "merge FILE.def into the exports (its entries win)")
      ->type_name("FILE.def")->group(coff);
  app.add_option("--pdb", r.coff.pdb_output, "also write the DLL's PDB (its CodeView record names it)")
      ->type_name("OUT.pdb")->group(coff);
  app.add_flag("--debug", r.coff.debug, "link the inputs' CodeView debug info (a PDB beside OUT)")->group(coff);
  app.add_option("--windows-crt", o.windows_crt, "with --sysroot: ucrt (default) or msvcrt")
      ->type_name("C")->group(coff);
  app.add_flag("--exe", r.coff.executable, "link a console executable starting at --entry NAME")->group(coff);
  app.add_option("--entry", r.coff.entry, "the executable's entry point")->type_name("NAME")->group(coff);
  app.add_flag("--no-support-objects", o.no_support_objects, "do not generate _fltused/__chkstk")->group(coff);

}

// GPU device targets' options (LinkRequest::gpu).
void add_gpu_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  const char *gpu = "GPU code objects (amdgcn-amd-amdhsa)";
  app.add_option("--mcpu", r.gpu.processor,
                 "the processor as an AMD target ID: gfx90a, gfx90a:xnack+, gfx1030 (required)")
      ->type_name("ID")->group(gpu);
  app.add_option("--device-libs", o.device_libs,
                 "auto (default: ocml, ockl and oclc_* when something is left undefined), none, or the bitcode "
                 "folder DIR to take them from")
      ->type_name("auto|none|DIR")->group(gpu);
}

// Where and how the link runs.
void add_run_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  const char *run = "How the link runs";
  app.add_flag("--isolated", o.isolated, "link in a worker process (hotlink-ld)")->group(run);
  app.add_option("--threads", r.threads, "lld threads (default 1)")->check(CLI::Range(1, 1024))->group(run);
  app.add_option("--timeout-ms", o.timeout_ms, "worker timeout (default 60000)")
      ->check(CLI::PositiveNumber)->group(run);

}

// The cache and its remote tier.
void add_cache_options(CLI::App &app, Options &o) {
  const char *cache = "Cache";
  app.add_option("--cache", o.cache_dir,
                 "use (or create, 0700) the cache in DIR: a hit copies the stored artifact to OUT without "
                 "running lld")
      ->type_name("DIR")->group(cache);
  app.add_option("--cache-max-bytes", o.cache_max_bytes, "the cache's size limit (default 1G; K, M, G suffixes)")
      ->type_name("N")->group(cache);
  app.add_option("--remote", o.remote_url,
                 "with --cache: a store shared with other hosts: a Redis server, redis://HOST[:PORT][/DB] or "
                 "redis+unix:///PATH; a Redis Cluster, redis+cluster://HOST:PORT[,HOST:PORT...]; or an HTTP "
                 "server (WebDAV, bazel-remote), http[s]://HOST[:PORT]/PATH. A local miss asks it before "
                 "linking, and what is linked here is published to it (needs --sign-key). If it is down, slow "
                 "or returns garbage, the link goes on locally.")
      ->type_name("URL")->group(cache);
  app.add_option("--sign-key", o.sign_key,
                 "sign the cache entries this link stores and publishes (a key from `hotlink keygen`; its "
                 ".pub is trusted too)")
      ->type_name("KEY")->group(cache);
  app.add_option("--trusted-key", o.trusted_keys,
                 "trust remote entries signed by PUB (repeatable). A remote entry is used only when a "
                 "trusted key signed it.")
      ->allow_extra_args(false)->type_name("PUB")->group(cache);
  app.add_flag("--require-signed", o.require_signed,
               "with --sign-key: local entries, too, are used only when a trusted key (or the sign key) "
               "signed them")
      ->group(cache);
  app.add_flag("--remote-sync", o.remote_sync,
               "publish before exiting the link (default: in the background, drained for at most 5 s at exit)")
      ->group(cache);
  app.add_option("--remote-timeout-ms", o.remote_timeout_ms, "connect and reply timeout (default 500 and 2000)")
      ->check(CLI::PositiveNumber)->type_name("N")->group(cache);
  app.add_option("--remote-ttl", o.remote_ttl, "how long published entries live (default 604800)")
      ->type_name("SECONDS")->group(cache);
  app.add_option("--remote-max-bytes", o.remote_max_bytes,
                 "larger entries are neither published nor read (default 64M)")
      ->type_name("N")->group(cache);
  app.add_option("--remote-auth-file", o.remote_auth_file,
                 "http[s]:// remotes: a file only you can read whose line is 'Bearer TOKEN' or 'USER:PASSWORD'")
      ->type_name("FILE")->group(cache);
}

void add_options(CLI::App &app, Options &o) {
  LinkRequest &r = o.req;
  app.add_option("inputs", o.inputs, "objects and archives (ELF: shared libraries too)")->type_name("INPUT");
  app.add_option("-o,--output", r.output_path, "the artifact to write (written atomically)")->type_name("OUT");
  app.add_option("--target", r.target, "target triple (default: the host); see `hotlink targets`")
      ->type_name("TRIPLE");
  app.add_flag("--json", o.json, "print the result (artifact, exports, diagnostics, timings) as JSON");
  app.add_flag("-v,--verbose", o.verbose, "print lld's command line, the runtime and each step's time");
  o.policy.add_to(app);

  add_library_options(app, o);
  add_elf_options(app, o);
  add_coff_options(app, o);
  add_gpu_options(app, o);
  add_run_options(app, o);
  add_cache_options(app, o);
}

// Checks what CLI11 cannot and completes the request; returns a usage
// message when something is off.
std::optional<std::string> complete(Options &o) {
  LinkRequest &r = o.req;
  if (r.output_path.empty())
    return "missing -o OUT";
  if (o.inputs.empty())
    return "no input files";
  if (auto bad = o.policy.apply(r.exports))
    return bad;
  for (const std::string &in : o.inputs)
    r.inputs.push_back(Input::file(in));
  if (o.cxx_runtime == "auto") r.cxx_runtime = CxxRuntime::Auto;
  else if (o.cxx_runtime == "libstdc++") r.cxx_runtime = CxxRuntime::Libstdcxx;
  else if (o.cxx_runtime == "libc++") r.cxx_runtime = CxxRuntime::Libcxx;
  else if (o.cxx_runtime == "none") r.cxx_runtime = CxxRuntime::None;
  else return "--cxx-runtime takes auto, libstdc++, libc++ or none, not '" + o.cxx_runtime + "'";
  if (o.openmp_runtime == "auto") r.openmp_runtime = OpenMpRuntime::Auto;
  else if (o.openmp_runtime == "libomp") r.openmp_runtime = OpenMpRuntime::Libomp;
  else if (o.openmp_runtime == "libgomp") r.openmp_runtime = OpenMpRuntime::Libgomp;
  else if (o.openmp_runtime == "none") r.openmp_runtime = OpenMpRuntime::None;
  else return "--openmp-runtime takes auto, libomp, libgomp or none, not '" + o.openmp_runtime + "'";
  if (o.windows_crt == "ucrt") r.coff.windows_crt = WindowsCrt::Ucrt;
  else if (o.windows_crt == "msvcrt") r.coff.windows_crt = WindowsCrt::Msvcrt;
  else if (!o.windows_crt.empty()) return "--windows-crt takes ucrt or msvcrt, not '" + o.windows_crt + "'";
  if (o.device_libs == "none") r.gpu.device_libs = DeviceLibs::None;
  else if (!o.device_libs.empty() && o.device_libs != "auto") r.gpu.device_libs_dir = o.device_libs;
  if (o.isolated) r.execution = Execution::Isolated;
  if (o.allow_undefined) r.undefined = Undefined::Allow;
  if (o.no_undefined) r.undefined = Undefined::Error;
  if (o.no_support_objects) r.coff.support_objects = false;
  if (o.no_default_libs) r.runtime = Runtime::None;
  if (o.no_runtime_stubs) r.elf.runtime_stubs = false;
  if (o.no_symbolic) r.elf.symbolic = false;
  r.timeout = std::chrono::milliseconds(o.timeout_ms);

  bool remote = !o.remote_url.empty();
  if (o.cache_dir.empty() && (remote || !o.sign_key.empty() || !o.trusted_keys.empty() || o.require_signed))
    return std::string(remote ? "--remote" : !o.sign_key.empty() ? "--sign-key" : "--trusted-key") +
           " needs --cache DIR (signatures and the remote tier are the cache's; sign a file with `hotlink sign`)";
  if (!remote &&
      (o.remote_sync || o.remote_timeout_ms || o.remote_ttl || !o.remote_max_bytes.empty() || !o.remote_auth_file.empty()))
    return "the --remote-* options need --remote URL";
  std::uint64_t size = 0;
  if (!o.cache_max_bytes.empty() && (!parse_size(o.cache_max_bytes, size) || size == 0))
    return "--cache-max-bytes takes a size such as 512M, not '" + o.cache_max_bytes + "'";
  if (!o.remote_max_bytes.empty() && (!parse_size(o.remote_max_bytes, size) || size == 0))
    return "--remote-max-bytes takes a size such as 64M, not '" + o.remote_max_bytes + "'";
  return std::nullopt;
}

// The cache (and its remote tier) the options ask for.
Expected<std::shared_ptr<cache::Cache>> open_cache(const Options &o) {
  cache::Config cc;
  cc.dir = o.cache_dir;
  if (!o.cache_max_bytes.empty())
    parse_size(o.cache_max_bytes, cc.limits.max_bytes);
  cc.require_signed = o.require_signed;
  if (!o.sign_key.empty()) {
    auto k = signature::read_secret_key(o.sign_key);
    if (!k)
      return k.take_error();
    cc.sign_key = k.value();
  }
  for (const std::string &t : o.trusted_keys) {
    auto k = signature::read_public_key(t);
    if (!k)
      return k.take_error();
    cc.trusted_keys.push_back(k.value());
  }
  if (!o.remote_url.empty()) {
    cache::RemoteConfig remote;
    remote.url = o.remote_url;
    remote.synchronous_publish = o.remote_sync;
    if (o.remote_timeout_ms)
      remote.connect_timeout = remote.io_timeout = std::chrono::milliseconds(*o.remote_timeout_ms);
    if (o.remote_ttl)
      remote.ttl = std::chrono::seconds(*o.remote_ttl);
    if (!o.remote_max_bytes.empty())
      parse_size(o.remote_max_bytes, remote.max_entry_bytes);
    remote.auth_file = o.remote_auth_file;
    cc.remote = std::move(remote);
  }
  return cache::Cache::open(std::move(cc));
}

void print_verbose(const LinkResult &r) {
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
  for (const std::string &why : r.runtime_added)
    std::fprintf(stderr, "added %s\n", why.c_str());
  const Timings &t = r.timings;
  std::fprintf(stderr,
               "time: validate %.3f ms, prepare %.3f ms, lld %.3f ms, cache %.3f ms, publish %.3f ms, total "
               "%.3f ms\n",
               t.validate_ms, t.prepare_ms, t.link_ms, t.cache_ms, t.publish_ms, t.total_ms);
}

void print_result_json(const LinkResult &r) {
  Json diags = Json::array();
  for (const auto &d : r.diagnostics)
    diags.push_back(Json{{"severity", severity_name(d.severity)}, {"message", d.message},
                         {"file", d.file}, {"symbol", d.symbol}});
  Json o{
      {"ok", r.ok()},
      {"target", r.target},
      {"artifact", r.artifact_path},
      {"exports", r.exports},
      {"support_objects", r.support_objects},
      {"system_libraries", r.system_libraries},
      {"import_thunks", r.import_thunks},
      {"windows_crt", r.windows_crt},
      {"runtime", r.runtime},
      {"runtime_added", r.runtime_added},
      {"export_file", r.export_file},
      {"def", r.def_path},
      {"implib", r.implib_path},
      {"pdb", r.pdb_path},
      {"executed_by", r.executed_by},
      {"cache", to_string(r.cache)},
      {"cache_stored", r.cache_stored},
      {"cache_key", r.cache_key},
      {"diagnostics", std::move(diags)},
      {"timings_ms", Json{{"validate", r.timings.validate_ms},
                          {"prepare", r.timings.prepare_ms},
                          {"link", r.timings.link_ms},
                          {"cache", r.timings.cache_ms},
                          {"publish", r.timings.publish_ms},
                          {"total", r.timings.total_ms}}},
  };
  if (r.error)
    o["error"] = error_json(*r.error);
  print_json(o);
}

void print_result_text(const LinkResult &r) {
  for (const auto &d : r.diagnostics)
    if (d.severity != Severity::Note || !r.ok())
      std::fprintf(stderr, "%s: %s\n", severity_name(d.severity), d.message.c_str());
  if (!r.ok()) {
    std::fprintf(stderr, "hotlink: %s\n", r.error->to_string().c_str());
    return;
  }
  std::printf("linked %s for %s (%s%s, %.2f ms)\n", r.artifact_path.c_str(), r.target.c_str(),
              r.cache == CacheUse::Hit         ? "cache hit"
              : r.cache == CacheUse::RemoteHit ? "remote cache hit"
                                               : r.executed_by.c_str(),
              r.cache != CacheUse::Miss ? ""
              : r.cache_stored          ? ", cache miss: stored"
                                        : ", cache miss: not stored",
              r.timings.total_ms);
}

} // namespace

int link(int argc, char **argv) {
  // -shared is one word to a linker user; CLI11 would read it as -s -h ...
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i)
    if (std::string(argv[i]) != "-shared" && std::string(argv[i]) != "--shared")
      args.push_back(argv[i]);
  Command cmd("link", kUsageLine, kDescription, kFooter);
  Options o;
  add_options(cmd.app, o);
  bool version = false;
  cmd.app.add_flag("--version", version, "print hotlink's, lld's and LLVM's versions");
  if (int rc = cmd.parse(static_cast<int>(args.size()), args.data()); rc >= 0)
    return rc;
  if (version)
    return print_version();
  if (auto bad = complete(o))
    return usage_error(*bad, "link");

  ServiceConfig config;
  if (!o.cache_dir.empty()) {
    auto c = open_cache(o);
    if (!c)
      return print_error(c.error(), o.json);
    config.cache = std::move(c.value());
  }
  LinkService service(config);
  LinkResult r = service.link(o.req);
  if (o.verbose)
    print_verbose(r);
  if (o.json)
    print_result_json(r);
  else
    print_result_text(r);
  return r.ok() ? kOk : exit_code_for(r.error->code);
}

} // namespace hotlink::cli
