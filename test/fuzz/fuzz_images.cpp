// Differential: the runtime's own ELF and PE readers (image/) against LLVM
// Object's (exports/artifacts.cpp) on the same bytes. Neither may crash;
// wherever both accept an input they must agree on its format, arch, kind,
// imports (where LLVM sizes PE import thunks as the image does), needed
// libraries, build-id and exports. A PE image's DLLs and imports are
// compared as a prefix: the PE loader and image/ end the import directory
// at the first descriptor without a name or an address table, LLVM only at
// an all-zero one and never at the first, so LLVM may list more (a PE name that shares
// its ordinal with another is listed by image/ alone, image.h: there the
// own list must hold LLVM's). Inputs one reader accepts and the other
// refuses are counted, not failed: the two refuse different damage (the
// counts are printed when the fuzzer exits).
#include "exports/artifacts.h"
#include "image/image.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<unsigned long> g_both{0}, g_only_own{0}, g_only_llvm{0}, g_neither{0};

void report() {
  std::fprintf(stderr, "fuzz_images: both accepted %lu, only image/ %lu, only LLVM %lu, neither %lu\n", g_both.load(),
               g_only_own.load(), g_only_llvm.load(), g_neither.load());
}

[[noreturn]] void differ(const char *what, const std::string &own, const std::string &llvm) {
  std::fprintf(stderr, "fuzz_images: the readers disagree on %s: image/ '%s', LLVM '%s'\n", what, own.c_str(),
               llvm.c_str());
  std::abort();
}

// The names, comma-separated, bytes outside printable ASCII as \xNN.
std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    s += i ? "," : "";
    for (unsigned char c : v[i]) {
      char buf[8];
      std::snprintf(buf, sizeof buf, c >= 0x20 && c < 0x7f && c != ',' ? "%c" : "\\x%02x", c);
      s += buf;
    }
  }
  return s;
}

// Whether a PE image's import thunks are as wide as LLVM reads them: LLVM
// sizes them by the machine (8 bytes for x86-64 and arm64), the PE loader
// and image/ by the optional header's magic (PE32+). Where the two
// disagree (a fuzzed machine field), image/'s imports are the loader's and
// LLVM's are not compared.
bool thunks_as_llvm_reads(const std::uint8_t *data, std::size_t size, const hotlink::exports::ArtifactInfo &own) {
  if (own.format != hotlink::exports::Format::COFF || size < 0x40)
    return true;
  std::uint32_t pe = data[0x3c] | data[0x3d] << 8 | data[0x3e] << 16 | std::uint32_t(data[0x3f]) << 24;
  if (pe > size || size - pe < 26)
    return true;
  bool plus = (data[pe + 24] | data[pe + 25] << 8) == 0x20b;
  bool wide = own.arch == hotlink::exports::Arch::X86_64 || own.arch == hotlink::exports::Arch::AArch64;
  return plus == wide;
}

// Whether `own` is where `llvm` begins: all of it for ELF, where both read
// the whole table; its prefix for PE (see above).
bool begins(const std::vector<std::string> &own, const std::vector<std::string> &llvm, bool pe) {
  if (!pe)
    return own == llvm;
  return own.size() <= llvm.size() && std::equal(own.begin(), own.end(), llvm.begin());
}

void compare(const hotlink::exports::ArtifactInfo &own, const hotlink::exports::ArtifactInfo &llvm, bool imports) {
  using hotlink::exports::to_string;
  if (own.format != llvm.format)
    differ("the format", to_string(own.format), to_string(llvm.format));
  if (own.arch != llvm.arch)
    differ("the arch", to_string(own.arch), to_string(llvm.arch));
  if (own.kind != llvm.kind)
    differ("the kind", std::to_string(int(own.kind)), std::to_string(int(llvm.kind)));
  bool pe = own.format == hotlink::exports::Format::COFF;
  if (imports && !begins(own.imports, llvm.imports, pe))
    differ("the imports", joined(own.imports), joined(llvm.imports));
  if (!begins(own.needed, llvm.needed, pe))
    differ("the needed libraries", joined(own.needed), joined(llvm.needed));
  if (own.build_id != llvm.build_id)
    differ("the build-id", own.build_id, llvm.build_id);
  bool same = own.format == hotlink::exports::Format::COFF
                  ? std::includes(own.exports.begin(), own.exports.end(), llvm.exports.begin(), llvm.exports.end())
                  : own.exports == llvm.exports;
  if (!same)
    differ("the exports", joined(own.exports), joined(llvm.exports));
}

// What a reload reads besides verify's reading: the symbol table (state
// and functions, one walk) and the build-id alone, which must be the one
// read_elf found.
void reload_reads(const std::uint8_t *data, std::size_t size,
                  const hotlink::Expected<hotlink::exports::ArtifactInfo> &whole) {
  auto table = hotlink::image::read_elf_symbols(data, size, "fuzz.img", ".hotlink_state");
  auto id = hotlink::image::read_elf_build_id(data, size, "fuzz.img");
  for (const hotlink::Error *e : {table ? nullptr : &table.error(), id ? nullptr : &id.error()})
    if (e && e->input != "fuzz.img") {
      std::fprintf(stderr, "fuzz_images: error does not name the input: %s\n", e->to_string().c_str());
      std::abort();
    }
  if (whole && id && *id != whole->build_id)
    differ("the build-id read alone", *id, whole->build_id);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static const int registered = std::atexit(report);
  (void)registered;
  auto own = hotlink::image::read_host_image(data, size, "fuzz.img");
  if (!own)
    return 0; // not a format image/ reads
  if (!*own && own->error().input != "fuzz.img") {
    std::fprintf(stderr, "fuzz_images: error does not name the input: %s\n", own->error().to_string().c_str());
    std::abort();
  }
  if (hotlink::image::kind_of(data, size) == hotlink::image::Kind::Elf)
    reload_reads(data, size, *own);
  auto llvm = hotlink::exports::read_artifact_with_llvm(data, size, "fuzz.img");
  if (*own && llvm) {
    ++g_both;
    compare(**own, *llvm, thunks_as_llvm_reads(data, size, **own));
  } else if (*own) {
    ++g_only_own;
    if (std::getenv("FUZZ_IMAGES_EXPLAIN"))
      std::fprintf(stderr, "only image/: %s\n", llvm.error().message.c_str());
  } else if (llvm) {
    ++g_only_llvm;
    if (std::getenv("FUZZ_IMAGES_EXPLAIN")) // why image/ refused what LLVM read
      std::fprintf(stderr, "only LLVM: %s\n", own->error().message.c_str());
  } else {
    ++g_neither;
  }
  return 0;
}
