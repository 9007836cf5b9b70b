// Which bytes image/'s readers take, and the dispatch to them.
#include "image/image.h"

#include "image/bytes.h"
#include "exports/artifacts.h"

namespace hotlink::image {

Kind kind_of(const void *data, std::size_t size) {
  Bytes b(data, size);
  const std::uint8_t *p = b.data();
  bool ok = true;
  if (size >= 20 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    std::uint64_t type = b.u(16, 2, ok), machine = b.u(18, 2, ok);
    // Linked or relocatable ELF of a CPU, little-endian; GPU code objects
    // (EM_CUDA 190, EM_AMDGPU 224) are their platforms' to read.
    bool cpu = machine != 190 && machine != 224;
    return (p[4] == 1 || p[4] == 2) && p[5] == 1 && type >= 1 && type <= 3 && cpu ? Kind::Elf : Kind::None;
  }
  if (size >= 68 && p[0] == 'M' && p[1] == 'Z')
    return Kind::Pe;
  return Kind::None;
}

std::optional<Expected<exports::ArtifactInfo>> read_host_image(const void *data, std::size_t size,
                                                               const std::string &name) {
  switch (kind_of(data, size)) {
  case Kind::Elf: return read_elf(data, size, name);
  case Kind::Pe: return read_pe(data, size, name);
  case Kind::None: break;
  }
  return std::nullopt;
}

} // namespace hotlink::image

namespace hotlink::exports {

Expected<ArtifactInfo> read_artifact(const void *data, std::size_t size, const std::string &name) {
  if (size == 0)
    return make_error(ErrorCode::InvalidInput, "the file is empty", name);
  if (auto own = image::read_host_image(data, size, name))
    return std::move(*own);
  return read_foreign_artifact(data, size, name);
}

} // namespace hotlink::exports
