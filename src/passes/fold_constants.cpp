// fold_constants: evaluates nodes whose inputs are all constants (Shape/Size: whose input shape is
// fully known; Gather of a Shape: whose picked dims are known) and makes their outputs constants;
// Reshape targets built from the input's own (batch) dims become constants with 0 (shape_math.h).
// Assumes topological order and inferred shapes; leaves random ops, graph outputs, subgraph ops and
// outputs over the size limits to the runtime.
#include <algorithm>
#include <set>

#include "ops/infer.h"
#include "ops/util.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/shape_math.h"

namespace infera {
namespace {

using namespace rewrite;

constexpr double kFoldMaxMacs = 1 << 30;  // about a second of reference kernel

bool is_nondeterministic(const Node& n) {
  static const std::set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"};
  if (kRandom.count(n.op_type)) return true;
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::kGraph) return true;  // control flow: not folded here
  return false;
}

// Multiply-adds of the ops whose cost is not linear in their input and output sizes; 0 for others.
// A hostile model must not make loading take hours on constant-only convolutions.
double heavy_op_macs(const Node& n, const std::vector<const Tensor*>& args, double out_numel) {
  auto dim = [&](size_t i, int d) -> double {
    if (i >= args.size() || !args[i] || args[i]->rank() == 0) return 1;
    int r = args[i]->rank();
    return static_cast<double>(args[i]->dims()[static_cast<size_t>(d < 0 ? d + r : std::min(d, r - 1))]);
  };
  auto numel = [&](size_t i) { return i < args.size() && args[i] ? static_cast<double>(args[i]->numel()) : 1.0; };
  const std::string& op = n.op_type;
  if (op == "MatMul") return out_numel * dim(0, -1);
  if (op == "Gemm" || op == "FusedGemm") return out_numel * (n.attr_int("transA", 0) ? dim(0, 0) : dim(0, 1));
  if (op == "Conv" || op == "FusedConv") return out_numel * numel(1) / std::max(1.0, dim(1, 0));
  if (op == "ConvTranspose") return numel(0) * numel(1) / std::max(1.0, dim(1, 0));
  return 0;
}

class FoldConstants : public Pass {
 public:
  FoldConstants(size_t max_tensor, size_t max_total) : max_tensor_(max_tensor), max_total_(max_total) {}
  const char* name() const override { return "fold_constants"; }

  Status run(Graph& g) override {
    size_t total = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].dead) continue;
      if (!g.nodes[i].op) {
        auto made = make_kernel(g.nodes[i], g.opset);
        if (!made.is_ok()) continue;  // infer_graph reports unknown ops with context
        g.nodes[i].op = made.take();
      }
      const std::shared_ptr<const OpKernel> k = g.nodes[i].op;  // a fold below may replace the node
      resolve_reshape_shape(g, g.nodes[i]);
      refresh_shapes(g, g.nodes[i], *k);
      if (total < max_total_ && !fold_gather_of_shape(g, g.nodes[i])) try_fold(g, g.nodes[i], *k, total);
    }
    return Status::ok();
  }

 private:
  // Folding upstream may have made this node's output shapes more precise: merge them in
  // (a known or symbolic dim replaces an unknown one; what was known stays).
  void refresh_shapes(Graph& g, const Node& n, const OpKernel& k) {
    std::vector<ValueInfo> infos(n.inputs.size());
    std::vector<const ValueInfo*> in = infos_of(g, n, infos, true);
    InferContext ctx(n, g.opset, in);
    if (!k.infer(ctx).is_ok()) return;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      int v = n.outputs[o];
      if (v < 0) continue;
      const ValueInfo& got = ctx.outputs()[o];
      Value& val = g.values[v];
      if (got.dtype != val.dtype || !got.shape.rank_known) continue;
      if (!val.shape.rank_known) {
        val.shape = got.shape;
        continue;
      }
      if (val.shape.rank() != got.shape.rank()) continue;
      for (int d = 0; d < got.shape.rank(); ++d) {
        Dim& old = val.shape.dims[d];
        if (!old.known() && old.symbol.empty()) old = got.shape.dims[d];
      }
    }
  }

  static std::vector<const ValueInfo*> infos_of(const Graph& g, const Node& n, std::vector<ValueInfo>& infos,
                                                bool with_values) {
    std::vector<const ValueInfo*> in;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      int v = n.inputs[j];
      if (v < 0) {
        in.push_back(nullptr);
        continue;
      }
      infos[j].dtype = g.values[v].dtype;
      infos[j].shape = g.values[v].shape;
      if (with_values) infos[j].value = g.values[v].constant;
      in.push_back(&infos[j]);
    }
    return in;
  }

  void try_fold(Graph& g, Node& n, const OpKernel& k, size_t& total) {
    if (is_nondeterministic(n)) return;
    bool any_out = false;
    for (int o : n.outputs) {
      if (o < 0) continue;
      if (g.is_graph_output(o)) return;  // outputs stay produced by nodes
      any_out = true;
    }
    if (!any_out) return;
    // Every input must be a constant, or a shape-only input with a fully known shape.
    std::vector<Tensor> shells(n.inputs.size());
    std::vector<const Tensor*> args;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      int v = n.inputs[j];
      if (v < 0) {
        args.push_back(nullptr);
        continue;
      }
      const Value& val = g.values[v];
      if (val.constant) {
        args.push_back(val.constant.get());
      } else if (!k.needs_data(j) && val.shape.fully_known() && dtype_supported(val.dtype)) {
        shells[j] = Tensor::view(val.dtype, val.shape.concrete(), nullptr);
        args.push_back(&shells[j]);
      } else {
        return;
      }
    }
    // Refuse before allocating: every output must have a known, small enough size.
    std::vector<ValueInfo> infos(n.inputs.size());
    InferContext ctx(n, g.opset, infos_of(g, n, infos, true));
    if (!k.infer(ctx).is_ok()) return;
    size_t bytes = 0;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] < 0) continue;
      const ValueInfo& vi = ctx.outputs()[o];
      if (!vi.shape.fully_known() || !dtype_supported(vi.dtype)) return;
      int64_t numel = 0;
      if (!checked_numel(vi.shape.concrete(), numel)) return;
      size_t b = static_cast<size_t>(numel) * dtype_size(vi.dtype);
      if (b > max_tensor_) return;
      bytes += b;
    }
    if (total + bytes > max_total_) return;
    double out_numel = 0;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) out_numel += static_cast<double>(ctx.outputs()[o].shape.numel());
    if (heavy_op_macs(n, args, out_numel) > kFoldMaxMacs) return;
    auto r = evaluate_node(n, g.opset, args);
    if (!r.is_ok()) return;  // the runtime will report it with its inputs
    std::vector<Tensor>& outs = r.value();
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && (outs[o].empty() || outs[o].nbytes() > max_tensor_)) return;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      int v = n.outputs[o];
      if (v < 0) continue;
      Value& val = g.values[v];
      val.dtype = outs[o].dtype();
      val.shape = Shape::of(outs[o].dims());
      val.constant = std::make_shared<const Tensor>(std::move(outs[o]));
      val.producer = -1;
    }
    total += bytes;
    n.dead = true;
  }

  size_t max_tensor_, max_total_;
};

}  // namespace

std::unique_ptr<Pass> make_fold_constants(size_t max_tensor_bytes, size_t max_total_bytes) {
  return std::make_unique<FoldConstants>(max_tensor_bytes, max_total_bytes);
}

}  // namespace infera
