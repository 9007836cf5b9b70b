// Reading objects, archives and linked artifacts: objects and archives
// with LLVM Object (in the linker module), linked artifacts as
// read_artifact says.
//
// Contract: every reader takes bytes plus a display name (used in errors),
// accepts any of ELF, COFF (incl. /bigobj), Mach-O and wasm, and never
// crashes or aborts on malformed input: it returns an Error naming the input.
// Symbol names are returned exactly as stored (C++ names stay mangled).
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::exports {

enum class Format { Unknown, ELF, COFF, MachO, Wasm };
enum class Arch { Unknown, X86_64, X86, AArch64, Wasm32, AMDGCN, NVPTX64 };
enum class FileKind { Object, Archive, SharedObject, Executable, Other };

HOTLINK_API const char *to_string(Format f);
HOTLINK_API const char *to_string(Arch a);

struct HOTLINK_API Symbol {
  std::string name;
  bool defined = false;
  bool weak = false;
  bool common = false;
  bool function = false;
  bool data = false;     // an object (variable or constant)
  bool writable = false; // defined in a writable section
  bool tls = false;      // a thread-local variable (.tdata/.tbss, .tls$, __thread_*)
  bool hidden = false;   // hidden/internal visibility (ELF) or private
                         // extern (Mach-O): cannot be exported
  std::string member;    // archive member it came from, empty for objects
  // COFF, undefined, with read_object(..., branch_info = true): every
  // relocation against it is a call or a jump, so a jump thunk can stand in
  // for it (a data reference could not use one).
  bool branch_only = false;
};

struct HOTLINK_API ObjectInfo {
  Format format = Format::Unknown;
  Arch arch = Arch::Unknown;
  FileKind kind = FileKind::Other;
  std::vector<Symbol> symbols; // global and undefined symbols only
  // COFF: the libraries the object's /DEFAULTLIB directives name, lowercase
  // and without ".lib" (e.g. "msvcrt", "oldnames"), in order, once each.
  std::vector<std::string> default_libs;
  // LLVM bitcode (clang -flto / -flto=thin), alone or among an archive's
  // members: lld compiles it (LTO). Format and arch come from its triple.
  bool bitcode = false;
  // NVIDIA LTO-IR (nvcc -dlto, -ltoir), alone, as a fat binary's image, or
  // carried by a host object or an archive member: nvJitLink compiles it
  // at the link (-lto). NVIDIA's encoding seals its names, so none of them
  // is listed; a link's kernels are read from the cubin it makes.
  bool nvidia_lto = false;
  // ELF: has sections the startup objects frame or run (.init, .fini,
  // .ctors, .dtors, .tm_clone_table), so a link must include crti.o and
  // crtbeginS.o and their ends. COFF: has initializers (.CRT$XI*,
  // .CRT$XC*: static constructors) that a CRT's DLL entry point runs.
  bool startup_sections = false;
  // COFF: carries CodeView debug info (.debug$S), which a PDB can hold.
  bool codeview = false;
  // The sum of its sections' alignments: the most padding a linker can put
  // before them in an image (a section aligned to 1 MiB may add ~1 MiB).
  std::uint64_t alignment_padding = 0;
};

// Reads a relocatable object, an LLVM bitcode file, PTX text (NVIDIA's
// virtual assembly: ELF, nvptx64, its .entry/.func/.global names), or an
// archive of them.
// For an archive, the format and arch are those of its members (an error
// if they disagree, or if it has no object members); symbols of every
// member are listed. Refused with InvalidInput naming the input (and
// member): bitcode this LLVM cannot read (a newer LLVM's), and GCC LTO
// objects that carry only GIMPLE (no machine code: lld cannot compile
// them; a -ffat-lto-objects one links its machine code).
// `branch_info` (COFF) also walks every relocation to set
// Symbol::branch_only; linking against a Windows sysroot needs it, nothing
// else does, so it is off by default.
HOTLINK_API Expected<ObjectInfo> read_object(const void *data, std::size_t size,
                                 const std::string &name, bool branch_info = false);

struct HOTLINK_API ArtifactInfo {
  Format format = Format::Unknown;
  Arch arch = Arch::Unknown;
  FileKind kind = FileKind::Other;
  std::vector<std::string> exports; // names in the export table, sorted
  // ELF: undefined non-weak dynamic symbols; PE: "DLL!name", or "DLL!#N"
  // for an import by ordinal N, in the import directory's order.
  std::vector<std::string> imports;
  std::vector<std::string> needed;  // ELF: DT_NEEDED libraries; PE: the DLLs it imports from
  std::string build_id;             // ELF: the GNU build-id note, hex; empty without one
};

// Reads a linked artifact (ELF .so, PE DLL, Mach-O dylib, wasm module) and
// lists what it exports: ELF defined dynamic symbols, the PE export
// directory, the Mach-O export trie (names keep their leading '_'), wasm
// exports. ELF and PE images of a CPU are read by the runtime itself;
// anything else by LLVM's reader in the linker module, loaded on that first
// need (a runtime built without LLVM, as on Windows, refuses it by name).
HOTLINK_API Expected<ArtifactInfo> read_artifact(const void *data, std::size_t size,
                                     const std::string &name);

} // namespace hotlink::exports
