// The one activation table: kind, ONNX op and attribute names, parameter defaults and the
// reference function. The unary ops, the fusion pass (com.infera.Fused* epilogues) and every
// backend read activations from here, so a default or a NaN rule cannot differ between them.
// NaN propagates through every activation (as in the ONNX reference and ONNX Runtime).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "infera/infera.h"

namespace infera {

struct Node;

// Values are stable: the GPU kernels mirror them (static_assert there).
enum class ActKind : uint8_t {
  kIdentity = 0,
  kRelu = 1,
  kLeakyRelu = 2,  // alpha
  kSigmoid = 3,
  kTanh = 4,
  kClip = 5,         // alpha = min, beta = max
  kHardSigmoid = 6,  // alpha, beta: clamp(alpha x + beta, 0, 1)
  kHardSwish = 7,    // x * hard_sigmoid(x; 1/6, 1/2)
  kElu = 8,          // alpha
  kSelu = 9,         // alpha, beta = gamma
  kCelu = 10,        // alpha
  kSoftplus = 11,
  kSoftsign = 12,
  kSwish = 13,  // alpha: x * sigmoid(alpha x) (SiLU at 1)
  kMish = 14,
  kGelu = 15,             // erf form
  kGeluTanh = 16,         // tanh approximation
  kThresholdedRelu = 17,  // alpha
  kCount = 18,
};

struct Activation {
  ActKind kind = ActKind::kIdentity;
  float alpha = 0.f;
  float beta = 0.f;
  bool is_identity() const { return kind == ActKind::kIdentity; }
  bool operator==(const Activation& o) const { return kind == o.kind && alpha == o.alpha && beta == o.beta; }
};

struct ActivationDef {
  ActKind kind;
  const char* op_type;     // ONNX op ("" for kGeluTanh: Gelu with approximate="tanh")
  const char* alpha_attr;  // attribute holding alpha (nullptr: none)
  float alpha_default;
  const char* beta_attr;
  float beta_default;
};

const ActivationDef& activation_def(ActKind k);
// The definition for an ONNX op type ("Relu", "LeakyRelu", ...; "Swish" and "GeluTanh" too,
// as the fused epilogues name them), or nullptr.
const ActivationDef* activation_by_name(std::string_view op_type);
// kind with its default parameters.
Activation activation_default(ActKind k);
const char* activation_name(ActKind k);  // "Relu", ..., "GeluTanh"

// The activation of a fused com.infera node (FusedConv, FusedGemm, FusedBatchNorm, QConv), from its
// attributes 'activation' (an op type of the table; absent: identity), 'activation_alpha' and
// 'activation_beta'; an unknown name is an error naming the node and the attribute. key: another
// attribute family of the same form (SqueezeExcite's 'gate', 'gate_alpha', 'gate_beta').
Status activation_from_attrs(const Node& n, Activation& act, const std::string& key = "activation");
// The inverse: writes act as those attributes (none for identity, after removing any there).
void activation_to_attrs(Node& n, const Activation& act, const std::string& key = "activation");

// Reference function, for float and double. Written so that NaN in gives NaN out.
template <class T>
inline T activation_ref(const Activation& a, T x) {
  const T al = static_cast<T>(a.alpha), be = static_cast<T>(a.beta);
  auto sigm = [](T v) { return v >= T(0) ? T(1) / (T(1) + std::exp(-v)) : std::exp(v) / (T(1) + std::exp(v)); };
  auto clamp01 = [](T v) {
    v = v < T(0) ? T(0) : v;  // comparisons with NaN are false: NaN stays
    return v > T(1) ? T(1) : v;
  };
  switch (a.kind) {
    case ActKind::kIdentity: return x;
    case ActKind::kRelu: return x < T(0) ? T(0) : x;
    case ActKind::kLeakyRelu: return x < T(0) ? al * x : x;
    case ActKind::kSigmoid: return sigm(x);
    case ActKind::kTanh: return std::tanh(x);
    case ActKind::kClip: {
      T v = x < al ? al : x;
      return v > be ? be : v;
    }
    case ActKind::kHardSigmoid: return clamp01(al * x + be);
    case ActKind::kHardSwish: return x * clamp01(x * (T(1) / T(6)) + T(0.5));
    case ActKind::kElu: return x < T(0) ? al * (std::exp(x) - T(1)) : x;
    case ActKind::kSelu: return x <= T(0) ? be * (al * std::exp(x) - al) : be * x;
    case ActKind::kCelu: return x < T(0) ? al * (std::exp(x / al) - T(1)) : x;
    case ActKind::kSoftplus: return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case ActKind::kSoftsign: return x / (T(1) + std::fabs(x));
    case ActKind::kSwish: return x * sigm(al * x);
    case ActKind::kMish: {
      const T sp = x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
      return x * std::tanh(sp);
    }
    case ActKind::kGelu: return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
    case ActKind::kGeluTanh: {
      const T c = T(0.79788456080286535588);  // sqrt(2/pi)
      return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
    }
    case ActKind::kThresholdedRelu: return x > al ? x : (std::isnan(x) ? x : T(0));
    case ActKind::kCount: break;
  }
  return x;
}

// A bound on |a(x)| for every finite x with |x| <= pre (pre finite), rounding included (a margin
// of 1/16); +Inf where none is known (pre not finite, an unbounded kind, an overflow). The output
// of an activation with a finite bound is finite: the bound also says "no NaN, no Inf".
float activation_bound(const Activation& a, float pre);

// data[i] = activation_ref(a, data[i]) over n elements (fast paths for the common kinds).
void apply_activation(const Activation& a, float* data, int64_t n);
void apply_activation(const Activation& a, double* data, int64_t n);

}  // namespace infera
