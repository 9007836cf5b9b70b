// The Halide filter-metadata ABI, as f_metadata() returns it (Halide's
// HalideRuntime.h, halide_filter_metadata_t version 1). Kept as C layout so
// that the loader can read what a JIT-compiled pipeline reports about
// itself. In a namespace of hotlink's, so that a host may include Halide.h
// and hotlink's headers in one file, in either order.
#pragma once

#include <cstdint>

namespace hotlink::loader::halide_abi {

struct halide_type_t {
  std::uint8_t code; // 0 int, 1 uint, 2 float, 3 handle, 4 bfloat
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct halide_scalar_value_t;

struct halide_filter_argument_t {
  const char *name;
  std::int32_t kind; // 0 scalar, 1 input buffer, 2 output buffer
  std::int32_t dimensions;
  halide_type_t type;
  const halide_scalar_value_t *def, *min, *max, *estimate;
  const std::int64_t *buffer_estimates;
};

struct halide_filter_metadata_t {
  std::int32_t version;
  std::int32_t num_arguments;
  const halide_filter_argument_t *arguments;
  const char *target;
  const char *name;
};
} // namespace hotlink::loader::halide_abi
