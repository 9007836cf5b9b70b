// Verifying and loading artifacts.
//
// Contract:
// - Every artifact is verified first (hotlink/verify.h, beneath the loader
//   and the linker alike); nothing here maps bytes that were not.
// - load_private() maps a private copy: a uniquely named real file (on
//   Linux in a directory the process holds, mode 0700: in the post-mortem
//   store by default, else on tmpfs; named NAME.<hash>.so; on Windows a
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

#include "hotlink/error.h"
#include "hotlink/blake3.h"
#include "hotlink/verify.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::loader {

using trust::blake3_hex; // hotlink/blake3.h: the one BLAKE3 helper

struct HOTLINK_API LoadOptions {
  // The private copy's file name. Empty: NAME.<hash>.EXT from the
  // artifact's name and the first 8 hex digits of the bytes' hash
  // (HotModule names versions NAME.vN.<hash>.EXT); NAME.<hash>.K.EXT while
  // another copy has that name. A kept copy of the same bytes that is not
  // mapped now serves again: a process that loads the same bytes over and
  // over keeps as many copies as it maps at once.
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
  // A HotModule's version number: with no file_name the copy is then
  // named NAME.vN.<hash>.EXT (0: NAME.<hash>.EXT).
  std::uint64_t version = 0;
};

// An address range of a mapped image: [start, end).
struct HOTLINK_API ImageRange {
  std::uintptr_t start = 0, end = 0;
};

// Whether `address` lies in one of `ranges` (an image's segments).
inline bool within(const std::vector<ImageRange> &ranges, std::uintptr_t address) {
  for (const ImageRange &r : ranges)
    if (address >= r.start && address < r.end)
      return true;
  return false;
}

// A mapped private copy. Unmapped (dlclose) and its file removed when
// destroyed.
class HOTLINK_API Library {
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
  // The private copy that load_private and load_verified make (internal).
  friend Expected<std::unique_ptr<Library>> load_copy(const std::vector<std::uint8_t> &, const std::string &,
                                                      const LoadOptions &, const std::string *,
                                                      const std::string *);
  Library() = default;
  void *handle_ = nullptr;
  std::string copy_path_; // the private copy on disk
  std::string name_;
  std::uintptr_t base_ = 0;
  std::vector<ImageRange> ranges_;
  bool kept_ = false; // in the post-mortem store: not removed when unmapped
};

// Maps `bytes` (verified first by the caller) as a private copy.
HOTLINK_API Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name,
                                                const LoadOptions &options = {});

// The one verified load every caller uses (the C API, the Python package,
// the CLI, cache entries, HotModule): verify(bytes, name, verify_options),
// then a private copy mapped, named from the identity verify() computed
// (not hashed again). What verify() learned comes back with the library.
struct HOTLINK_API VerifiedLibrary {
  std::unique_ptr<Library> library;
  Verified verified;
};
HOTLINK_API Expected<VerifiedLibrary> load_verified(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                        const VerifyOptions &verify_options = {},
                                        const LoadOptions &load_options = {});

struct HOTLINK_API AbiArgument {
  std::string name;
  int kind = 0;
  int dimensions = 0;
  int type_code = 0;
  int type_bits = 0;
};

struct HOTLINK_API ExpectedAbi {
  int version = 1;
  std::vector<AbiArgument> arguments;
};

// What a Halide pipeline's `f_metadata()` reports of itself: the metadata
// version, the pipeline's name and its arguments in order (kind 0 scalar,
// 1 input buffer, 2 output buffer; type code 0 int, 1 uint, 2 float,
// 3 handle, 4 bfloat). Copied out of the image: it outlives the Library.
struct HOTLINK_API PipelineMetadata {
  int version = 0;
  std::string name;
  std::vector<AbiArgument> arguments;
};

// Calls `metadata_symbol` (a `const halide_filter_metadata_t *(void)`) in
// `lib` and reads its report. AbiMismatch, naming the symbol, when `lib`
// has no such symbol or it reports null or a malformed table.
HOTLINK_API Expected<PipelineMetadata> read_pipeline_metadata(const Library &lib,
                                                              const std::string &metadata_symbol);

// read_pipeline_metadata(), compared with `expected`. The error names the
// first argument or field that differs.
HOTLINK_API std::optional<Error> check_abi(const Library &lib, const std::string &metadata_symbol,
                               const ExpectedAbi &expected);

} // namespace hotlink::loader
