// Internal helpers for the host launchers: grid sizing and the once-per-device raise of a kernel's
// dynamic shared-memory limit (done before graph capture, by the first, timed, launch).
#pragma once

#include <atomic>
#include <cstdint>

#include "backends/gpu/kernels.h"

namespace infera::gpu {

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Raises func's dynamic shared-memory limit to bytes on the current device, once per device.
inline Status ensure_dynamic_smem(const void* func, int bytes, std::atomic<uint64_t>& done_mask) {
  if (bytes <= 48 * 1024) return {};
  int dev = 0;
  GPU_TRY(gpuGetDevice(&dev));
  const uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
  if (bit && (done_mask.load(std::memory_order_acquire) & bit)) return {};
  GPU_TRY(gpuFuncSetMaxDynamicSmem(func, bytes));
  if (bit) done_mask.fetch_or(bit, std::memory_order_acq_rel);
  return {};
}

// Grid size for a grid-stride elementwise kernel over n work items.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t b = ceil_div(n, threads);
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace infera::gpu
