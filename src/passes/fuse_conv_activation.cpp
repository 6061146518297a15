// fuse_conv_activation: Conv [+ Add(same-shape residual Z)] [+ activation, or the HardSigmoid*x
// form of HardSwish, or the Sigmoid*x form of Swish/SiLU] -> com.infera.FusedConv
// (inputs X, W, B|-1, Z|-1) whose typed op carries the activation (ConvOp::make_fused); a
// FusedConv without activation takes one the same way; Gemm + activation -> FusedGemm; and an
// inference BatchNormalization (one output) + activation -> FusedBatchNorm (DenseNet's norm + relu).
// Assumes each fused intermediate has one reader and is no graph output; float32 only; Clip
// bounds must be constants. Activations come from the activation table (ops/activation.h).
#include <cmath>
#include <limits>

#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/infer.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

constexpr const char* kFusedDomain = "com.infera";

bool scalar_bound(const Graph& g, const Node& n, size_t i, float dflt, float& out) {
  out = dflt;
  if (n.inputs.size() <= i || n.inputs[i] < 0) return true;
  const Tensor* t = constant_of(g, n.inputs[i]);
  std::vector<double> v;
  if (!t || t->numel() != 1 || !read_floats(*t, v)) return false;
  out = static_cast<float>(v[0]);
  return true;
}

// The activation of node n, read from its typed op (the activation table's parameters), or
// false when n is no fusable activation. Clip's bounds must be constants.
bool activation_of(const Graph& g, const Node& n, Activation& a) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || !n.op) return false;
  if (const auto* op = dynamic_cast<const ActivationOp*>(n.op.get())) {
    a = op->activation();
    return n.inputs.size() == 1;
  }
  if (const auto* clip = dynamic_cast<const ClipOp*>(n.op.get())) {
    a = activation_default(ActKind::kClip);
    if (clip->opset() < 11) {
      a.alpha = clip->attr_min();
      a.beta = clip->attr_max();
      return n.inputs.size() == 1;
    }
    return scalar_bound(g, n, 1, a.alpha, a.alpha) && scalar_bound(g, n, 2, a.beta, a.beta);
  }
  return false;
}

bool same_shape(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!(a.dims[i] == b.dims[i])) return false;
  return true;
}

class FuseConvActivation : public Pass {
 public:
  const char* name() const override { return "fuse_conv_activation"; }

  Status run(Graph& g) override {
    Status s = attach_ops(g);
    if (!s.is_ok()) return s;
    cons_ = g.consumers();
    // Use counts through the index: count_uses / the stale-list sole_consumer scanned the whole
    // graph per candidate head (quadratic: 86% of a 20k MatMul+Add chain's load time).
    UseIndex idx(g);
    idx_ = &idx;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].dead || g.nodes[i].outputs.empty()) continue;
      const Node& n = g.nodes[i];
      const auto* conv = dynamic_cast<const ConvOp*>(n.op.get());
      const auto* gemm = dynamic_cast<const GemmOp*>(n.op.get());
      const auto* bn = dynamic_cast<const BatchNormOp*>(n.op.get());
      if (conv && (!conv->fused() || conv->activation().is_identity()))
        fuse(g, static_cast<int>(i), Head::kConv);
      else if (gemm && !gemm->fused())
        fuse(g, static_cast<int>(i), Head::kGemm);
      else if (bn && !bn->fused() && !bn->training() && bn->spatial())
        fuse(g, static_cast<int>(i), Head::kBatchNorm);
    }
    idx_ = nullptr;
    return Status::ok();
  }

 private:
  enum class Head { kConv, kGemm, kBatchNorm };

  void fuse(Graph& g, int head, Head kind) {
    const Node& h = g.nodes[head];
    const bool conv = kind == Head::kConv;
    int y = h.outputs[0];
    if (y < 0) return;
    for (size_t k = 1; k < h.outputs.size(); ++k)
      if (h.outputs[k] >= 0) return;
    DataType dt = g.values[y].dtype;
    if (dt != DataType::kFloat32) return;  // the fused kernels apply activations to float32 only
    std::vector<int> fused = {head};
    const bool refuse = h.op_type == "FusedConv";  // already has X, W, B, Z; may take an activation
    int tail = y, z = refuse && h.inputs.size() > 3 ? h.inputs[3] : -1;
    int next = sole_consumer(g, *idx_, tail);
    if (conv && !refuse && next >= 0 && is_onnx_op(g.nodes[next], "Add") && g.nodes[next].inputs.size() == 2 &&
        g.nodes[next].outputs.size() == 1 && g.nodes[next].outputs[0] >= 0) {
      const Node& add = g.nodes[next];
      int other = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
      const Value& ov = g.values[other];
      if (other != y && ov.dtype == dt && same_shape(ov.shape, g.values[y].shape) &&
          same_shape(g.values[add.outputs[0]].shape, g.values[y].shape)) {
        z = other;
        tail = add.outputs[0];
        fused.push_back(next);
        next = sole_consumer(g, *idx_, tail);
      }
    }
    Activation act;
    if (next >= 0 && activation_of(g, g.nodes[next], act)) {
      tail = g.nodes[next].outputs[0];
      fused.push_back(next);
    } else if (int mul = match_gated(g, tail, fused, false); mul >= 0) {
      act = activation_default(ActKind::kHardSwish);
      tail = g.nodes[mul].outputs[0];
    } else if (int mul = match_gated(g, tail, fused, true); mul >= 0) {
      act = activation_default(ActKind::kSwish);  // x * sigmoid(1 * x)
      tail = g.nodes[mul].outputs[0];
    }
    if (fused.size() == 1) return;
    Node f;
    f.name = h.name;
    f.op_type = conv ? "FusedConv" : kind == Head::kGemm ? "FusedGemm" : "FusedBatchNorm";
    f.domain = kFusedDomain;
    f.attrs = h.attrs;  // the window / Gemm / epsilon attributes, for display; the op below is typed
    if (conv)
      f.op = ConvOp::make_fused(static_cast<const ConvOp*>(h.op.get())->attrs(), act);
    else if (kind == Head::kGemm)
      f.op = GemmOp::make_fused(static_cast<const GemmOp*>(h.op.get())->attrs(), g.opset, act);
    else
      f.op = BatchNormOp::make_fused(*static_cast<const BatchNormOp*>(h.op.get()), act);
    auto in = [&](size_t k) { return h.inputs.size() > k ? h.inputs[k] : -1; };
    if (refuse)
      f.inputs = h.inputs;
    else if (conv)
      f.inputs = {in(0), in(1), in(2), z};
    else
      f.inputs = h.inputs;
    f.outputs = {tail};
    for (int n : fused) g.nodes[n].dead = true;
    g.add_node(std::move(f));
    // The use index picks the new node up by itself (UseIndex::sync). cons_ is left as it was:
    // updating the reader list of every input (a weight shared by 100k Gemms) was quadratic, and
    // match_gated only walks the readers of a head's output, which the fused node never reads.
  }

  // Mul(t, HardSigmoid(t; 1/6, 0.5)) is HardSwish(t), as exported before opset 14; Mul(t,
  // Sigmoid(t)) is Swish/SiLU (swish = true). Adds both nodes to fused and returns the Mul, or -1.
  int match_gated(const Graph& g, int t, std::vector<int>& fused, bool swish) const {
    const char* gate_op = swish ? "Sigmoid" : "HardSigmoid";
    if (idx_->is_graph_output(t) || idx_->count(g, t) != 2) return -1;
    int hs = -1, mul = -1;
    for (int n : cons_[t]) {
      if (g.nodes[n].dead) continue;
      if (is_onnx_op(g.nodes[n], gate_op))
        hs = n;
      else if (is_onnx_op(g.nodes[n], "Mul"))
        mul = n;
    }
    if (hs < 0 || mul < 0) return -1;
    const Node& h = g.nodes[hs];
    const Node& m = g.nodes[mul];
    if (h.inputs.size() != 1 || h.outputs.size() != 1 || m.inputs.size() != 2 || m.outputs.size() != 1) return -1;
    const auto* gate = dynamic_cast<const ActivationOp*>(h.op.get());
    if (!gate) return -1;
    if (!swish && (std::fabs(gate->activation().alpha - 1.0f / 6) > 1e-6f || gate->activation().beta != 0.5f))
      return -1;
    int hv = h.outputs[0];
    bool pair = (m.inputs[0] == t && m.inputs[1] == hv) || (m.inputs[0] == hv && m.inputs[1] == t);
    if (!pair || sole_consumer(g, *idx_, hv) != mul || m.outputs[0] < 0) return -1;
    fused.push_back(hs);
    fused.push_back(mul);
    return mul;
  }

  std::vector<std::vector<int>> cons_;  // readers per value at the start (stale: dead nodes skipped)
  UseIndex* idx_ = nullptr;             // exact use counts, set for the duration of run()
};

}  // namespace

std::unique_ptr<Pass> make_fuse_conv_activation() { return std::make_unique<FuseConvActivation>(); }

}  // namespace infera
