// quantize_qdq: turns the QDQ pattern that ONNX Runtime's quantize_static writes,
//   DequantizeLinear(x_q) -> Conv(DequantizeLinear(W_q), DequantizeLinear(B_q)?) -> [Relu] -> QuantizeLinear
// into one com.infera.QConv (ops/quant_conv.h) reading x_q and writing the QuantizeLinear's int8 output,
// so values stay int8 between quantized layers; then folds a following residual
//   DequantizeLinear(y_q) -> Add(DequantizeLinear(z_q)) -> [Relu] -> QuantizeLinear
// into the QConv's epilogue, and runs a MaxPool between a DQ and a Q of the same parameters on the
// int8 values (fold_max_pool). Assumes per-tensor activations and int8 weights with zero point 0
// (per output channel or per tensor); anything else is left as it is (it still runs, in float).
#include <cmath>

#include "ops/quant.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using rewrite::constant_of;
using rewrite::producer_of;

Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::kFloat;
  a.f = v;
  return a;
}
Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::kInt;
  a.i = v;
  return a;
}

// A (De)QuantizeLinear node's constant per-tensor scale / zero point.
bool per_tensor_params(const Graph& g, const Node& n, float& scale, int64_t& zp) {
  const Tensor* s = constant_of(g, n.inputs.size() > 1 ? n.inputs[1] : -1);
  if (!s || s->numel() != 1 || s->dims().size() > 1) return false;
  std::vector<float> sv;
  if (!read_float_values(*s, sv) || !(sv[0] > 0.f) || !std::isfinite(sv[0])) return false;
  scale = sv[0];
  zp = 0;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor* z = constant_of(g, n.inputs[2]);
    std::vector<int64_t> zv;
    if (!z || z->numel() != 1 || !read_int_values(TensorRef::of(*z), zv)) return false;
    zp = zv[0];
  }
  return true;
}

bool is_int8(DataType dt) { return dt == DataType::kInt8 || dt == DataType::kUInt8; }

// The DequantizeLinear producing v with per-tensor params and an int8/uint8 input, or -1.
int dq_per_tensor(const Graph& g, int v, float& scale, int64_t& zp) {
  const int p = producer_of(g, v);
  if (p < 0 || !g.nodes[p].is_onnx("DequantizeLinear")) return -1;
  const Node& n = g.nodes[p];
  if (!is_int8(g.values[n.inputs[0]].dtype) || !per_tensor_params(g, n, scale, zp)) return -1;
  return p;
}

// Follows an optional Relu and the QuantizeLinear that must end the chain from value v.
bool quantized_tail(const Graph& g, rewrite::UseIndex& idx, int v, int& relu, int& q, float& ys, int64_t& yz) {
  relu = -1;
  int c = rewrite::sole_consumer(g, idx, v);
  if (c >= 0 && g.nodes[c].is_onnx("Relu")) {
    relu = c;
    c = rewrite::sole_consumer(g, idx, g.nodes[c].outputs[0]);
  }
  if (c < 0 || !g.nodes[c].is_onnx("QuantizeLinear") || !per_tensor_params(g, g.nodes[c], ys, yz)) return false;
  if (!is_int8(g.values[g.nodes[c].outputs[0]].dtype)) return false;
  q = c;
  return true;
}

// Conv + its DQ inputs + [Relu] + Q -> QConv. Returns true when it rewrote the node.
bool fold_conv(Graph& g, rewrite::UseIndex& idx, int ci) {
  const Node conv = g.nodes[ci];  // a copy: add_node may move the vector
  float xs, ys;
  int64_t xz, yz;
  if (conv.inputs.size() < 2 || dq_per_tensor(g, conv.inputs[0], xs, xz) < 0) return false;
  const int dqx = producer_of(g, conv.inputs[0]);
  const int x_q = g.nodes[dqx].inputs[0];
  // Weights: DequantizeLinear of a constant int8 tensor, axis 0, zero points 0.
  const int dqw = producer_of(g, conv.inputs[1]);
  if (dqw < 0 || !g.nodes[dqw].is_onnx("DequantizeLinear")) return false;
  const Node& wn = g.nodes[dqw];
  const Tensor* w = constant_of(g, wn.inputs[0]);
  const Tensor* wsv = constant_of(g, wn.inputs[1]);
  if (!w || w->dtype() != DataType::kInt8 || w->dims().size() < 3 || !wsv) return false;
  const int64_t M = w->dims()[0];
  std::vector<float> ws;
  if (!read_float_values(*wsv, ws) || (ws.size() != 1 && static_cast<int64_t>(ws.size()) != M)) return false;
  if (ws.size() != 1 && wn.attr_int("axis", 1) != 0) return false;
  if (!check_scales(ws, "w").is_ok()) return false;
  if (wn.inputs.size() > 2 && wn.inputs[2] >= 0) {
    const Tensor* wz = constant_of(g, wn.inputs[2]);
    std::vector<int64_t> z;
    if (!wz || !read_int_values(TensorRef::of(*wz), z)) return false;
    for (int64_t v : z)
      if (v != 0) return false;
  }
  // Bias: a DQ of int32 (requantized to x_scale * w_scale when its scale differs) or a float constant.
  std::vector<double> bias_f;
  if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) {
    const int dqb = producer_of(g, conv.inputs[2]);
    const Tensor* bc = constant_of(g, conv.inputs[2]);
    if (dqb >= 0 && g.nodes[dqb].is_onnx("DequantizeLinear")) {
      const Node& bn = g.nodes[dqb];
      const Tensor* b = constant_of(g, bn.inputs[0]);
      const Tensor* bs = constant_of(g, bn.inputs[1]);
      std::vector<float> bsv;
      std::vector<int64_t> bv;
      if (!b || !bs || !read_int_values(TensorRef::of(*b), bv) || !read_float_values(*bs, bsv)) return false;
      if (static_cast<int64_t>(bv.size()) != M || (bsv.size() != 1 && bsv.size() != bv.size())) return false;
      if (bn.inputs.size() > 2 && bn.inputs[2] >= 0) {
        const Tensor* bz = constant_of(g, bn.inputs[2]);
        std::vector<int64_t> z;
        if (!bz || !read_int_values(TensorRef::of(*bz), z)) return false;
        for (int64_t v : z)
          if (v != 0) return false;
      }
      for (size_t m = 0; m < bv.size(); ++m) bias_f.push_back(double(bv[m]) * bsv[bsv.size() == 1 ? 0 : m]);
    } else if (bc && bc->dtype() == DataType::kFloat32 && bc->numel() == M) {
      for (int64_t m = 0; m < M; ++m) bias_f.push_back(bc->data_as<float>()[m]);
    } else {
      return false;
    }
  }
  int relu, q;
  if (!quantized_tail(g, idx, conv.outputs[0], relu, q, ys, yz)) return false;

  Node n;
  n.name = conv.name.empty() ? g.unique_name("qconv") : conv.name;
  n.op_type = "QConv";
  n.domain = "com.infera";
  for (const char* k : {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"})
    if (conv.has_attr(k)) n.attrs[k] = conv.attrs.at(k);
  n.attrs["x_scale"] = attr_f(xs);
  n.attrs["x_zero_point"] = attr_i(xz);
  Attribute wa;
  wa.kind = Attribute::kFloats;
  wa.floats = ws;
  n.attrs["w_scales"] = wa;
  n.attrs["y_scale"] = attr_f(ys);
  n.attrs["y_zero_point"] = attr_i(yz);
  const int y_q = g.nodes[q].outputs[0];
  n.attrs["y_dtype"] = attr_i(static_cast<int64_t>(g.values[y_q].dtype));
  if (relu >= 0) {
    Attribute a;
    a.kind = Attribute::kString;
    a.s = "Relu";
    n.attrs["activation"] = a;
  }
  const int w_v = wn.inputs[0];
  n.inputs = {x_q, w_v};
  if (!bias_f.empty()) {
    Tensor b = Tensor::make(DataType::kInt32, {M}).take();
    for (int64_t m = 0; m < M; ++m) {
      const double s = double(xs) * ws[ws.size() == 1 ? 0 : m];
      b.data_as<int32_t>()[m] = static_cast<int32_t>(quant_round_clamp(bias_f[m] / s, INT32_MIN, INT32_MAX));
    }
    n.inputs.push_back(rewrite::add_constant(g, n.name + "_bias_q", std::move(b)));
  }
  n.outputs = {y_q};
  g.nodes[ci].dead = true;
  if (relu >= 0) g.nodes[relu].dead = true;
  g.nodes[q].dead = true;
  g.add_node(std::move(n));
  idx.sync(g);
  return true;
}

// QConv(y_q) -> DQ -> Add(DQ(z_q)) -> [Relu] -> Q: the residual joins the QConv's epilogue.
bool fold_residual(Graph& g, rewrite::UseIndex& idx, int qi) {
  const Node& qc = g.nodes[qi];
  if (qc.inputs.size() > 3 || qc.has_attr("activation")) return false;
  const int y_q = qc.outputs[0];
  const int dq = rewrite::sole_consumer(g, idx, y_q);
  if (dq < 0 || !g.nodes[dq].is_onnx("DequantizeLinear")) return false;
  float s1, zs, ys;
  int64_t z1, zz, yz;
  if (!per_tensor_params(g, g.nodes[dq], s1, z1)) return false;
  const int add = rewrite::sole_consumer(g, idx, g.nodes[dq].outputs[0]);
  if (add < 0 || !g.nodes[add].is_onnx("Add") || g.nodes[add].inputs.size() != 2) return false;
  const Node& an = g.nodes[add];
  const int other = an.inputs[0] == g.nodes[dq].outputs[0] ? an.inputs[1] : an.inputs[0];
  const int dqz = dq_per_tensor(g, other, zs, zz);
  if (dqz < 0) return false;
  const int z_q = g.nodes[dqz].inputs[0];
  // Same dims (a symbolic batch matches by name): the residual is read element for element.
  if (g.values[z_q].shape.str() != g.values[y_q].shape.str() || !g.values[z_q].shape.rank_known) return false;
  int relu, q;
  if (!quantized_tail(g, idx, an.outputs[0], relu, q, ys, yz)) return false;
  Node& n = g.nodes[qi];
  n.attrs["z_scale"] = attr_f(zs);
  n.attrs["z_zero_point"] = attr_i(zz);
  n.attrs["y_scale"] = attr_f(ys);
  n.attrs["y_zero_point"] = attr_i(yz);
  n.attrs["y_dtype"] = attr_i(static_cast<int64_t>(g.values[g.nodes[q].outputs[0]].dtype));
  if (relu >= 0) {
    Attribute a;
    a.kind = Attribute::kString;
    a.s = "Relu";
    n.attrs["activation"] = a;
  }
  if (n.inputs.size() < 3) n.inputs.push_back(-1);
  n.inputs.push_back(z_q);
  n.outputs = {g.nodes[q].outputs[0]};
  n.op.reset();
  g.nodes[dq].dead = true;
  g.nodes[add].dead = true;
  if (relu >= 0) g.nodes[relu].dead = true;
  g.nodes[q].dead = true;
  return true;
}

// DQ(x_q) -> MaxPool -> Q with the DQ's scale, zero point and type: MaxPool on x_q itself. Max
// commutes with the monotone dequantization and Q(DQ(v)) = v for every int8 v, so this is exact
// (an empty window's -inf saturates to the type's lowest, which the int8 max pool gives too).
bool fold_max_pool(Graph& g, rewrite::UseIndex& idx, int pi) {
  const Node& mp = g.nodes[pi];
  if (mp.outputs.size() != 1 || mp.inputs.empty()) return false;
  float xs, ys;
  int64_t xz, yz;
  const int dq = dq_per_tensor(g, mp.inputs[0], xs, xz);
  if (dq < 0 || rewrite::sole_consumer(g, idx, mp.inputs[0]) != pi) return false;
  const int q = rewrite::sole_consumer(g, idx, mp.outputs[0]);
  if (q < 0 || !g.nodes[q].is_onnx("QuantizeLinear") || !per_tensor_params(g, g.nodes[q], ys, yz)) return false;
  const int x_q = g.nodes[dq].inputs[0], y_q = g.nodes[q].outputs[0];
  if (ys != xs || yz != xz || g.values[x_q].dtype != g.values[y_q].dtype) return false;
  if (g.nodes[q].attr_int("saturate", 1) != 1) return false;
  rewrite::replace_uses(g, idx, g.nodes[dq].outputs[0], x_q);  // the MaxPool, its sole reader
  g.nodes[dq].dead = true;
  g.nodes[q].dead = true;
  Node& n = g.nodes[pi];
  n.outputs = {y_q};
  n.op.reset();
  g.values[y_q].producer = pi;
  return true;
}

class QuantizeQdq : public Pass {
 public:
  const char* name() const override { return "quantize_qdq"; }
  Status run(Graph& g) override {
    rewrite::UseIndex idx(g);
    const size_t n0 = g.nodes.size();
    for (size_t i = 0; i < n0; ++i)
      if (!g.nodes[i].dead && g.nodes[i].is_onnx("MaxPool")) fold_max_pool(g, idx, static_cast<int>(i));
    for (size_t i = 0; i < n0; ++i)
      if (!g.nodes[i].dead && g.nodes[i].is_onnx("Conv")) fold_conv(g, idx, static_cast<int>(i));
    // Residual adds, in topological order of the QConvs (those appended above keep the convs' order).
    for (size_t i = n0; i < g.nodes.size(); ++i)
      if (!g.nodes[i].dead && g.nodes[i].op_type == "QConv") fold_residual(g, idx, static_cast<int>(i));
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_quantize_qdq() { return std::make_unique<QuantizeQdq>(); }

}  // namespace infera
