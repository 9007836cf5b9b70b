// Internal. How an ELF artifact's exports bind, as `clang -shared` would
// have them where that can work. References to the artifact's own non-weak
// functions bind inside it (-Bsymbolic-non-weak: distribution static
// libraries are PIE, whose code calls and takes the address of its own
// functions PC-relative). Exported data stays preemptible, so that a host
// with a copy relocation of it (a PIE or non-PIC executable using the
// variable directly) and the library see one variable; weak definitions
// stay preemptible too. A dynamic list names those preemptible exports.
// When code reaches an exported variable PC-relative (a PIE-built member),
// lld refuses the link; the variable is then bound inside the artifact and
// a warning says what a host with a copy relocation will see.
#pragma once

#include "linker/plan.h"

#include <string>
#include <unordered_set>
#include <vector>

namespace hotlink::detail {

struct Binding {
  std::vector<exports::Export> preemptible; // the dynamic list as planned
  std::unordered_set<std::string> data;     // the exported variables among them
  std::vector<std::string> bound;           // variables bound inside after all, in order
};

// The exports that stay preemptible: exported variables (not thread-local)
// and weak definitions. Empty when no variable is exported (then
// -Bsymbolic-non-weak alone says it all).
Binding plan_binding(const PlanContext &ctx);

// After lld refused PC-relative references to exported variables: those
// variables leave the dynamic list (rewritten in `plan`), and `changes`
// gets a warning for each. When lld stopped at its
// error limit, the next run reports every refusal. false when no refusal
// names a variable still in the list.
bool bind_position_dependent_data(Binding &binding, Plan &plan, const std::vector<Diagnostic> &lld_said,
                                  std::vector<Diagnostic> &changes);

// The dynamic list's file in the job.
inline constexpr const char *kDynamicList = "dynamic.list";

} // namespace hotlink::detail
