#include "passes/shape_math.h"

#include <algorithm>

#include "ops/util.h"
#include "passes/rewrite.h"

namespace infera {

using namespace rewrite;

namespace {

// The dims Shape node `shape` reports: its input's dims [start, end) (opset 15 attributes).
bool shape_dims(const Graph& g, const Node& shape, std::vector<Dim>& out) {
  if (shape.inputs.size() != 1 || shape.inputs[0] < 0) return false;
  const Shape& xs = g.values[shape.inputs[0]].shape;
  if (!xs.rank_known) return false;
  int64_t r = xs.rank();
  int64_t start = shape.attr_int("start", 0), end = shape.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  out.assign(xs.dims.begin() + start, xs.dims.begin() + end);
  return true;
}

// Gather(Shape(s), j) with a constant index: the dims it picks (false when it is anything else).
bool gathered_dims(const Graph& g, const Node& n, std::vector<Dim>& picked, std::vector<int64_t>* index_dims) {
  if (!is_onnx_op(n, "Gather") || n.inputs.size() != 2 || n.attr_int("axis", 0) != 0) return false;
  int p = producer_of(g, n.inputs[0]);
  const Tensor* idx = constant_of(g, n.inputs[1]);
  std::vector<int64_t> picks;
  std::vector<Dim> dims;
  if (p < 0 || !idx || !read_ints(*idx, picks) || !is_onnx_op(g.nodes[p], "Shape")) return false;
  if (!shape_dims(g, g.nodes[p], dims)) return false;
  int64_t len = static_cast<int64_t>(dims.size());
  picked.clear();
  for (int64_t i : picks) {
    if (i < -len || i >= len) return false;
    picked.push_back(dims[static_cast<size_t>(i < 0 ? i + len : i)]);
  }
  if (index_dims) *index_dims = idx->dims();
  return true;
}

// A non-constant piece of a Concat'ed shape: Gather(Shape(s), [j]) or
// Unsqueeze(Gather(Shape(s), j), axes [0]); out gets the dims of s it stands for.
bool piece_dims(const Graph& g, int v, int64_t opset, std::vector<Dim>& out) {
  int p = producer_of(g, v);
  if (p < 0) return false;
  const Node& n = g.nodes[p];
  std::vector<int64_t> idx_dims;
  if (gathered_dims(g, n, out, &idx_dims)) return idx_dims.size() == 1;
  if (!is_onnx_op(n, "Unsqueeze") || n.inputs.empty()) return false;
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (opset >= 13) {
    const Tensor* a = constant_of(g, n.inputs.size() > 1 ? n.inputs[1] : -1);
    if (!a || !read_ints(*a, axes)) return false;
  }
  if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return false;
  int q = producer_of(g, n.inputs[0]);
  return q >= 0 && gathered_dims(g, g.nodes[q], out, &idx_dims) && idx_dims.empty();
}

// An entry of the target shape: a literal from a constant piece (may be -1 or 0), or a dim.
struct Entry {
  bool literal = false;
  int64_t value = 0;
  Dim dim;
};

bool piece_entries(const Graph& g, int v, int64_t opset, std::vector<Entry>& entries) {
  if (const Tensor* t = constant_of(g, v)) {
    std::vector<int64_t> vals;
    if (t->rank() != 1 || !read_ints(*t, vals)) return false;
    for (int64_t x : vals) entries.push_back(Entry{true, x, Dim()});
    return true;
  }
  std::vector<Dim> dims;
  if (!piece_dims(g, v, opset, dims)) return false;
  for (const Dim& d : dims) entries.push_back(Entry{false, 0, d});
  return true;
}

}  // namespace

bool fold_gather_of_shape(Graph& g, Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || g.is_graph_output(n.outputs[0])) return false;
  std::vector<Dim> picked;
  std::vector<int64_t> idx_dims;
  if (!gathered_dims(g, n, picked, &idx_dims)) return false;
  for (const Dim& d : picked)
    if (!d.known()) return false;
  auto t = Tensor::make(DataType::kInt64, idx_dims);
  if (!t.is_ok()) return false;
  Tensor out = t.take();
  for (size_t i = 0; i < picked.size(); ++i) out.data_as<int64_t>()[i] = picked[i].value;
  Value& val = g.values[n.outputs[0]];
  val.dtype = DataType::kInt64;
  val.shape = Shape::of(out.dims());
  val.constant = std::make_shared<const Tensor>(std::move(out));
  val.producer = -1;
  n.dead = true;
  return true;
}

bool resolve_reshape_shape(Graph& g, Node& n) {
  if (!is_onnx_op(n, "Reshape") || n.inputs.size() != 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return false;
  if (constant_of(g, n.inputs[1]) || (g.opset >= 14 && n.attr_int("allowzero", 0) != 0)) return false;
  const Shape& xs = g.values[n.inputs[0]].shape;
  int c = producer_of(g, n.inputs[1]);
  if (!xs.rank_known || c < 0 || !is_onnx_op(g.nodes[c], "Concat") || g.nodes[c].attr_int("axis", 0) != 0) return false;
  std::vector<Entry> entries;
  for (int v : g.nodes[c].inputs)
    if (v < 0 || !piece_entries(g, v, g.opset, entries)) return false;
  std::vector<int64_t> target;
  for (const Entry& e : entries) {
    size_t pos = target.size();
    if (e.literal) {
      target.push_back(e.value);
    } else if (e.dim.known()) {
      target.push_back(e.dim.value);
    } else if (pos < xs.dims.size() && !e.dim.symbol.empty() && e.dim == xs.dims[pos]) {
      target.push_back(0);  // Reshape copies x's dim here
    } else {
      return false;
    }
  }
  auto t = Tensor::make(DataType::kInt64, {static_cast<int64_t>(target.size())});
  if (!t.is_ok()) return false;
  Tensor shape = t.take();
  std::copy(target.begin(), target.end(), shape.data_as<int64_t>());
  n.inputs[1] = add_constant(g, g.values[n.inputs[1]].name + "_resolved", std::move(shape));
  return true;
}

}  // namespace infera
