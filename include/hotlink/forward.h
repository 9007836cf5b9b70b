// Forwarding: the functions of older versions of a module jump to the
// current version's, so pointers a host kept (a function pointer taken
// from an entry, a callback the kernel handed out, a C++ object's vtable)
// run the current code. HotModule does this when
// ModuleOptions::forward_old_versions is on (hot_module.h).
//
// Contract:
// - forward_image() reads a mapped version's functions from the artifact's
//   symbol table (global and local: `static` functions and C++ methods),
//   keyed like state variables (name, and the unit's source file for a
//   local one), and decides for each how many of its first bytes may be
//   replaced: none of its own branches lands inside them, and no call ends
//   inside them (a return address there would come back into the patch).
//   A function shorter than a jump (a 4-byte getter) is reached through
//   the padding after it: a short jump at its start to a near jump in the
//   padding, when the padding (int3 or NOPs, up to the next function) can
//   hold one.
//   The C runtime's own functions (crtstuff.c, .init/.fini) are left alone.
// - forward_to(target, others) makes each function of `others` that has a
//   counterpart in `target` start with a jump to it, and gives `target`'s
//   own functions back their code: a later call re-points every older
//   version at the newest, so there are no chains of jumps, and a rollback
//   forwards back. The jump goes through the function's slot, a pointer in
//   a table the version gets beside its image (6 bytes, `jmp [rip+slot]`;
//   the table is data, never executable): once a function jumps through its
//   slot, re-pointing it is one store of the slot, with no thread stopped
//   and no file written, so a reload costs little however many versions are
//   kept. Where the table cannot be placed within 2 GiB of the code, or a
//   function has fewer than 6 patchable bytes, the jump is direct (5 bytes
//   when within 2 GiB, else 14) and is rewritten at each re-pointing.
// - The jump is written while every other thread of the process is stopped
//   (a signal whose handler waits; its return serializes the core), and
//   only where no stopped thread is inside the bytes it replaces (retried,
//   then reported). It is written into the version's file, which the code
//   pages map: no page of the process is ever writable and executable.
//   Each write is read back through the code mapping; a page that is a
//   private copy (a debugger's breakpoint) is reported and left alone.
// - What stays the old version's: its static data other than state (the
//   forwarded code uses the current version's), and code a thread was
//   already running when the jump was written (it finishes there; its
//   calls to other functions are forwarded).
// - Limits: Linux, x86_64. A branch through a register (a switch's jump
//   table) into a function's first bytes is not seen by the decoding; a
//   thread stopped inside another signal handler whose interrupted code was
//   inside those bytes is not seen either.
#pragma once

#include "hotlink/error.h"
#include "hotlink/load.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hotlink::loader {

// What forwarding did when a version was made current (VersionInfo::forwarding).
struct HOTLINK_API ForwardReport {
  std::size_t forwarded = 0; // functions of older versions that now run this version's code
  // Functions of the version this one replaced that still run their own
  // code, each "name: why" (no counterpart, too short, a thread was inside
  // its first bytes, ...); at most 32 are listed, `kept` counts them all.
  std::vector<std::string> kept_reasons;
  std::size_t kept = 0;
  std::string unavailable; // not empty: forwarding did not run, and why
};

// A function of a mapped version, and what is written over its start.
struct HOTLINK_API ForwardFunction {
  std::string name, unit; // unit: the source file of a local symbol's translation unit
  std::uintptr_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t file_offset = 0; // of its first byte in the version's file
  std::uint32_t patchable = 0;   // how many first bytes may be replaced
  // A function shorter than a jump: the offset of the padding after it
  // (its end) when that padding can hold a near jump, which a 2-byte short
  // jump at its start reaches; 0: none.
  std::uint32_t pad_at = 0;
  std::string why_not;           // why no more may be (when it matters)
  std::uint8_t original[16] = {};
  std::uintptr_t target = 0;     // where it jumps now; 0: it runs its own code
  bool through_slot = false;     // its start jumps through its slot (ForwardImage::slots)
  std::string key() const { return unit.empty() ? name : unit + ":" + name; }
};

// One mapped version's functions, and its file opened for writing.
class HOTLINK_API ForwardImage {
public:
  ForwardImage() = default;
  ForwardImage(const ForwardImage &) = delete;
  ForwardImage &operator=(const ForwardImage &) = delete;
  ~ForwardImage();
  std::uint64_t number = 0;
  std::string path;
  int fd = -1; // the file the code pages map, opened for writing
  std::vector<ImageRange> ranges;
  std::vector<ForwardFunction> functions;
  // One slot per function, mapped read-write (never executable) within
  // 2 GiB of the code; null when it could not be placed there.
  std::uintptr_t *slots = nullptr;
  std::size_t slots_bytes = 0;
};

// The functions of `lib` (mapped from `bytes`), for forwarding. An error
// says why this version's functions cannot be forwarded or patched.
HOTLINK_API Expected<std::unique_ptr<ForwardImage>> forward_image(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                      const Library &lib, std::uint64_t number);

// Points the functions of `others` at their counterparts in `target`, and
// restores `target`'s own. Serialized by the caller.
HOTLINK_API ForwardReport forward_to(ForwardImage &target, const std::vector<ForwardImage *> &others);

// Before `gone` is unmapped: functions of `others` that jump into it get
// their own code back. False when one could not be written: then `gone`
// must stay mapped.
HOTLINK_API bool unforward_from(const ForwardImage &gone, const std::vector<ForwardImage *> &others);

// Why forwarding cannot run in this process (not Linux x86_64, the signal
// it uses is the host's); empty when it can.
HOTLINK_API std::string forwarding_unavailable();

} // namespace hotlink::loader
