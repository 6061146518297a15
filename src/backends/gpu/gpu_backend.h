// The GPU backend (CUDA or HIP, from the same sources): our kernels (src/backends/gpu/kernels),
// NHWC activations on the device, FP32 or FP16 storage with FP32 accumulation. The CPU-only
// build links gpu_off.cpp instead, which says why there is no GPU.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace infera {

// The GPU backend for the device and precision of o, or an error naming why it cannot run
// (no GPU backend in this build, no device, a precision it does not have).
Result<std::shared_ptr<const Backend>> make_gpu_backend(Device device, const BackendOptions& o);
// What `infera doctor` shows: devices, driver and runtime versions, or why there is none.
std::vector<BackendInfo> gpu_backend_infos();

}  // namespace infera
