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
// is rewritten without it (in memory), and its symbols are dropped.
std::optional<Error> exclude_members(PlanContext &ctx);

} // namespace hotlink::detail
