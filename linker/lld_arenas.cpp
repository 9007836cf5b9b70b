#include "linker/lld_arenas.h"

#include "lld/Common/Memory.h"

#include <cstdint>
#include <cstring>
#include <new>

// Each arena is a function-local `thread_local SpecificAlloc<T> instance`
// in lld::getSpecificAllocSingletonThreadLocal<T>(), with its guard (non-zero
// once this thread constructed it). Most T are internal to lld's ELF port,
// so the objects are reached by their symbols (104 bytes, an 8-byte guard,
// checked below against lld's header); `__thread` makes the compiler take
// the thread's address without a TLS wrapper call.
// `mangled` is the function's name after "ThreadLocal" (its template
// argument and return type), as `nm liblldELF.a` prints it.
#define HOTLINK_LLD_ARENA(id, mangled)                                                                   \
  extern __thread std::uint64_t id##_instance[13] __asm__("_ZZN3lld36getSpecificAllocSingletonThreadLocal" mangled \
                                             "8instance");                                           \
  extern __thread std::uint64_t id##_guard __asm__("_ZGVZN3lld36getSpecificAllocSingletonThreadLocal" mangled  \
                                          "8instance");
#define HOTLINK_LLD_TAIL "EERN4llvm24SpecificBumpPtrAllocatorIT_EEvE"
#define HOTLINK_LLD_REL(e, is64) \
  "IN4llvm6object12Elf_Rel_ImplINS2_7ELFTypeILNS1_10endiannessE" e "ELb" is64 "EEELb1EEEEERNS1_24SpecificBumpPtrAllocatorIT_EEvE"

HOTLINK_LLD_ARENA(input_section, "INS_3elf12InputSectionE" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(eh_input_section, "INS_3elf14EhInputSectionE" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(merge_input_section, "INS_3elf17MergeInputSectionE" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(symbol_union, "INS_3elf11SymbolUnionE" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(debug_names_entry, "INS_3elf21DebugNamesBaseSection10IndexEntryE" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(bytes, "Ih" HOTLINK_LLD_TAIL)
HOTLINK_LLD_ARENA(rel32le, HOTLINK_LLD_REL("1", "0"))
HOTLINK_LLD_ARENA(rel64le, HOTLINK_LLD_REL("1", "1"))
HOTLINK_LLD_ARENA(rel32be, HOTLINK_LLD_REL("0", "0"))
HOTLINK_LLD_ARENA(rel64be, HOTLINK_LLD_REL("0", "1"))

namespace hotlink::detail {

namespace {

// SpecificAlloc<T>'s layout whatever T is: the base's vtable pointer, then
// a SpecificBumpPtrAllocator<T>, whose only member is a BumpPtrAllocator.
struct AnyArena : lld::SpecificAllocBase {
  llvm::SpecificBumpPtrAllocator<char> alloc;
};
static_assert(sizeof(AnyArena) == sizeof(lld::SpecificAlloc<char>), "lld's SpecificAlloc changed shape");
static_assert(sizeof(AnyArena) == 13 * sizeof(std::uint64_t), "lld 22's arenas are 104 bytes (readelf -s liblldELF.a)");

// Runs the arena's own destructor (virtual: ~SpecificAlloc<T> destroys every
// T and frees the slabs, as the thread's end does) and makes it an empty
// arena again, its vtable pointer as it was, for the thread's end to destroy.
void release(std::uint64_t *storage, const std::uint64_t *guard) {
  if ((*guard & 0xff) == 0)
    return; // never used on this thread (the Itanium ABI's guard: its first byte)
  auto *instance = reinterpret_cast<char *>(storage);
  auto *arena = reinterpret_cast<lld::SpecificAllocBase *>(instance);
  void *vptr;
  std::memcpy(&vptr, instance, sizeof vptr);
  arena->~SpecificAllocBase();
  new (&reinterpret_cast<AnyArena *>(instance)->alloc) llvm::SpecificBumpPtrAllocator<char>();
  std::memcpy(instance, &vptr, sizeof vptr);
}

} // namespace

void release_lld_thread_arenas() {
  release(input_section_instance, &input_section_guard);
  release(eh_input_section_instance, &eh_input_section_guard);
  release(merge_input_section_instance, &merge_input_section_guard);
  release(symbol_union_instance, &symbol_union_guard);
  release(debug_names_entry_instance, &debug_names_entry_guard);
  release(bytes_instance, &bytes_guard);
  release(rel32le_instance, &rel32le_guard);
  release(rel64le_instance, &rel64le_guard);
  release(rel32be_instance, &rel32be_guard);
  release(rel64be_instance, &rel64be_guard);
}

} // namespace hotlink::detail
