// Internal. What a reload reads of a version's image, each part once
// (hot_module.cpp): verify reads its exports, imports, build-id and hash
// (load_verified hands the build-id and hash on to the private copy), and
// the symbol table is walked once for both state carry and forwarding.
// The public state_variables() and forward_image() read the table for
// themselves.
#pragma once

#include "hotlink/forward.h"
#include "hotlink/state_carry.h"
#include "image/image.h"

namespace hotlink::loader {

// image::read_elf_symbols with the state section (and the functions when
// `forwarding`); an error says it could not read the symbol table.
Expected<image::SymbolTable> read_symbol_table(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                               bool forwarding);

// state_variables() of the variables already read from the state section.
Expected<std::vector<StateVariable>> state_variables_of(std::vector<image::DataObject> objects,
                                                        const std::vector<std::uint8_t> &bytes,
                                                        const std::string &name, std::uintptr_t load_base,
                                                        const std::string &identity);

// forward_image() of the functions already read.
Expected<std::unique_ptr<ForwardImage>> forward_image_of(const image::Functions &code, const std::string &name,
                                                         const Library &lib, std::uint64_t number);

} // namespace hotlink::loader
