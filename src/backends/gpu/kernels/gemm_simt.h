// Internal: the strided GEMM of gemm_simt.cu. A(m, k) = a[m * sam + k * sak], B(k, n) =
// b[k * sbk + n * sbn], C(m, n) = c[m * ldc + n]; per-batch element offsets stride_*.
#pragma once

#include <cstdint>

#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/activation_device.h"

namespace infera::gpu {

struct GemmSimtParams {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const float* bias = nullptr;
  const void* residual = nullptr;
  int batch = 1, m = 1, n = 1, k = 1;
  int64_t sam = 0, sak = 0, sbk = 0, sbn = 0, ldc = 0, ldr = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_r = 0;
  ActParams act;
};
Status gemm_simt_run(bool f16, const GemmSimtParams& p, gpuStream_t stream);

}  // namespace infera::gpu
