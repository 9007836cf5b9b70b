# The Windows runtime's build (x86_64, mingw-w64 from Debian; issue 51):
#   cmake -S . -B build-windows -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake \
#         -DHOTLINK_HOST_TOOLS=build/bin
# The same sources as the Linux runtime, with no LLVM (Debian has none built
# for mingw-w64): today the modules that have their Windows side, each with
# its tests. Those run under Wine (Debian's wine64), with fixtures the Linux
# build's `hotlink` CLI links at build time (HOTLINK_HOST_TOOLS), so that a
# Linux build host and a Windows process are tested together.
if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  message(FATAL_ERROR "the Windows runtime is built with mingw-w64 for x86_64 on Linux: -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake")
endif()
add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
# One runtime DLL with nothing of GCC's beside it: libstdc++, libgcc and
# winpthread linked in statically.
add_link_options(-static-libgcc -static-libstdc++ -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic)
include(${CMAKE_CURRENT_LIST_DIR}/HotlinkRuntimeDeps.cmake)
find_package(Threads REQUIRED)

# Everything below but the tests is libhotlink.dll's: what HOTLINK_API
# marks is exported from it (hotlink/error.h).
add_compile_definitions(HOTLINK_BUILDING_DLL)
add_subdirectory(base)
add_subdirectory(exports)
add_subdirectory(trust)
add_subdirectory(image)
add_subdirectory(cache)
add_subdirectory(verify)
add_subdirectory(loader)
add_subdirectory(capi)

option(HOTLINK_BUILD_TESTS "Build the GoogleTest suites (run under Wine)" ON)
if(HOTLINK_BUILD_TESTS)
  enable_testing()
  add_subdirectory(test/windows)
endif()
