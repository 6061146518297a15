// The bound rules (bounds.h): which ops, and why each rule holds for every finite input.
#include "plan/bounds.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "ops/elementwise.h"
#include "ops/pool.h"
#include "ops/tensor_ops.h"
#include "plan/plan.h"

namespace infera {

namespace {

constexpr float kInf = RunResources::kNoBound;
// Rounding margin of a sum of two terms (one rounding: 2^-24 relative) and of the sum over a
// window of up to 2^20 taps (n roundings: (1 + 2^-24)^(2^20) < 1.07).
constexpr float kSumMargin = 1.0625f;
constexpr float kAverageMargin = 1.125f;
constexpr int64_t kMaxAveraged = int64_t{1} << 20;

bool float32(const Plan& p, int v) { return v >= 0 && p.values[v].info.dtype == DataType::kFloat32; }

// The float32 scalar constant of step input slot i (absent: dflt); false when not a constant.
bool const_scalar(const Plan& p, const PlanStep& st, size_t i, float dflt, float& v) {
  v = dflt;
  if (i >= st.inputs.size() || st.inputs[i] < 0) return true;
  const PlanValue& pv = p.values[st.inputs[i]];
  if (pv.home != PlanValue::Home::kConstant || !pv.info.value || pv.info.dtype != DataType::kFloat32 ||
      pv.info.value->numel() != 1)
    return false;
  v = pv.info.value->data_as<float>()[0];
  return true;
}

// Elements per output of an average over the spatial axes of input slot 0, or 0 when unknown.
int64_t spatial_count(const Plan& p, const PlanStep& st) {
  const Shape& s = p.values[st.inputs[0]].info.shape;
  if (!s.fully_known() || s.rank() < 3) return 0;
  const std::vector<int64_t> d = s.concrete();
  int64_t n = 1;
  for (size_t i = 2; i < d.size(); ++i) n *= d[i];
  return n;
}

// MaxPool's windows all hold an input element (else -Inf): no dilation, every pad below the
// kernel (the last window starts inside the input or the begin pad: ops/pool.h).
bool every_window_meets_the_input(const PoolAttrs& a) {
  for (int64_t d : a.dilations)
    if (d != 1) return false;
  if (a.auto_pad != AutoPad::kNotSet) return true;  // SAME: pads total at most kernel - 1; VALID: none
  for (size_t i = 0; i < a.pads.size(); ++i)
    if (a.pads[i] >= a.kernel_shape[i % a.kernel_shape.size()]) return false;
  return true;
}

BoundRule rule_for(const Plan& p, const PlanStep& st) {
  BoundRule r;
  const Node& n = p.node_of(st);
  if (st.node < 0 || st.inputs.empty()) return r;
  if (dynamic_cast<const ChannelShuffleOp*>(n.op.get())) {  // com.infera: every output element is one of X's
    r.kind = BoundRule::Kind::kMax;
    r.slots = {0};
    r.outputs = static_cast<int>(st.outputs.size());
    return r;
  }
  if (!(n.domain.empty() || n.domain == "ai.onnx")) return r;
  const std::string& op = n.op_type;
  auto one = [&](BoundRule::Kind k, float scale = 1.f) {
    r.kind = k;
    r.slots = {0};
    r.scale = scale;
  };
  auto all = [&](BoundRule::Kind k, float scale = 1.f) {
    r.kind = k;
    r.scale = scale;
    for (size_t i = 0; i < st.inputs.size(); ++i) r.slots.push_back(static_cast<int>(i));
  };
  // Data movement and selection: every output element is an input element.
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Transpose" || op == "Slice" || op == "Gather" || op == "Expand" || op == "Tile" || op == "DepthToSpace" ||
      op == "SpaceToDepth" || op == "Abs" || op == "Neg") {
    one(BoundRule::Kind::kMax);
  } else if (op == "Split") {
    one(BoundRule::Kind::kMax);
    r.outputs = static_cast<int>(st.outputs.size());
  } else if (op == "GlobalMaxPool") {
    if (spatial_count(p, st) > 0) one(BoundRule::Kind::kMax);
  } else if (const auto* pool = dynamic_cast<const PoolOp*>(n.op.get()); pool && pool->is_max()) {
    if (spatial_count(p, st) > 0 && every_window_meets_the_input(pool->attrs())) one(BoundRule::Kind::kMax);
  } else if (op == "Concat" || op == "Max" || op == "Min") {
    all(BoundRule::Kind::kMax);
  } else if (op == "Mean") {
    all(BoundRule::Kind::kMax, kAverageMargin);
  } else if (op == "AveragePool") {
    int64_t taps = 1;
    for (int64_t k : n.attr_ints("kernel_shape")) taps *= k;
    if (taps > 0 && taps <= kMaxAveraged && spatial_count(p, st) > 0) one(BoundRule::Kind::kMax, kAverageMargin);
  } else if (op == "GlobalAveragePool") {
    const int64_t taps = spatial_count(p, st);
    if (taps > 0 && taps <= kMaxAveraged) one(BoundRule::Kind::kMax, kAverageMargin);
  } else if (op == "Add" || op == "Sub" || op == "Sum") {
    all(BoundRule::Kind::kSum, kSumMargin);
  } else if (op == "Mul") {
    all(BoundRule::Kind::kProduct, kSumMargin);
  } else if (op == "Softmax") {  // in [0, 1] for a finite input, as Sigmoid
    one(BoundRule::Kind::kMax);
    r.act = activation_default(ActKind::kSigmoid);
  } else if (op == "Pad") {
    const std::string mode = n.attr_string("mode", "constant");
    if (mode == "constant") {
      one(BoundRule::Kind::kMax);
      if (p.graph->opset >= 11)
        r.slots.push_back(2);  // constant_value (absent: 0)
      else
        r.floor = std::fabs(n.attr_float("value", 0.f));
    } else if (mode == "reflect" || mode == "edge" || mode == "wrap") {
      one(BoundRule::Kind::kMax);
    }
  } else if (op == "Resize" || op == "Upsample") {
    // Nearest picks an input element; linear weights are in [0, 1] and sum to 1 (coordinates
    // outside the input are clamped), except tf_crop_and_resize's extrapolation value. Not cubic.
    const std::string mode = n.attr_string("mode", "nearest");
    if (mode == "nearest" || mode == "linear" || mode == "bilinear") {
      one(BoundRule::Kind::kMax, mode == "nearest" ? 1.f : kSumMargin);
      if (n.attr_string("coordinate_transformation_mode", "") == "tf_crop_and_resize")
        r.floor = std::fabs(n.attr_float("extrapolation_value", 0.f));
    }
  } else if (const auto* a = dynamic_cast<const ActivationOp*>(n.op.get())) {
    if (st.inputs.size() == 1) {
      one(BoundRule::Kind::kMax);
      r.act = a->activation();
    }
  } else if (const auto* clip = dynamic_cast<const ClipOp*>(n.op.get())) {
    Activation c = activation_default(ActKind::kClip);
    bool known = true;
    if (clip->opset() < 11) {
      c.alpha = clip->attr_min();
      c.beta = clip->attr_max();
    } else {
      known = const_scalar(p, st, 1, -kInf, c.alpha) && const_scalar(p, st, 2, kInf, c.beta);
    }
    if (known) {
      one(BoundRule::Kind::kMax);
      r.act = c;
    }
  }
  if (r.kind == BoundRule::Kind::kNone) return r;
  r.outputs = std::min<int>(r.outputs, static_cast<int>(st.outputs.size()));
  // float32 only (a float16 sum overflows at 65504); every combined input float32 too.
  for (int o = 0; o < r.outputs; ++o)
    if (st.outputs[o] >= 0 && !float32(p, st.outputs[o])) return BoundRule{};
  for (int s : r.slots)
    if (static_cast<size_t>(s) < st.inputs.size() && st.inputs[s] >= 0 && !float32(p, st.inputs[s])) return BoundRule{};
  return r;
}

float max_abs(const Tensor& t) {
  const float* d = t.data_as<float>();
  float m = 0.f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(d[i])) return kInf;
    m = std::max(m, std::fabs(d[i]));
  }
  return m;
}

}  // namespace

void make_bound_rules(Plan& p) {
  p.bound_rules.assign(p.steps.size(), BoundRule{});
  p.initial_bounds.assign(p.values.size(), kInf);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const PlanStep& st = p.steps[s];
    BoundRule r = rule_for(p, st);
    for (int slot : r.slots) {
      const int v = static_cast<size_t>(slot) < st.inputs.size() ? st.inputs[slot] : -1;
      if (v < 0 || p.values[v].home != PlanValue::Home::kConstant || !p.values[v].info.value) continue;
      p.initial_bounds[v] = max_abs(*p.values[v].info.value);
    }
    p.bound_rules[s] = std::move(r);
  }
}

void apply_bound_rule(const Plan& p, size_t s, float* bounds) {
  const BoundRule& r = p.bound_rules[s];
  if (r.kind == BoundRule::Kind::kNone) return;
  const PlanStep& st = p.steps[s];
  double b = r.kind == BoundRule::Kind::kProduct ? 1.0 : 0.0;
  for (int slot : r.slots) {
    const int v = static_cast<size_t>(slot) < st.inputs.size() ? st.inputs[slot] : -1;
    const double x = v >= 0 ? bounds[v] : 0.0;  // absent optional input (Pad's value): 0
    if (!(x <= FLT_MAX)) return;
    b = r.kind == BoundRule::Kind::kMax ? std::max(b, x) : r.kind == BoundRule::Kind::kSum ? b + x : b * x;
  }
  b = std::max(b * r.scale, static_cast<double>(r.floor));
  float out = b <= FLT_MAX ? static_cast<float>(b) : kInf;
  if (!r.act.is_identity()) out = activation_bound(r.act, out);
  if (!(out <= FLT_MAX)) return;
  for (int o = 0; o < r.outputs; ++o)
    if (st.outputs[o] >= 0 && !(bounds[st.outputs[o]] <= FLT_MAX)) bounds[st.outputs[o]] = out;
}

}  // namespace infera
