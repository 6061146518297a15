// The activation table (activation.h) and its in-place loops, and the typed Epilogue. The loops of the common kinds are
// written so that they vectorize; every kind keeps NaN as NaN.
#pragma GCC optimize("no-trapping-math")
#include "ops/activation.h"

#include "ops/epilogue.h"
#include "ops/op.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace infera {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

const ActivationDef kDefs[] = {
    {ActKind::kIdentity, "Identity", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kRelu, "Relu", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kLeakyRelu, "LeakyRelu", "alpha", 0.01f, nullptr, 0.f},
    {ActKind::kSigmoid, "Sigmoid", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kTanh, "Tanh", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kClip, "Clip", "min", -kInf, "max", kInf},
    {ActKind::kHardSigmoid, "HardSigmoid", "alpha", 0.2f, "beta", 0.5f},
    {ActKind::kHardSwish, "HardSwish", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kElu, "Elu", "alpha", 1.f, nullptr, 0.f},
    {ActKind::kSelu, "Selu", "alpha", kSeluAlpha, "gamma", kSeluGamma},
    {ActKind::kCelu, "Celu", "alpha", 1.f, nullptr, 0.f},
    {ActKind::kSoftplus, "Softplus", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kSoftsign, "Softsign", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kSwish, "Swish", "alpha", 1.f, nullptr, 0.f},
    {ActKind::kMish, "Mish", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kGelu, "Gelu", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kGeluTanh, "GeluTanh", nullptr, 0.f, nullptr, 0.f},
    {ActKind::kThresholdedRelu, "ThresholdedRelu", "alpha", 1.f, nullptr, 0.f},
};
static_assert(std::size(kDefs) == static_cast<size_t>(ActKind::kCount));

// expf for x in about [-87.3, 88.4] (clamped to it), within 2 ulp: Cephes' range reduction and
// polynomial, without branches or calls so that loops over it vectorize. NaN gives NaN.
inline float exp_clamped(float x) {
  x = x < -87.3365f ? -87.3365f : x;
  x = x > 88.3762f ? 88.3762f : x;
  const float magic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + magic) - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  // n is integral in [-126, 128] (NaN only when x is, and then p is NaN too).
  const int32_t e = n == n ? static_cast<int32_t>(n) : 0;
  return p * std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);
}

// Branch-free sigmoid: e = exp(-|x|) never overflows.
inline float sigmoid_fast(float x) {
  const float e = exp_clamped(-std::fabs(x));
  const float r = 1.f / (1.f + e);
  return x >= 0.f ? r : e * r;
}

template <class T, class F>
void each(T* d, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) d[i] = f(d[i]);
}

}  // namespace

const ActivationDef& activation_def(ActKind k) {
  const size_t i = static_cast<size_t>(k);
  return kDefs[i < std::size(kDefs) ? i : 0];
}

const ActivationDef* activation_by_name(std::string_view op_type) {
  for (const ActivationDef& d : kDefs)
    if (op_type == d.op_type) return &d;
  return nullptr;
}

Activation activation_default(ActKind k) {
  const ActivationDef& d = activation_def(k);
  return Activation{k, d.alpha_default, d.beta_default};
}

const char* activation_name(ActKind k) { return activation_def(k).op_type; }

Status activation_from_attrs(const Node& n, Activation& act, const std::string& key) {
  act = Activation{};
  const std::string name = n.attr_string(key, "");
  if (name.empty()) return Status::ok();
  const ActivationDef* d = activation_by_name(name);
  if (!d)
    return Status::error(node_message(n, "attribute '%s': unsupported activation '%s'", key.c_str(), name.c_str()));
  act =
      Activation{d->kind, n.attr_float(key + "_alpha", d->alpha_default), n.attr_float(key + "_beta", d->beta_default)};
  return Status::ok();
}

void activation_to_attrs(Node& n, const Activation& act, const std::string& key) {
  for (const std::string& k : {key, key + "_alpha", key + "_beta"}) n.attrs.erase(k);
  if (act.is_identity()) return;
  Attribute name, alpha, beta;
  name.kind = Attribute::kString;
  name.s = activation_name(act.kind);
  alpha.kind = beta.kind = Attribute::kFloat;
  alpha.f = act.alpha;
  beta.f = act.beta;
  n.attrs[key] = name;
  n.attrs[key + "_alpha"] = alpha;
  n.attrs[key + "_beta"] = beta;
}

float activation_bound(const Activation& a, float pre) {
  if (!(pre >= 0.f && pre <= std::numeric_limits<float>::max())) return kInf;
  const double x = pre, al = std::fabs(a.alpha), be = std::fabs(a.beta);
  double b = kInf;
  switch (a.kind) {
    case ActKind::kIdentity:
    case ActKind::kRelu:
    case ActKind::kThresholdedRelu: b = x; break;
    case ActKind::kLeakyRelu: b = x * std::max(1.0, al); break;
    // Sigmoid, Tanh and Softsign of a finite x lie in [-1, 1], HardSigmoid in [0, 1].
    case ActKind::kSigmoid:
    case ActKind::kTanh:
    case ActKind::kSoftsign:
    case ActKind::kHardSigmoid: b = 1.0; break;
    case ActKind::kClip:  // min(max(x, lo), hi): x itself, or lo (above x) or hi (below x)
      if (std::isnan(a.alpha) || std::isnan(a.beta)) break;
      b = a.alpha > a.beta ? be
                           : std::max({a.alpha > 0 ? al : 0.0, a.beta < 0 ? be : 0.0, std::min(x, std::max(al, be))});
      break;
    // x times a factor in [0, 1].
    case ActKind::kHardSwish:
    case ActKind::kGelu:
    case ActKind::kGeluTanh:
    case ActKind::kMish:
    case ActKind::kSwish: b = x; break;
    case ActKind::kElu:
    case ActKind::kCelu: b = std::max(x, al); break;  // x < 0: in (-alpha, 0]
    case ActKind::kSelu: b = be * std::max(x, al); break;
    case ActKind::kSoftplus: b = x + 1.0; break;  // <= max(x, 0) + log 2
    case ActKind::kCount: break;
  }
  b *= 1.0625;
  return b <= std::numeric_limits<float>::max() ? static_cast<float>(b) : kInf;
}

void apply_activation(const Activation& a, float* d, int64_t n) {
  const float al = a.alpha, be = a.beta;
  switch (a.kind) {
    case ActKind::kIdentity: return;
    case ActKind::kRelu: return each(d, n, [](float x) { return x < 0.f ? 0.f : x; });
    case ActKind::kLeakyRelu: return each(d, n, [=](float x) { return x < 0.f ? al * x : x; });
    case ActKind::kSigmoid: return each(d, n, [](float x) { return sigmoid_fast(x); });
    case ActKind::kClip:
      return each(d, n, [=](float x) {
        float v = x < al ? al : x;
        return v > be ? be : v;
      });
    case ActKind::kHardSigmoid:
      return each(d, n, [=](float x) {
        float v = al * x + be;
        v = v < 0.f ? 0.f : v;
        return v > 1.f ? 1.f : v;
      });
    case ActKind::kHardSwish:
      return each(d, n, [](float x) {
        float v = x * (1.f / 6) + 0.5f;
        v = v < 0.f ? 0.f : v;
        return x * (v > 1.f ? 1.f : v);
      });
    case ActKind::kSwish: return each(d, n, [=](float x) { return x * sigmoid_fast(al * x); });
    default: return each(d, n, [&](float x) { return activation_ref(a, x); });
  }
}

void apply_activation(const Activation& a, double* d, int64_t n) {
  if (a.kind == ActKind::kIdentity) return;
  each(d, n, [&](double x) { return activation_ref(a, x); });
}

}  // namespace infera

// ---------------------------------------------------------------- Epilogue (ops/epilogue.h)
namespace infera {

Epilogue Epilogue::make(int bias_input, int residual_input, Activation act) {
  Epilogue e;
  if (bias_input >= 0) e.steps.push_back({EpilogueStep::Kind::kBias, bias_input, {}});
  if (residual_input >= 0) e.steps.push_back({EpilogueStep::Kind::kResidualAdd, residual_input, {}});
  if (!act.is_identity()) e.steps.push_back({EpilogueStep::Kind::kActivation, -1, act});
  return e;
}

const EpilogueStep* Epilogue::find(EpilogueStep::Kind k) const {
  for (const EpilogueStep& s : steps)
    if (s.kind == k) return &s;
  return nullptr;
}

int Epilogue::residual_input() const {
  const EpilogueStep* s = find(EpilogueStep::Kind::kResidualAdd);
  return s ? s->input : -1;
}

Activation Epilogue::activation() const {
  const EpilogueStep* s = find(EpilogueStep::Kind::kActivation);
  return s ? s->act : Activation{};
}

std::string Epilogue::str() const {
  std::string r;
  for (const EpilogueStep& s : steps) {
    if (!r.empty()) r += "+";
    r += s.kind == EpilogueStep::Kind::kBias          ? "bias"
         : s.kind == EpilogueStep::Kind::kResidualAdd ? "add"
                                                      : activation_name(s.act.kind);
  }
  return r;
}

}  // namespace infera
