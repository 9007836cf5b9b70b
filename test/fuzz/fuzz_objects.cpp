// The symbol reader over arbitrary bytes: objects of every format, archives,
// and (through read_artifact) linked images; and what a device link reads
// of host objects and archives (exports/fatbin.h: the fat binary a host
// object carries, an archive's members with device code). Contract under
// test (hotlink/symbols.h): never crash or abort; return an Error that
// names the input (an archive's member as INPUT(MEMBER)) instead.
#include "exports/fatbin.h"
#include "hotlink/symbols.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {
void check_error_names_input(const hotlink::Error &e, const char *what) {
  if (e.input.rfind("fuzz.o", 0) != 0) {
    std::fprintf(stderr, "%s: error does not name the input: %s\n", what, e.to_string().c_str());
    std::abort();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  for (bool branch_info : {false, true}) {
    auto info = hotlink::exports::read_object(data, size, "fuzz.o", branch_info);
    if (!info)
      check_error_names_input(info.error(), "read_object");
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
