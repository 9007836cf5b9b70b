// Internal. What the readers of objects (symbols.cpp) and of linked
// artifacts (artifacts.cpp) share: LLVM Object's view of a file mapped to
// hotlink's formats, archs and kinds, and the bounds checks on what LLVM
// returns unchecked.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"

#include "llvm/Object/Binary.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Object/SymbolicFile.h"
#include "llvm/TargetParser/Triple.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::exports {

Arch arch_of(llvm::Triple::ArchType a);
Arch arch_of_coff_machine(uint16_t m);
Format format_of(const llvm::object::Binary &b);
FileKind kind_of(const llvm::object::ObjectFile &o);
bool section_thread_local(const llvm::object::ObjectFile &o, const llvm::object::SectionRef &sec);
bool section_writable(const llvm::object::ObjectFile &o, const llvm::object::SectionRef &sec);
bool readable_magic(llvm::StringRef bytes);
bool in_buffer(llvm::MemoryBufferRef buf, const void *p, std::uint64_t n);
bool name_inside(const llvm::object::SymbolicFile &obj, llvm::StringRef s);
Error invalid(const std::string &name, std::string why);
std::string message_of(llvm::Error e);

// coff_objects.cpp. COFF: marks the undefined symbols (from out[first] on)
// that every relocation reaches through a call or a jump.
std::optional<Error> mark_branch_only(const llvm::object::ObjectFile &obj, std::vector<Symbol> &out,
                                      std::size_t first, const std::string &name);
// COFF: the libraries the object's /DEFAULTLIB directives name.
void collect_default_libs(const llvm::object::ObjectFile &obj, std::vector<std::string> &out);

} // namespace hotlink::exports
