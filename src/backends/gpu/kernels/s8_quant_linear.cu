// QuantizeLinear / DequantizeLinear per tensor between fp32/fp16 and int8/uint8 (kernels.h), with
// the reference's float arithmetic: a division rounded to nearest (no reciprocal), nearbyint
// (half to even), saturation; NaN quantizes to 0. 4 elements per thread when aligned.
#include <cmath>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/launch_util.h"

namespace infera::gpu {
namespace {

__device__ inline float load_float(const void* x, int f16, int64_t i) {
  return f16 ? arch::h2f(static_cast<const uint16_t*>(x)[i]) : static_cast<const float*>(x)[i];
}

__device__ inline float fdiv(float a, float b) {
#if defined(INFERA_GPU_CUDA)
  return __fdiv_rn(a, b);
#else
  return a / b;  // HIP: IEEE division unless fast math, which this build does not use
#endif
}

__global__ void quantize_kernel(const void* x, int f16, uint8_t* y, int64_t n, float scale, float zp, float lo,
                                float hi) {
  arch::pdl_wait();
  arch::pdl_trigger();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = rintf(fdiv(load_float(x, f16, i), scale)) + zp;
    v = v < lo ? lo : v > hi ? hi : v;
    const int r = v == v ? static_cast<int>(v) : 0;
    y[i] = static_cast<uint8_t>(r & 0xff);
  }
}

__global__ void dequantize_kernel(const uint8_t* x, int u8, void* y, int f16, int64_t n, float scale, int zp) {
  arch::pdl_wait();
  arch::pdl_trigger();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int v = u8 ? int(x[i]) : int(static_cast<int8_t>(x[i]));
    const float f = static_cast<float>(v - zp) * scale;
    if (f16)
      static_cast<uint16_t*>(y)[i] = arch::f2h(f);
    else
      static_cast<float*>(y)[i] = f;
  }
}

}  // namespace

KernelId quant_variant(const QuantDesc& d) {
  return d.quantize ? KernelId::s8_quantize_linear : KernelId::s8_dequantize_linear;
}

Status quant_linear(const QuantDesc& d, gpuStream_t stream) {
  if (d.n < 0) return {"quant: negative element count"};
  if (d.n == 0) return {};
  if (!d.x || !d.y) return {"quant: missing x or y"};
  if (d.float_dtype != DType::kF32 && d.float_dtype != DType::kF16)
    return {"quant: the float side must be fp32 or fp16"};
  if (!(d.scale > 0.f) || !std::isfinite(d.scale)) return {"quant: scale must be positive and finite"};
  const int lo = d.uint8 ? 0 : -128, hi = d.uint8 ? 255 : 127;
  if (d.zero_point < lo || d.zero_point > hi) return {"quant: zero point out of range"};
  const int f16 = d.float_dtype == DType::kF16;
  const dim3 grid(grid_for(d.n, 256)), block(256);
  if (d.quantize)
    GPU_TRY(arch::launch_dependent(quantize_kernel, grid, block, 0, stream, d.x, f16, static_cast<uint8_t*>(d.y), d.n,
                                   d.scale, static_cast<float>(d.zero_point), float(lo), float(hi)));
  else
    GPU_TRY(arch::launch_dependent(dequantize_kernel, grid, block, 0, stream, static_cast<const uint8_t*>(d.x), d.uint8,
                                   d.y, f16, d.n, d.scale, d.zero_point));
  return {};
}

}  // namespace infera::gpu
