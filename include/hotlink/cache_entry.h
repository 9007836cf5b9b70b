// Loading what the cache returns. The cache stores and finds bytes and
// knows nothing of loading; these calls give the loader a cache entry's
// manifest as what it must find: its BLAKE3 and export list, so bytes
// changed after they were stored are refused (HashMismatch) before
// anything is mapped. With `trusted` keys (e.g. Cache::trust()), the entry's
// statement must also be signed by one of them, and the bytes are checked
// against it.
#pragma once

#include "hotlink/cache.h"
#include "hotlink/hot_module.h"
#include "hotlink/load.h"

#include <memory>
#include <optional>
#include <vector>

namespace hotlink::loader {

HOTLINK_API VerifyOptions verify_options(const cache::Entry &entry, const std::vector<signature::PublicKey> &trusted = {});

// Verifies the entry's bytes and maps a private copy of them.
HOTLINK_API Expected<std::unique_ptr<Library>> load(const cache::Entry &entry,
                                        const std::vector<signature::PublicKey> &trusted = {});

// HotModule::reload with the entry's bytes, verified as load() does.
HOTLINK_API std::optional<Error> reload(HotModule &module, const cache::Entry &entry,
                            const std::vector<signature::PublicKey> &trusted = {});

} // namespace hotlink::loader
