// Shared pieces of the GPU kernel tests: device buffers, seeded random data, fp16 rounding on
// the host, the normalized-error comparison against a double-precision reference, and the
// per-variant result table that the driver prints against kernels/list.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/gpu/kernels.h"

namespace infera::gpu::test {

// ---- host fp16 <-> fp32 (round to nearest even), independent of the library under test
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // below 2^-14: fp16 subnormal (units of 2^-24), rounded to nearest even
    float a;
    std::memcpy(&a, &abs, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t r = abs & 0x1fffu;
  if (r > 0x1000u || (r == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal
      float f = std::ldexp(static_cast<float>(m), -24);
      std::memcpy(&x, &f, 4);
      x |= sign;
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline float round_to(DType t, float v) { return t == DType::kF16 ? f16_to_f32(f32_to_f16(v)) : v; }

// ---- device buffer
struct DevBuf {
  void* ptr = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(n) {
    if (n && gpuMalloc(&ptr, n) != gpuSuccess) {
      std::fprintf(stderr, "gpuMalloc(%zu) failed\n", n);
      std::exit(2);
    }
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr, o.bytes = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DevBuf() {
    if (ptr) (void)gpuFree(ptr);
  }
};

inline void check_gpu(gpuError_t e, const char* what) {
  if (e != gpuSuccess) {
    std::fprintf(stderr, "FATAL %s: %s\n", what, gpuGetErrorString(e));
    std::exit(2);
  }
}

// Host values (already rounded to dtype) -> device buffer of dtype.
inline DevBuf upload(DType t, const std::vector<float>& v) {
  DevBuf b(v.size() * dtype_size(t) + 16);
  if (t == DType::kF16) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
    check_gpu(gpuMemcpyHtoD(b.ptr, h.data(), h.size() * 2), "upload");
  } else {
    check_gpu(gpuMemcpyHtoD(b.ptr, v.data(), v.size() * 4), "upload");
  }
  // A pageable copy may return before its DMA lands; the kernels run on a non-blocking stream.
  check_gpu(gpuDeviceSynchronize(), "upload sync");
  return b;
}
inline std::vector<float> download(DType t, const DevBuf& b, size_t n) {
  std::vector<float> v(n);
  if (t == DType::kF16) {
    std::vector<uint16_t> h(n);
    check_gpu(gpuMemcpyDtoH(h.data(), b.ptr, n * 2), "download");
    for (size_t i = 0; i < n; ++i) v[i] = f16_to_f32(h[i]);
  } else {
    check_gpu(gpuMemcpyDtoH(v.data(), b.ptr, n * 4), "download");
  }
  return v;
}
// Raw bit check of "still poisoned" (all bytes 0xFF): element i of a dtype buffer.
inline std::vector<bool> poisoned(DType t, const DevBuf& b, size_t n) {
  std::vector<uint8_t> raw(n * dtype_size(t));
  check_gpu(gpuMemcpyDtoH(raw.data(), b.ptr, raw.size()), "download");
  std::vector<bool> out(n);
  const size_t es = dtype_size(t);
  for (size_t i = 0; i < n; ++i) {
    bool all = true;
    for (size_t k = 0; k < es; ++k) all = all && raw[i * es + k] == 0xff;
    out[i] = all;
  }
  return out;
}
// An output buffer of n elements filled with 0xFF bytes (NaN in fp16 and fp32).
inline DevBuf poisoned_buffer(DType t, size_t n, gpuStream_t s) {
  DevBuf b(n * dtype_size(t) + 16);
  check_gpu(gpuMemsetAsync(b.ptr, 0xff, b.bytes, s), "memset");
  return b;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen); }
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }  // inclusive
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(range(0, static_cast<int>(v.size()) - 1))];
  }
  std::vector<float> values(DType t, size_t n, float lo = -1.f, float hi = 1.f) {
    std::vector<float> v(n);
    for (float& x : v) x = round_to(t, uniform(lo, hi));
    return v;
  }
};

// ---- comparison
struct Compare {
  double err = 0;        // ||out - ref|| / ||ref||
  size_t bad_index = 0;  // first non-finite or worst element
  bool nonfinite = false;
  double worst = 0;
};
// Compares out[idx[i]] with ref[i]; ref NaN must be NaN in out too.
inline Compare compare(const std::vector<float>& out, const std::vector<double>& ref, const std::vector<size_t>& idx) {
  Compare c;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = out[idx[i]], r = ref[i];
    if (std::isnan(r)) {
      if (!std::isnan(o)) c.nonfinite = true, c.bad_index = i;
      continue;
    }
    if (!std::isfinite(o)) {
      if (!c.nonfinite) c.bad_index = i;
      c.nonfinite = true;
      continue;
    }
    const double d = o - r;
    num += d * d;
    den += r * r;
    if (std::fabs(d) > c.worst) c.worst = std::fabs(d), c.bad_index = c.nonfinite ? c.bad_index : i;
  }
  c.err = c.nonfinite ? INFINITY : std::sqrt(num) / (den > 0 ? std::sqrt(den) : 1.0);
  return c;
}
// int8 results must match their reference exactly (err: the fraction of differing elements).
inline double tolerance(DType t) { return t == DType::kF16 ? 1e-2 : t == DType::kS8 ? 0.0 : 1e-5; }

// ---- per-variant results
struct VariantResult {
  int runs = 0;
  int failures = 0;
  double max_err = 0;
  std::string first_failure;
};
struct Results {
  std::map<KernelId, VariantResult> by_id;
  bool verbose = false;
  void record(KernelId id, const std::string& what, const Compare& c, DType t, bool wrote_outside = false,
              const char* status_error = nullptr) {
    VariantResult& r = by_id[id];
    ++r.runs;
    const bool fail = status_error || wrote_outside || c.nonfinite || !(c.err <= tolerance(t));
    if (std::isfinite(c.err) && c.err > r.max_err) r.max_err = c.err;
    if (c.nonfinite) r.max_err = INFINITY;
    if (fail) {
      ++r.failures;
      if (r.first_failure.empty()) {
        char buf[512];
        std::snprintf(buf, sizeof buf, "%s: %s err=%.3g worst=%.3g at %zu%s", what.c_str(),
                      status_error ? status_error : "", c.err, c.worst, c.bad_index,
                      wrote_outside ? " WROTE OUTSIDE ITS SLICE" : (c.nonfinite ? " NON-FINITE" : ""));
        r.first_failure = buf;
      }
    }
    if (verbose || fail)
      std::printf("  %-48s %-60s err %.3g%s\n", kernel_info(id).name, what.c_str(), c.err, fail ? "  FAIL" : "");
  }
};

struct Ctx {
  gpuStream_t stream = nullptr;
  DeviceInfo dev;
  Rng rng{1};
  Results results;
};

// Runs f(i) for i in [0, n) on the host's cores (the references are the slow part).
template <class F>
void parallel_for(int64_t n, F&& f) {
  const int threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += threads) f(i);
    });
  for (auto& th : pool) th.join();
}

inline Activation random_act(Rng& rng) {
  static const std::vector<Activation> acts = {{ActKind::kIdentity, 0, 0},     {ActKind::kRelu, 0, 0},
                                               {ActKind::kLeakyRelu, 0.1f, 0}, {ActKind::kClip, 0, 6},
                                               {ActKind::kSigmoid, 0, 0},      {ActKind::kHardSwish, 0, 0},
                                               {ActKind::kSwish, 1, 0},        {ActKind::kGelu, 0, 0},
                                               {ActKind::kTanh, 0, 0},         {ActKind::kHardSigmoid, 0.2f, 0.5f},
                                               {ActKind::kElu, 1, 0},          {ActKind::kMish, 0, 0}};
  return rng.pick(acts);
}

void run_conv_suite(Ctx& ctx);
void run_gemm_suite(Ctx& ctx);
void run_pool_suite(Ctx& ctx);
void run_pointwise_suite(Ctx& ctx);
void run_misc_suite(Ctx& ctx);  // softmax, resize, layout
void run_copy_suite(Ctx& ctx);  // strided copies, tiled transposes
void run_norm_suite(Ctx& ctx);  // layernorm, reductions
void run_int8_suite(Ctx& ctx);  // int8 convolution, quantize / dequantize

}  // namespace infera::gpu::test
