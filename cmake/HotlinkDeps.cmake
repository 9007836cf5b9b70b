# Finds LLVM 22, LLD 22, Boost 1.81 (Process is header-only, Filesystem is
# compiled), zlib and zstd. LLVM's CMake folder comes from llvm-config-22 so
# that a machine with several LLVMs picks 22.
find_program(LLVM_CONFIG_22 NAMES llvm-config-22
             PATHS /usr/lib/llvm-22/bin REQUIRED)
execute_process(COMMAND ${LLVM_CONFIG_22} --cmakedir
                OUTPUT_VARIABLE HOTLINK_LLVM_CMAKEDIR
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
get_filename_component(HOTLINK_LLD_CMAKEDIR "${HOTLINK_LLVM_CMAKEDIR}/../lld" ABSOLUTE)

find_package(LLVM REQUIRED CONFIG PATHS "${HOTLINK_LLVM_CMAKEDIR}" NO_DEFAULT_PATH)
find_package(LLD REQUIRED CONFIG PATHS "${HOTLINK_LLD_CMAKEDIR}" NO_DEFAULT_PATH)
# clang's driver as a library (libclang-cpp22-dev): it computes each ELF
# target's runtime environment (linker/runtime.h).
get_filename_component(HOTLINK_CLANG_CMAKEDIR "${HOTLINK_LLVM_CMAKEDIR}/../clang" ABSOLUTE)
find_package(Clang REQUIRED CONFIG PATHS "${HOTLINK_CLANG_CMAKEDIR}" NO_DEFAULT_PATH)
find_package(ZLIB REQUIRED)
set(Boost_NO_WARN_NEW_VERSIONS ON)
find_package(Boost 1.81 EXACT REQUIRED COMPONENTS filesystem)
find_package(Threads REQUIRED)

if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "hotlink needs LLVM 22, found ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}")
endif()
message(STATUS "hotlink: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")

# The tools we generate fixtures and compare against.
get_filename_component(HOTLINK_LLVM_BINDIR "${HOTLINK_LLVM_CMAKEDIR}/../../../bin" ABSOLUTE)
find_program(HOTLINK_CLANG NAMES clang-22 clang PATHS ${HOTLINK_LLVM_BINDIR} NO_DEFAULT_PATH)
find_program(HOTLINK_LLVM_MC NAMES llvm-mc-22 llvm-mc PATHS ${HOTLINK_LLVM_BINDIR} NO_DEFAULT_PATH)
find_program(HOTLINK_LD_LLD NAMES ld.lld-22 ld.lld PATHS /usr/bin ${HOTLINK_LLVM_BINDIR} NO_DEFAULT_PATH)

# LLVM's include dirs and definitions (hotlink_llvm_headers), and with
# them the shared libLLVM (hotlink_llvm: the linker and every program of
# the build).
add_library(hotlink_llvm_headers INTERFACE)
# -idirafter, not -isystem: Debian's libc++abi-22-dev puts a cxxabi.h into
# LLVM's include folder, which must not shadow libstdc++'s.
foreach(dir ${LLVM_INCLUDE_DIRS})
  target_compile_options(hotlink_llvm_headers INTERFACE "SHELL:-idirafter ${dir}")
endforeach()
separate_arguments(HOTLINK_LLVM_DEFS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_options(hotlink_llvm_headers INTERFACE ${HOTLINK_LLVM_DEFS})
add_library(hotlink_llvm INTERFACE)
target_link_libraries(hotlink_llvm INTERFACE hotlink_llvm_headers LLVM)

# The parts of LLVM the runtime (libhotlink.so: cache, verify, load, hot
# reload) and its DWARF module (state layouts) use, as LLVM's static
# component libraries, linked with their symbols hidden: neither maps
# libLLVM. (x86-64's disassembler, for forwarding, is a module of its
# own: loader/CMakeLists.txt.)
llvm_map_components_to_libnames(HOTLINK_RUNTIME_LLVM_LIBS
  Object DebugInfoDWARF Support TargetParser BinaryFormat Demangle)
# Debian's static archives of what the runtime and its modules link: zlib
# and zstd (LLVM's decompression of debug sections), hiredis, libsodium
# (HOTLINK_STATIC_<name>; empty where Debian ships no archive).
set(HOTLINK_COMPRESSION_STATIC_LIBS)
foreach(lib z zstd hiredis sodium)
  find_library(HOTLINK_STATIC_${lib} NAMES lib${lib}.a)
endforeach()
foreach(lib z zstd)
  if(HOTLINK_STATIC_${lib})
    list(APPEND HOTLINK_COMPRESSION_STATIC_LIBS ${HOTLINK_STATIC_${lib}})
  endif()
endforeach()

# The remote cache tier (hiredis) and artifact signatures (libsodium's
# Ed25519), both from Debian: libhiredis-dev, libsodium-dev.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
find_program(HOTLINK_REDIS_SERVER NAMES redis-server PATHS /usr/bin /usr/sbin)
find_program(HOTLINK_REDIS_CLI NAMES redis-cli PATHS /usr/bin) # a cluster is created by redis-cli --cluster
find_program(HOTLINK_NGINX NAMES nginx PATHS /usr/sbin) # the HTTP remote is tested against its WebDAV

include(${CMAKE_CURRENT_LIST_DIR}/HotlinkRuntimeDeps.cmake)
