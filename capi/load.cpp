// The C API's loader and hot module (hotlink/load.h, hotlink/hot_module.h).
#include "capi/objects.h"
#include "hotlink/verify_target.h"

#include <new>

using namespace hotlink;
using capi::str;

namespace {

std::vector<std::string> names(const char *const *list, size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; list && i < count; ++i)
    if (list[i])
      out.push_back(list[i]);
  return out;
}

// Verifies `bytes` with `options` and maps a private copy named `name`.
hotlink_library *verify_and_map(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                const hotlink::VerifyOptions &options, hotlink_error **error) {
  auto loaded = loader::load_verified(bytes, name, options);
  if (!loaded)
    return capi::report(error, loaded.take_error()), nullptr;
  return new hotlink_library{std::move(loaded->library)};
}

using Pin = loader::HotModule::Pin;
static_assert(sizeof(Pin) <= sizeof(hotlink_pin::opaque), "a Pin fits in hotlink_pin");
static_assert(alignof(Pin) <= alignof(void *), "a Pin is aligned in hotlink_pin");

// opaque[0] holds the Pin; opaque[1] is kPinned while it pins a version (a
// marker, not the pin's own address, so a C caller may copy the struct).
char pinned_marker;
void *const kPinned = &pinned_marker;
Pin *pin_of(hotlink_pin *p) { return reinterpret_cast<Pin *>(&p->opaque[0]); }
const Pin *pin_of(const hotlink_pin *p) { return reinterpret_cast<const Pin *>(&p->opaque[0]); }
bool pinned(const hotlink_pin *p) { return p && p->opaque[1] == kPinned; }

} // namespace

extern "C" {

// --- Loading ------------------------------------------------------------------------

hotlink_library *hotlink_load(const void *data, size_t size, const char *name, const char *const *expected,
                              size_t expected_count, const char *blake3_hex, hotlink_error **error) {
  return capi::guarded(error, static_cast<hotlink_library *>(nullptr), [&]() -> hotlink_library * {
    if (!data && size)
      return capi::report(error, capi::bad_argument("hotlink_load", "data")), nullptr;
    const auto *p = static_cast<const std::uint8_t *>(data);
    std::vector<std::uint8_t> bytes(p, p + size);
    hotlink::VerifyOptions options;
    options.expected_exports = names(expected, expected_count);
    options.blake3 = str(blake3_hex);
    return verify_and_map(bytes, name && *name ? name : "library.so", options, error);
  });
}

hotlink_status hotlink_verify(const void *data, size_t size, const char *name, const char *target,
                              const char *processor, const char *const *expected, size_t expected_count,
                              hotlink_error **error) {
  return capi::guarded(error, HOTLINK_INTERNAL, [&]() -> hotlink_status {
    if (!data && size)
      return capi::report(error, capi::bad_argument("hotlink_verify", "data"));
    const auto *p = static_cast<const std::uint8_t *>(data);
    hotlink::VerifyOptions options;
    options.expected_exports = names(expected, expected_count);
    options.processor = str(processor);
    auto verified = verify_for_target(std::vector<std::uint8_t>(p, p + size), name && *name ? name : "artifact",
                                      str(target), std::move(options));
    if (!verified)
      return capi::report(error, verified.take_error());
    return HOTLINK_OK;
  });
}

hotlink_library *hotlink_load_file(const char *path, const char *const *expected, size_t expected_count,
                                   hotlink_error **error) {
  return capi::guarded(error, static_cast<hotlink_library *>(nullptr), [&]() -> hotlink_library * {
    if (!path)
      return capi::report(error, capi::bad_argument("hotlink_load_file", "path")), nullptr;
    auto bytes = hotlink::read_artifact_file(path);
    if (!bytes)
      return capi::report(error, bytes.take_error()), nullptr;
    hotlink::VerifyOptions options;
    options.expected_exports = names(expected, expected_count);
    return verify_and_map(*bytes, path, options, error);
  });
}

hotlink_library *hotlink_entry_load(const hotlink_entry *entry, hotlink_error **error) {
  return capi::guarded(error, static_cast<hotlink_library *>(nullptr), [&]() -> hotlink_library * {
    if (!entry)
      return capi::report(error, capi::bad_argument("hotlink_entry_load", "entry")), nullptr;
    auto lib = loader::load(entry->entry, entry->trust);
    if (!lib)
      return capi::report(error, lib.take_error()), nullptr;
    return new hotlink_library{std::move(*lib)};
  });
}

void *hotlink_library_symbol(const hotlink_library *l, const char *symbol) {
  if (!l || !symbol)
    return nullptr;
  return capi::guarded(nullptr, static_cast<void *>(nullptr), [&] { return l->library->symbol(symbol); });
}

const char *hotlink_library_path(const hotlink_library *l) { return l ? l->library->path().c_str() : ""; }

void hotlink_library_close(hotlink_library *l) { delete l; }

// --- Hot reload -------------------------------------------------------------------------

hotlink_module *hotlink_module_create(void) {
  return capi::guarded(nullptr, static_cast<hotlink_module *>(nullptr), [] { return new hotlink_module; });
}

void hotlink_module_destroy(hotlink_module *m) { delete m; }

int hotlink_module_entry(hotlink_module *m, const char *name, hotlink_error **error) {
  return capi::guarded(error, -1, [&]() -> int {
    if (!m)
      return capi::report(error, capi::bad_argument("hotlink_module_entry", "module")), -1;
    if (!name)
      return capi::report(error, capi::bad_argument("hotlink_module_entry", "name")), -1;
    auto e = m->module.entry<void()>(name);
    if (!e)
      return capi::report(error, e.take_error()), -1;
    return e->slot();
  });
}

hotlink_status hotlink_module_reload(hotlink_module *m, const void *data, size_t size, const char *name,
                                     hotlink_error **error) {
  return capi::guarded(error, HOTLINK_INTERNAL, [&]() -> hotlink_status {
    if (!m)
      return capi::report(error, capi::bad_argument("hotlink_module_reload", "module"));
    if (!data && size)
      return capi::report(error, capi::bad_argument("hotlink_module_reload", "data"));
    const auto *p = static_cast<const std::uint8_t *>(data);
    if (auto e = m->module.reload(std::vector<std::uint8_t>(p, p + size), name && *name ? name : "module.so"))
      return capi::report(error, std::move(*e));
    return HOTLINK_OK;
  });
}

hotlink_status hotlink_module_reload_file(hotlink_module *m, const char *path, hotlink_error **error) {
  return capi::guarded(error, HOTLINK_INTERNAL, [&]() -> hotlink_status {
    if (!m)
      return capi::report(error, capi::bad_argument("hotlink_module_reload_file", "module"));
    if (!path)
      return capi::report(error, capi::bad_argument("hotlink_module_reload_file", "path"));
    if (auto e = m->module.reload(std::string(path)))
      return capi::report(error, std::move(*e));
    return HOTLINK_OK;
  });
}

hotlink_status hotlink_module_rollback(hotlink_module *m, hotlink_error **error) {
  return capi::guarded(error, HOTLINK_INTERNAL, [&]() -> hotlink_status {
    if (!m)
      return capi::report(error, capi::bad_argument("hotlink_module_rollback", "module"));
    if (auto e = m->module.rollback())
      return capi::report(error, std::move(*e));
    return HOTLINK_OK;
  });
}

uint64_t hotlink_module_version(const hotlink_module *m) {
  if (!m)
    return 0;
  Pin p = m->module.pin();
  return p.version();
}

int hotlink_module_pin(const hotlink_module *m, hotlink_pin *pin) {
  if (!pin)
    return 0;
  pin->opaque[0] = pin->opaque[1] = nullptr;
  if (!m)
    return 0;
  Pin p = m->module.pin();
  if (!p)
    return 0;
  new (&pin->opaque[0]) Pin(std::move(p));
  pin->opaque[1] = kPinned;
  return 1;
}

void *hotlink_pin_entry(const hotlink_pin *pin, int slot) {
  return pinned(pin) ? pin_of(pin)->address(slot) : nullptr;
}

uint64_t hotlink_pin_version(const hotlink_pin *pin) { return pinned(pin) ? pin_of(pin)->version() : 0; }

void hotlink_pin_release(hotlink_pin *pin) {
  if (!pinned(pin))
    return;
  pin_of(pin)->~Pin();
  pin->opaque[0] = pin->opaque[1] = nullptr;
}

} // extern "C"
