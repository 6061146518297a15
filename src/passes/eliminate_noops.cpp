// eliminate_noops: removes nodes that provably return their input unchanged: Pad with constant
// all-zero pads, Slice that keeps every element, Cast to the input's dtype, Expand to a shape the
// input already has. Assumes constant operands are folded; unknown dims only count where no size
// can change the answer (a Slice end of INT64_MAX), so symbolic batch stays valid.
#include <cstdint>
#include <limits>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The constant int32/int64 contents of input slot i of n; false when absent or not constant.
bool const_ints(const Graph& g, const Node& n, size_t i, std::vector<int64_t>& out) {
  const Tensor* t = n.inputs.size() > i ? constant_of(g, n.inputs[i]) : nullptr;
  if (!t) return false;
  out.resize(static_cast<size_t>(t->numel()));
  if (t->dtype() == DataType::kInt64)
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data_as<int64_t>()[k];
  else if (t->dtype() == DataType::kInt32)
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data_as<int32_t>()[k];
  else
    return false;
  return true;
}

bool all_zero(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x != 0) return false;
  return true;
}

bool pad_is_noop(const Graph& g, const Node& n) {
  std::vector<int64_t> pads;
  if (g.opset < 11) return n.has_attr("pads") && all_zero(n.attr_ints("pads"));
  return const_ints(g, n, 1, pads) && all_zero(pads);  // any mode: nothing is added
}

// Slice keeps everything when, on every named axis, step is 1 and [start, end) clamps to [0, dim).
bool slice_is_noop(const Graph& g, const Node& n, const Shape& in) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (g.opset < 10) {
    if (!n.has_attr("starts") || !n.has_attr("ends")) return false;
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    if (n.has_attr("axes")) axes = n.attr_ints("axes");
  } else {
    if (!const_ints(g, n, 1, starts) || !const_ints(g, n, 2, ends)) return false;
    bool has_axes = n.inputs.size() > 3 && n.inputs[3] >= 0, has_steps = n.inputs.size() > 4 && n.inputs[4] >= 0;
    if ((has_axes && !const_ints(g, n, 3, axes)) || (has_steps && !const_ints(g, n, 4, steps))) return false;
  }
  if (!in.rank_known || starts.size() != ends.size()) return false;
  const int64_t rank = in.rank();
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size())) return false;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || (!steps.empty() && steps[k] != 1)) return false;
    const Dim& d = in.dims[static_cast<size_t>(a)];
    if (!d.known()) {
      if (starts[k] != 0 || ends[k] != kInt64Max) return false;
      continue;
    }
    int64_t s = starts[k] < 0 ? starts[k] + d.value : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + d.value : ends[k];
    if (s > 0 || e < d.value) return false;  // clamped: start <= 0 -> 0, end >= dim -> dim
  }
  return true;
}

// Expand to a constant shape is a no-op when that shape broadcasts into the input's without
// growing it: each of its dims is 1 or the input's (known) dim, and its rank is not larger.
bool expand_is_noop(const Graph& g, const Node& n, const Shape& in) {
  std::vector<int64_t> shape;
  if (!const_ints(g, n, 1, shape) || !in.rank_known || static_cast<int64_t>(shape.size()) > in.rank()) return false;
  const size_t off = static_cast<size_t>(in.rank()) - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    const Dim& d = in.dims[off + k];
    if (shape[k] != 1 && !(d.known() && d.value == shape[k])) return false;
  }
  return true;
}

bool is_noop(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const Value& x = g.values[n.inputs[0]];
  const Value& y = g.values[n.outputs[0]];
  if (x.dtype == DataType::kUndefined || x.dtype != y.dtype) return false;
  if (is_onnx_op(n, "Pad")) return pad_is_noop(g, n);
  if (is_onnx_op(n, "Slice")) return slice_is_noop(g, n, x.shape);
  if (is_onnx_op(n, "Cast")) return n.inputs.size() == 1;  // dtypes already compared
  if (is_onnx_op(n, "Expand")) return expand_is_noop(g, n, x.shape);
  return false;
}

class EliminateNoops : public Pass {
 public:
  const char* name() const override { return "eliminate_noops"; }

  Status run(Graph& g) override {
    UseIndex idx(g);  // a chain of k no-ops costs O(n + k), not O(n k)
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!g.nodes[i].dead && is_noop(g, g.nodes[i])) bypass_node(g, static_cast<int>(i), &idx);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_noops() { return std::make_unique<EliminateNoops>(); }

}  // namespace infera
