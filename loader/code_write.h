// Internal. Writing code that other threads may be running: forwarding's
// patches (forward.h), on Linux.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::loader {

// `length` bytes at `address` in a mapped image, which map `offset` in
// the file open as `fd`.
struct CodeWrite {
  enum class Status { Pending, Done, Busy, NotVisible, Failed };
  int fd = -1;
  std::uint64_t offset = 0;
  std::uintptr_t address = 0;
  std::uint8_t bytes[16] = {};
  std::uint8_t length = 0;
  Status status = Status::Pending;
  int error = 0; // errno of a Failed write
};

// Stops every other thread of the process, and writes each write into its
// file where no stopped thread's next instruction lies inside
// (address, address + length) (else it stays Busy after a few tries). A
// write is Done when the code mapping shows it, NotVisible (and undone in
// the file) when that page of the mapping is a private copy. Writes close
// together in one file go in one pwrite over the file's own bytes. Returns why
// the threads could not be stopped (nothing is written then), or "".
std::string write_code_parked(std::vector<CodeWrite> &writes);

// Why threads cannot be stopped this way here; "" when they can.
std::string parking_unavailable();

#if !defined(__linux__)
inline std::string parking_unavailable() { return "forwarding runs on Linux hosts only"; }
inline std::string write_code_parked(std::vector<CodeWrite> &) { return parking_unavailable(); }
#endif

} // namespace hotlink::loader
