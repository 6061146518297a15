// pool_before_pointwise_conv: AveragePool(Conv1x1(X)) -> Conv1x1(AveragePool(X)). A 1x1 stride-1
// unpadded conv acts on each pixel alone and linearly, and an unpadded average pool (no ceil
// mode) takes weights summing to 1 over each window, so the two commute (the bias too); the conv
// then runs on the pooled pixels: DenseNet's transitions (1x1 conv, then 2x2 / 2 average) do a
// quarter of their multiply-adds, ~15% of DenseNet-121. Results differ by rounding only (the sums
// in another order). Assumes inferred shapes: float32 4-D, H and W known (the batch may be free);
// the conv group any, constant weight [M, C/g, 1, 1], no residual or activation (a plain ONNX
// Conv), its output read by the pool only and no graph output; the pool reduces the pixel count.
#include "ops/conv.h"
#include "ops/pool.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// An AveragePool of a 4-D float32 value whose windows hold only input pixels: no pads, no
// auto_pad SAME, no ceil mode, no dilation; and fewer output pixels than input pixels.
bool is_unpadded_average_pool(const Graph& g, const Node& n) {
  const auto* op = dynamic_cast<const PoolOp*>(n.op.get());
  if (!op || op->is_max() || !n.is_onnx("AveragePool") || n.inputs.size() != 1 || n.outputs.size() != 1 ||
      n.inputs[0] < 0 || n.outputs[0] < 0)
    return false;
  const PoolAttrs& a = op->attrs();
  if (a.ceil_mode || !all_equal(a.pads, 0) || !all_equal(a.dilations, 1) || a.auto_pad == AutoPad::kSameUpper ||
      a.auto_pad == AutoPad::kSameLower)
    return false;
  const Value &x = g.values[n.inputs[0]], &y = g.values[n.outputs[0]];
  if (x.dtype != DataType::kFloat32 || !x.shape.rank_known || !y.shape.rank_known || x.shape.rank() != 4 ||
      y.shape.rank() != 4)
    return false;
  for (int k = 2; k < 4; ++k)
    if (!x.shape.dims[k].known() || !y.shape.dims[k].known()) return false;
  return y.shape.dims[2].value * y.shape.dims[3].value < x.shape.dims[2].value * x.shape.dims[3].value;
}

// A plain Conv of 4-D X with a constant 1x1 weight, stride 1, no pads or dilation.
bool is_pointwise_conv(const Graph& g, const Node& n) {
  const auto* op = dynamic_cast<const ConvOp*>(n.op.get());
  if (!op || op->fused() || !n.is_onnx("Conv") || n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[0] < 0 ||
      n.outputs.size() != 1 || n.outputs[0] < 0)
    return false;
  const ConvAttrs& a = op->attrs();
  if (!all_equal(a.strides, 1) || !all_equal(a.pads, 0) || !all_equal(a.dilations, 1) ||
      a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower)
    return false;
  const Tensor* w = constant_of(g, n.inputs[1]);
  return w && w->dtype() == DataType::kFloat32 && w->dims().size() == 4 && w->dims()[2] == 1 && w->dims()[3] == 1;
}

class PoolBeforePointwiseConv : public Pass {
 public:
  const char* name() const override { return "pool_before_pointwise_conv"; }

  Status run(Graph& g) override {
    UseIndex idx(g);
    const size_t count = g.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      if (g.nodes[i].dead || !is_unpadded_average_pool(g, g.nodes[i])) continue;
      const int c = producer_of(g, g.nodes[i].inputs[0]);
      if (c < 0 || !is_pointwise_conv(g, g.nodes[c]) ||
          sole_consumer(g, idx, g.nodes[c].outputs[0]) != static_cast<int>(i))
        continue;
      Node pool = g.nodes[i], conv = g.nodes[c];
      const int x = conv.inputs[0], y = pool.outputs[0];
      const int pooled = g.add_value(g.unique_name(g.values[x].name + "/pooled"), DataType::kFloat32);
      pool.name += "/before_conv";
      pool.inputs = {x};
      pool.outputs = {pooled};
      conv.name += "/after_pool";
      conv.inputs[0] = pooled;
      conv.outputs = {y};
      for (Node* n : {&pool, &conv}) {
        auto op = make_kernel(*n, g.opset);
        if (!op.is_ok()) return op.status();
        n->op = std::shared_ptr<const OpKernel>(std::move(op.value()));
      }
      g.nodes[i].dead = true;
      g.nodes[c].dead = true;
      g.add_node(std::move(pool));
      g.add_node(std::move(conv));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_pool_before_pointwise_conv() { return std::make_unique<PoolBeforePointwiseConv>(); }

}  // namespace infera
