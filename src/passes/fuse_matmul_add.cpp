// fuse_matmul_add: MatMul(X [M,K], W constant [K,N]) + Add(constant bias broadcastable to [N] or
// [M,N]) -> Gemm(X, W, bias). Assumes the MatMul output feeds only the Add and is no graph output.
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool is_float_type(DataType dt) { return dt == DataType::kFloat32 || dt == DataType::kFloat64; }

// The bias must leave the Add's output shape [M, N] unchanged (Gemm's C broadcasts into [M, N]).
bool bias_fits(const Tensor& c, const Shape& y) {
  if (c.rank() > 2 || y.rank() != 2) return false;
  const Dim& n = y.dims[1];
  int64_t last = c.rank() == 0 ? 1 : c.dims().back();
  if (last != 1 && !(n.known() && n.value == last)) return false;
  if (c.rank() == 2 && c.dims()[0] != 1 && !(y.dims[0].known() && y.dims[0].value == c.dims()[0])) return false;
  return true;
}

class FuseMatmulAdd : public Pass {
 public:
  const char* name() const override { return "fuse_matmul_add"; }

  Status run(Graph& g) override {
    UseIndex idx(g);  // exact readers in O(readers): a chain of k fusions is O(n + k), not O(n k)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& mm = g.nodes[i];
      if (mm.dead || !is_onnx_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
      int x = mm.inputs[0], y = mm.outputs[0];
      const Tensor* w = constant_of(g, mm.inputs[1]);
      const Shape& xs = g.values[x].shape;
      if (!w || w->rank() != 2 || !xs.rank_known || xs.rank() != 2 || !is_float_type(w->dtype())) continue;
      if (g.values[x].dtype != w->dtype()) continue;
      int a = sole_consumer(g, idx, y);
      if (a < 0 || !is_onnx_op(g.nodes[a], "Add") || g.nodes[a].inputs.size() != 2) continue;
      const Node& add = g.nodes[a];
      int bias = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
      const Tensor* c = constant_of(g, bias);
      const Shape& ys = g.values[y].shape;
      if (!c || c->dtype() != w->dtype() || !ys.rank_known || !bias_fits(*c, ys)) continue;
      if (add.outputs.size() != 1 || add.outputs[0] < 0) continue;
      Node gemm;
      gemm.name = mm.name.empty() ? add.name : mm.name;
      gemm.op_type = "Gemm";
      gemm.inputs = {x, mm.inputs[1], bias};
      gemm.outputs = {add.outputs[0]};
      g.nodes[i].dead = true;
      g.nodes[a].dead = true;
      g.add_node(std::move(gemm));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_matmul_add() { return std::make_unique<FuseMatmulAdd>(); }

}  // namespace infera
