# What the runtime needs on every host, Linux and Windows alike (no LLVM):
# BLAKE3's C sources and nlohmann/json. Included by HotlinkDeps.cmake (the
# Linux build) and by the Windows runtime's build (cmake/HotlinkWindows.cmake).

# BLAKE3 (trust/blake3.cpp): the official C implementation, built from the
# sources Debian ships in librust-blake3-dev (/usr/share/cargo/registry/
# blake3-*/c/), with its x86-64 assembly for SSE2, SSE4.1, AVX2 and
# AVX-512 and its run-time dispatch. The runtime hashes every artifact it
# reads with it; LLVM's copy of the same code stays the linker's.
file(GLOB HOTLINK_BLAKE3_DIRS LIST_DIRECTORIES true /usr/share/cargo/registry/blake3-*/c)
list(SORT HOTLINK_BLAKE3_DIRS COMPARE NATURAL ORDER DESCENDING)
list(GET HOTLINK_BLAKE3_DIRS 0 HOTLINK_BLAKE3_DIR)
if(NOT HOTLINK_BLAKE3_DIR OR NOT EXISTS "${HOTLINK_BLAKE3_DIR}/blake3.h")
  message(FATAL_ERROR "hotlink needs BLAKE3's C sources (Debian: librust-blake3-dev)")
endif()
set(HOTLINK_BLAKE3_SOURCES blake3.c blake3_dispatch.c blake3_portable.c)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  enable_language(ASM)
  if(WIN32)
    set(HOTLINK_BLAKE3_ASM_SUFFIX windows_gnu)
  else()
    set(HOTLINK_BLAKE3_ASM_SUFFIX unix)
  endif()
  foreach(isa sse2 sse41 avx2 avx512)
    list(APPEND HOTLINK_BLAKE3_SOURCES blake3_${isa}_x86-64_${HOTLINK_BLAKE3_ASM_SUFFIX}.S)
  endforeach()
else()
  set(HOTLINK_BLAKE3_DEFINES BLAKE3_NO_SSE2 BLAKE3_NO_SSE41 BLAKE3_NO_AVX2 BLAKE3_NO_AVX512)
endif()
list(TRANSFORM HOTLINK_BLAKE3_SOURCES PREPEND "${HOTLINK_BLAKE3_DIR}/")
add_library(hotlink_blake3 STATIC ${HOTLINK_BLAKE3_SOURCES})
target_include_directories(hotlink_blake3 SYSTEM PUBLIC ${HOTLINK_BLAKE3_DIR})
target_compile_definitions(hotlink_blake3 PRIVATE ${HOTLINK_BLAKE3_DEFINES})
set_target_properties(hotlink_blake3 PROPERTIES C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)

# JSON (the cache's manifests, signed statements, the CLI's --json):
# nlohmann/json, header-only (nlohmann-json3-dev).
find_path(HOTLINK_JSON_INCLUDE nlohmann/json.hpp NO_CMAKE_FIND_ROOT_PATH)
if(NOT HOTLINK_JSON_INCLUDE)
  message(FATAL_ERROR "hotlink needs nlohmann/json (Debian: nlohmann-json3-dev)")
endif()
if(CMAKE_CROSSCOMPILING)
  # The host's header directory holds the C library's headers too, which a
  # cross compiler must not see: a directory of the one link instead.
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/host-headers)
  file(CREATE_LINK ${HOTLINK_JSON_INCLUDE}/nlohmann ${CMAKE_BINARY_DIR}/host-headers/nlohmann SYMBOLIC)
  set(HOTLINK_JSON_INCLUDE ${CMAKE_BINARY_DIR}/host-headers)
endif()
add_library(hotlink_json INTERFACE)
target_include_directories(hotlink_json SYSTEM INTERFACE ${HOTLINK_JSON_INCLUDE})
