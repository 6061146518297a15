// fuse_matmul_add: MatMul(X [M,K], W constant [K,N]) + Add(constant bias broadcastable to [N] or
// [M,N]) -> Gemm(X, W, bias). Assumes the MatMul output feeds only the Add and is no graph output.
// X of rank r > 2 ([d0, ..., K], the linear layers of transformers and ConvNeXt's pointwise MLPs,
// which run on channels-last activations) with a bias of [N] (leading ones allowed): Reshape(X,
// [-1, K]) -> Gemm -> Reshape([-1, d1, ..., N]), d0 may be symbolic. The Reshapes alias their
// input (the backends' in-place support): no copy. A GELU after it is not moved onto the rows to
// fuse with the Gemm: on the GPU that fusion left cuBLASLt (no erf-GELU epilogue) for our slower
// kernels (ConvNeXt-T fp16 b1 0.95 -> 1.62 ms on the H200, 2026-12-03), while on the CPU it gained
// ~2% (oneDNN's gelu post-op); a per-device choice belongs to the planner, not to a pass.
#include <cstring>

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
      if (!w || w->rank() != 2 || !xs.rank_known || xs.rank() < 2 || !is_float_type(w->dtype())) continue;
      if (g.values[x].dtype != w->dtype()) continue;
      int a = sole_consumer(g, idx, y);
      if (a < 0 || !is_onnx_op(g.nodes[a], "Add") || g.nodes[a].inputs.size() != 2) continue;
      const Node& add = g.nodes[a];
      int bias = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
      const Tensor* c = constant_of(g, bias);
      const Shape& ys = g.values[y].shape;
      if (!c || c->dtype() != w->dtype() || !ys.rank_known) continue;
      if (add.outputs.size() != 1 || add.outputs[0] < 0) continue;
      if (xs.rank() == 2) {
        if (!bias_fits(*c, ys)) continue;
        Node gemm;
        gemm.name = mm.name.empty() ? add.name : mm.name;
        gemm.op_type = "Gemm";
        gemm.inputs = {x, mm.inputs[1], bias};
        gemm.outputs = {add.outputs[0]};
        g.nodes[i].dead = true;
        g.nodes[a].dead = true;
        g.add_node(std::move(gemm));
      } else {
        fuse_rows(g, static_cast<int>(i), a, *w, *c);
      }
    }
    return Status::ok();
  }

 private:
  // MatMul of X [d0, ..., d(r-2), K] by W [K, N] + bias [N] (leading ones allowed) as a Gemm on
  // the rows of X (see the header); nothing when the shapes do not allow it.
  void fuse_rows(Graph& g, int mm_node, int add_node, const Tensor& w, const Tensor& c) {
    const Node mm = g.nodes[mm_node], add = g.nodes[add_node];
    const int x = mm.inputs[0], out = add.outputs[0];
    const int bias = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
    const Shape& xs = g.values[x].shape;
    const int r = xs.rank();
    const int64_t k = w.dims()[0], n = w.dims()[1];
    std::vector<int64_t> back = {-1};  // the output's dims: d0 (perhaps symbolic) from the row count
    for (int d = 1; d < r - 1; ++d) {
      if (!xs.dims[d].known() || xs.dims[d].value <= 0) return;
      back.push_back(xs.dims[d].value);
    }
    back.push_back(n);
    if (!xs.dims[r - 1].known() || xs.dims[r - 1].value != k) return;
    for (int d = 0; d + 1 < c.rank(); ++d)
      if (c.dims()[d] != 1) return;
    const int64_t last = c.rank() == 0 ? 1 : c.dims().back();
    if (c.rank() > r || (last != 1 && last != n)) return;
    const Shape& os = g.values[out].shape;
    if (!os.rank_known || os.rank() != r) return;  // the bias would grow the rank
    const std::string base = mm.name.empty() ? add.name : mm.name;
    auto shape_const = [&](const char* what, const std::vector<int64_t>& dims) {
      Tensor t = Tensor::make(DataType::kInt64, {static_cast<int64_t>(dims.size())}).take();
      std::memcpy(t.data(), dims.data(), dims.size() * sizeof(int64_t));
      return add_constant(g, base + what, std::move(t));
    };
    const DataType dt = g.values[x].dtype;
    const int rows = g.add_value(g.unique_name(base + "_rows"), dt);
    const int gemm_y = g.add_value(g.unique_name(base + "_gemm"), dt);
    int b = bias;
    if (c.rank() > 1) {  // [1, ..., 1, N] -> [N]: Gemm's C of the same bytes
      auto flat = Tensor::make(c.dtype(), {last});
      if (!flat.is_ok()) return;
      std::memcpy(flat.value().data(), c.data(), c.nbytes());
      b = add_constant(g, base + "_bias", flat.take());
    }
    Node to_rows;
    to_rows.name = g.unique_name(base + "_to_rows");
    to_rows.op_type = "Reshape";
    to_rows.inputs = {x, shape_const("_rows_shape", {-1, k})};
    to_rows.outputs = {rows};
    Node gemm;
    gemm.name = base;
    gemm.op_type = "Gemm";
    gemm.inputs = {rows, mm.inputs[1], b};
    gemm.outputs = {gemm_y};
    g.nodes[mm_node].dead = true;
    g.nodes[add_node].dead = true;
    g.add_node(std::move(to_rows));
    g.add_node(std::move(gemm));
    Node from_rows;
    from_rows.name = g.unique_name(base + "_from_rows");
    from_rows.op_type = "Reshape";
    from_rows.inputs = {gemm_y, shape_const("_out_shape", back)};
    from_rows.outputs = {out};
    g.add_node(std::move(from_rows));
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_matmul_add() { return std::make_unique<FuseMatmulAdd>(); }

}  // namespace infera
