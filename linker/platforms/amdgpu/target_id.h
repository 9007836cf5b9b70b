// Internal. AMD target IDs ("gfx90a", "gfx90a:sramecc+:xnack-"): a
// processor LLVM knows, then the features it allows (xnack, sramecc),
// each with + or -. What clang's TargetID functions answer, written on
// LLVM's AMDGPU TargetParser so that hotlink does not load libclang-cpp
// (18 ms at every process start) to read a code object's processor.
// test/platforms/amdgpu_target_id_test.cpp checks every answer against clang's own.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hotlink::detail::amdgpu {

struct TargetId {
  std::string processor;             // canonical: "gfx90a"
  std::map<std::string, bool> features; // by name, in canonical order
  std::string canonical() const;     // "gfx90a:sramecc+:xnack-"
};

// `spelled` as -mcpu and --offload-arch take it (any feature order,
// processor aliases); nullopt when it is not a target ID for amdgcn.
std::optional<TargetId> parse_target_id(std::string_view spelled);

// The canonical ID of `processor` (canonical already) with `features`.
std::string canonical_target_id(std::string_view processor, const std::map<std::string, bool> &features);

// Whether code built for `provided` runs where `requested` is asked for
// (both canonical): the same processor, and every feature `provided`
// fixes fixed the same way in `requested`.
bool compatible_target_ids(std::string_view provided, std::string_view requested);

} // namespace hotlink::detail::amdgpu
