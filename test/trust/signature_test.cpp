// Ed25519 statements as a consumer relies on them: only a trusted key's
// valid signature over the artifact's exact bytes and exports is accepted,
// key files are private, and the CLI's keygen/sign/verify do what they say.
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/load.h"
#include "hotlink/signature.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace hotlink {
namespace {

using signature::PublicKey;
using signature::SecretKey;
using test::Bytes;

Bytes linked_kernel(int k = 3) {
  LinkRequest req;
  req.inputs.push_back(Input::memory(
      "k.o", test::compile_c(host_target(), "int f(int x) { return x * " + std::to_string(k) +
                                                "; }\nint f_argv(void **a) { return 0; }\n")));
  LinkService service;
  LinkResult r = service.link(req);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error->to_string());
  return r.artifact;
}

std::string signed_statement(const Bytes &so, const SecretKey &key,
                             std::vector<std::string> exports = {"f", "f_argv"}) {
  std::string json = signature::artifact_statement_json(so, "k.so", exports, host_target());
  return signature::add_signature(signature::seal(json), key);
}

std::string text_of(const std::string &path) {
  Bytes b = test::read_file(path);
  return std::string(b.begin(), b.end());
}

TEST(Signature, TrustedSignatureOverTheBytesIsAccepted) {
  SecretKey key = SecretKey::generate();
  Bytes so = linked_kernel();
  std::string st = signed_statement(so, key);
  auto c = signature::check_artifact(so, st, {key.public_key()}, "k.so");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->signer.hex(), key.public_key().hex());
  EXPECT_EQ(c->exports, (std::vector<std::string>{"f", "f_argv"}));

  hotlink::VerifyOptions o;
  o.trusted_keys = {key.public_key()};
  o.statement = st;
  auto v = hotlink::verify(so, "k.so", o);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(v->signer, key.public_key().hex());
}

TEST(Signature, EachWayOfNotBeingTrustedIsRefusedWithItsOwnCode) {
  SecretKey key = SecretKey::generate(), other = SecretKey::generate();
  Bytes so = linked_kernel();
  std::string json = signature::artifact_statement_json(so, "k.so", {"f", "f_argv"}, host_target());
  std::vector<PublicKey> trust{key.public_key()};
  auto code = [&](const Bytes &bytes, const std::string &st) {
    hotlink::VerifyOptions o;
    o.trusted_keys = trust;
    o.statement = st;
    auto v = hotlink::verify(bytes, "k.so", o);
    return v.ok() ? std::string("accepted") : std::string(to_string(v.error().code));
  };
  std::string good = signature::add_signature(signature::seal(json), key);
  EXPECT_EQ(code(so, good), "accepted");
  EXPECT_EQ(code(so, ""), "unsigned");
  EXPECT_EQ(code(so, signature::seal(json)), "unsigned");
  EXPECT_EQ(code(so, signature::add_signature(signature::seal(json), other)), "untrusted-signer");
  // The JSON changed (and re-sealed, so only the signature can tell).
  std::string forged_json = json;
  forged_json.replace(forged_json.find("\"f_argv\""), 8, "\"g_argv\"");
  std::string forged = signature::seal(forged_json) + good.substr(good.find("ed25519 "));
  EXPECT_EQ(code(so, forged), "bad-signature");
  // The checksum line no longer matches: damage, refused before any check.
  std::string damaged = good;
  damaged[5] ^= 1;
  EXPECT_EQ(code(so, damaged), "bad-signature");
  // A flipped signature byte.
  std::string flipped = good;
  flipped[flipped.size() - 3] = flipped[flipped.size() - 3] == '0' ? '1' : '0';
  EXPECT_EQ(code(so, flipped), "bad-signature");
  // Another artifact under a valid statement.
  EXPECT_EQ(code(linked_kernel(4), good), "hash-mismatch");
  // Signed as exporting a name the artifact lacks.
  EXPECT_EQ(code(so, signed_statement(so, key, {"f", "f_argv", "g"})), "missing-export");
  // Untrusted first, trusted second: accepted by the trusted one.
  std::string two = signature::add_signature(signature::add_signature(signature::seal(json), other), key);
  EXPECT_EQ(code(so, two), "accepted");
  // Truncated inside a signature line.
  EXPECT_EQ(code(so, good.substr(0, good.size() - 10)), "bad-signature");
}

TEST(Signature, KeyFilesArePrivateAndRoundTrip) {
  std::string dir = test::temp_dir();
  SecretKey key = SecretKey::generate();
  ASSERT_FALSE(signature::write_key_pair(key, dir + "/k").has_value());
  struct stat st;
  ASSERT_EQ(::stat((dir + "/k").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = signature::read_secret_key(dir + "/k");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->public_key().hex(), key.public_key().hex());
  auto pub = signature::read_public_key(dir + "/k.pub");
  ASSERT_TRUE(pub.ok()) << pub.error().to_string();
  EXPECT_EQ(pub->hex(), key.public_key().hex());
  EXPECT_EQ(pub->comment, "k");

  // Never replaced by accident.
  auto again = signature::write_key_pair(SecretKey::generate(), dir + "/k");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->code, ErrorCode::KeyError);
  EXPECT_EQ(signature::read_secret_key(dir + "/k")->public_key().hex(), key.public_key().hex());

  ::chmod((dir + "/k").c_str(), 0640);
  auto readable = signature::read_secret_key(dir + "/k");
  ASSERT_FALSE(readable.ok());
  EXPECT_EQ(readable.error().code, ErrorCode::KeyError);
  EXPECT_NE(readable.error().message.find("mode 0640"), std::string::npos) << readable.error().message;
  EXPECT_NE(readable.error().hint.find("chmod 600"), std::string::npos);

  auto swapped = signature::read_secret_key(dir + "/k.pub");
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.error().message.find("public key"), std::string::npos);
  auto secret_as_pub = signature::read_public_key(dir + "/k");
  ASSERT_FALSE(secret_as_pub.ok());
  EXPECT_NE(secret_as_pub.error().hint.find("secret"), std::string::npos);

  // A damaged key (its public half altered) is refused, not used.
  ::chmod((dir + "/k").c_str(), 0600);
  std::string text = text_of(dir + "/k");
  text[text.size() - 2] = text[text.size() - 2] == '0' ? '1' : '0';
  test::write_file(dir + "/k", Bytes(text.begin(), text.end()));
  ::chmod((dir + "/k").c_str(), 0600);
  auto damaged = signature::read_secret_key(dir + "/k");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("damaged"), std::string::npos) << damaged.error().message;
}

TEST(SignatureCli, KeygenSignVerify) {
  std::string dir = test::temp_dir(), hl = test::bin_dir() + "/hotlink";
  test::write_file(dir + "/k.so", linked_kernel());
  test::Run g = test::run({hl, "keygen", "-o", dir + "/key"});
  ASSERT_EQ(g.code, 0) << g.err;
  struct stat st;
  ASSERT_EQ(::stat((dir + "/key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(test::exists(dir + "/key.pub"));
  EXPECT_EQ(test::run({hl, "keygen", "-o", dir + "/key"}).code, 2) << "replaced an existing key";
  ASSERT_EQ(test::run({hl, "keygen", "-o", dir + "/other"}).code, 0);

  test::Run s = test::run({hl, "sign", "--key", dir + "/key", dir + "/k.so"});
  ASSERT_EQ(s.code, 0) << s.err;
  ASSERT_TRUE(test::exists(dir + "/k.so.sig"));

  test::Run ok = test::run({hl, "verify", dir + "/k.so", "--trusted-key", dir + "/key.pub", "--json"});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("\"signer\""), std::string::npos) << ok.out;
  test::Run untrusted = test::run({hl, "verify", dir + "/k.so", "--trusted-key", dir + "/other.pub"});
  EXPECT_EQ(untrusted.code, 1);
  EXPECT_NE(untrusted.err.find("untrusted-signer"), std::string::npos) << untrusted.err;

  // Either key will do once both signed.
  ASSERT_EQ(test::run({hl, "sign", "--key", dir + "/other", dir + "/k.so"}).code, 0);
  EXPECT_EQ(test::run({hl, "verify", dir + "/k.so", "--trusted-key", dir + "/other.pub"}).code, 0);
  EXPECT_EQ(test::run({hl, "verify", dir + "/k.so", "--trusted-key", dir + "/key.pub"}).code, 0);

  // One byte changed after signing.
  Bytes so = test::read_file(dir + "/k.so");
  so[so.size() / 2] ^= 0x40;
  test::write_file(dir + "/k.so", so);
  test::Run changed = test::run({hl, "verify", dir + "/k.so", "--trusted-key", dir + "/key.pub"});
  EXPECT_EQ(changed.code, 1);
  EXPECT_NE(changed.err.find("hash-mismatch"), std::string::npos) << changed.err;

  // No statement at all.
  test::write_file(dir + "/plain.so", linked_kernel());
  test::Run unsigned_ = test::run({hl, "verify", dir + "/plain.so", "--trusted-key", dir + "/key.pub"});
  EXPECT_EQ(unsigned_.code, 1);
  EXPECT_NE(unsigned_.err.find("unsigned"), std::string::npos) << unsigned_.err;

  // Bad key files are bad input (exit 2) and name the file.
  ::chmod((dir + "/key").c_str(), 0644);
  test::Run loose = test::run({hl, "sign", "--key", dir + "/key", dir + "/plain.so"});
  EXPECT_EQ(loose.code, 2);
  EXPECT_NE(loose.err.find(dir + "/key"), std::string::npos) << loose.err;
  EXPECT_FALSE(test::exists(dir + "/plain.so.sig"));
  EXPECT_EQ(test::run({hl, "verify", dir + "/plain.so", "--trusted-key", dir + "/nothing.pub"}).code, 2);
}

} // namespace
} // namespace hotlink
