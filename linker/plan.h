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
#include "linker/output.h"

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

} // namespace hotlink::detail
