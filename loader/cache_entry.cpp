#include "hotlink/cache_entry.h"

namespace hotlink::loader {

namespace {

// The name diagnostics give the entry: its file in the cache, else its own.
const std::string &entry_name(const cache::Entry &entry) {
  return entry.artifact_path.empty() ? entry.manifest.name : entry.artifact_path;
}

} // namespace

VerifyOptions verify_options(const cache::Entry &entry, const std::vector<signature::PublicKey> &trusted) {
  VerifyOptions o;
  o.blake3 = entry.manifest.blake3;
  o.expected_exports = entry.manifest.exports;
  o.trusted_keys = trusted;
  o.statement = entry.statement;
  return o;
}

Expected<std::unique_ptr<Library>> load(const cache::Entry &entry,
                                        const std::vector<signature::PublicKey> &trusted) {
  auto loaded = load_verified(entry.artifact.bytes, entry_name(entry), verify_options(entry, trusted));
  if (!loaded)
    return loaded.take_error();
  return std::move(loaded->library);
}

std::optional<Error> reload(HotModule &module, const cache::Entry &entry,
                            const std::vector<signature::PublicKey> &trusted) {
  return module.reload(entry.artifact.bytes, entry_name(entry), verify_options(entry, trusted));
}

} // namespace hotlink::loader
