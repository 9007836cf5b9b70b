// Internal. The platforms, one row each (platform.h); the table in
// platform.cpp lists them. A new target is a folder here and one line there.
#pragma once

#include "linker/platforms/platform.h"

namespace hotlink::detail {

const Platform &elf_platform();   // elf/: GNU/Linux, glibc's runtime from clang's driver
const Platform &msvc_platform();  // msvc/: Windows, MSVC ABI
const Platform &mingw_platform(); // mingw/: Windows, GNU ABI (mingw-w64)
const Platform &macho_platform(); // macho/: macOS dylibs without an SDK
const Platform &wasm_platform();  // wasm/: wasm32 modules
const Platform &amdgpu_platform(); // amdgpu/: GPU code objects for the HSA runtime
const Platform &nvptx_platform();  // nvptx/: cubins for the CUDA driver, linked by nvJitLink

// The engines that are not lld, by flavor (platform.h's Engine).
const Engine &nvjitlink_engine(); // nvptx/

} // namespace hotlink::detail
