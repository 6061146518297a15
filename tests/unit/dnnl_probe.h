// What oneDNN offers on the CPU the tests run on: the perf-db tests expect a search only where there
// are two algorithms to choose from (oneDNN 2.6 has Winograd on AVX-512 only, not on AVX2).
#pragma once

#include "backends/cpu/dnnl_internal.h"

namespace infera::test {

inline bool onednn_has_winograd() { return cpu::has_winograd(); }

}  // namespace infera::test
