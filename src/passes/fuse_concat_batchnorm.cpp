// fuse_concat_batchnorm: Concat(X0 .. Xk-1, axis 1) read only by an inference BatchNormalization /
// FusedBatchNorm -> com.infera.ConcatBatchNorm(scale, B, mean, var, X0 .. Xk-1) (ops/norm.h).
// DenseNet's layers read cat(x0, y1 .. yk) through norm + relu only; at batch N > 1 each Concat
// copied its whole input (the planner's in-place Concat needs N = 1 on the host), 9% of DenseNet-121
// at batch 16; the fused step reads the pieces where their producers wrote them. Assumes inferred
// shapes: float32, statistics constant float32 [C], the Concat's output no graph output. Host only
// (default_passes(host)): no GPU kernel takes the fused op.
#include "ops/norm.h"
#include "ops/tensor_ops.h"
#include "ops/util.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

// Node n is a Concat of float32 values along dim 1 (rank >= 2 known).
bool is_channel_concat(const Graph& g, const Node& n) {
  const auto* op = dynamic_cast<const ConcatOp*>(n.op.get());
  if (!op || !n.is_onnx("Concat") || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty()) return false;
  const Value& y = g.values[n.outputs[0]];
  if (y.dtype != DataType::kFloat32 || !y.shape.rank_known || y.shape.rank() < 2) return false;
  const int64_t axis = op->axis() < 0 ? op->axis() + y.shape.rank() : op->axis();
  if (axis != 1) return false;
  for (int x : n.inputs)
    if (x < 0 || g.values[x].dtype != DataType::kFloat32) return false;
  return true;
}

// Node n is an inference BatchNormalization (or FusedBatchNorm) of x with one output and constant
// float32 statistics [C].
bool is_inference_bn(const Graph& g, const Node& n, int x) {
  const auto* op = dynamic_cast<const BatchNormOp*>(n.op.get());
  if (!op || op->training() || !op->spatial() || n.inputs.size() != 5 || n.inputs[0] != x) return false;
  if (n.outputs.empty() || n.outputs[0] < 0) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return false;
  const Shape& xs = g.values[x].shape;
  if (!xs.dims[1].known()) return false;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = constant_of(g, n.inputs[i]);
    if (!t || t->dtype() != DataType::kFloat32 || t->dims() != std::vector<int64_t>{xs.dims[1].value}) return false;
  }
  return true;
}

class FuseConcatBatchNorm : public Pass {
 public:
  const char* name() const override { return "fuse_concat_batchnorm"; }

  Status run(Graph& g) override {
    UseIndex idx(g);
    const size_t count = g.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      const Node& cat = g.nodes[i];
      if (cat.dead || !is_channel_concat(g, cat)) continue;
      const int y = cat.outputs[0];
      const int b = sole_consumer(g, idx, y);
      if (b < 0 || !is_inference_bn(g, g.nodes[b], y)) continue;
      const Node& bn = g.nodes[b];
      const auto* op = static_cast<const BatchNormOp*>(bn.op.get());
      Node f;
      f.name = bn.name + "/ConcatBatchNorm";
      f.op_type = "ConcatBatchNorm";
      f.domain = "com.infera";
      f.inputs = {bn.inputs[1], bn.inputs[2], bn.inputs[3], bn.inputs[4]};
      f.inputs.insert(f.inputs.end(), cat.inputs.begin(), cat.inputs.end());
      f.outputs = {bn.outputs[0]};
      Attribute eps;
      eps.kind = Attribute::kFloat;
      eps.f = op->epsilon();
      f.attrs["epsilon"] = eps;
      activation_to_attrs(f, op->activation());
      auto made = make_kernel(f, g.opset);
      if (!made.is_ok()) return made.status();
      f.op = std::shared_ptr<const OpKernel>(std::move(made.value()));
      g.nodes[i].dead = true;
      g.nodes[b].dead = true;
      g.add_node(std::move(f));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_concat_batchnorm() { return std::make_unique<FuseConcatBatchNorm>(); }

}  // namespace infera
