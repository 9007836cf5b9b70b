// The loader's side of the DWARF module (dwarf.h): found and opened as
// hotlink's other modules are (base/own_module.h), once, never closed.
#include "loader/dwarf/dwarf.h"

#include "base/own_module.h"

namespace hotlink::loader::dwarf {

namespace {

Expected<const Table *> load() {
  auto module = open_own_module({HOTLINK_DWARF_MODULE_FILE, kEnv, reinterpret_cast<const void *>(&dwarf::module),
                                 {HOTLINK_BUILD_LIBDIR, HOTLINK_INSTALL_LIBDIR}},
                                "reading the layouts of state variables", kSymbol, "reinstall hotlink");
  if (!module)
    return module.take_error();
  const Table *table = reinterpret_cast<EntryFn>(module->entry)();
  if (!table || std::string(table->version) != HOTLINK_VERSION_STRING)
    return foreign_module("the DWARF module", module->path, kEnv);
  return table;
}

} // namespace

Expected<const Table *> module() {
  static const Expected<const Table *> table = load();
  return table;
}

} // namespace hotlink::loader::dwarf
