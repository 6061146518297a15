// fuse_squeeze_excite: a squeeze-excitation gate, GlobalAveragePool(X) (or ReduceMean over axes 2, 3
// keeping them) -> 1x1 Conv / FusedConv [act] -> 1x1 Conv / FusedConv [gate] ->
// com.infera.SqueezeExcite(X, W1, B1, W2, B2) (ops/squeeze_excite.h): one step instead of three.
// Assumes inferred shapes: X float32 4-D; the convs group 1, unpadded, no residual, constant
// weights [R, C, 1, 1] then [C, R, 1, 1] and constant biases; each intermediate has one reader and
// is no graph output. Host only (default_passes(host)): no GPU kernel takes the fused op.
#include <algorithm>

#include "ops/conv.h"
#include "ops/util.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool const_float(const Graph& g, int v, const std::vector<int64_t>& dims) {
  const Tensor* t = constant_of(g, v);
  return t && t->dtype() == DataType::kFloat32 && t->dims() == dims;
}

// Node n averages its input over H and W of a 4-D value, keeping them (GlobalAveragePool, or
// ReduceMean of axes {2, 3} with keepdims).
bool is_spatial_mean(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty() || n.inputs[0] < 0) return false;
  if (is_onnx_op(n, "GlobalAveragePool")) return n.inputs.size() == 1;
  if (!is_onnx_op(n, "ReduceMean") || n.attr_int("keepdims", 1) == 0) return false;
  std::vector<int64_t> axes;
  if (g.opset < 18) {
    if (n.inputs.size() != 1) return false;
    axes = n.attr_ints("axes");
  } else {
    const Tensor* t = n.inputs.size() == 2 ? constant_of(g, n.inputs[1]) : nullptr;
    if (!t || !read_ints(*t, axes)) return false;
  }
  for (int64_t& a : axes)
    if (a < 0) a += 4;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

// Node `node` is a 1x1 conv of value `in` (c channels) to m channels: group 1, no pads, no
// residual, constant weight [m, c, 1, 1] and bias [m] if any. Sets m and its activation.
bool is_pointwise_conv(const Graph& g, int node, int in, int64_t c, int64_t& m, Activation& act) {
  if (node < 0) return false;
  const Node& n = g.nodes[node];
  const auto* op = dynamic_cast<const ConvOp*>(n.op.get());
  if (!op || (!n.domain.empty() && n.domain != "com.infera" && n.domain != "ai.onnx")) return false;
  if (n.inputs.size() < 2 || n.inputs[0] != in || (n.inputs.size() > 3 && n.inputs[3] >= 0)) return false;
  if (n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const ConvAttrs& a = op->attrs();
  if (a.group != 1 || std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; })) return false;
  if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) return false;
  const Tensor* w = constant_of(g, n.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->dims().size() != 4 || w->dims()[1] != c || w->dims()[2] != 1 ||
      w->dims()[3] != 1)
    return false;
  m = w->dims()[0];
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !const_float(g, n.inputs[2], {m})) return false;
  act = op->activation();
  return true;
}

class FuseSqueezeExcite : public Pass {
 public:
  const char* name() const override { return "fuse_squeeze_excite"; }

  Status run(Graph& g) override {
    UseIndex idx(g);
    const size_t count = g.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      const Node& p = g.nodes[i];
      if (p.dead || !is_spatial_mean(g, p)) continue;
      const int x = p.inputs[0];
      const Shape& xs = g.values[x].shape;
      if (g.values[x].dtype != DataType::kFloat32 || !xs.rank_known || xs.rank() != 4 || !xs.dims[1].known()) continue;
      const int64_t c = xs.dims[1].value;
      const int pooled = p.outputs[0];
      const int c1 = sole_consumer(g, idx, pooled);
      int64_t r = 0, c_out = 0;
      Activation act, gate;
      if (!is_pointwise_conv(g, c1, pooled, c, r, act)) continue;
      const int hidden = g.nodes[c1].outputs[0];
      const int c2 = sole_consumer(g, idx, hidden);
      if (!is_pointwise_conv(g, c2, hidden, r, c_out, gate) || c_out != c) continue;
      const Node &n1 = g.nodes[c1], &n2 = g.nodes[c2];
      auto in = [](const Node& n, size_t k) { return n.inputs.size() > k ? n.inputs[k] : -1; };
      Node se;
      se.name = n2.name + "/SqueezeExcite";
      se.op_type = "SqueezeExcite";
      se.domain = "com.infera";
      se.inputs = {x, n1.inputs[1], in(n1, 2), n2.inputs[1], in(n2, 2)};
      se.outputs = {n2.outputs[0]};
      activation_to_attrs(se, act);
      activation_to_attrs(se, gate, "gate");
      auto op = make_kernel(se, g.opset);
      if (!op.is_ok()) return op.status();
      se.op = std::shared_ptr<const OpKernel>(std::move(op.value()));
      for (int d : {static_cast<int>(i), c1, c2}) g.nodes[d].dead = true;
      g.add_node(std::move(se));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_squeeze_excite() { return std::make_unique<FuseSqueezeExcite>(); }

}  // namespace infera
