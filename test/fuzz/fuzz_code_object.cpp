// The AMDGPU code object reader over arbitrary bytes (what `hotlink verify
// --mcpu` and describe_artifact read: the ELF header's target ID, the
// NT_AMDGPU_METADATA note's msgpack, dynamic symbols and relocations).
// Contract (linker/platforms/amdgpu/code_object.h): never crash; every
// refusal names the input.
#include "linker/platforms/amdgpu/code_object.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  auto co = hotlink::detail::amdgpu::read_code_object(data, size, "fuzz.hsaco");
  if (!co && co.error().input != "fuzz.hsaco") {
    std::fprintf(stderr, "error does not name the input: %s\n", co.error().to_string().c_str());
    std::abort();
  }
  return 0;
}
