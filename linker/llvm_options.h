// Internal. lld resets every LLVM command-line option (cl::opt) of the
// process to its default on each call: its readConfigs calls
// cl::ResetAllOptionOccurrences, which walks LLVM's option registry. The
// options the host set (those with occurrences) are taken out of the
// registry for the call and put back after, so that the reset never reaches
// them: options of every type (bool, enums, lists, external storage) keep
// their values, and no option's type is ever inspected. (LLVM is built
// without RTTI; the earlier design's dynamic_cast on an option crashed for
// options of Polly's types.)
//
// While an in-process link runs, another host thread looking such an
// option up by name (e.g. parsing options) does not find it; its value is
// untouched. Links that compile bitcode (LTO, whose code generation reads
// LLVM's options) run in a worker, where every option has its default.
#pragma once

#include "hotlink/error.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::detail {

class SavedLLVMOptions {
public:
  // With the lld lock held, right before lld: takes the set options out of
  // the registry.
  void save();
  // Right after lld: puts them back. `lld_set_options`: lld's arguments
  // had -mllvm or -plugin-opt, whose values lld sets as LLVM options;
  // those are reset first, or they would count as the host's next time.
  void restore(bool lld_set_options);

private:
  std::vector<void *> held_; // llvm::cl::Option*
};

// Whether the host has set any LLVM option (a link that compiles bitcode
// then runs in a worker, where every option has its default).
bool host_llvm_options_set();

// Parses the host's options now (see service.h).
std::optional<Error> set_declared_llvm_options(const std::vector<std::string> &args);

} // namespace hotlink::detail
