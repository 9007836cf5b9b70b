// Internal. The entry point of libhotlink-linker.so, the module that holds
// the linker (lld, the platforms, libLLVM). The runtime (libhotlink.so:
// cache, verify, load, hot reload) loads it with dlopen on the first call
// that links, so that a process that only loads cached artifacts never
// maps libLLVM, lld or libclang-cpp.
//
// The module and the library that loads it come from one build and one
// C++ runtime: the functions take hotlink's plain C++ types. The table
// carries the sizes of those types, and the loader refuses a module whose
// sizes or version differ. No function lets an exception out: an error is
// returned as an Error.
#pragma once

#include "cache/cache.h"
#include "linker/linker.h"
#include "linker/service.h"
#include "verify/verify.h"

#include <cstddef>
#include <string>
#include <vector>

namespace hotlink::linker_module {

inline constexpr const char *kSymbol = "hotlink_linker_module_v1";
inline constexpr const char *kEnv = "HOTLINK_LINKER_MODULE";

// What must match between the two sides.
struct Stamp {
  const char *version; // hotlink's version
  std::size_t sizes[7];
  bool operator==(const Stamp &o) const;
};

inline Stamp stamp(const char *version) {
  return {version,
          {sizeof(LinkRequest), sizeof(LinkResult), sizeof(ServiceConfig), sizeof(cache::Artifact),
           sizeof(VerifyOptions), sizeof(Verified), sizeof(Error)}};
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
  // LinkService::link; a failure is the result's error.
  LinkResult (*link)(LinkService &service, const LinkRequest &request);
  // cache_artifact (service.h).
  Expected<cache::Artifact> (*cache_artifact)(const LinkResult &result);
  // verify_for_target (linker/verify.h).
  Expected<Verified> (*verify_for_target)(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                          const std::string &target, const VerifyOptions &options);
  std::string (*lld_version)();
};

using EntryFn = const Table *(*)();

} // namespace hotlink::linker_module
