// Internal: element access shared by the memory-bound kernels. Tensors are fp16 (stored as
// uint16_t bits) or fp32; arithmetic is fp32. VEC consecutive elements move as one access of
// up to 16 bytes when the caller has checked alignment.
#pragma once

#include <cstdint>

#include "backends/gpu/arch.h"
#include "backends/gpu/kernels/activation_device.h"

namespace infera::gpu {

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(uint16_t v) { return arch::h2f(v); }
template <class T>
__device__ inline T from_f(float v);
template <>
__device__ inline float from_f<float>(float v) {
  return v;
}
template <>
__device__ inline uint16_t from_f<uint16_t>(float v) {
  return arch::f2h(v);
}
// Bytes (int8 / uint8 storage) move through float exactly: the layout transforms copy their bits.
__device__ inline float to_f(uint8_t v) { return static_cast<float>(v); }
template <>
__device__ inline uint8_t from_f<uint8_t>(float v) {
  return static_cast<uint8_t>(v);
}

// Loads VEC (1, 2, 4 or 8) consecutive elements; VEC * sizeof(T) must be a multiple of 4 bytes
// or VEC == 1. Wider than 16 bytes goes as several 16-byte loads.
template <class T, int VEC>
__device__ inline void load_vec(const T* p, float* out) {
  if constexpr (VEC == 1) {
    out[0] = to_f(p[0]);
  } else if constexpr (sizeof(T) == 2) {
    static_assert(VEC % 2 == 0, "fp16 vectors come in pairs");
    constexpr int kWords = VEC / 2;
    unsigned w[kWords];
    if constexpr (kWords == 4) {
      const uint4 u = *reinterpret_cast<const uint4*>(p);
      w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
    } else if constexpr (kWords == 2) {
      const uint2 u = *reinterpret_cast<const uint2*>(p);
      w[0] = u.x, w[1] = u.y;
    } else {
      w[0] = *reinterpret_cast<const unsigned*>(p);
    }
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      out[2 * i] = arch::h2f(static_cast<uint16_t>(w[i] & 0xffffu));
      out[2 * i + 1] = arch::h2f(static_cast<uint16_t>(w[i] >> 16));
    }
  } else {
    static_assert(VEC % 4 == 0 || VEC == 2, "fp32 vectors");
    if constexpr (VEC == 2) {
      const float2 u = *reinterpret_cast<const float2*>(p);
      out[0] = u.x, out[1] = u.y;
    } else {
#pragma unroll
      for (int i = 0; i < VEC / 4; ++i) {
        const float4 u = reinterpret_cast<const float4*>(p)[i];
        out[4 * i] = u.x, out[4 * i + 1] = u.y, out[4 * i + 2] = u.z, out[4 * i + 3] = u.w;
      }
    }
  }
}

template <class T, int VEC>
__device__ inline void store_vec(T* p, const float* v) {
  if constexpr (VEC == 1) {
    p[0] = from_f<T>(v[0]);
  } else if constexpr (sizeof(T) == 2) {
    constexpr int kWords = VEC / 2;
    unsigned w[kWords];
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = unsigned(arch::f2h(v[2 * i])) | (unsigned(arch::f2h(v[2 * i + 1])) << 16);
    if constexpr (kWords == 4) {
      *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (kWords == 2) {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else {
      *reinterpret_cast<unsigned*>(p) = w[0];
    }
  } else {
    if constexpr (VEC == 2) {
      *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
    } else {
#pragma unroll
      for (int i = 0; i < VEC / 4; ++i)
        reinterpret_cast<float4*>(p)[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    }
  }
}

}  // namespace infera::gpu
