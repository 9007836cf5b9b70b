// Internal. The runtime environment of a wasm32-wasi (wasm32-wasip1)
// module, as clang's driver links one: wasi-libc's crt1-reactor.o (a JIT
// module has no main: a reactor, whose _initialize runs the C
// constructors and is exported), -lc from wasi-libc's directory, and
// compiler-rt's builtins for wasm32. The line comes from clang's driver
// (`clang --target=T -mexec-model=reactor [--sysroot=S]`); hotlink knows
// only Debian's layout for the wasip1 spelling, whose files Debian 12
// keeps under the older wasm32-wasi name.
//
// Contract: computed once per (triple, sysroot) and process; an error
// names what is missing, where it was looked for, and the Debian package.
#pragma once

#include "hotlink/error.h"
#include "linker/platforms/platform.h"

#include <memory>
#include <string>
#include <vector>

namespace hotlink::detail {

struct WasiEnvironment {
  std::vector<std::string> before, after; // wasm-ld's arguments around the inputs
  std::vector<std::string> summary;       // file names, for LinkResult::runtime
  std::vector<std::string> fingerprints;  // "path size mtime", for the cache key
};

Expected<std::shared_ptr<const WasiEnvironment>> wasi_environment(const TargetInfo &target,
                                                                  const std::string &sysroot);

} // namespace hotlink::detail
