// Verifying an artifact before anything maps it: beneath both the loader
// (which maps only what passed) and the linker (which checks artifacts for
// targets this host cannot load, hotlink/verify_target.h).
//
// Contract: verify() reads an artifact's bytes and never maps them: it
// refuses what is not a shared object of the host's format and
// architecture (or of the format and arch asked for), lacks a required
// export, differs from an expected hash, is not signed by a trusted key
// when one is required, or imports what the running process cannot
// provide, each as a named ErrorCode (NotASharedObject, FormatMismatch,
// ArchMismatch, MissingExport, HashMismatch, Unsigned, UntrustedSigner,
// BadSignature, UnresolvedSymbol) naming the artifact and the symbol.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"
#include "hotlink/signature.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink {

struct HOTLINK_API VerifyOptions {
  std::vector<std::string> expected_exports;
  std::string sha256; // hex; empty = not checked
  std::string blake3; // hex; empty = not checked
  // Report imports that neither this process nor the artifact's DT_NEEDED
  // libraries define (checked with dlsym; the needed libraries are opened
  // as its load would open them), and needed libraries that cannot be
  // loaded.
  bool check_imports = true;
  // Non-empty: the artifact must come with a statement (hotlink/signature.h)
  // signed by one of these keys, whose BLAKE3, size and export list it
  // matches; otherwise it is refused (Unsigned, UntrustedSigner,
  // BadSignature, HashMismatch, MissingExport) before anything parses it.
  std::vector<signature::PublicKey> trusted_keys;
  std::string statement; // e.g. a cache manifest or a `hotlink sign` .sig file
  // The format and arch the artifact must have; Unknown = this host's.
  // For an artifact of another target (a DLL on the Linux host that linked
  // it), nothing is resolved against this process (check_imports is not
  // applied): hotlink/verify_target.h adds that target's own structural checks.
  exports::Format format = exports::Format::Unknown;
  exports::Arch arch = exports::Arch::Unknown;
  // For targets whose artifacts are built for one processor (a GPU code
  // object: an AMD target ID such as "gfx90a:xnack+"): the processor the
  // artifact must run on. Checked by verify_for_target (hotlink/verify_target.h).
  std::string processor;
};

struct HOTLINK_API Verified {
  exports::ArtifactInfo info;
  // Of the bytes: the hash that was checked; BLAKE3 when none was (the
  // other is left empty: compute it with sha256_hex / blake3_hex if needed).
  std::string sha256, blake3;
  std::string signer; // hex of the trusted key that signed it, if required
};

HOTLINK_API Expected<Verified> verify(const std::vector<std::uint8_t> &bytes, const std::string &name,
                          const VerifyOptions &options = {});

// Reads a file and verifies it. Errors name the path.
HOTLINK_API Expected<std::vector<std::uint8_t>> read_artifact_file(const std::string &path);

HOTLINK_API std::string sha256_hex(const std::vector<std::uint8_t> &bytes);

} // namespace hotlink
