// eliminate_identity: removes Identity and inference-mode Dropout, rewiring readers to the input.
// Assumes graph output names must survive: an output is renamed onto its producer, or the node is kept.
#include <cstring>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

// Dropout is the identity unless training_mode (opset >= 12) is true with a ratio that is not a
// constant 0, or training_mode is not known before running.
bool dropout_is_identity(const Graph& g, const Node& n) {
  if (g.opset < 12 || n.inputs.size() < 3 || n.inputs[2] < 0) return true;
  const Tensor* t = constant_of(g, n.inputs[2]);
  if (!t || t->numel() != 1 || dtype_size(t->dtype()) != 1) return false;
  if (*static_cast<const uint8_t*>(t->data()) == 0) return true;
  std::vector<double> ratio;
  const Tensor* r = constant_of(g, n.inputs[1]);
  return r && r->numel() == 1 && read_floats(*r, ratio) && ratio[0] == 0.0;
}

// Replaces a used Dropout mask (all true in inference) by a constant; false if it cannot.
bool drop_mask(Graph& g, UseIndex& idx, int mask) {
  if (mask < 0 || (idx.count(g, mask) == 0 && !idx.is_graph_output(mask))) return true;
  const Shape& s = g.values[mask].shape;
  if (idx.is_graph_output(mask) || !s.fully_known() || s.numel() > int64_t(kFoldMaxTensorBytes)) return false;
  auto t = Tensor::make(DataType::kBool, s.concrete());
  if (!t.is_ok()) return false;
  Tensor ones = t.take();
  if (ones.nbytes()) std::memset(ones.data(), 1, ones.nbytes());
  int c = add_constant(g, g.values[mask].name + "_ones", std::move(ones));
  replace_uses(g, idx, mask, c);
  return true;
}

class EliminateIdentity : public Pass {
 public:
  const char* name() const override { return "eliminate_identity"; }

  Status run(Graph& g) override {
    // One index for the whole pass: a chain of k Identity nodes is O(n + k), not O(n k).
    UseIndex idx(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (n.dead || n.inputs.empty() || n.outputs.empty()) continue;
      bool identity = is_onnx_op(n, "Identity");
      bool dropout = is_onnx_op(n, "Dropout") && dropout_is_identity(g, n);
      if (!identity && !dropout) continue;
      if (n.inputs[0] < 0 || n.outputs[0] < 0) continue;
      if (dropout && !drop_mask(g, idx, n.outputs.size() > 1 ? n.outputs[1] : -1)) continue;
      bypass_node(g, static_cast<int>(i), &idx);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_identity() { return std::make_unique<EliminateIdentity>(); }

}  // namespace infera
