// The names of formats and archs (symbols.h): plain code, so that the
// runtime that names them in its errors needs nothing of LLVM's here.
#include "hotlink/symbols.h"

namespace hotlink::exports {

const char *to_string(Format f) {
  switch (f) {
  case Format::ELF: return "ELF";
  case Format::COFF: return "COFF";
  case Format::MachO: return "Mach-O";
  case Format::Wasm: return "wasm";
  case Format::Unknown: break;
  }
  return "unknown";
}

const char *to_string(Arch a) {
  switch (a) {
  case Arch::X86_64: return "x86_64";
  case Arch::X86: return "i386";
  case Arch::AArch64: return "aarch64";
  case Arch::Wasm32: return "wasm32";
  case Arch::AMDGCN: return "amdgcn";
  case Arch::NVPTX64: return "nvptx64";
  case Arch::Unknown: break;
  }
  return "unknown";
}

} // namespace hotlink::exports
