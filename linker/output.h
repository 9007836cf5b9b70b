// Internal. Publishing a link's output (output.cpp): plain code with no
// LLVM, compiled into the runtime as well (hotlink/link.h's
// write_output_file).
#pragma once

#include "hotlink/error.h"
#include "base/pending_file.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

// An output file reserved in the destination directory before linking (so an
// unwritable destination fails early) and published by rename (so nobody
// ever sees a partial artifact): a base::PendingFile, unnamed until
// commit() where the file system allows, so a killed link leaves nothing
// behind; where it does not, a named temporary, and the next link of the
// same output removes those that no link holds. An existing output that is
// not a regular file (a device such as /dev/null, a FIFO) is written in
// place, as ld.lld does, never replaced.
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
  bool in_place() const { return in_place_fd_ >= 0; }
  // Writes `bytes` into the temporary file and commits it.
  std::optional<Error> publish(const std::vector<std::uint8_t> &bytes);
  // The temporary file, open for writing (empty, at offset 0, until written).
  int fd() const;
  // Gives the written temporary file its mode and renames it over the path.
  std::optional<Error> commit();
  // The refusal for a write into the temporary file that failed with `err`.
  Error write_error(int err) const;

private:
  OutputReservation() = default;
  Error failed(const std::string &what, int err) const;
  Error cannot_reserve(const std::string &dir, int err) const;
  std::string path_;
  base::PendingFile file_; // the reserved file (base/pending_file.h)
  int in_place_fd_ = -1;   // the output itself, written in place

};

} // namespace hotlink::detail
