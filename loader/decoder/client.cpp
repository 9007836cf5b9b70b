// The loader's side of the decoder module (decoder.h): found and opened as
// hotlink's other modules are (base/own_module.h), once, never closed.
#include "loader/decoder/decoder.h"

#include "base/own_module.h"


namespace hotlink::loader::decoder {

namespace {

Expected<const Table *> load() {
  auto module = open_own_module({HOTLINK_DECODER_MODULE_FILE, kEnv, reinterpret_cast<const void *>(&x86),
                                 {HOTLINK_BUILD_LIBDIR, HOTLINK_INSTALL_LIBDIR}},
                                "forwarding function pointers to a new version", kSymbol, "reinstall hotlink");
  if (!module)
    return module.take_error();
  const Table *table = reinterpret_cast<EntryFn>(module->entry)();
  if (!table)
    return make_error(ErrorCode::Internal, "the x86 decoder module has no usable x86-64 disassembler", module->path,
                      {}, "reinstall hotlink");
  if (std::string(table->version) != HOTLINK_VERSION_STRING)
    return foreign_module("the x86 decoder module (hotlink " + std::string(table->version) + "'s)", module->path, kEnv);
  return table;
}

} // namespace

Expected<const Table *> x86() {
  static const Expected<const Table *> table = load();
  return table;
}

} // namespace hotlink::loader::decoder
