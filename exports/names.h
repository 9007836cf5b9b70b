// Symbol names come from objects hotlink did not write. These checks keep a
// hostile name from changing the meaning of a version script, an exported-
// symbols list, a .def file or an lld argument.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"

#include <optional>
#include <string>

namespace hotlink::exports {

// nullopt when `name` is non-empty, at most kMaxNameLength bytes, and all
// printable ASCII or space (the rules every format shares).
std::optional<Error> check_name_basics(const std::string &name);

// A BadSymbolName error for `name` (shown with bytes escaped).
Error name_error(const std::string &name, std::string why);

// Longest symbol name hotlink writes into a script or passes to lld.
constexpr std::size_t kMaxNameLength = 4096;

// nullopt when `name` can be written in `format`'s export syntax (see
// writers.h for the rules of each); Format::Unknown applies all of them.
std::optional<Error> check_name(const std::string &name,
                                Format format = Format::Unknown);

// The symbol-table spelling of the C name `name` for a format/arch: Mach-O
// and i386 COFF prefix '_', the others use it as is.
std::string decorate(Format format, Arch arch, const std::string &name);

} // namespace hotlink::exports
