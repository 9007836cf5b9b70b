// Internal. The entry point of libhotlink-linker.so, the module that holds
// the linker (lld, the platforms, libLLVM). The runtime (libhotlink.so:
// cache, verify, load, hot reload) loads it with dlopen on the first call
// that links, so that a process that only loads cached artifacts never
// maps libLLVM, lld or libclang-cpp.
//
// The runtime's side is client.cpp: it defines LinkService and the other
// linker calls of the public API by forwarding them through the table, so
// that libhotlink.so's C and C++ callers link as before.
//
// The module and the library that loads it come from one build and one
// C++ runtime: the functions take hotlink's plain C++ types. The table
// carries the sizes of those types, and the loader refuses a module whose
// sizes or version differ. No function lets an exception out: an error is
// returned as an Error.
#pragma once

#include "hotlink/cache.h"
#include "hotlink/export_policy.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/symbols.h"
#include "hotlink/verify.h"
#include "hotlink/verify_target.h"

#include <cstddef>
#include <future>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::linker_module {

// The table's version: a new one for each change of the Table's layout,
// so a runtime never reads past the end of an older module's table.
inline constexpr const char *kSymbol = "hotlink_linker_module_v4";
inline constexpr const char *kEnv = "HOTLINK_LINKER_MODULE";

// What must match between the two sides.
struct Stamp {
  const char *version; // hotlink's version
  std::size_t sizes[8];
  bool operator==(const Stamp &o) const;
};

inline Stamp stamp(const char *version) {
  return {version,
          {sizeof(LinkRequest), sizeof(LinkResult), sizeof(ServiceConfig), sizeof(cache::Artifact),
           sizeof(VerifyOptions), sizeof(Verified), sizeof(Error), sizeof(exports::ObjectInfo)}};
}

inline bool Stamp::operator==(const Stamp &o) const {
  if (std::string(version) != o.version)
    return false;
  for (std::size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i)
    if (sizes[i] != o.sizes[i])
      return false;
  return true;
}

struct Table {
  Stamp stamp;
  // A LinkService (service.h) of the module's, or null with *error set.
  LinkService *(*create_service)(const ServiceConfig &config, Error *error);
  void (*destroy_service)(LinkService *service);
  // LinkService's members; a failure is the result's or the value's error.
  LinkResult (*link)(LinkService &service, const LinkRequest &request);
  std::future<LinkResult> (*submit)(LinkService &service, LinkRequest request);
  Expected<cache::Key> (*cache_key)(LinkService &service, const LinkRequest &request);
  ServiceStats (*stats)(const LinkService &service);
  bool (*in_process_usable)();
  // The free functions of service.h, linker.h and verify.h.
  std::optional<Error> (*set_host_llvm_options)(const std::vector<std::string> &args);
  Expected<cache::Artifact> (*cache_artifact)(const LinkResult &result);
  Expected<Verified> (*verify_for_target)(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                          const std::string &target, const VerifyOptions &options);
  std::string (*lld_version)();
  // What reads inputs and names targets (symbols.h, link.h): LLVM's object
  // and bitcode readers, the platform table.
  Expected<exports::ObjectInfo> (*read_object)(const void *data, std::size_t size, const std::string &name,
                                               bool branch_info);
  std::vector<std::string> (*supported_targets)();
  std::string (*triple_for)(exports::Format format, exports::Arch arch);
  std::string (*demangle)(const std::string &name);
  // verify_target.h's other functions: they need the platform table.
  Expected<ArtifactDescription> (*describe_artifact)(const std::vector<std::uint8_t> &bytes, const std::string &name);
  Expected<ArtifactDescription> (*describe_device_code)(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                        const std::string &target);
  Expected<bool> (*loads_here)(const std::string &target);
  // link.h's target_format and import_library_from_def: the platform table,
  // LLVM's .def parser and import-library writer.
  Expected<TargetFormat> (*target_format)(const std::string &triple);
  Expected<ImportLibrary> (*import_library_from_def)(const std::string &def_text, const std::string &def_name,
                                                     const std::string &machine, const std::string &dll_name,
                                                     bool mingw);
  // LLVM Object's reading of an artifact the runtime does not read itself
  // (image/image.h: Mach-O, wasm, GPU code objects, COFF objects).
  Expected<exports::ArtifactInfo> (*read_artifact)(const void *data, std::size_t size, const std::string &name);
};

// The module's table, loaded once per process by the runtime (client.cpp);
// a failure is kept, and every later call returns the same error: it names
// the module, the places looked and how to fix it.
Expected<const Table *> linker();

using EntryFn = const Table *(*)();

} // namespace hotlink::linker_module
