// hotlink keygen and hotlink sign: Ed25519 keys, and signed statements of
// artifacts that `verify --trusted-key` and the loader check.
#include "tools/cli.h"

#include "hotlink/blake3.h"
#include "hotlink/verify.h"
#include "hotlink/signature.h"

#include <cstdio>

namespace hotlink::cli {

int keygen(int argc, char **argv) {
  Command cmd("keygen", "hotlink keygen -o KEY [--force]",
              "Makes an Ed25519 key pair: KEY, the secret signing key (mode 0600; never share it), and\n"
              "KEY.pub, the public key consumers pass to --trusted-key. An existing KEY is not replaced\n"
              "unless --force is given.",
              "exit codes: 0 written, 1 cannot write, 2 bad usage.");
  std::string out;
  bool force = false, json = false;
  cmd.app.add_option("-o,--output", out, "the secret key to write (KEY.pub beside it)")->type_name("KEY");
  cmd.app.add_flag("--force", force, "replace an existing key");
  cmd.app.add_flag("--json", json, "print the result as JSON");
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  if (out.empty())
    return usage_error("missing -o KEY", "keygen");
  auto key = hotlink::signature::SecretKey::generate();
  if (auto err = hotlink::signature::write_key_pair(key, out, force))
    return print_error(*err, json);
  std::string pub = key.public_key().hex();
  if (json)
    print_json(Json{{"ok", true}, {"secret_key", out}, {"public_key", out + ".pub"}, {"key", pub}});
  else
    std::printf("wrote %s (secret, mode 0600) and %s.pub (public key %s)\n", out.c_str(), out.c_str(),
                pub.c_str());
  return kOk;
}

int sign(int argc, char **argv) {
  Command cmd("sign", "hotlink sign --key KEY ARTIFACT [-o FILE.sig]",
              "Signs ARTIFACT (any target's .so, .dll, .dylib or wasm module) with KEY: writes a statement\n"
              "of its size, BLAKE3 and export list, signed with Ed25519, to ARTIFACT.sig (or FILE.sig).\n"
              "`hotlink verify --trusted-key KEY.pub` and the loader (VerifyOptions::trusted_keys) accept\n"
              "the artifact only with it. Signing an existing .sig again adds a signature.",
              "exit codes: 0 signed, 1 cannot write, 2 bad usage or bad input.");
  std::string key_path, artifact, out;
  bool json = false;
  cmd.app.add_option("artifact", artifact, "the artifact to sign")->type_name("ARTIFACT");
  cmd.app.add_option("--key", key_path, "the secret key (from `hotlink keygen`; must be mode 0600)")
      ->type_name("KEY");
  cmd.app.add_option("-o,--output", out, "where to write the statement (default: ARTIFACT.sig)")
      ->type_name("FILE.sig");
  cmd.app.add_flag("--json", json, "print the result as JSON");
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  if (artifact.empty())
    return usage_error("no artifact", "sign");
  if (key_path.empty())
    return usage_error("missing --key KEY (make one with `hotlink keygen -o KEY`)", "sign");
  if (out.empty())
    out = artifact + ".sig";
  auto key = hotlink::signature::read_secret_key(key_path);
  if (!key)
    return print_error(key.error(), json);
  auto bytes = hotlink::read_artifact_file(artifact);
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
  if (auto err = write_output_file(out, std::vector<std::uint8_t>(statement.begin(), statement.end())))
    return print_error(*err, json);
  std::string signer = key->public_key().hex();
  if (json)
    print_json(Json{{"ok", true},
                    {"artifact", artifact},
                    {"signature", out},
                    {"signer", signer},
                    {"blake3", hotlink::trust::blake3_hex(bytes.value())}});
  else
    std::printf("signed %s (%zu exports) with %s: %s\n", artifact.c_str(), info->exports.size(),
                signer.substr(0, 16).c_str(), out.c_str());
  return kOk;
}

} // namespace hotlink::cli
