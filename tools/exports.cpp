// hotlink exports: what a link would export, or the export file itself.
#include "tools/cli.h"

#include "hotlink/verify.h"
#include "hotlink/verify_target.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace hotlink::cli {

namespace {

using namespace hotlink::exports;

// What the inputs hold: each one's symbols, and what the inputs say of
// their entry points themselves (a GPU object's kernels and metadata).
struct Inputs {
  std::vector<ObjectInfo> infos;
  std::vector<hotlink::ExportDetails> described;
};

// The kernels of the device code `path` holds for a GPU `target`: alone,
// or carried by a host object or an archive's members (nvcc -rdc=true -c,
// libcudadevrt.a). LTO-IR names no kernel until a link compiles it: said
// on stderr.
bool read_device_code(const std::vector<std::uint8_t> &bytes, const std::string &path, const std::string &target,
                      Inputs &in) {
  auto d = hotlink::describe_device_code(bytes, path, target);
  if (!d) {
    std::fprintf(stderr, "hotlink: %s\n", d.error().to_string().c_str());
    return false;
  }
  for (const auto &[key, value] : d->properties)
    if (key == "lto_ir")
      std::fprintf(stderr, "hotlink: note: %s holds LTO-IR (%s), whose kernels only a link names\n", path.c_str(),
                   value.c_str());
  for (hotlink::ExportDetails &e : d->exports)
    in.described.push_back(std::move(e));
  return true;
}

bool gpu_target(const std::string &target) {
  return target.rfind("nvptx64", 0) == 0 || target.rfind("amdgcn", 0) == 0;
}

// Reads every input; on failure prints the error and returns nothing.
std::optional<Inputs> read_inputs(const std::vector<std::string> &paths, const std::string &target) {
  Inputs in;
  for (const std::string &path : paths) {
    auto bytes = hotlink::read_artifact_file(path);
    if (!bytes) {
      std::fprintf(stderr, "hotlink: %s\n", bytes.error().to_string().c_str());
      return std::nullopt;
    }
    if (gpu_target(target)) {
      if (!read_device_code(*bytes, path, target, in))
        return std::nullopt;
      continue;
    }
    auto info = read_object(bytes->data(), bytes->size(), path);
    if (!info) {
      std::fprintf(stderr, "hotlink: %s\n", info.error().to_string().c_str());
      return std::nullopt;
    }
    in.infos.push_back(std::move(info.value()));
    if (auto d = hotlink::describe_artifact(bytes.value(), path))
      for (hotlink::ExportDetails &e : d->exports)
        in.described.push_back(std::move(e));
  }
  return in;
}

// GPU objects: the kernels are the exports, each with what its metadata
// says (kernarg size, segments, registers, wavefront size).
int print_described(const std::vector<hotlink::ExportDetails> &described) {
  for (const hotlink::ExportDetails &e : described) {
    std::printf("%s", e.name.c_str());
    for (const auto &[k, v] : e.properties)
      std::printf("  %s=%s", k.c_str(), v.c_str());
    std::printf("\n");
  }
  return kOk;
}

// The inputs' format and arch against --target's (the linker's own checks
// would need a whole plan; the target's format and arch are enough here).
std::optional<std::string> mismatch(const ObjectInfo &first, const std::string &target) {
  if (target.empty())
    return std::nullopt;
  auto want = hotlink::target_format(target);
  if (!want)
    return want.error().message + " (" + want.error().hint + ")";
  if (want->format == first.format && want->arch == first.arch)
    return std::nullopt;
  return "the inputs are " + std::string(to_string(first.format)) + "/" + to_string(first.arch) + ", not for " +
         target;
}

int print_text(hotlink::Expected<std::string> text) {
  if (!text) {
    std::fprintf(stderr, "hotlink: %s\n", text.error().to_string().c_str());
    return kFailed;
  }
  std::fputs(text.value().c_str(), stdout);
  return kOk;
}

// The chosen exports in `format`: an export file, JSON, or the list.
int print_exports(const std::vector<Export> &list, const std::string &format, const std::string &library) {
  if (format == "def") return print_text(write_def(list, library));
  if (format == "version-script") return print_text(write_version_script(list));
  if (format == "macho") return print_text(write_macho_list(list));
  if (format == "wasm") {
    auto flags = write_wasm_flags(list);
    if (!flags)
      return print_text(flags.take_error());
    std::string text;
    for (const std::string &f : flags.value())
      text += f + "\n";
    return print_text(text);
  }
  if (format == "json") {
    Json arr = Json::array();
    for (const Export &e : list)
      arr.push_back(Json{{"name", e.name}, {"symbol", e.symbol}, {"data", e.data}, {"demangled", demangle(e.name)}});
    print_json(arr);
    return kOk;
  }
  for (const Export &e : list) {
    std::string d = demangle(e.name);
    std::printf("%s%s%s\n", e.name.c_str(), e.data ? "  DATA" : "",
                d != e.name ? ("  (" + d + ")").c_str() : "");
  }
  return kOk;
}

} // namespace

int exports(int argc, char **argv) {
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

  std::optional<Inputs> in = read_inputs(inputs, target);
  if (!in)
    return kUsage;
  if (gpu_target(target) || (!in->described.empty() && policy.mode == ExportPolicy::Mode::EntryPoints && format == "list"))
    return print_described(in->described);
  if (auto bad = mismatch(in->infos[0], target))
    return usage_error(*bad, "exports");
  auto chosen = select_exports(in->infos, in->infos[0].format, in->infos[0].arch, policy);
  if (!chosen) {
    std::fprintf(stderr, "hotlink: %s\n", chosen.error().to_string().c_str());
    return exit_code_for(chosen.error().code);
  }
  return print_exports(chosen.value(), format, library);
}

} // namespace hotlink::cli
