// A runtime built without LLVM (the Windows runtime: Debian has no LLVM
// for mingw-w64, so no linker module either) reads only the images image/
// reads; any other artifact is refused by name.
#include "exports/artifacts.h"

#include "image/image.h"

namespace hotlink::exports {

Expected<ArtifactInfo> read_foreign_artifact(const void *data, std::size_t size, const std::string &name) {
  return make_error(ErrorCode::NotASharedObject,
                    "is not an ELF or PE image of a CPU, the only artifacts this runtime (built without LLVM, as "
                    "the Windows runtime is) reads",
                    name, {}, "read Mach-O, wasm and GPU artifacts with a runtime that has the linker module (Linux)");
}

} // namespace hotlink::exports
