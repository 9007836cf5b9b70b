// hotlink: the command-line face of the library. Every subcommand is a thin
// layer over the public API; --json prints the same result for scripts.
//
// Exit codes: 0 success; 1 the operation failed (the link failed); 2 bad
// usage or bad input (unknown flag, missing or invalid input, unwritable
// output).
#include "linker/linker.h"
#include "linker/service.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

const char *kTopHelp = R"(hotlink: link JIT objects into shared objects in-process with lld.

usage: hotlink <command> [options]

commands:
  link      link objects into a .so / .dll / .dylib / wasm module
  targets   list the supported targets

Run `hotlink <command> --help` for a command's options.
exit codes: 0 success, 1 operation failed, 2 bad usage or bad input.
)";

const char *kLinkHelp = R"(usage: hotlink link [options] -o OUT INPUT...

Links INPUT objects/archives into OUT, a shared object for the target.

options:
  --target TRIPLE      target triple (default: the host); see `hotlink targets`
  -o OUT               the artifact to write (written atomically)
  --export NAME        export NAME (repeatable); default: lld's default
  -L DIR               add a library search directory (repeatable)
  -l LIB               link library LIB (repeatable)
  --sysroot DIR        sysroot for library lookup
  --flag FLAG          pass FLAG to lld as is (repeatable)
  --allow-undefined    allow undefined symbols (COFF, wasm)
  --no-undefined       refuse undefined symbols (ELF, Mach-O)
  --no-support-objects do not generate _fltused/__chkstk for COFF
  --isolated           link in a worker process (hotlink-ld)
  --threads N          lld threads (default 1)
  --timeout-ms N       worker timeout (default 60000)
  --json               print the result as JSON on stdout
  -h, --help           this help

exit codes: 0 linked, 1 the link failed, 2 bad usage or bad input.
)";

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
  case ErrorCode::OutputError:
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
  llvm::json::Array exports, support;
  for (const std::string &e : r.exports)
    exports.push_back(e);
  for (const std::string &s : r.support_objects)
    support.push_back(s);
  llvm::json::Object o{
      {"ok", r.ok()},
      {"target", r.target},
      {"artifact", r.artifact_path},
      {"exports", std::move(exports)},
      {"support_objects", std::move(support)},
      {"executed_by", r.executed_by},
      {"diagnostics", std::move(diags)},
      {"timings_ms", llvm::json::Object{{"validate", r.timings.validate_ms},
                                        {"prepare", r.timings.prepare_ms},
                                        {"link", r.timings.link_ms},
                                        {"publish", r.timings.publish_ms},
                                        {"total", r.timings.total_ms}}},
  };
  if (r.error)
    o["error"] = error_json(*r.error);
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
  llvm::outs().flush();
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

int cmd_link(int argc, char **argv) {
  hotlink::LinkRequest req;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(kLinkHelp, stdout);
      return kOk;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--isolated") {
      req.execution = hotlink::Execution::Isolated;
    } else if (a == "--allow-undefined") {
      req.undefined = hotlink::Undefined::Allow;
    } else if (a == "--no-undefined") {
      req.undefined = hotlink::Undefined::Error;
    } else if (a == "--no-support-objects") {
      req.support_objects = false;
    } else if (a == "--target" || a == "-o" || a == "--export" || a == "-L" ||
               a == "-l" || a == "--sysroot" || a == "--flag" ||
               a == "--threads" || a == "--timeout-ms") {
      if (!value(v))
        return usage_error("option " + a + " needs a value", "link");
      unsigned long n = 0;
      if (a == "--target") req.target = v;
      else if (a == "-o") req.output_path = v;
      else if (a == "--export") req.exports.push_back(v);
      else if (a == "-L") req.library_paths.push_back(v);
      else if (a == "-l") req.libraries.push_back(v);
      else if (a == "--sysroot") req.sysroot = v;
      else if (a == "--flag") req.extra_flags.push_back(v);
      else if (a == "--threads") {
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

  hotlink::LinkService service;
  hotlink::LinkResult r = service.link(req);
  if (json) {
    print_json(r);
  } else {
    for (const auto &d : r.diagnostics)
      if (d.severity != hotlink::Severity::Note || !r.ok())
        std::fprintf(stderr, "%s: %s\n", severity_name(d.severity), d.message.c_str());
    if (r.ok())
      std::printf("linked %s for %s (%s, %.2f ms)\n", r.artifact_path.c_str(),
                  r.target.c_str(), r.executed_by.c_str(), r.timings.total_ms);
    else
      std::fprintf(stderr, "hotlink: %s\n", r.error->to_string().c_str());
  }
  return r.ok() ? kOk : exit_code_for(r.error->code);
}

int cmd_targets(int argc, char **argv) {
  for (const std::string &t : hotlink::supported_targets())
    std::printf("%s\n", t.c_str());
  std::printf("host: %s\n", hotlink::host_target().c_str());
  return kOk;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return std::fputs(kTopHelp, stderr), kUsage;
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help")
    return std::fputs(kTopHelp, stdout), kOk;
  if (cmd == "link")
    return cmd_link(argc - 2, argv + 2);
  if (cmd == "targets")
    return cmd_targets(argc - 2, argv + 2);
  std::fprintf(stderr, "hotlink: unknown command '%s'\n\n%s", cmd.c_str(), kTopHelp);
  return kUsage;
}
