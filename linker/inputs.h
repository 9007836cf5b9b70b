// Internal. The planner's first steps: every input read once (files
// mapped, in-memory inputs borrowed), checked against the target, and
// archives rewritten without the members the request leaves out.
#pragma once

#include "linker/platforms/platform.h"

#include <optional>

namespace hotlink::detail {

// Reads every input and its symbols into ctx.inputs. Errors name the input.
std::optional<Error> read_inputs(PlanContext &ctx);

// One format and arch, the target's; notes archives and bitcode.
std::optional<Error> check_inputs(PlanContext &ctx);

// Archive members the request leaves out: each archive input that has one
// is rewritten without it (in memory), and its symbols are dropped; what
// they defined is kept in ctx.excluded_definitions.
std::optional<Error> exclude_members(PlanContext &ctx);

// After the exports are selected: what leaving members out costs. An
// export defined only by a left-out member is an error naming it (with
// a list policy; `all` leaves their definitions out, as asked); every
// name a left-out member defines that the rest of the link references
// is a warning, one per member, naming each and who needs it.
std::optional<Error> check_excluded(PlanContext &ctx, std::optional<Error> select_error);

} // namespace hotlink::detail
