// Output comparison for `infera check`.
#pragma once

#include <string>

#include "cli.h"

namespace infera::cli {

struct Comparison {
  bool ok = true;
  std::string why;  // on failure: dtype, shape, or "3/8 elements outside ...; first at [0,0]: got 0, want 0.5"
  int64_t count = 0, outside = 0, first = -1;
  double max_abs = 0, max_rel = 0;
};

// |got - want| <= atol + rtol * |want| for float16/bfloat16/float32/float64 (NaN == NaN, an
// infinity only equals itself); integers and bools exactly; any other dtype fails.
Comparison compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol);

}  // namespace infera::cli
