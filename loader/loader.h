// Verifying and loading artifacts.
//
// Contract:
// - verify() reads an artifact's bytes and never maps them: it refuses what
//   is not a shared object of the host's format and architecture, lacks a
//   required export, differs from an expected hash, or imports what the
//   running process cannot provide, each as a named ErrorCode
//   (NotASharedObject, FormatMismatch, ArchMismatch, MissingExport,
//   HashMismatch, UnresolvedSymbol) naming the artifact and the symbol.
// - load_private() maps a private copy (a memfd on Linux; a uniquely named
//   copy, with its PDB copied under the matching name, on Windows), so the same path
//   can be loaded again and again, a writer can replace the published file
//   while an old version is mapped, and the dynamic loader's cache never
//   hands back a stale image. RTLD_NOW | RTLD_LOCAL.
// - check_abi() compares what an entry point's f_metadata() reports with
//   what the host was built against.
#pragma once

#include "exports/error.h"
#include "loader/signature.h"
#include "exports/symbols.h"
#include "loader/halide_abi.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::loader {

struct VerifyOptions {
  std::vector<std::string> expected_exports;
  std::string sha256; // hex; empty = not checked
  std::string blake3; // hex; empty = not checked
  // Report imports that neither this process nor the artifact's DT_NEEDED
  // libraries define (checked with dlsym; the needed libraries are opened
  // as its load would open them), and needed libraries that cannot be
  // loaded.
  bool check_imports = true;
  // Non-empty: the artifact must come with a statement (loader/signature.h)
  // signed by one of these keys, whose BLAKE3, size and export list it
  // matches; otherwise it is refused (Unsigned, UntrustedSigner,
  // BadSignature, HashMismatch, MissingExport) before anything parses it.
  std::vector<signature::PublicKey> trusted_keys;
  std::string statement; // e.g. a cache manifest or a `hotlink sign` .sig file
};

struct Verified {
  exports::ArtifactInfo info;
  // Of the bytes: the hash that was checked; SHA-256 when none was (BLAKE3
  // is left empty then, and SHA-256 when only a BLAKE3 was checked).
  std::string sha256, blake3;
  std::string signer; // hex of the trusted key that signed it, if required
};

Expected<Verified> verify(const std::vector<std::uint8_t> &bytes, const std::string &name,
                          const VerifyOptions &options = {});

// Reads a file and verifies it. Errors name the path.
Expected<std::vector<std::uint8_t>> read_artifact_file(const std::string &path);

std::string sha256_hex(const std::vector<std::uint8_t> &bytes);
std::string blake3_hex(const std::vector<std::uint8_t> &bytes);

// A mapped private copy. Unmapped (dlclose) when destroyed.
class Library {
public:
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  void *symbol(const std::string &name) const; // nullptr when absent
  const std::string &name() const { return name_; }

private:
  friend Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &,
                                                         const std::string &);
  Library() = default;
  void *handle_ = nullptr;
  int fd_ = -1;           // POSIX: the memfd, kept open while mapped so its
                          // /proc/self/fd path stays unique
  std::string copy_path_; // Windows: the private copy on disk
  std::string name_;
};

// Maps `bytes` (verified first by the caller) as a private copy.
Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name);

struct AbiArgument {
  std::string name;
  int kind = 0;
  int dimensions = 0;
  int type_code = 0;
  int type_bits = 0;
};

struct ExpectedAbi {
  int version = 1;
  std::vector<AbiArgument> arguments;
};

// Calls `metadata_symbol` (a `const halide_filter_metadata_t *(void)`) in
// `lib` and compares its report with `expected`. The error names the first
// argument or field that differs.
std::optional<Error> check_abi(const Library &lib, const std::string &metadata_symbol,
                               const ExpectedAbi &expected);

} // namespace hotlink::loader
