// Internal. What a platform supplies to a link, and the one table of them.
//
// The planner (linker/plan.cpp) is a fixed pipeline of named steps over one
// explicit PlanContext: it reads and checks the inputs and selects the
// exports itself, and asks the target's platform for everything a compiler
// driver would know about that target. A platform is a folder under
// linker/platforms/ with one Platform row in the table (platform.cpp); the
// link engine (service, driver, worker, wire) never names one.
//
// Contract:
// - A Platform row is stateless and lives for the process. start() makes a
//   PlatformLink for one link; it keeps whatever that link's platform steps
//   decide (a runtime environment, a sysroot's libraries) as its own
//   members, and the planner calls its steps in the order declared below.
// - A step returns its own error; none stores an error for a later step.
// - What a platform adds to lld's line it adds through the context, so
//   the cache key (linker/key.cpp) sees it: arguments, files, and the
//   fingerprints of outside files that reach lld.
#pragma once

#include "exports/fatbin.h"
#include "hotlink/error.h"
#include "hotlink/export_policy.h"
#include "hotlink/symbols.h"
#include "linker/job.h"
#include "hotlink/link.h"
#include "hotlink/verify_target.h"
#include "hotlink/verify.h"

#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace llvm {
class Triple;
}

namespace hotlink::detail {

struct Plan;

// What hotlink knows about a resolved target.
struct TargetInfo {
  std::string triple; // normalized
  exports::Format format = exports::Format::Unknown;
  exports::Arch arch = exports::Arch::Unknown;
  std::string flavor;    // argv[0] of lld: ld.lld, lld-link, ld64.lld, wasm-ld
  std::string extension; // .so, .dll, .dylib, .wasm
  // The export file lld is given is also the artifact's companion (a
  // COFF .def, kept by the cache beside the DLL).
  bool export_file_is_companion = false;
  const struct Platform *platform = nullptr;
};

// One input as read: its bytes (borrowed from the request or a file read
// by the planner, or an archive rewritten without excluded members) and
// symbols.
struct LoadedInput {
  const Input *input = nullptr;
  std::string display;
  std::string path; // absolute path for file inputs
  std::unique_ptr<llvm::MemoryBuffer> file;
  const void *data = nullptr;
  std::size_t size = 0;
  std::vector<std::uint8_t> filtered; // an archive without excluded members
  std::vector<std::string> excluded;  // those members
  // Not a regular file (a FIFO, /dev/stdin): it can be read only once, so
  // lld gets the bytes read here, never the path.
  bool streamed = false;
  exports::ObjectInfo info;
  // In a device link (nvptx): the device images a host object carries
  // (nvcc -rdc=true -c's fat binary, clang -fgpu-rdc's offload images);
  // `info` is what they hold.
  std::vector<exports::FatbinImage> device;
  bool archive() const { return info.kind == exports::FileKind::Archive; }
  bool shared() const { return info.kind == exports::FileKind::SharedObject; }
};

// The explicit context of one plan: the request, the inputs read once,
// and the Plan the steps fill in.
struct PlanContext {
  PlanContext(const LinkRequest &r, Plan &p, bool d) : request(r), plan(p), digest(d) {}
  const LinkRequest &request;
  Plan &plan;
  bool digest; // hash inputs and libraries for the cache key
  std::vector<LoadedInput> inputs;
  // any_shared: an ELF shared library among the inputs (`k.o libdep.so`).
  bool any_archive = false, any_bitcode = false, any_shared = false;
  // What the archive members --exclude-member leaves out define (and no
  // other input does): name -> "MEMBER of ARCHIVE".
  std::map<std::string, std::string, std::less<>> excluded_definitions;
  // Whether the artifact gets an export list (a policy other than none, or
  // a platform's merged list).
  bool export_list = false;
  // With `all` or `none` every member of an archive input goes in (an
  // archive never yields an empty artifact); with a list, the members that
  // define an export are pulled in by name.
  bool policy_takes_whole_archives() const;

  const TargetInfo &target() const;
  Job &job();
  // Queries over every input's symbols.
  bool references(const std::string &symbol) const; // undefined in some input
  bool defines(const std::string &symbol) const;
  std::unordered_set<std::string_view> defined_names() const;
  // The names inputs reference and none of them defines.
  std::vector<std::string> undefined_names() const;
  // Every input's ObjectInfo, lent for the call (moved out and back: a
  // large object's symbols are not copied).
  template <class F> auto with_infos(F f) {
    std::vector<exports::ObjectInfo> all;
    all.reserve(inputs.size());
    for (LoadedInput &l : inputs)
      all.push_back(std::move(l.info));
    auto result = f(const_cast<const std::vector<exports::ObjectInfo> &>(all));
    for (std::size_t i = 0; i < inputs.size(); ++i)
      inputs[i].info = std::move(all[i]);
    return result;
  }
  // Adds a file hotlink writes for lld (keyed: in the cache key).
  void add_file(const std::string &name, const std::string &text);
  // Adds the fingerprint ("library NAME <BLAKE3>") of a file outside the
  // request that reaches lld.
  void fingerprint_file(const std::string &label, const std::string &path);
};

// lld arguments.
inline Arg plain(std::string s) { return Arg{std::move(s), false, {}, {}}; }
inline Arg keyed(std::string s, std::string key) { return Arg{std::move(s), false, {}, std::move(key)}; }
inline Arg in_dir(std::string before, std::string name) { return Arg{std::move(before), true, std::move(name), {}}; }

// One link's platform steps, in the order the planner calls them.
class PlatformLink {
public:
  virtual ~PlatformLink() = default;
  // The request's options: refuse those this platform has no use for,
  // naming the flag.
  virtual std::optional<Error> check_request(const PlanContext &) = 0;
  // After the inputs are read and checked against the target's format and
  // arch: what this platform requires of them besides.
  virtual std::optional<Error> check_inputs(PlanContext &) { return std::nullopt; }
  // The exports: by default the request's policy over the inputs' symbols
  // (select_policy_exports).
  virtual std::optional<Error> select_exports(PlanContext &ctx);
  // After the exports are selected: lists the
  // platform merges in (a COFF .def, an ELF version script).
  virtual std::optional<Error> merge_exports(PlanContext &) { return std::nullopt; }
  // What a compiler driver adds to the link for this target (startup
  // objects, the C library, import libraries), with their fingerprints.
  virtual std::optional<Error> environment(PlanContext &) { return std::nullopt; }
  // lld's arguments before the inputs (output, flags, startup objects).
  virtual void head(PlanContext &, const std::string &out_name) = 0;
  // The export list in the format's syntax, and what goes with it.
  virtual std::optional<Error> export_file(PlanContext &) = 0;
  // How the inputs are spelled: -L, and an archive linked whole.
  virtual Arg library_path(const std::string &dir) const { return plain("-L" + dir); }
  virtual std::vector<Arg> whole_archive_begin() const { return {plain("--whole-archive")}; }
  virtual std::vector<Arg> whole_archive_end() const { return {plain("--no-whole-archive")}; }
  // Whether lld may read memfds and write a pipe (Job::in_memory).
  virtual bool links_in_memory() const { return false; }
  // Whether archive inputs are linked whole under the all/none policies.
  virtual bool links_whole_archives() const { return true; }
  // Objects hotlink provides for symbols the target's CRT would.
  virtual std::optional<Error> support_objects(PlanContext &) { return std::nullopt; }
  // The user's -l NAME (not a path): the argument lld gets, and the file
  // it stands for (for the cache key), or an error naming it. By default
  // -lNAME, fingerprinting the first of library_files() in -L, then the
  // sysroot's lib/ and the sysroot.
  virtual Expected<Arg> library(PlanContext &, const std::string &name);
  virtual std::vector<std::string> library_files(const std::string &name) const;
  // The environment's libraries, after the user's.
  virtual std::optional<Error> runtime_libraries(PlanContext &) { return std::nullopt; }
  // After a failed link: what to do about an undefined symbol.
  virtual std::string undefined_hint(const LinkRequest &, const std::string &symbol) const = 0;
  // The exports planning could not name, added to `exports` from the
  // linked artifact (nvptx: the kernels of LTO-IR, whose names are sealed
  // until nvJitLink compiles it); an error when they do not hold.
  virtual std::optional<Error> exports_from_artifact(const std::vector<std::uint8_t> &,
                                                     std::vector<std::string> &) {
    return std::nullopt;
  }
  // After a failed link: a change to `plan` that lets it link (ELF:
  // exported data that code reaches PC-relative is bound inside the
  // artifact), with a warning in `changes` for each thing it gave up so
  // far. false: nothing more to change, the failure stands.
  virtual bool revise_after_failure(Plan &, const std::vector<Diagnostic> &, std::vector<Diagnostic> &changes) {
    (void)changes;
    return false;
  }
};

// A row of the target table.
struct Platform {
  const char *name; // "elf", "mingw", ...
  // The triples `hotlink targets` lists for it; the first is the one an
  // artifact of its format and arch is named by (hotlink exports/keys).
  std::vector<const char *> triples;
  // Whether it serves `triple`; if so fills format, arch, flavor, extension.
  bool (*serves)(const llvm::Triple &triple, TargetInfo &info);
  std::unique_ptr<PlatformLink> (*start)(const TargetInfo &target, const LinkRequest &request);
  // A small object for a first link that faults lld and the runtime
  // environment in (LinkService's warm-up), or empty where it has none.
  std::vector<std::uint8_t> (*warm_up_object)(const TargetInfo &target) = nullptr;
  // What this platform's own loader would refuse in an artifact that this
  // host cannot load, checked without loading it (hotlink/verify_target.h); null
  // where the format and export checks of hotlink::verify are all there is.
  std::optional<Error> (*check_artifact)(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                         const hotlink::VerifyOptions &options) = nullptr;
  // What the artifact's (or an object's) own metadata says of each entry
  // point (a GPU kernel's resources), or null where a format has none.
  Expected<ArtifactDescription> (*describe)(const std::vector<std::uint8_t> &bytes,
                                            const std::string &name) = nullptr;
  // Whether its artifacts are built for one processor (GpuOptions::processor,
  // VerifyOptions::processor: --mcpu); other platforms refuse one.
  bool processor = false;
  // The image of a container (a fat binary, a host object carrying device
  // code) that the driver would load as options.processor, which verify
  // checks instead; nullopt: the bytes are the artifact itself.
  Expected<std::optional<std::vector<std::uint8_t>>> (*carried_image)(const std::vector<std::uint8_t> &bytes,
                                                                     const std::string &name,
                                                                     const hotlink::VerifyOptions &options) = nullptr;
};

// A link engine other than lld: a platform whose TargetInfo::flavor names
// one plans a Job as for lld, and the driver (in-process or in a worker)
// hands it to `run` instead of lld. The job's arguments are that engine's.
struct Engine {
  const char *flavor;
  const char *shown; // its name in messages ("nvJitLink")
  JobOutput (*run)(const Job &job);
};
// The engine for a job's flavor; null for lld's own flavors.
const Engine *engine_for(const std::string &flavor);
// The linker's name in messages: "lld", or the engine's.
std::string linker_name(const std::string &flavor);

// The exports of the request's policy (the default select_exports step).
std::optional<Error> select_policy_exports(PlanContext &ctx);

// The table, in the order `hotlink targets` lists it.
const std::vector<const Platform *> &platforms();

// Resolves a triple ("" = the host) through the table. Errors name the
// triple and list the supported ones.
Expected<TargetInfo> resolve_target(const std::string &triple);

// The arch of a triple as hotlink names it (Unknown for any other).
exports::Arch arch_of(const llvm::Triple &triple);

// The triple an artifact of this format and arch is named by ("" when no
// platform makes one).
std::string triple_for(exports::Format format, exports::Arch arch);

// The file lld would pick for `-l name` among `dirs` trying each of
// `file_names` (first match), or empty.
std::string find_library_file(const std::vector<std::string> &dirs, const std::vector<std::string> &file_names);

// A refusal of an option that is not this platform's: "WHAT, not TRIPLE".
Error not_for_platform(const std::string &flag, const std::string &what, const std::string &triple,
                       const std::string &hint);

// The request's options that belong to one family of platforms.
enum AcceptedOptions : unsigned {
  kCoffOptions = 1,   // .def in and out, import library, PDB, debug
  kElfOptions = 2,    // soname, version script
  kDriverRuntime = 4, // --no-default-libs, --cxx-runtime
  kExecutable = 8,    // --exe
  kGpuOptions = 16,   // --mcpu, --device-libs
};
// Refuses, naming the flag, any family option the platform does not take.
std::optional<Error> refuse_other_options(const PlanContext &ctx, unsigned accepted);

} // namespace hotlink::detail
