// Internal. The runtime's own readers of linked images in its hosts'
// formats, ELF (little-endian, 32- and 64-bit) and PE (PE32 and PE32+),
// written without LLVM so that a process that only loads (and the
// Windows runtime, for which Debian has no LLVM) can verify what it maps.
//
// Contract:
// - Every reader takes untrusted bytes and a display name; it never reads
//   outside [data, data + size), never crashes or loops on hostile input,
//   and refuses what it cannot read with InvalidInput naming the input.
// - What it answers about a well-formed image is what LLVM Object answers
//   (exports/artifacts.cpp), as test/fuzz/fuzz_images.cpp checks on every
//   input both accept; one known difference: a PE name that shares its
//   export's ordinal with another is listed here (GetProcAddress finds
//   it), where LLVM lists the first name of each ordinal only.
// - GPU code objects (EM_AMDGPU, EM_CUDA), big-endian ELF, COFF objects,
//   Mach-O and wasm are not read here: read_host_image() answers nullopt
//   and the caller asks LLVM's reader (the linker module's).
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::image {

// The image's format when it is one read here.
enum class Kind { None, Elf, Pe };
Kind kind_of(const void *data, std::size_t size);

Expected<exports::ArtifactInfo> read_elf(const void *data, std::size_t size, const std::string &name);
Expected<exports::ArtifactInfo> read_pe(const void *data, std::size_t size, const std::string &name);

// read_elf or read_pe by the bytes' kind; nullopt for any other bytes.
std::optional<Expected<exports::ArtifactInfo>> read_host_image(const void *data, std::size_t size,
                                                               const std::string &name);

// A function of an ELF image's symbol table (.symtab): what forwarding
// pairs between versions and patches.
struct Function {
  std::string name;
  std::string unit;              // a local's translation unit (the STT_FILE before it); "" for globals
  std::uint64_t address = 0;     // its link-time address (the load base is added to map it)
  std::uint64_t size = 0;
  std::uint64_t file_offset = 0; // of its first byte, through the PT_LOAD segment that holds it
  std::uint64_t room = 0;        // bytes from its start to the next symbol of a code section, or that section's end
};

struct Functions {
  exports::Arch arch = exports::Arch::Unknown;
  bool wide = false; // ELFCLASS64
  // Every STT_FUNC of nonzero size defined in a code section (".text",
  // ".text.*") and present in the file, one per address: a global name
  // over a local alias; the locals of crtstuff.c (the startup objects'
  // own) are left out.
  std::vector<Function> functions;
};

// A variable (STT_OBJECT) of an ELF image's symbol table.
struct DataObject {
  std::string name;
  std::string unit;          // a local's translation unit; "" for globals
  std::uint64_t address = 0; // link-time
  std::uint64_t size = 0;
};

// What a reload needs of an ELF image's symbol table, read in one walk:
// the variables it defines in the section named `state_section` (state
// carry's HOTLINK_STATE section; none when no section has that name) and,
// `with_functions`, its functions, for forwarding.
struct SymbolTable {
  Functions code;
  std::vector<DataObject> state;
};
Expected<SymbolTable> read_elf_symbols(const void *data, std::size_t size, const std::string &name,
                                       const std::string &state_section, bool with_functions = true);

// A relocatable ELF object of this project's hosts (ELFCLASS64, x86_64 or
// AArch64), read as exports::read_object reads it with LLVM: the same
// ObjectInfo (its symbols, startup sections, alignment padding), so that a
// link of a JIT's object plans (and a cache hit finds its key) without
// LLVM's reader and its crash recovery. nullopt for anything else, and
// for an object that is not plain (a damaged or truncated table, an
// extended section index, a GCC LTO object): LLVM's reader answers those,
// with its checks and messages. test/fuzz/fuzz_objects.cpp compares the
// two on every input this one answers.
std::optional<exports::ObjectInfo> read_elf_object(const void *data, std::size_t size, const std::string &name);

// The GNU build-id of an ELF image, in hex ("" when it has none): what the
// post-mortem store links each kept copy by, read without the rest.
Expected<std::string> read_elf_build_id(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::image
