// Verifying an artifact before anything maps it (verify.h).
#include "hotlink/verify.h"
#include "verify/imports.h"
#include "hotlink/blake3.h"

#include "base/files.h"
#include "base/text.h"

#include "trust/crypto.h"
#include "trust/recent_digests.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hotlink {


using exports::Arch;
using exports::Format;

namespace {

Format host_format() {
#if defined(__APPLE__)
  return Format::MachO;
#elif defined(_WIN32)
  return Format::COFF;
#else
  return Format::ELF;
#endif
}

Arch host_arch() {
#if defined(__x86_64__) || defined(_M_X64)
  return Arch::X86_64;
#elif defined(__aarch64__) || defined(_M_ARM64)
  return Arch::AArch64;
#elif defined(__i386__) || defined(_M_IX86)
  return Arch::X86;
#else
  return Arch::Unknown;
#endif
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What to do with an artifact this host cannot load: check it for the
// target it was linked for. The triple is an example of that target's.
std::string foreign_hint(Format format, Arch arch) {
  const char *triple = nullptr;
  switch (format) {
  case Format::ELF:
    triple = arch == Arch::AMDGCN    ? "amdgcn-amd-amdhsa --mcpu gfxNNN"
             : arch == Arch::AArch64 ? "aarch64-linux-gnu"
             : arch == Arch::X86     ? "i686-linux-gnu"
                                     : "x86_64-linux-gnu";
    break;
  case Format::COFF:
    triple = arch == Arch::AArch64 ? "aarch64-pc-windows-msvc"
             : arch == Arch::X86   ? "i686-pc-windows-msvc"
                                   : "x86_64-pc-windows-msvc (or x86_64-w64-mingw32)";
    break;
  case Format::MachO: triple = arch == Arch::X86_64 ? "x86_64-apple-macos" : "arm64-apple-macos"; break;
  case Format::Wasm: triple = "wasm32-unknown-unknown"; break;
  default: break;
  }
  if (!triple)
    return "link it for this host to load it here";
  return std::string("it is not for this host: to check it for the target it was linked for, pass that "
                     "target (hotlink verify --target ") +
         triple + "); to load it here, link it for this host";
}

} // namespace

std::string sha256_hex(const std::vector<std::uint8_t> &bytes) {
  std::uint8_t h[32];
  trust::crypto::sha256(h, bytes.data(), bytes.size());
  return base::hex(h, sizeof h);
}

Expected<std::vector<std::uint8_t>> read_artifact_file(const std::string &path) {
  std::vector<std::uint8_t> bytes;
  if (auto failed = base::read_file(path, bytes))
    return make_error(ErrorCode::InputNotFound, failed->to_string(), path, {},
                      "check that the artifact exists and is readable");
  return bytes;
}

Expected<Verified> verify(const std::vector<std::uint8_t> &bytes, const std::string &name,
                          const VerifyOptions &options) {
  Verified v;
  std::vector<std::string> signed_exports;
  if (!options.trusted_keys.empty()) {
    if (options.statement.empty())
      return make_error(ErrorCode::Unsigned,
                        "has no signed statement, and a signature by a trusted key is required", name,
                        {}, "sign it (hotlink sign, or link with --sign-key) and pass its statement");
    auto c = signature::check_artifact(bytes, options.statement, options.trusted_keys, name);
    if (!c)
      return c.take_error();
    v.signer = c->signer.hex();
    v.blake3 = c->blake3;
    signed_exports = std::move(c->exports);
  }
  // The hash first: bytes that are not the expected ones are refused
  // before anything parses them.
  if (!options.sha256.empty() || !options.blake3.empty()) {
    bool sha = !options.sha256.empty();
    std::string got = sha ? sha256_hex(bytes) : trust::artifact_blake3_hex(bytes.data(), bytes.size());
    std::string want = lower(sha ? options.sha256 : options.blake3);
    if (got != want)
      return make_error(ErrorCode::HashMismatch,
                        std::string(sha ? "SHA-256" : "BLAKE3") + " is " + got + ", expected " + want,
                        name, {}, "the artifact changed after it was published; rebuild or re-fetch it");
    (sha ? v.sha256 : v.blake3) = got;
  }
  auto info = exports::read_artifact(bytes.data(), bytes.size(), name);
  if (!info) {
    Error e = info.take_error();
    e.code = ErrorCode::NotASharedObject;
    // Its magic was one of the four formats: what follows is damage.
    e.hint = e.message.find("damaged") != std::string::npos || e.message.find("corrupt") != std::string::npos ||
                     e.message.rfind("not a binary: ", 0) == 0
                 ? "the file is damaged: link it again"
                 : "load a shared object linked for this host (hotlink link --target host)";
    return e;
  }
  v.info = std::move(info.value());
  if (v.info.kind != exports::FileKind::SharedObject)
    return make_error(ErrorCode::NotASharedObject,
                      v.info.kind == exports::FileKind::Object ? "is a relocatable object, not a shared object"
                                                               : "is not a shared object",
                      name, {}, "link it first (hotlink link)");
  bool for_host = options.format == exports::Format::Unknown;
  exports::Format format = for_host ? host_format() : options.format;
  exports::Arch arch = for_host ? host_arch() : options.arch;
  if (v.info.format != format)
    return make_error(ErrorCode::FormatMismatch,
                      std::string("is a ") + exports::to_string(v.info.format) + " image; " +
                          (for_host ? "this host loads " : "the target links ") + exports::to_string(format),
                      name, {}, for_host ? foreign_hint(v.info.format, v.info.arch) : "link it for that target");
  if (v.info.arch != arch)
    return make_error(ErrorCode::ArchMismatch,
                      std::string("is built for ") + exports::to_string(v.info.arch) + "; " +
                          (for_host ? "this host is " : "the target is ") + exports::to_string(arch),
                      name, {}, for_host ? foreign_hint(v.info.format, v.info.arch) : "link it for that target");
  for (const std::string &e : signed_exports)
    if (!std::binary_search(v.info.exports.begin(), v.info.exports.end(), e))
      return make_error(ErrorCode::MissingExport, "is signed as exporting it, but does not", name, e,
                        "the artifact does not match its statement; rebuild it");
  for (const std::string &e : options.expected_exports)
    if (!std::binary_search(v.info.exports.begin(), v.info.exports.end(), e))
      return make_error(ErrorCode::MissingExport, "is not exported by the artifact", name, e,
                        "export it when linking (--export), or fix the expected list");
  if (options.check_imports && for_host)
    if (auto u = unresolved_import(v.info.imports, v.info.needed)) {
      if (!u->library.empty())
        return make_error(ErrorCode::UnresolvedSymbol,
                          "needs " + u->library + ", which the dynamic loader cannot load (" + u->why + ")",
                          name, u->library, library_search_hint());
      return make_error(ErrorCode::UnresolvedSymbol,
                        "is imported by the artifact but neither this process nor the libraries it needs define it",
                        name, u->symbol, "link the library that defines it into the host or the artifact");
    }
  // The identity: SHA-256 costs ~2.5 ms/MB here, BLAKE3 ~0.15 (35 us
  // against 2 for a small kernel's image), so an identity nobody asked for
  // by name is the BLAKE3.
  if (v.sha256.empty() && v.blake3.empty())
    v.blake3 = trust::artifact_blake3_hex(bytes.data(), bytes.size());
  return v;
}

} // namespace hotlink
