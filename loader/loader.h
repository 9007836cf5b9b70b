// Verifying and loading artifacts.
//
// Contract:
// - verify() reads an artifact's bytes and never maps them: it refuses what
//   is not a shared object of the host's format and architecture, lacks a
//   required export, differs from an expected hash, or imports what the
//   running process cannot provide, each as a named ErrorCode
//   (NotASharedObject, FormatMismatch, ArchMismatch, MissingExport,
//   HashMismatch, UnresolvedSymbol) naming the artifact and the symbol.
// - load_private() maps a private copy: a uniquely named real file (on
//   Linux in a per-process directory, mode 0700: in the post-mortem store
//   by default, else on tmpfs; named NAME.N.<hash>.so; on Windows a
//   directory per copy, with the DLL's PDB beside it), so the same path can be loaded again and again, a writer can
//   replace the published file while an old version is mapped, the dynamic
//   loader never hands back a stale image, and debuggers and profilers
//   (gdb, perf, valgrind) open the mapped image by the name the loader
//   lists. By default the file stays in a bounded per-user store after the
//   Library and the process are gone, for post-mortem tools (LoadOptions::
//   keep_images); with that off it lives exactly as long as the Library, and
//   what a killed process left is removed by the next process that loads.
//   RTLD_NOW | RTLD_LOCAL.
// - check_abi() compares what an entry point's f_metadata() reports with
//   what the host was built against.
#pragma once

#include "base/error.h"
#include "trust/blake3.h"
#include "trust/signature.h"
#include "exports/symbols.h"

#include <chrono>
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
  // Non-empty: the artifact must come with a statement (trust/signature.h)
  // signed by one of these keys, whose BLAKE3, size and export list it
  // matches; otherwise it is refused (Unsigned, UntrustedSigner,
  // BadSignature, HashMismatch, MissingExport) before anything parses it.
  std::vector<signature::PublicKey> trusted_keys;
  std::string statement; // e.g. a cache manifest or a `hotlink sign` .sig file
  // The format and arch the artifact must have; Unknown = this host's.
  // For an artifact of another target (a DLL on the Linux host that linked
  // it), nothing is resolved against this process (check_imports is not
  // applied): linker/verify.h adds that target's own structural checks.
  exports::Format format = exports::Format::Unknown;
  exports::Arch arch = exports::Arch::Unknown;
  // For targets whose artifacts are built for one processor (a GPU code
  // object: an AMD target ID such as "gfx90a:xnack+"): the processor the
  // artifact must run on. Checked by linker/verify.h's verify_for_target.
  std::string processor;
};

struct Verified {
  exports::ArtifactInfo info;
  // Of the bytes: the hash that was checked; BLAKE3 when none was (the
  // other is left empty: compute it with sha256_hex / blake3_hex if needed).
  std::string sha256, blake3;
  std::string signer; // hex of the trusted key that signed it, if required
};

Expected<Verified> verify(const std::vector<std::uint8_t> &bytes, const std::string &name,
                          const VerifyOptions &options = {});

// Reads a file and verifies it. Errors name the path.
Expected<std::vector<std::uint8_t>> read_artifact_file(const std::string &path);

std::string sha256_hex(const std::vector<std::uint8_t> &bytes);
using trust::blake3_hex; // trust/blake3.h: the one BLAKE3 helper

struct LoadOptions {
  // The private copy's file name. Empty: NAME.N.<hash>.EXT from the
  // artifact's name, a per-process count and the first 8 hex digits of the
  // bytes' hash (HotModule names versions NAME.vN.<hash>.EXT).
  std::string file_name;
  // Post-mortem (loader/image_store.h): on by default, each copy is written
  // into a per-user store and stays there after it is unmapped and after
  // the process exits, so perf and gdb name its functions afterwards. The
  // store: this directory; empty: $HOTLINK_KEEP_IMAGES if set, else
  // $XDG_CACHE_HOME/hotlink/images, else ~/.cache/hotlink/images. "off"
  // (here or in the variable): copies go to tmpfs and are removed at unmap.
  std::string keep_images;
  // The store's bound: past this many bytes, or this age, the oldest images
  // are removed first (never one this process has mapped).
  std::uint64_t keep_max_bytes = 256ull << 20;
  std::chrono::seconds keep_max_age{14 * 24 * 3600};
};

// An address range of a mapped image: [start, end).
struct ImageRange {
  std::uintptr_t start = 0, end = 0;
};

// A mapped private copy. Unmapped (dlclose) and its file removed when
// destroyed.
class Library {
public:
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  void *symbol(const std::string &name) const; // nullptr when absent
  const std::string &name() const { return name_; }
  // The file the dynamic loader mapped (what gdb, perf and valgrind show).
  const std::string &path() const { return copy_path_; }
  // Where the image is mapped: the base its link-time addresses are
  // relative to, and its loaded segments (code, read-only data, data).
  std::uintptr_t base() const { return base_; }
  const std::vector<ImageRange> &ranges() const { return ranges_; }

private:
  friend Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &,
                                                         const std::string &, const LoadOptions &);
  Library() = default;
  void *handle_ = nullptr;
  std::string copy_path_; // the private copy on disk
  std::string name_;
  std::uintptr_t base_ = 0;
  std::vector<ImageRange> ranges_;
  bool kept_ = false; // in the post-mortem store: not removed when unmapped
};

// Maps `bytes` (verified first by the caller) as a private copy.
Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name,
                                                const LoadOptions &options = {});

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
