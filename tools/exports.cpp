// hotlink exports: what a link would export, or the export file itself.
#include "tools/cli.h"

#include "exports/writers.h"
#include "linker/verify.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <cstdio>

namespace hotlink::cli {

int exports(int argc, char **argv) {
  using namespace hotlink::exports;
  Command cmd("exports", "hotlink exports [options] INPUT...",
              "Prints what `hotlink link` would export from INPUT (C names, DATA marks, demangled C++\n"
              "names), or the export file itself.",
              "exit codes: 0 printed, 1 no export can be written (e.g. a hostile name),\n"
              "2 bad usage or bad input.");
  PolicyOptions policy_options;
  std::string target, format = "list", library = "kernel.dll";
  std::vector<std::string> inputs;
  cmd.app.add_option("inputs", inputs, "objects and archives")->type_name("INPUT");
  cmd.app.add_option("--target", target, "check that the inputs are for TRIPLE")->type_name("TRIPLE");
  cmd.app.add_option("--format", format, "list (default), def, version-script, macho, wasm or json")
      ->type_name("F");
  cmd.app.add_option("--library", library, "LIBRARY name for --format def (default: kernel.dll)")
      ->type_name("NAME");
  policy_options.add_to(cmd.app);
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  ExportPolicy policy;
  if (auto bad = policy_options.apply(policy))
    return usage_error(*bad, "exports");
  if (inputs.empty())
    return usage_error("no input files", "exports");
  if (policy.mode == ExportPolicy::Mode::None)
    return usage_error("--policy none exports nothing to show", "exports");
  const char *formats[] = {"list", "def", "version-script", "macho", "wasm", "json"};
  if (std::find(std::begin(formats), std::end(formats), format) == std::end(formats))
    return usage_error("--format takes list, def, version-script, macho, wasm or json, not '" + format + "'", "exports");

  std::vector<ObjectInfo> infos;
  std::vector<hotlink::ExportDetails> described; // what the inputs say of their entry points
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
    std::vector<std::uint8_t> bytes((*buf)->getBufferStart(), (*buf)->getBufferEnd());
    if (auto d = hotlink::describe_artifact(bytes, path))
      for (hotlink::ExportDetails &e : d->exports)
        described.push_back(std::move(e));
  }
  // GPU objects: the kernels are the exports, each with what its metadata
  // says (kernarg size, segments, registers, wavefront size).
  if (!described.empty() && policy.mode == ExportPolicy::Mode::EntryPoints && format == "list") {
    for (const hotlink::ExportDetails &e : described) {
      std::printf("%s", e.name.c_str());
      for (const auto &[k, v] : e.properties)
        std::printf("  %s=%s", k.c_str(), v.c_str());
      std::printf("\n");
    }
    return kOk;
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

} // namespace hotlink::cli
