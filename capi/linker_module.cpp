#include "capi/linker_module.h"
#include "base/own_module.h"

#include <dlfcn.h>

namespace hotlink::capi {

namespace {

Expected<const linker_module::Table *> load() {
  auto path = find_own_module({HOTLINK_LINKER_MODULE_FILE, linker_module::kEnv,
                               reinterpret_cast<const void *>(&linker),
                               {HOTLINK_BUILD_LIBDIR, HOTLINK_INSTALL_LIBDIR}},
                              "linking");
  if (!path)
    return path.take_error();
  // Never closed: lld keeps state for the process's life. RTLD_LOCAL: the module's lld and libLLVM stay its own; RTLD_NOW: a
  // missing dependency is reported here, not at a later call.
  void *handle = ::dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return make_error(ErrorCode::Internal, std::string("cannot load the linker module: ") + (why ? why : "dlopen failed"),
                      *path, {}, "reinstall hotlink; the module needs LLVM 22's libraries (libllvm22)");
  }
  auto entry = reinterpret_cast<linker_module::EntryFn>(::dlsym(handle, linker_module::kSymbol));
  const linker_module::Table *table = entry ? entry() : nullptr;
  if (!table || !(table->stamp == linker_module::stamp(HOTLINK_VERSION_STRING)))
    return make_error(ErrorCode::Internal,
                      "the linker module is not this libhotlink's (another version or build of hotlink)", *path, {},
                      "install libhotlink and libhotlink-linker from one build, or point " +
                          std::string(linker_module::kEnv) + " at the right one");
  return table;
}

} // namespace

Expected<const linker_module::Table *> linker() {
  static const Expected<const linker_module::Table *> table = load();
  return table;
}

} // namespace hotlink::capi
