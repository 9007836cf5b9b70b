// Internal. Publishing a link's output (output.cpp): plain code with no
// LLVM, compiled into the runtime as well (hotlink/link.h's
// write_output_file).
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

// An output file reserved in the destination directory before linking (so an
// unwritable destination fails early) and published by rename (so nobody
// ever sees a partial artifact). The reserved file is unnamed (O_TMPFILE)
// until commit(), so a killed link leaves nothing behind; where the file
// system has none, a named temporary, and the next link of the same output
// removes those that no link holds (a link holds its reservation locked
// until it is renamed: base/files.h's own_file). An existing output that is not a regular
// file (a device such as /dev/null, a FIFO) is written in place, as ld.lld
// does, never replaced.
class OutputReservation {
public:
  // `mode` is the published file's mode before the umask: 0755 for
  // artifacts, 0644 for companions (.def, .lib).
  static Expected<OutputReservation> reserve(const std::string &path, unsigned mode = 0755);
  OutputReservation(OutputReservation &&other) noexcept;
  OutputReservation &operator=(OutputReservation &&) = delete;
  ~OutputReservation();
  // Whether the output is written in place (a device, a FIFO): nothing may
  // reach it before the link succeeded, so the image is kept in memory
  // and written by publish().
  bool in_place() const { return in_place_; }
  // Writes `bytes` into the temporary file and commits it.
  std::optional<Error> publish(const std::vector<std::uint8_t> &bytes);
  // The temporary file, open for writing (empty, at offset 0, until written).
  int fd() const { return fd_; }
  // Gives the written temporary file its mode and renames it over the path.
  std::optional<Error> commit();
  // The refusal for a write into the temporary file that failed with `err`.
  Error write_error(int err) const;

private:
  OutputReservation() = default;
  Error failed(const char *what, int err) const;
  Error cannot_reserve(const std::string &dir, int err) const;
  std::string path_, temp_;
  int fd_ = -1;
  unsigned mode_ = 0755;
  bool in_place_ = false;
};

} // namespace hotlink::detail
