// Internal. Reading PTX, NVIDIA's virtual assembly (text), as far as a
// link needs: the target it was written for and the names it defines and
// declares. PTX has no object-file container; read_object hands text that
// begins like a PTX module (directives, comments) to read_ptx.
#pragma once

#include "hotlink/symbols.h"

#include <cstddef>
#include <string>
#include <vector>

namespace hotlink::exports {

struct PtxModule {
  std::string version;              // ".version 8.8" -> "8.8"
  std::string target;               // ".target sm_90" -> "sm_90" (its first word)
  std::vector<std::string> kernels; // .entry, visible
  std::vector<std::string> functions, data;        // visible .func / .global definitions
  std::vector<std::string> extern_functions, extern_data; // .extern declarations
};

// Whether `data` reads as PTX text: its first directive (after blank lines
// and comments) is .version, .target or .address_size.
bool looks_like_ptx(const void *data, std::size_t size);

// The module's directives; an error names the input and the line of a
// declaration it cannot read (nvJitLink reports the rest).
Expected<PtxModule> read_ptx_module(const void *data, std::size_t size, const std::string &name);

// An empty object of NVIDIA's: ELF, nvptx64 (what PTX and fat binaries
// read as).
ObjectInfo nvptx_object();

// The module as an object: ELF, nvptx64, its definitions and declarations.
Expected<ObjectInfo> read_ptx(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::exports
