// The reference kernels of src/ops as a backend: every op, plain format, host memory. The last
// entry of every CPU backend list, so every step has a kernel.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace infera {

std::shared_ptr<const Backend> make_ref_backend();

}  // namespace infera
