// Internal. Planning turns a LinkRequest into a Job: it reads and checks
// every input, works out the runtime environment, resolves the export
// list, chooses support objects and builds lld's arguments. Everything
// that can be refused before lld runs is refused here, with the input or
// symbol named. The cache key follows from the plan alone.
#pragma once

#include "hotlink/cache.h"
#include "linker/job.h"
#include "hotlink/link.h"
#include "linker/platforms/platform.h"

#include <memory>
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
  // The platform's steps for this link (for the hints of a failed link).
  std::shared_ptr<PlatformLink> platform;
  // What the platform reports (LinkResult's fields of the same names).
  std::vector<std::string> system_libraries, import_thunks;
  std::string windows_crt;
  std::vector<Diagnostic> diagnostics;      // notes and warnings of planning
  std::vector<std::string> runtime;         // what the runtime environment added
  std::vector<std::string> runtime_added;   // libraries added for the inputs' calls, with why
  // Identities of files outside the request that reach lld (the runtime
  // environment's, libraries found by -l): in the cache key.
  std::vector<std::string> fingerprints;
  std::string pdb_path; // COFF: where the PDB is published, if one is made
  // What the job's borrowed files (runtime stubs) belong to.
  std::shared_ptr<const void> keep_alive;
};

// With `digest_inputs`, also hashes every input's bytes (for the cache key).
Expected<Plan> plan_link(const LinkRequest &request, Timings &timings,
                         bool digest_inputs = false);

// The cache key of a planned link: a canonical encoding of everything that
// reaches lld and can change its output: lld's arguments in order (inputs
// stand for their bytes, in order; the thread count is left out, lld's
// output does not depend on it), the files hotlink writes for lld (export
// lists, support objects, a merged version script), the fingerprints of
// outside files, the resolved export list, and the versions of hotlink,
// lld and the cache format. Not in it: input names and paths, timestamps,
// where the link runs, and the timeout.
cache::Key link_key(const Plan &plan);

// Splits lld's captured output into diagnostics and maps the file names lld
// printed back to the caller's input names.
std::vector<Diagnostic> parse_diagnostics(const Job &job,
                                          const std::string &text);

// The Error a failed link returns: the first error lld reported, classified
// (undefined or duplicate symbol, a relocation no shared object can hold,
// or another link failure), with a hint that fits the target.
Error link_error(const std::vector<Diagnostic> &diagnostics, const Plan &plan,
                 const LinkRequest &request, const std::string &fallback);

// Whether `d` is lld's "relocation R cannot be used against symbol 'S';
// recompile with -fPIC", and then S.
bool position_dependent(const Diagnostic &d);
std::string position_dependent_symbol(const Diagnostic &d);
std::string position_dependent_relocation(const Diagnostic &d); // "R_X86_64_32"
// Whether a relocation type is PC-relative (R_X86_64_PC32, ..._PREL...):
// one that binds its symbol inside the image, which binding the symbol
// there can satisfy; an absolute one narrower than a pointer cannot be.
bool pc_relative_relocation(const std::string &reloc);

// Whether lld stopped at its error limit while reporting relocations no
// shared object can hold (whose refusal names every member that has one).
bool needs_every_error(const std::vector<Diagnostic> &diagnostics);

// An output file reserved in the destination directory before linking (so an
// unwritable destination fails early) and published by rename (so nobody
// ever sees a partial artifact). The reserved file is unnamed (O_TMPFILE)
// until commit(), so a killed link leaves nothing behind; where the file
// system has none, a named temporary, and the next link of the same output
// removes those of dead processes. An existing output that is not a regular
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
