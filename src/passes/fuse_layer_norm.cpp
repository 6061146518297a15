// fuse_layer_norm: PyTorch's decomposed layer norm over the last axis —
//   m = ReduceMean(x); d = x - m; v = ReduceMean(d^2); n = d / Sqrt(v + eps) [* gamma] [+ beta]
// -> com.infera.LayerNormalization(x, gamma, beta). Assumes float32, constant eps/gamma/beta, and
// that every intermediate has no reader outside the pattern and is no graph output.
#include <cmath>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

// The producer of v if it is a live default-domain `op` node, else -1.
int producer_op(const Graph& g, int v, const char* op) {
  int p = producer_of(g, v);
  return p >= 0 && is_onnx_op(g.nodes[p], op) ? p : -1;
}

bool scalar_value(const Graph& g, int v, double& out) {
  const Tensor* t = constant_of(g, v);
  std::vector<double> vals;
  if (!t || t->numel() != 1 || !read_floats(*t, vals)) return false;
  out = vals[0];
  return true;
}

// ReduceMean over the last axis only, keeping dims (axes as attribute or constant input).
bool is_last_axis_mean(const Graph& g, const Node& n, int64_t opset) {
  if (n.attr_int("keepdims", 1) != 1 || n.inputs.empty()) return false;
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (opset >= 18 && n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const Tensor* t = constant_of(g, n.inputs[1]);
    if (!t || t->dtype() != DataType::kInt64) return false;
    axes.assign(t->data_as<int64_t>(), t->data_as<int64_t>() + t->numel());
  }
  const Shape& s = g.values[n.inputs[0]].shape;
  if (axes.size() != 1 || !s.rank_known) return false;
  return axes[0] == -1 || axes[0] == s.rank() - 1;
}

// A constant of shape [C] (or broadcastable to the last dim C) that scales/shifts the output.
bool is_channel_constant(const Graph& g, int v, const Shape& x) {
  const Tensor* t = constant_of(g, v);
  if (!t || t->dtype() != DataType::kFloat32 || !x.rank_known || x.rank() == 0) return false;
  const Dim& c = x.dims.back();
  for (int i = 0; i + 1 < t->rank(); ++i)
    if (t->dims()[i] != 1) return false;
  return t->rank() >= 1 && c.known() && t->dims().back() == c.value;
}

class FuseLayerNorm : public Pass {
 public:
  const char* name() const override { return "fuse_layer_norm"; }

  Status run(Graph& g) override {
    UseIndex idx(g);  // exact readers in O(readers): a chain of k fusions is O(n + k), not O(n k)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].dead || !is_onnx_op(g.nodes[i], "Div") || g.nodes[i].inputs.size() != 2) continue;
      const int div = static_cast<int>(i);
      const int d = g.nodes[div].inputs[0], s = g.nodes[div].inputs[1];
      const int sqrt_n = producer_op(g, s, "Sqrt");
      if (sqrt_n < 0 || sole_consumer(g, idx, s) != div) continue;
      const int ve = g.nodes[sqrt_n].inputs[0];
      const int add_n = producer_op(g, ve, "Add");
      if (add_n < 0 || sole_consumer(g, idx, ve) != sqrt_n) continue;
      double eps = 0;
      int v = g.nodes[add_n].inputs[0];
      if (!scalar_value(g, g.nodes[add_n].inputs[1], eps)) {
        v = g.nodes[add_n].inputs[1];
        if (!scalar_value(g, g.nodes[add_n].inputs[0], eps)) continue;
      }
      if (!(eps > 0) || !std::isfinite(eps)) continue;
      const int var_n = producer_op(g, v, "ReduceMean");
      if (var_n < 0 || sole_consumer(g, idx, v) != add_n || !is_last_axis_mean(g, g.nodes[var_n], g.opset)) continue;
      const int p = g.nodes[var_n].inputs[0];
      const int pow_n = producer_op(g, p, "Pow");
      double two = 0;
      if (pow_n < 0 || sole_consumer(g, idx, p) != var_n || g.nodes[pow_n].inputs[0] != d ||
          !scalar_value(g, g.nodes[pow_n].inputs[1], two) || two != 2.0)
        continue;
      const int sub_n = producer_op(g, d, "Sub");
      if (sub_n < 0 || idx.count(g, d) != 2 || g.is_graph_output(d)) continue;
      const int x = g.nodes[sub_n].inputs[0], m = g.nodes[sub_n].inputs[1];
      const int mean_n = producer_op(g, m, "ReduceMean");
      if (mean_n < 0 || sole_consumer(g, idx, m) != sub_n || g.nodes[mean_n].inputs[0] != x ||
          !is_last_axis_mean(g, g.nodes[mean_n], g.opset))
        continue;
      const Shape& xs = g.values[x].shape;
      if (g.values[x].dtype != DataType::kFloat32 || !xs.rank_known) continue;

      // Optional scale and shift by per-channel constants.
      std::vector<int> dead = {mean_n, sub_n, pow_n, var_n, add_n, sqrt_n, div};
      int out = g.nodes[div].outputs[0], gamma = -1, beta = -1;
      auto other_input = [&](int node, int v_in) {
        const Node& n = g.nodes[node];
        return n.inputs.size() == 2 && n.inputs[0] == v_in ? n.inputs[1] : n.inputs.size() == 2 ? n.inputs[0] : -1;
      };
      int next = sole_consumer(g, idx, out);
      if (next >= 0 && is_onnx_op(g.nodes[next], "Mul") && is_channel_constant(g, other_input(next, out), xs)) {
        gamma = other_input(next, out);
        dead.push_back(next);
        out = g.nodes[next].outputs[0];
        next = sole_consumer(g, idx, out);
      }
      if (next >= 0 && is_onnx_op(g.nodes[next], "Add") && is_channel_constant(g, other_input(next, out), xs)) {
        beta = other_input(next, out);
        dead.push_back(next);
        out = g.nodes[next].outputs[0];
      }
      if (gamma < 0) {
        const int64_t c = xs.dims.back().value;
        if (c < 0) continue;
        auto ones = make_floats(DataType::kFloat32, {c}, std::vector<double>(static_cast<size_t>(c), 1.0));
        if (!ones.is_ok()) continue;
        gamma = add_constant(g, g.values[x].name + "_ln_scale", ones.take());
      }
      Node ln;
      ln.name = g.nodes[div].name + "/LayerNorm";
      ln.op_type = "LayerNormalization";
      ln.domain = "com.infera";
      ln.inputs = {x, gamma, beta};
      ln.outputs = {out};
      Attribute axis, epsilon;
      axis.kind = Attribute::kInt;
      axis.i = -1;
      epsilon.kind = Attribute::kFloat;
      epsilon.f = static_cast<float>(eps);
      ln.attrs["axis"] = axis;
      ln.attrs["epsilon"] = epsilon;
      for (int n : dead) g.nodes[n].dead = true;
      g.add_node(std::move(ln));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_layer_norm() { return std::make_unique<FuseLayerNorm>(); }

}  // namespace infera
