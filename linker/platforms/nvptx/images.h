// Internal. Which of an input's device images a link for one SM
// architecture takes (a fat binary's, or the images clang's offload
// sections carry), as nvJitLink picks them: the planner reads that image's
// kernels, and the engine hands clang's image to nvJitLink.
#pragma once

#include "exports/fatbin.h"

#include <string>
#include <vector>

namespace hotlink::detail::nvptx {

// "sm_90" -> 90; "sm_90a", "sm_100f" (architecture- and family-specific
// variants) -> their number; 0 when `arch` is not an SM architecture.
unsigned sm_number(const std::string &arch);

struct Choice {
  const exports::FatbinImage *image = nullptr; // null: none runs as the architecture
  std::string has;                             // what the images are: "sm_80 cubin, sm_80 PTX"
};

// A cubin of the same major architecture and no later minor one (the CUDA
// driver's rule), else the latest LTO-IR not written for a later one
// (compiled with the link's other LTO-IR: nvcc -dlto's objects hold it and
// PTX), else the latest such PTX.
Choice choose_image(const std::vector<exports::FatbinImage> &images, unsigned sm);

} // namespace hotlink::detail::nvptx
