// State variables (hotlink/state.h's HOTLINK_STATE) of a mapped version, and
// carrying their values from one version to the next.
//
// Contract:
// - state_variables() reads them from the artifact's symbol table: every
//   object symbol in the section HOTLINK_STATE_SECTION, keyed by its name
//   and, for a local (static) one, the source file of its translation unit
//   (the symbol table's FILE entry). With debug info, each gets its layout:
//   the type's members, offsets and types, recursively.
// - plan_state_carry() pairs the variables of two versions and decides,
//   before anything is copied, which are carried, added, dropped, or do not
//   fit (another size, or another layout where both versions describe one).
// - carry_state() copies the values the plan carries. It refuses (or resets
//   or migrates, by policy) a variable whose value points into the old
//   image, which is unmapped once retired. Call it when no call is inside
//   the old version (HotModule does: see hot_module.h).
// ELF only; on other formats there are no state variables.
#pragma once

#include "hotlink/error.h"
#include "hotlink/load.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::loader {

struct HOTLINK_API StateVariable {
  std::string name;   // the symbol: "counter", "step.calls" (a C static local)
  std::string unit;   // the translation unit's source file; empty for an external name
  void *address = nullptr;
  std::size_t size = 0;
  // From the debug info: "struct Pair{a@0:int(4);b@4:float(4)}(8)". Empty
  // without it; then only the size is compared (the symbol table has no
  // alignment or type).
  std::string layout;
  std::string key() const { return unit.empty() ? name : unit + ":" + name; }
};

// What to do with a variable that cannot be carried as it is: its layout
// changed, or its value points into the old version's image.
enum class StateMismatchPolicy {
  Refuse,  // refuse the reload (ErrorCode::StateMismatch); the old version keeps serving
  Reset,   // the new version keeps the variable's initial value; a warning says so
  Migrate, // call ModuleOptions::migrate_state with both variables
};

// Called with the old version's variable (address: its current bytes) and
// the new one's (address: where to write); an Error refuses the reload.
using StateMigration = std::function<std::optional<Error>(const StateVariable &old, const StateVariable &fresh)>;

// What a reload (or rollback) did with each state variable, by key().
struct HOTLINK_API StateReport {
  std::vector<std::string> carried, reset, migrated, added, dropped;
  std::vector<std::string> warnings;
};

// The image's state variables, at their addresses in the mapped image that
// starts at `load_base` (0: the link-time addresses). Their layouts are
// read from the debug info once per artifact and kept by its content
// `identity` (a hash the caller has already, such as Verified's; empty:
// its BLAKE3 is computed here).
HOTLINK_API Expected<std::vector<StateVariable>> state_variables(const std::vector<std::uint8_t> &bytes,
                                                     const std::string &name, std::uintptr_t load_base,
                                                     const std::string &identity = {});

struct HOTLINK_API StateCarry {
  struct Pair {
    const StateVariable *old = nullptr, *fresh = nullptr;
    std::string mismatch; // empty: same layout (or size)
  };
  std::vector<Pair> pairs;
  StateReport report; // added and dropped; carry_state adds the rest
  bool empty() const { return pairs.empty(); }
};

// Pairs the variables; refuses a mismatch under Refuse (error naming the
// variable and what changed, `input` = the new version's name).
HOTLINK_API Expected<StateCarry> plan_state_carry(const std::vector<StateVariable> &old, const std::vector<StateVariable> &fresh,
                                      StateMismatchPolicy policy, const std::string &input);

// Copies what `plan` carries into the new version and records it in
// plan.report. `old_image`: the old version's mapped ranges. An error (a
// refusal, or the migration hook's) leaves the old version untouched.
HOTLINK_API std::optional<Error> carry_state(StateCarry &plan, const std::vector<ImageRange> &old_image,
                                 StateMismatchPolicy policy, const StateMigration &migrate, const std::string &input);

} // namespace hotlink::loader
