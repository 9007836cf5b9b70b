// hotlink verify: the loader's checks on an artifact, and with --load its
// Halide metadata.
#include "tools/cli.h"

#include "hotlink/blake3.h"
#include "hotlink/load.h"
#include "hotlink/signature.h"
#include "hotlink/verify_target.h"

#include <cstdio>

namespace hotlink::cli {

namespace {

bool parse_unsigned(const std::string &s, unsigned long &out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoul(s);
  return true;
}

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
void print_metadata_text(const Json &metas) {
  static const char *kKinds[] = {"scalar", "input", "output"};
  static const char *kCodes[] = {"int", "uint", "float", "handle", "bfloat"};
  for (const Json &m : metas) {
    const Json &args = m["arguments"];
    std::printf("%s: pipeline '%s', metadata version %d, %zu arguments\n", m["symbol"].get<std::string>().c_str(),
                m["name"].get<std::string>().c_str(), m["version"].get<int>(), args.size());
    for (const Json &a : args) {
      int kind = a["kind"].get<int>(), code = a["type_code"].get<int>();
      std::printf("  %-16s %-6s %s%d, %d dimensions\n", a["name"].get<std::string>().c_str(),
                  kind >= 0 && kind < 3 ? kKinds[kind] : "?", code >= 0 && code < 5 ? kCodes[code] : "type",
                  a["type_bits"].get<int>(), a["dimensions"].get<int>());
    }
  }
}

} // namespace

namespace {

using hotlink::loader::ExpectedAbi;
using hotlink::loader::Library;
using hotlink::VerifyOptions;

// What `verify` reads from its command line.
struct VerifyArgs {
  VerifyOptions opts;
  std::string artifact, metadata, abi_spec, signature_path, target;
  std::vector<std::string> trusted;
  bool load = false, json = false;
  ExpectedAbi abi;
  hotlink::ArtifactDescription description; // what the artifact says of itself
};

void add_options(CLI::App &app, VerifyArgs &a) {
  app.add_option("artifact", a.artifact, "the shared object, DLL, dylib or wasm module")->type_name("ARTIFACT");
  app.add_option("--expect", a.opts.expected_exports, "require export NAME (repeatable)")
      ->allow_extra_args(false)->type_name("NAME");
  app.add_option("--sha256", a.opts.sha256, "require this SHA-256 of the bytes")->type_name("HEX");
  app.add_option("--blake3", a.opts.blake3, "require this BLAKE3 of the bytes")->type_name("HEX");
  app.add_flag("--load", a.load,
               "also map a private copy and print every *_metadata() entry point's Halide metadata");
  app.add_option("--abi", a.abi_spec,
                 "with --load: require this argument list, e.g. input:1:2:1:8,scale:0:0:2:32 "
                 "(name:kind:dims:code:bits)")
      ->type_name("SPEC");
  app.add_option("--metadata", a.metadata, "the metadata entry point for --abi (default: the only *_metadata export)")
      ->type_name("SYMBOL");
  app.add_option("--trusted-key", a.trusted,
                 "require a signature by PUB (repeatable: any of them); the artifact must match the signed "
                 "BLAKE3, size and exports")
      ->allow_extra_args(false)->type_name("PUB");
  app.add_option("--signature", a.signature_path,
                 "the signed statement (default: ARTIFACT.sig, as written by `hotlink sign`)")
      ->type_name("FILE");
  app.add_option("--target", a.target,
                 "the target ARTIFACT was linked for (default: this host); for another target its format and "
                 "arch are checked instead of the host's, imports are not resolved, and its platform's checks "
                 "follow (Mach-O: what dyld needs)")
      ->type_name("TRIPLE");
  app.add_option("--mcpu", a.opts.processor,
                 "GPU code objects: the AMD target ID it must run as (gfx90a, gfx90a:xnack+); the target "
                 "defaults to the artifact's")
      ->type_name("ID");
  app.add_flag("--json", a.json, "print the result as JSON");
}

// What the artifact says of itself (a code object's target ID, version and
// kernels), into the JSON result; nothing for formats that say nothing.
void add_description(VerifyArgs &a, const std::vector<std::uint8_t> &bytes, Json &out) {
  auto d = hotlink::describe_artifact(bytes, a.artifact);
  if (!d || (d->properties.empty() && d->exports.empty()))
    return;
  a.description = *d;
  Json props = Json::object();
  for (const auto &[k, v] : d->properties)
    props[k] = v;
  Json entries = Json::array();
  for (const hotlink::ExportDetails &e : d->exports) {
    Json o{{"name", e.name}};
    for (const auto &[k, v] : e.properties)
      o[k] = v;
    entries.push_back(std::move(o));
  }
  out["properties"] = std::move(props);
  out["entry_points"] = std::move(entries);
}

void print_description(const hotlink::ArtifactDescription &d) {
  for (const auto &[k, v] : d.properties)
    std::printf("  %s: %s\n", k.c_str(), v.c_str());
  for (const hotlink::ExportDetails &e : d.exports) {
    std::printf("  kernel %s:", e.name.c_str());
    for (const auto &[k, v] : e.properties)
      std::printf(" %s=%s", k.c_str(), v.c_str());
    std::printf("\n");
  }
}

// What is wrong with the arguments, or empty.
std::string check_args(VerifyArgs &a) {
  if (a.artifact.empty())
    return "no artifact";
  if (!a.opts.sha256.empty() && !a.opts.blake3.empty())
    return "give --sha256 or --blake3, not both";
  for (const std::string *h : {&a.opts.sha256, &a.opts.blake3})
    if (!h->empty() && (h->size() != 64 || h->find_first_not_of("0123456789abcdefABCDEF") != std::string::npos))
      return "a hash is 64 hex digits, not '" + *h + "'";
  if (!a.abi_spec.empty() && !parse_abi(a.abi_spec, a.abi))
    return "--abi takes name:kind:dims:code:bits[,...], not '" + a.abi_spec + "'";
  if (!a.abi_spec.empty() && !a.load)
    return "--abi needs --load (the metadata is read from the mapped image)";
  if (!a.signature_path.empty() && a.opts.trusted_keys.empty())
    return "--signature needs --trusted-key (the keys whose signature counts)";
  auto here = hotlink::loads_here(a.target);
  if (!here)
    return here.error().message + " (" + here.error().hint + ")";
  if (a.load && !*here)
    return "--load maps the artifact into this process: it needs an artifact for this host, not " + a.target;
  return {};
}

// The signed statement the trusted keys are checked against.
std::optional<hotlink::Error> read_statement(VerifyArgs &a) {
  if (a.opts.trusted_keys.empty())
    return std::nullopt;
  if (a.signature_path.empty())
    a.signature_path = a.artifact + ".sig";
  auto text = read_text_file(a.signature_path);
  if (!text)
    return hotlink::make_error(hotlink::ErrorCode::Unsigned, "has no signature: cannot read " + a.signature_path,
                               a.artifact, "--signature",
                               "sign it with `hotlink sign --key KEY " + a.artifact +
                                   "`, or name its statement with --signature");
  a.opts.statement = text.value();
  return std::nullopt;
}

// Every *_metadata() entry point's report, as JSON.
std::optional<hotlink::Error> read_metadata(const Library &lib, const std::vector<std::string> &meta_syms, Json &metas) {
  for (const std::string &m : meta_syms) {
    auto md = hotlink::loader::read_pipeline_metadata(lib, m);
    if (!md)
      return md.take_error();
    Json args = Json::array();
    for (const hotlink::loader::AbiArgument &arg : md->arguments)
      args.push_back(Json{{"name", arg.name}, {"kind", arg.kind}, {"dimensions", arg.dimensions},
                          {"type_code", arg.type_code}, {"type_bits", arg.type_bits}});
    metas.push_back(Json{{"symbol", m}, {"version", md->version}, {"name", md->name}, {"arguments", std::move(args)}});
  }
  return std::nullopt;
}

// --load: maps a private copy, checks --abi, reads the metadata. An empty
// `usage` is set when --metadata must be given.
std::optional<hotlink::Error> load_and_report(VerifyArgs &a, const std::vector<std::uint8_t> &bytes,
                                              const std::vector<std::string> &exports_list,
                                              Json &metas, std::string &usage) {
  auto loaded = hotlink::loader::load_verified(bytes, a.artifact, a.opts);
  if (!loaded)
    return loaded.error();
  const std::unique_ptr<hotlink::loader::Library> &lib = loaded->library;
  std::vector<std::string> meta_syms;
  for (const std::string &e : exports_list)
    if (e.size() > 9 && e.compare(e.size() - 9, 9, "_metadata") == 0)
      meta_syms.push_back(e);
  if (!a.abi_spec.empty()) {
    if (a.metadata.empty() && meta_syms.size() == 1)
      a.metadata = meta_syms[0];
    if (a.metadata.empty()) {
      usage = "name the metadata entry point with --metadata";
      return std::nullopt;
    }
    if (auto err = check_abi(*lib, a.metadata, a.abi))
      return err;
  }
  return read_metadata(*lib, meta_syms, metas);
}

int print_result(const VerifyArgs &a, Json out, const std::optional<hotlink::Error> &refusal,
                 const std::vector<std::string> &exports_list, Json metas) {
  out["ok"] = !refusal;
  out["exports"] = exports_list;
  if (a.load)
    out["metadata"] = std::move(metas);
  if (refusal)
    out["error"] = error_json(*refusal);
  if (a.json) {
    print_json(out);
  } else if (refusal) {
    std::fprintf(stderr, "hotlink: refused: %s\n", refusal->to_string().c_str());
  } else {
    std::printf("accepted %s (%zu exports%s%s)\n", a.artifact.c_str(), exports_list.size(),
                a.load ? ", loaded" : "", a.opts.trusted_keys.empty() ? "" : ", signed by a trusted key");
    print_description(a.description);
    if (a.load)
      print_metadata_text(out["metadata"]);
  }
  if (!refusal)
    return kOk;
  return refusal->code == hotlink::ErrorCode::InputNotFound ? kUsage : kFailed;
}

} // namespace

int verify(int argc, char **argv) {
  Command cmd("verify", "hotlink verify ARTIFACT [options]",
              "Checks ARTIFACT the way the loader does before mapping it: a shared object of this\n"
              "host's format and architecture (or --target's), with the expected exports, the expected\n"
              "hash, and no import this process cannot resolve (for this host).",
              "exit codes: 0 accepted, 1 refused (the reason is named), 2 bad usage.");
  VerifyArgs a;
  add_options(cmd.app, a);
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  for (const std::string &t : a.trusted) {
    auto k = hotlink::signature::read_public_key(t);
    if (!k)
      return print_error(k.error(), a.json);
    a.opts.trusted_keys.push_back(k.value());
  }
  if (std::string why = check_args(a); !why.empty())
    return usage_error(why, "verify");
  Json out{{"artifact", a.artifact}};
  std::vector<std::string> exports_list;
  Json metas = Json::array();
  auto bytes = hotlink::read_artifact_file(a.artifact);
  std::optional<hotlink::Error> refusal = bytes ? read_statement(a) : bytes.error();
  if (!refusal && a.target.empty() && !a.opts.processor.empty())
    if (auto art = hotlink::exports::read_artifact(bytes->data(), bytes->size(), a.artifact))
      a.target = hotlink::triple_for(art->format, art->arch); // a GPU code object names its target
  if (!refusal) {
    auto v = hotlink::verify_for_target(bytes.value(), a.artifact, a.target, a.opts);
    if (!v) {
      refusal = v.error();
    } else {
      exports_list = v->info.exports;
      if (!v->signer.empty())
        out["signer"] = v->signer;
      out["sha256"] = v->sha256.empty() ? hotlink::sha256_hex(bytes.value()) : v->sha256;
      out["blake3"] = v->blake3.empty() ? hotlink::trust::blake3_hex(bytes.value()) : v->blake3;
      add_description(a, bytes.value(), out);
      std::string usage;
      if (a.load)
        refusal = load_and_report(a, bytes.value(), exports_list, metas, usage);
      if (!usage.empty())
        return usage_error(usage, "verify");
    }
  }
  return print_result(a, std::move(out), refusal, exports_list, std::move(metas));
}

} // namespace hotlink::cli
