// Elementwise op family: activations reusable by fused kernels, and the broadcast loop that
// the binary/variadic/ternary kernels share (collapsed dims, inner loop with stride 0 or 1).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/activation.h"
#include "ops/util.h"

namespace infera {

// ---------------------------------------------------------------- activations
// The unary activation ops (Relu, LeakyRelu, Sigmoid, ... : every kind of the activation table
// but Clip, whose bounds are inputs from opset 11). Backends read activation() from here.
class ActivationOp : public OpKernel {
 public:
  const Activation& activation() const { return act_; }

 protected:
  explicit ActivationOp(Activation act) : act_(act) {}
  Activation act_;
};

// Clip: opset < 11 bounds from attributes (ONNX defaults: float lowest / max), later from the
// optional scalar inputs 1 and 2 (absent = no bound).
class ClipOp : public OpKernel {
 public:
  int64_t opset() const { return opset_; }
  float attr_min() const { return min_attr_; }  // opset < 11
  float attr_max() const { return max_attr_; }

 protected:
  ClipOp(int64_t opset, float lo, float hi) : opset_(opset), min_attr_(lo), max_attr_(hi) {}
  int64_t opset_;
  float min_attr_, max_attr_;
};

// Binary elementwise ops with numpy broadcasting.
// Max/Min/Sum/Mean are variadic (any number of inputs).
enum class BinaryKind {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMod,
  kAnd,
  kOr,
  kXor,
  kEqual,
  kGreater,
  kLess,
  kGreaterOrEqual,
  kLessOrEqual,
  kPRelu,
  kMax,
  kMin,
  kSum,
  kMean,
};
class BinaryOp : public OpKernel {
 public:
  BinaryKind kind() const { return kind_; }

 protected:
  explicit BinaryOp(BinaryKind k) : kind_(k) {}
  BinaryKind kind_;
};

// Sub-family registration (elementwise.cpp's register_elementwise_ops calls them).
void register_elementwise_unary_ops(OpRegistry& r);
void register_elementwise_binary_ops(OpRegistry& r);
void register_cast_ops(OpRegistry& r);

// ---------------------------------------------------------------- float16 / bfloat16
// half_to_float & co. are public (infera.h) and defined in cast.cpp.
inline bool is_narrow_float(DataType dt) { return dt == DataType::kFloat16 || dt == DataType::kBFloat16; }

// Runs body on ctx's inputs (nullptr where left out) and output 0, with float16/bfloat16 tensors
// replaced by float32 copies (the output converted back after): kernels are written for float/double.
using Float32Body = std::function<Status(const std::vector<const TensorRef*>& ins, TensorRef& out)>;
Status run_in_float32(ComputeContext& ctx, const Float32Body& body);

// ---------------------------------------------------------------- conversions
// Float -> integer as numpy does on x86 (truncate; NaN and values beyond int64 give INT64_MIN,
// then wrap to the narrower type), without the undefined behaviour of an out-of-range cast.
template <class I>
I float_to_int(double v) {
  static_assert(std::is_integral_v<I>);
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) return static_cast<uint64_t>(v);
  }
  int64_t t = INT64_MIN;
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) t = static_cast<int64_t>(v);
  return static_cast<I>(t);
}

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined in C++).
template <class T>
using WrapType = typename std::conditional_t<sizeof(T) < 4, std::type_identity<uint32_t>, std::make_unsigned<T>>::type;
template <class T>
inline T wrap_add(T a, T b) {
  return T(WrapType<T>(a) + WrapType<T>(b));
}
template <class T>
inline T wrap_sub(T a, T b) {
  return T(WrapType<T>(a) - WrapType<T>(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  return T(WrapType<T>(a) * WrapType<T>(b));
}

// ---------------------------------------------------------------- broadcast loop
// Up to 3 inputs broadcast to out_dims. Output-size-1 dims are dropped and neighbours that
// are contiguous in every input merged, so [N,C,H,W] * [N,C,1,1] becomes rows=N*C, inner=H*W.
struct BroadcastPlan {
  static constexpr int kMaxInputs = 3;
  int num_inputs = 0;
  int64_t rows = 1;            // product of outer dims
  int64_t inner = 1;           // innermost (collapsed) dim
  std::vector<int64_t> outer;  // outer dims, row-major
  std::vector<int64_t> outer_strides[kMaxInputs];
  int64_t inner_stride[kMaxInputs] = {0, 0, 0};  // 0 (broadcast) or 1

  static BroadcastPlan make(const std::vector<const std::vector<int64_t>*>& ins, const std::vector<int64_t>& out_dims);
};

// Calls body(offsets[], out_offset, n) for each contiguous run of output rows in
// [row_begin, row_end): offsets are element offsets of the row start in each input.
template <class Body>
void for_each_row(const BroadcastPlan& p, int64_t row_begin, int64_t row_end, Body&& body) {
  const int r = static_cast<int>(p.outer.size());
  std::vector<int64_t> idx(r, 0);
  int64_t off[BroadcastPlan::kMaxInputs] = {0, 0, 0};
  int64_t rem = row_begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.outer[d];
    rem /= p.outer[d];
    for (int k = 0; k < p.num_inputs; ++k) off[k] += idx[d] * p.outer_strides[k][d];
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    body(off, row * p.inner);
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < p.num_inputs; ++k) off[k] += p.outer_strides[k][d];
      if (idx[d] < p.outer[d]) break;
      for (int k = 0; k < p.num_inputs; ++k) off[k] -= idx[d] * p.outer_strides[k][d];
      idx[d] = 0;
    }
  }
}

// Elements below which a loop stays on one thread (thread start-up costs more).
constexpr int64_t kElementwiseGrain = 1 << 15;

inline void ew_parallel(int64_t n, int64_t work, int num_threads, const std::function<void(int64_t, int64_t)>& body) {
  if (work < kElementwiseGrain) {
    if (n > 0) body(0, n);
    return;
  }
  parallel_for(n, num_threads, body);
}

template <class TA, class TB, class TO, class F>
inline void binary_run(const TA* a, int64_t sa, const TB* b, int64_t sb, TO* o, int64_t n, const F& fref) {
  const F f = fref;  // a local copy: stores to o cannot alias its captures, so the loops vectorize
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa) {
    const TB bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sb) {
    const TA av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    const TO v = f(*a, *b);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

// o[i] = f(a[..], b[..]) with numpy broadcasting; a_dims/b_dims must broadcast to o_dims.
// o may alias a when a_dims == o_dims (used by the variadic ops to accumulate).
template <class TA, class TB, class TO, class F>
void binary_broadcast(const TA* a, const std::vector<int64_t>& a_dims, const TB* b, const std::vector<int64_t>& b_dims,
                      TO* o, const std::vector<int64_t>& o_dims, int num_threads, F f) {
  int64_t total = 1;
  for (int64_t d : o_dims) total *= d;
  if (total == 0) return;
  const BroadcastPlan p = BroadcastPlan::make({&a_dims, &b_dims}, o_dims);
  if (p.rows == 1) {
    ew_parallel(p.inner, total, num_threads, [&](int64_t b0, int64_t e0) {
      binary_run(a + b0 * p.inner_stride[0], p.inner_stride[0], b + b0 * p.inner_stride[1], p.inner_stride[1], o + b0,
                 e0 - b0, f);
    });
    return;
  }
  ew_parallel(p.rows, total, num_threads, [&](int64_t r0, int64_t r1) {
    for_each_row(p, r0, r1, [&](const int64_t* off, int64_t oo) {
      binary_run(a + off[0], p.inner_stride[0], b + off[1], p.inner_stride[1], o + oo, p.inner, f);
    });
  });
}

}  // namespace infera
