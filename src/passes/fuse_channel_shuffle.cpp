// fuse_channel_shuffle: ShuffleNet's Reshape(X to [N, g, C/g, d...]) -> Transpose(0, 2, 1, 3, ...) ->
// Reshape(to X's shape) and the Slices (or one Split) along channels that partition its result ->
// com.infera.ChannelShuffle(X), one output per part (one output when its readers are anything
// else). Assumes inferred shapes: the reshapes' dims must be those (symbolic dims equal by name,
// unknown dims never match), the intermediates read by the pattern only, the slices step-1 with
// constant bounds.
#include <algorithm>

#include "ops/tensor_ops.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool const_ints(const Graph& g, const Node& n, size_t i, std::vector<int64_t>& out) {
  const Tensor* t = n.inputs.size() > i ? constant_of(g, n.inputs[i]) : nullptr;
  return t && read_ints(*t, out);
}

bool same_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

// The group g when Reshape node r turns its input X ([N, C, d...], C known) into [N, g, C/g, d...];
// else 0.
int64_t split_group(const Graph& g, const Node& r) {
  if (r.inputs.size() != 2 || r.outputs.size() != 1 || r.inputs[0] < 0) return 0;
  const Shape& x = g.values[r.inputs[0]].shape;
  const Shape& y = g.values[r.outputs[0]].shape;
  if (!x.rank_known || !y.rank_known || x.rank() < 2 || y.rank() != x.rank() + 1) return 0;
  const Dim &c = x.dims[1], &grp = y.dims[1], &per = y.dims[2];
  if (!c.known() || c.value <= 0 || !grp.known() || !per.known() || grp.value <= 0 || grp.value * per.value != c.value)
    return 0;
  if (!(y.dims[0] == x.dims[0])) return 0;
  for (int i = 2; i < x.rank(); ++i)
    if (!(y.dims[i + 1] == x.dims[i])) return 0;
  return grp.value;
}

// Slice node n's channel range [first, first + count) of a value of shape s: one axis, the
// channel axis, step 1, constant bounds; false otherwise or when empty.
bool channel_range(const Graph& g, const Node& n, const Shape& s, int64_t& first, int64_t& count) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (g.opset < 10) {
    if (!n.has_attr("starts") || !n.has_attr("ends") || !n.has_attr("axes")) return false;
    starts = n.attr_ints("starts"), ends = n.attr_ints("ends"), axes = n.attr_ints("axes");
  } else {
    // Absent axes mean axis 0: not the channels.
    if (n.inputs.size() < 4 || !const_ints(g, n, 1, starts) || !const_ints(g, n, 2, ends) || !const_ints(g, n, 3, axes))
      return false;
    if (n.inputs.size() > 4 && n.inputs[4] >= 0 && !const_ints(g, n, 4, steps)) return false;
  }
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() > 1) return false;
  if (!steps.empty() && steps[0] != 1) return false;
  int64_t axis = axes[0];
  if (!normalize_axis(axis, s.rank()) || axis != 1) return false;
  const AxisSlice a = clamp_slice(s.dims[1].value, starts[0], ends[0], 1);
  first = a.start;
  count = a.count;
  return count > 0;
}

// The readers of y as parts of a partition of its channels: (first channel, output value) in
// channel order; empty when they are not exactly that.
std::vector<std::pair<int64_t, int>> channel_parts(const Graph& g, UseIndex& idx,
                                                   const std::vector<std::vector<int>>& cons, int y) {
  const Shape& s = g.values[y].shape;
  const int64_t c = s.dims[1].value;
  std::vector<std::pair<int64_t, int>> parts;
  if (idx.is_graph_output(y) || y >= static_cast<int>(cons.size())) return {};
  std::vector<int> readers;
  for (int n : cons[y])
    if (!g.nodes[n].dead && std::find(readers.begin(), readers.end(), n) == readers.end()) readers.push_back(n);
  if (readers.empty() || static_cast<int>(readers.size()) != idx.count(g, y)) return {};  // each reads y once
  for (int r : readers) {
    const Node& n = g.nodes[r];
    if (n.inputs.empty() || n.inputs[0] != y) return {};
    if (is_onnx_op(n, "Slice") && n.outputs.size() == 1 && n.outputs[0] >= 0) {
      int64_t first = 0, count = 0;
      if (!channel_range(g, n, s, first, count)) return {};
      const Shape& o = g.values[n.outputs[0]].shape;
      if (!o.rank_known || o.rank() != s.rank() || !(o.dims[1] == Dim(count))) return {};
      parts.emplace_back(first, n.outputs[0]);
    } else if (is_onnx_op(n, "Split") && readers.size() == 1) {
      int64_t axis = n.attr_int("axis", 0);
      if (!normalize_axis(axis, s.rank()) || axis != 1) return {};
      int64_t first = 0;
      for (int o : n.outputs) {
        const Shape& os = o >= 0 ? g.values[o].shape : Shape();
        if (o < 0 || !os.rank_known || os.rank() != s.rank() || !os.dims[1].known() || os.dims[1].value <= 0) return {};
        parts.emplace_back(first, o);
        first += os.dims[1].value;
      }
      if (first != c) return {};
    } else {
      return {};
    }
  }
  std::sort(parts.begin(), parts.end());
  int64_t next = 0;  // the parts tile [0, C): each starts where the last ended
  for (const auto& [first, v] : parts) {
    if (first != next) return {};
    next += g.values[v].shape.dims[1].value;
  }
  return next == c ? parts : std::vector<std::pair<int64_t, int>>{};
}

bool is_shuffle_perm(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank || rank < 3) return false;
  for (int i = 0; i < rank; ++i)
    if (perm[i] != (i == 1 ? 2 : i == 2 ? 1 : i)) return false;
  return true;
}

class FuseChannelShuffle : public Pass {
 public:
  const char* name() const override { return "fuse_channel_shuffle"; }

  Status run(Graph& g) override {
    UseIndex idx(g);
    const std::vector<std::vector<int>> cons = g.consumers();  // readers of values made before the pass
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& t = g.nodes[i];
      if (t.dead || !is_onnx_op(t, "Transpose") || t.inputs.size() != 1 || t.outputs.size() != 1 || !t.has_attr("perm"))
        continue;
      const int tn = static_cast<int>(i);
      const int r1 = producer_of(g, t.inputs[0]);
      if (r1 < 0 || !is_onnx_op(g.nodes[r1], "Reshape") || sole_consumer(g, idx, t.inputs[0]) != tn) continue;
      const int x = g.nodes[r1].inputs[0];
      const int64_t grp = split_group(g, g.nodes[r1]);
      if (grp == 0 || !is_shuffle_perm(t.attr_ints("perm"), g.values[x].shape.rank() + 1)) continue;
      const int r2 = sole_consumer(g, idx, t.outputs[0]);
      if (r2 < 0 || !is_onnx_op(g.nodes[r2], "Reshape") || g.nodes[r2].inputs[0] != t.outputs[0] ||
          g.nodes[r2].outputs.size() != 1)
        continue;
      const int y = g.nodes[r2].outputs[0];
      if (y < 0 || !g.values[y].shape.rank_known || !same_dims(g.values[y].shape.dims, g.values[x].shape.dims))
        continue;
      Node cs;
      cs.name = g.nodes[r2].name + "/ChannelShuffle";
      cs.op_type = "ChannelShuffle";
      cs.domain = "com.infera";
      cs.inputs = {x};
      Attribute group;
      group.kind = Attribute::kInt;
      group.i = grp;
      cs.attrs["group"] = group;
      std::vector<int> dead = {r1, tn, r2};
      const auto parts = channel_parts(g, idx, cons, y);
      if (parts.empty()) {
        cs.outputs = {y};
      } else {
        Attribute split;
        split.kind = Attribute::kInts;
        for (const auto& [first, v] : parts) {
          cs.outputs.push_back(v);
          split.ints.push_back(g.values[v].shape.dims[1].value);
          dead.push_back(producer_of(g, v));
        }
        cs.attrs["split"] = split;
      }
      for (int n : dead) g.nodes[n].dead = true;
      g.add_node(std::move(cs));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_channel_shuffle() { return std::make_unique<FuseChannelShuffle>(); }

}  // namespace infera
