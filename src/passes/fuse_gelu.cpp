// fuse_gelu: PyTorch's exact GELU export, Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) (operands in
// either order), -> com.infera.Gelu(x). Assumes float32 and that the intermediates have no other reader.
#include <cmath>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool scalar_is(const Graph& g, int v, double want) {
  const Tensor* t = constant_of(g, v);
  std::vector<double> vals;
  return t && t->numel() == 1 && read_floats(*t, vals) && std::fabs(vals[0] - want) <= 1e-6 * std::fabs(want);
}

// For a binary node, the input that is not `v` (-1 unless exactly one input is v).
int other(const Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return -1;
}

class FuseGelu : public Pass {
 public:
  const char* name() const override { return "fuse_gelu"; }

  Status run(Graph& g) override {
    UseIndex idx(g);  // exact readers in O(readers): a chain of k fusions is O(n + k), not O(n k)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& erf = g.nodes[i];
      if (erf.dead || !is_onnx_op(erf, "Erf") || erf.inputs.size() != 1 || erf.outputs.size() != 1) continue;
      const int erf_n = static_cast<int>(i);
      const int div_n = producer_of(g, erf.inputs[0]);
      if (div_n < 0 || !is_onnx_op(g.nodes[div_n], "Div") || sole_consumer(g, idx, erf.inputs[0]) != erf_n) continue;
      const int x = g.nodes[div_n].inputs[0];
      if (g.nodes[div_n].inputs.size() != 2 || !scalar_is(g, g.nodes[div_n].inputs[1], std::sqrt(2.0))) continue;
      if (g.values[x].dtype != DataType::kFloat32) continue;
      const int add_n = sole_consumer(g, idx, erf.outputs[0]);
      if (add_n < 0 || !is_onnx_op(g.nodes[add_n], "Add") || !scalar_is(g, other(g.nodes[add_n], erf.outputs[0]), 1.0))
        continue;
      const int a = g.nodes[add_n].outputs[0];
      const int mul_n = sole_consumer(g, idx, a);
      if (mul_n < 0 || !is_onnx_op(g.nodes[mul_n], "Mul") || other(g.nodes[mul_n], a) != x) continue;
      const int b = g.nodes[mul_n].outputs[0];
      const int half_n = sole_consumer(g, idx, b);
      if (half_n < 0 || !is_onnx_op(g.nodes[half_n], "Mul") || !scalar_is(g, other(g.nodes[half_n], b), 0.5)) continue;
      Node gelu;
      gelu.name = erf.name + "/Gelu";
      gelu.op_type = "Gelu";
      gelu.domain = "com.infera";
      gelu.inputs = {x};
      gelu.outputs = {g.nodes[half_n].outputs[0]};
      for (int n : {div_n, erf_n, add_n, mul_n, half_n}) g.nodes[n].dead = true;
      g.add_node(std::move(gelu));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_gelu() { return std::make_unique<FuseGelu>(); }

}  // namespace infera
