// Internal. lld resets every LLVM command-line option (cl::opt) of the
// process to its default on each call. The in-process driver saves what the
// host set before the call and puts it back afterwards: options of the
// common scalar types (bool, int, unsigned, char, float, double, string)
// automatically, and
// any option at all (enums, lists) that the host declared with
// hotlink::set_host_llvm_options.
#pragma once

#include "exports/error.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

class SavedLLVMOptions {
public:
  // Call with the lld lock held, right before lldMain.
  void save();
  // Call right after lldMain. Returns the names of options that lld reset
  // and that could not be restored (the caller reports them).
  std::vector<std::string> restore();

private:
  struct Scalar {
    void *option; // llvm::cl::Option*
    std::string value;
  };
  std::vector<Scalar> scalars_;
  std::vector<void *> others_;
};

// Parses and records the host's declared options (see service.h).
std::optional<Error> set_declared_llvm_options(const std::vector<std::string> &args);

} // namespace hotlink::detail
