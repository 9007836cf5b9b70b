#include "linker/platforms/coff/support.h"
#include "base/memo.h"

#include "linker/codegen.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hotlink::detail {

using exports::Arch;
using exports::Format;

namespace {

// MSVC's CRT defines _fltused as an int with this value; its presence tells
// the CRT that floating point is used.
std::string fltused_source(const std::string &sym) {
  return ".data\n.globl " + sym + "\n.p2align 2\n" + sym + ":\n.long 0x9875\n";
}

std::string coff_function_header(const std::string &sym) {
  return ".text\n.globl " + sym + "\n.def " + sym +
         "; .scl 2; .type 32; .endef\n.p2align 4\n" + sym + ":\n";
}

// x64 __chkstk: RAX = bytes to allocate. Touches each page from the caller's
// stack pointer down, so the guard page grows the stack in order; changes no
// register but flags, and leaves RSP alone (the caller subtracts RAX).
const char *kChkstkX64 = R"(
  pushq %rcx
  pushq %rax
  cmpq $0x1000, %rax
  leaq 24(%rsp), %rcx
  jb 1f
2:
  subq $0x1000, %rcx
  testq %rcx, (%rcx)
  subq $0x1000, %rax
  cmpq $0x1000, %rax
  ja 2b
1:
  subq %rax, %rcx
  testq %rcx, (%rcx)
  popq %rax
  popq %rcx
  retq
)";

// i386 _chkstk (symbol __chkstk): EAX = bytes. Probes like x64 but also
// moves ESP down by EAX before returning, as MSVC's does.
const char *kChkstkX86 = R"(
  pushl %ecx
  cmpl $0x1000, %eax
  leal 8(%esp), %ecx
  jb 1f
2:
  subl $0x1000, %ecx
  testl %ecx, (%ecx)
  subl $0x1000, %eax
  cmpl $0x1000, %eax
  ja 2b
1:
  subl %eax, %ecx
  testl %ecx, (%ecx)
  leal 4(%esp), %eax
  movl %ecx, %esp
  movl -4(%eax), %ecx
  pushl (%eax)
  subl %esp, %eax
  retl
)";

// arm64 __chkstk: X15 = bytes / 16. Probes each page below SP; SP unchanged.
const char *kChkstkArm64 = R"(
  lsl x16, x15, #4
  mov x17, sp
1:
  sub x17, x17, #4096
  subs x16, x16, #4096
  ldr xzr, [x17]
  b.gt 1b
  ret
)";

std::string fltused_name(Arch a) { return a == Arch::X86 ? "__fltused" : "_fltused"; }
std::string tls_index_name(Arch a) { return a == Arch::X86 ? "__tls_index" : "_tls_index"; }

// What MSVC's static CRT (tlssup.obj) gives a DLL with thread-local
// variables: the index the loader fills in, the bounds of the .tls section
// (lld orders .tls, .tls$..., .tls$ZZZ by name, so _tls_start comes first
// and _tls_end last), an empty TLS callback list and the TLS directory
// `_tls_used`, which lld-link points the PE's TLS data directory at.
std::string tls_source(Arch a) {
  std::string p = a == Arch::X86 ? "_" : "";           // i386 C names carry a '_'
  std::string word = a == Arch::X86 ? ".long" : ".quad"; // a pointer
  std::string align = a == Arch::X86 ? "2" : "3";
  return ".section .tls,\"dw\"\n.globl " + p + "_tls_start\n" + p + "_tls_start:\n.byte 0\n"
         ".section .tls$ZZZ,\"dw\"\n.globl " + p + "_tls_end\n" + p + "_tls_end:\n.byte 0\n"
         ".section .CRT$XLA,\"dr\"\n.p2align " + align + "\n" + p + "__xl_a:\n" + word + " 0\n"
         ".section .CRT$XLZ,\"dr\"\n.p2align " + align + "\n" + p + "__xl_z:\n" + word + " 0\n"
         ".data\n.globl " + p + "_tls_index\n.p2align 2\n" + p + "_tls_index:\n.long 0\n"
         ".section .rdata$T,\"dr\"\n.globl " + p + "_tls_used\n.p2align " + align + "\n" + p + "_tls_used:\n" +
         word + " " + p + "_tls_start\n" + word + " " + p + "_tls_end\n" + word + " " + p + "_tls_index\n" +
         word + " " + p + "__xl_a+" + (a == Arch::X86 ? "4" : "8") + "\n.long 0\n.long 0\n";
}

} // namespace

std::vector<std::string> support_symbols(const TargetInfo &target) {
  if (target.format != Format::COFF)
    return {};
  return {fltused_name(target.arch), "__chkstk", tls_index_name(target.arch)};
}

Expected<std::vector<std::uint8_t>> support_object(const TargetInfo &target,
                                                   const std::string &symbol) {
  static base::Memo<std::string, std::vector<std::uint8_t>> memo;
  std::string key = target.triple + "/" + symbol;
  if (auto hit = memo.find(key))
    return *hit;
  std::string source;
  if (symbol == fltused_name(target.arch)) {
    source = fltused_source(symbol);
  } else if (symbol == tls_index_name(target.arch)) {
    source = tls_source(target.arch);
  } else if (symbol == "__chkstk") {
    source = coff_function_header(symbol);
    switch (target.arch) {
    case Arch::X86_64: source += kChkstkX64; break;
    case Arch::X86: source += kChkstkX86; break;
    case Arch::AArch64: source += kChkstkArm64; break;
    default: break;
    }
  }
  if (source.empty() || target.format != Format::COFF)
    return make_error(ErrorCode::Internal, "no support object '" + symbol +
                                               "' for " + target.triple);
  auto obj = assemble(target.triple, source);
  if (obj)
    memo.keep(key, obj.value());
  return obj;
}

Expected<std::vector<std::uint8_t>> import_thunks(const TargetInfo &target,
                                                  const std::vector<std::string> &symbols) {
  if (target.format != Format::COFF)
    return make_error(ErrorCode::Internal, "import thunks are for COFF, not " + target.triple);
  std::string source;
  for (const std::string &sym : symbols) {
    // Quoted: decorated names (@, ?) are valid symbols but not identifiers.
    std::string q = "\"" + sym + "\"", imp = "\"__imp_" + sym + "\"";
    source += coff_function_header(q);
    switch (target.arch) {
    case Arch::X86_64: source += "  jmpq *" + imp + "(%rip)\n"; break;
    case Arch::X86: source += "  jmpl *" + imp + "\n"; break;
    case Arch::AArch64:
      source += "  adrp x16, " + imp + "\n  ldr x16, [x16, :lo12:" + imp + "]\n  br x16\n";
      break;
    default:
      return make_error(ErrorCode::Internal, "no import thunks for " + target.triple);
    }
  }
  return assemble(target.triple, source);
}

} // namespace hotlink::detail
