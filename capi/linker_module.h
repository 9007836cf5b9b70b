// The runtime's way to the linker: libhotlink-linker.so
// (linker/module/plugin.h), loaded on the first call that links, verifies
// for another target or asks lld's version. Nothing else in libhotlink.so
// touches lld or libLLVM.
#pragma once

#include "linker/module/plugin.h"

namespace hotlink::capi {

// The module's table; loaded once per process (a failure is kept too, and
// every later call returns the same error: it names the module, the places
// looked and how to fix it).
Expected<const linker_module::Table *> linker();

} // namespace hotlink::capi
