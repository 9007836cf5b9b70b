// Internal. Planning turns a LinkRequest into a Job: it reads and checks
// every input, resolves the export list, chooses support objects and builds
// lld's arguments. Everything that can be refused before lld runs is refused
// here, with the input or symbol named.
#pragma once

#include "linker/job.h"
#include "linker/linker.h"
#include "linker/target.h"
#include "linker/windows.h"
#include "cache/cache.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

struct Plan {
  Job job;
  TargetInfo target;
  std::vector<exports::Export> exports;     // what the artifact exports
  std::string export_file;                  // the list handed to lld
  std::vector<std::string> warnings;        // e.g. .def merge conflicts
  std::vector<std::string> support_objects; // symbols hotlink provides
  bool needs_worker = false; // e.g. -mllvm: a bad value exits the process
  std::vector<std::string> input_digests;   // BLAKE3 of each input (caching)
  std::optional<WindowsLibraries> windows;  // COFF with a sysroot
  std::vector<Diagnostic> diagnostics;      // notes and warnings of planning
};

// With `digest_inputs`, also hashes every input's bytes (for the cache key).
Expected<Plan> plan_link(const LinkRequest &request, Timings &timings,
                         bool digest_inputs = false);

// The cache key of a planned link: a canonical encoding of everything that
// reaches lld and can change its output (input bytes in order, the target,
// the output's file name, the resolved export list and export file, the
// undefined-symbol mode, libraries with their contents when found, search
// paths, sysroot, support objects, extra flags in order, whether an import
// library is made, and the versions of hotlink, lld and the cache format).
// Not in it: input names and paths, timestamps, lld's thread count (lld's
// output does not depend on it), where the link runs, and the timeout.
cache::Key link_key(const LinkRequest &request, const Plan &plan);

// lld's version line, e.g. "LLD 22.1.0 ...".
std::string lld_version();

// Splits lld's captured output into diagnostics and maps the file names lld
// printed back to the caller's input names.
std::vector<Diagnostic> parse_diagnostics(const Job &job,
                                          const std::string &text);

// The Error a failed link returns: the first error lld reported, classified
// (undefined or duplicate symbol, or another link failure).
Error link_error(const std::vector<Diagnostic> &diagnostics,
                 const std::string &fallback);

// An output file reserved in the destination directory before linking (so an
// unwritable destination fails early) and published by rename (so nobody
// ever sees a partial artifact). Removed unless published.
class OutputReservation {
public:
  static Expected<OutputReservation> reserve(const std::string &path);
  OutputReservation(OutputReservation &&other) noexcept;
  OutputReservation &operator=(OutputReservation &&) = delete;
  ~OutputReservation();
  std::optional<Error> publish(const std::vector<std::uint8_t> &bytes);

private:
  OutputReservation() = default;
  std::string path_, temp_;
  int fd_ = -1;
};

} // namespace hotlink::detail
