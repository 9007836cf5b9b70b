// Symbol names come from objects hotlink did not write. These checks keep a
// hostile name from changing the meaning of a version script, an exported-
// symbols list, a .def file or an lld argument.
#pragma once

#include "exports/error.h"
#include "exports/symbols.h"

#include <optional>
#include <string>

namespace hotlink::exports {

// Longest symbol name hotlink writes into a script or passes to lld.
constexpr std::size_t kMaxNameLength = 4096;

// nullopt when `name` is safe to write in every export-list syntax: 1 to
// kMaxNameLength printable ASCII bytes, none of which is whitespace, a
// quote, ';', '#', '{', '}', ',', '=', '\\', or the glob characters '*', '['
// and ']' ('?' too for Mach-O; MSVC-mangled names need it elsewhere).
// Otherwise an error naming the symbol and the offending byte.
std::optional<Error> check_name(const std::string &name,
                                Format format = Format::Unknown);

// The symbol-table spelling of the C name `name` for a format/arch: Mach-O
// and i386 COFF prefix '_', the others use it as is.
std::string decorate(Format format, Arch arch, const std::string &name);

} // namespace hotlink::exports
