// The symbol reader over arbitrary bytes: objects of every format, archives,
// and (through read_artifact) linked images; and what a device link reads
// of host objects and archives (exports/fatbin.h: the fat binary a host
// object carries, an archive's members with device code). Contract under
// test (hotlink/symbols.h): never crash or abort; return an Error that
// names the input (an archive's member as INPUT(MEMBER)) instead.
// And image/'s reader of the host's relocatable ELF objects, against
// LLVM's: on every input it answers, LLVM's reader must accept it and
// answer the same ObjectInfo.
#include "exports/fatbin.h"
#include "hotlink/symbols.h"
#include "image/image.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {
void check_error_names_input(const hotlink::Error &e, const char *what) {
  if (e.input.rfind("fuzz.o", 0) != 0) {
    std::fprintf(stderr, "%s: error does not name the input: %s\n", what, e.to_string().c_str());
    std::abort();
  }
}
using hotlink::exports::ObjectInfo;
using hotlink::exports::Symbol;

std::atomic<unsigned long> g_own{0}, g_llvm_only{0};
void report() {
  std::fprintf(stderr, "fuzz_objects: image/ read %lu host objects as LLVM does; %lu went to LLVM alone\n",
               g_own.load(), g_llvm_only.load());
}

std::string describe(const Symbol &s) {
  return s.name + (s.defined ? " defined" : " undefined") + (s.weak ? " weak" : "") + (s.common ? " common" : "") +
         (s.function ? " function" : "") + (s.data ? " data" : "") + (s.writable ? " writable" : "") +
         (s.tls ? " tls" : "") + (s.hidden ? " hidden" : "");
}

[[noreturn]] void differ(const std::string &what) {
  std::fprintf(stderr, "fuzz_objects: image/ and LLVM read the object differently: %s\n", what.c_str());
  std::abort();
}

void compare(const ObjectInfo &own, const hotlink::Expected<ObjectInfo> &llvm) {
  if (!llvm)
    differ("LLVM refuses it: " + llvm.error().to_string());
  if (own.format != llvm->format || own.arch != llvm->arch || own.kind != llvm->kind)
    differ("format, arch or kind");
  if (own.startup_sections != llvm->startup_sections)
    differ("startup sections " + std::to_string(own.startup_sections) + " against " +
           std::to_string(llvm->startup_sections));
  if (own.alignment_padding != llvm->alignment_padding)
    differ("alignment padding " + std::to_string(own.alignment_padding) + " against " +
           std::to_string(llvm->alignment_padding));
  if (own.bitcode || own.nvidia_lto || own.codeview || !own.default_libs.empty() || llvm->bitcode ||
      llvm->nvidia_lto || llvm->codeview || !llvm->default_libs.empty())
    differ("bitcode, LTO-IR, CodeView or default libraries");
  if (own.symbols.size() != llvm->symbols.size())
    differ(std::to_string(own.symbols.size()) + " symbols against " + std::to_string(llvm->symbols.size()));
  for (std::size_t i = 0; i < own.symbols.size(); ++i) {
    const Symbol &a = own.symbols[i], &b = llvm->symbols[i];
    if (describe(a) != describe(b) || a.member != b.member || a.branch_only != b.branch_only)
      differ("symbol " + std::to_string(i) + ": " + describe(a) + " against " + describe(b));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static const int registered = std::atexit(report);
  (void)registered;
  for (bool branch_info : {false, true}) {
    auto info = hotlink::exports::read_object(data, size, "fuzz.o", branch_info);
    if (!info)
      check_error_names_input(info.error(), "read_object");
    if (branch_info)
      continue;
    if (auto own = hotlink::image::read_elf_object(data, size, "fuzz.o")) {
      ++g_own;
      compare(*own, info);
    } else if (info && info->format == hotlink::exports::Format::ELF) {
      ++g_llvm_only;
    }
  }
  auto art = hotlink::exports::read_artifact(data, size, "fuzz.o");
  if (!art)
    check_error_names_input(art.error(), "read_artifact");
  auto carried = hotlink::exports::carried_fatbin(data, size, "fuzz.o");
  if (!carried)
    check_error_names_input(carried.error(), "carried_fatbin");
  else if (*carried) {
    std::string_view fatbin = **carried;
    auto images = hotlink::exports::read_fatbin_images(fatbin.data(), fatbin.size(), "fuzz.o");
    if (!images)
      check_error_names_input(images.error(), "read_fatbin_images (carried)");
  }
  auto offload = hotlink::exports::carried_offload_images(data, size, "fuzz.o");
  if (!offload)
    check_error_names_input(offload.error(), "carried_offload_images");
  if (size >= 8 && std::string_view(reinterpret_cast<const char *>(data), 8) == "!<arch>\n") {
    auto device = hotlink::exports::read_device_archive(data, size, "fuzz.o");
    if (!device)
      check_error_names_input(device.error(), "read_device_archive");
  }
  return 0;
}
