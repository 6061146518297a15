#include "runtime/chunking.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace infera {

namespace {

bool dims_of(const ValueInfo& i, std::vector<int64_t>& d) {
  if (!i.shape.rank_known || !i.shape.fully_known()) return false;
  d = i.shape.concrete();
  return true;
}

// dim 0 is the batch at both sizes and every other dim agrees.
bool keeps_batch(const ValueInfo& a, int64_t na, const ValueInfo& b, int64_t nb) {
  std::vector<int64_t> x, y;
  if (!dims_of(a, x) || !dims_of(b, y) || x.empty() || x.size() != y.size()) return false;
  return x[0] == na && y[0] == nb && std::equal(x.begin() + 1, x.end(), y.begin() + 1);
}

bool same_value(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// The integers of a folded value (axes, perms, slice bounds); false when it is not folded.
bool ints_of(const ValueInfo& i, std::vector<int64_t>& out) {
  if (!i.value) return false;
  const Tensor& t = *i.value;
  out.clear();
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (t.dtype() == DataType::kInt64)
      out.push_back(t.data_as<int64_t>()[k]);
    else if (t.dtype() == DataType::kInt32)
      out.push_back(t.data_as<int32_t>()[k]);
    else
      return false;
  }
  return true;
}

int64_t norm_axis(int64_t ax, int rank) { return ax < 0 ? ax + rank : ax; }

// Input slots that give shapes, sizes, bounds or axes: a value computed from the batch size
// (Shape, Size) may arrive there; the output dims check then proves the result.
bool shape_slot(const Node& n, size_t i) {
  static const std::set<std::string> slot1 = {"Reshape",   "Expand", "Tile",      "Split",     "Squeeze",
                                              "Unsqueeze", "Pad",    "ReduceSum", "ReduceMean"};
  if (i == 0 && n.is_onnx("ConstantOfShape")) return true;
  if (i >= 1 && (n.is_onnx("Slice") || n.is_onnx("Resize") || n.is_onnx("Upsample"))) return true;
  return i == 1 && (n.domain.empty() || n.domain == "ai.onnx") && slot1.count(n.op_type);
}

// Why node n, reading the batch at `carried` inputs, would mix samples ("" when it does not).
std::string mixes(const Graph& g, const Node& n, const std::vector<ValueInfo>& a, const std::vector<char>& carried,
                  int64_t opset) {
  auto in_rank = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0 ? a[n.inputs[i]].shape.rank() : 0; };
  auto carries = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0 && carried[n.inputs[i]]; };
  const std::string& op = n.op_type;
  const int r = in_rank(0);
  auto axis_attr = [&](int64_t dflt) { return norm_axis(n.attr_int("axis", dflt), r); };
  static const std::set<std::string> never = {"Einsum",
                                              "Loop",
                                              "If",
                                              "Scan",
                                              "NonMaxSuppression",
                                              "NonZero",
                                              "Unique",
                                              "RoiAlign",
                                              "MaxRoiPool",
                                              "ReverseSequence",
                                              "Compress",
                                              "GatherND",
                                              "ScatterND",
                                              "Det",
                                              "Multinomial",
                                              "RandomNormalLike",
                                              "RandomUniformLike",
                                              "Bernoulli",
                                              "DFT",
                                              "STFT",
                                              "EyeLike"};
  if (never.count(op)) return "its op reads across samples";
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")
    return axis_attr(opset >= 13 ? -1 : 1) == 0 ? "it normalizes along the batch axis" : "";
  if (op.find("LayerNorm") != std::string::npos || op == "LpNormalization")
    return axis_attr(-1) == 0 ? "it normalizes along the batch axis" : "";
  if (op == "MeanVarianceNormalization") {
    std::vector<int64_t> ax = n.attr_ints("axes", {0, 2, 3});
    for (int64_t x : ax)
      if (norm_axis(x, r) == 0) return "it normalizes along the batch axis";
    return "";
  }
  if (op == "BatchNormalization") return n.attr_int("training_mode", 0) ? "it is in training mode" : "";
  if (op == "CumSum") {
    std::vector<int64_t> ax;
    if (n.inputs.size() < 2 || n.inputs[1] < 0 || !ints_of(a[n.inputs[1]], ax) || ax.size() != 1)
      return "its axis is not a constant";
    return norm_axis(ax[0], r) == 0 ? "it sums along the batch axis" : "";
  }
  if (op.rfind("Reduce", 0) == 0 || op == "ArgMax" || op == "ArgMin") {
    std::vector<int64_t> ax;
    if (n.has_attr("axes"))
      ax = n.attr_ints("axes");
    else if (n.has_attr("axis") || op.rfind("Arg", 0) == 0)
      ax = {n.attr_int("axis", 0)};
    else if (n.inputs.size() >= 2 && n.inputs[1] >= 0 && !ints_of(a[n.inputs[1]], ax))
      return "its axes are not constants";
    if (ax.empty()) return n.attr_int("noop_with_empty_axes", 0) ? "" : "it reduces over every axis";
    for (int64_t x : ax)
      if (norm_axis(x, r) == 0) return "it reduces along the batch axis";
    return "";
  }
  if (op == "TopK" || op == "Sort") return axis_attr(-1) == 0 ? "it sorts along the batch axis" : "";
  if (op == "Gather" || op == "GatherElements" || op == "ScatterElements" || op == "Scatter")
    return carries(0) && axis_attr(0) == 0 ? "it indexes the batch axis" : "";
  if (op == "Slice" && carries(0)) {
    std::vector<int64_t> st, en, ax, sp;
    auto folded = [&](size_t i, std::vector<int64_t>& v) {
      return i < n.inputs.size() && n.inputs[i] >= 0 && ints_of(a[n.inputs[i]], v);
    };
    if (opset < 10) {
      st = n.attr_ints("starts"), en = n.attr_ints("ends"), ax = n.attr_ints("axes");
    } else if (!folded(1, st) || !folded(2, en)) {
      return "its bounds are not constants";
    } else {
      if (n.inputs.size() > 3 && n.inputs[3] >= 0 && !folded(3, ax)) return "its axes are not constants";
      if (n.inputs.size() > 4 && n.inputs[4] >= 0 && !folded(4, sp)) return "its steps are not constants";
    }
    const int64_t d0 = a[n.inputs[0]].shape.rank() > 0 ? a[n.inputs[0]].shape.dims[0].value : 0;
    for (size_t k = 0; k < st.size(); ++k) {
      const int64_t x = ax.empty() ? static_cast<int64_t>(k) : (k < ax.size() ? norm_axis(ax[k], r) : -1);
      const int64_t step = k < sp.size() ? sp[k] : 1;
      if (x == 0 && (st[k] != 0 || step != 1 || k >= en.size() || en[k] < d0)) return "it slices the batch axis";
    }
    return "";
  }
  if (op == "Transpose" && carries(0)) {
    std::vector<int64_t> perm = n.attr_ints("perm");
    const int64_t first = perm.empty() ? r - 1 : perm[0];
    return first != 0 ? "it moves the batch axis" : "";
  }
  if (op == "Gemm")
    return carries(1) || carries(2) || (carries(0) && n.attr_int("transA", 0)) ? "the batch is not its A rows" : "";
  if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul" || op.find("MatMul") != std::string::npos) {
    const size_t b = op == "QLinearMatMul" ? 3 : 1;
    if (carries(b) && in_rank(b) <= 2) return "the batch is its right operand's rows";
    if (carries(0) && r == 1) return "the batch is a vector operand";
    return "";
  }
  if (op.find("Conv") != std::string::npos) {
    const size_t w = op == "QLinearConv" ? 3 : 1;
    return carries(w) ? "the batch reaches its weights" : "";
  }
  if (op == "Trilu" && r <= 2) return "it reads the batch axis as matrix rows";
  (void)g;
  return "";
}

}  // namespace

Status batch_symbol(const Graph& g, std::string& symbol) {
  symbol.clear();
  for (int v : g.inputs) {
    const Value& in = g.values[v];
    const Shape& s = in.shape;
    if (!s.rank_known || s.dims.empty() || s.dims[0].symbol.empty())
      return Status::error(StatusCode::kInvalidInput,
                           "input '" + in.name + "' " + s.str() + " has no symbolic batch dimension on axis 0");
    if (!symbol.empty() && s.dims[0].symbol != symbol)
      return Status::error(StatusCode::kInvalidInput, "inputs disagree on the batch: '" + in.name + "' has '" +
                                                          s.dims[0].symbol + "' on axis 0, another '" + symbol + "'");
    symbol = s.dims[0].symbol;
  }
  if (symbol.empty()) return Status::error(StatusCode::kInvalidInput, "the model has no inputs");
  return Status::ok();
}

Status check_chunkable(const Graph& g, const std::vector<ValueInfo>& a, int64_t na, const std::vector<ValueInfo>& b,
                       int64_t nb) {
  std::vector<char> carried(g.values.size(), 0);
  for (int v : g.inputs) carried[v] = 1;
  auto err = [](const std::string& m) { return Status::error(StatusCode::kInvalidInput, m); };
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    bool any = false, folded = true;
    for (int v : n.inputs) any = any || (v >= 0 && carried[v]);
    for (int v : n.outputs) folded = folded && (v < 0 || (a[v].value && b[v].value));
    if (folded) continue;  // a constant at both sizes (its inputs are constants or shapes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      if (v < 0 || g.values[v].constant || !a[v].value || !b[v].value || same_value(*a[v].value, *b[v].value)) continue;
      if (!shape_slot(n, i))
        return err(n.label() + " reads '" + g.values[v].name +
                   "', computed from the batch size (Shape/Size), as data: its samples are not independent");
    }
    if (any) {
      const std::string why = mixes(g, n, a, carried, g.opset);
      if (!why.empty()) return err(n.label() + ": " + why + ", so its samples are not independent");
    }
    // A batch-shaped output made from no batch input repeats one row only for these ops.
    const bool row_invariant = n.is_onnx("ConstantOfShape") || n.is_onnx("Expand");
    for (int v : n.outputs) {
      if (v < 0) continue;
      const bool kb = keeps_batch(a[v], na, b[v], nb);
      if (any && !kb)
        return err(n.label() + ": output '" + g.values[v].name + "' is " + a[v].shape.str() + " at batch " +
                   std::to_string(na) + " and " + b[v].shape.str() + " at batch " + std::to_string(nb) +
                   ": the batch does not stay on axis 0");
      if (!any && !kb && a[v].shape.str() != b[v].shape.str())
        return err(n.label() + ": output '" + g.values[v].name + "' changes with the batch size (" + a[v].shape.str() +
                   " vs " + b[v].shape.str() + ") without being a batch");
      if (!any && kb && !row_invariant)
        return err(n.label() + ": output '" + g.values[v].name +
                   "' is batch-shaped but made from the batch size only (its rows may differ)");
      carried[v] = any || kb;
    }
  }
  for (int v : g.outputs)
    if (!carried[v] || !keeps_batch(a[v], na, b[v], nb))
      return err("output '" + g.values[v].name + "' " + a[v].shape.str() + " does not have the batch on axis 0");
  return Status::ok();
}

size_t lower_bound_bytes(const Graph& g, const std::vector<ValueInfo>& infos, size_t float_bytes) {
  auto bytes = [&](int v) -> size_t {
    if (v < 0 || infos[v].value || !infos[v].shape.fully_known()) return 0;
    const DataType t = infos[v].dtype;
    const size_t es = t == DataType::kFloat32 ? float_bytes : dtype_size(t);
    return static_cast<size_t>(std::max<int64_t>(infos[v].shape.numel(), 0)) * es;
  };
  size_t best = 0;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    size_t s = 0;
    bool folded = true;
    for (int v : n.outputs) folded = folded && (v < 0 || infos[v].value);
    if (folded) continue;
    for (int v : n.inputs) s += bytes(v);
    for (int v : n.outputs) s += bytes(v);
    best = std::max(best, s);
  }
  return best;
}

size_t plan_peak_bytes(const PlanReport& r, const Device& device) {
  auto at = [&](const std::map<std::string, size_t>& m) {
    auto it = m.find(device.str());
    return it == m.end() ? size_t(0) : it->second;
  };
  const size_t weights = device.is_cpu() ? r.weight_bytes : at(r.weight_bytes_per_device);
  return weights + at(r.arena_bytes_per_device) + at(r.scratch_bytes_per_device);
}

std::vector<int64_t> chunk_sizes(int64_t n, int64_t c) {
  std::vector<int64_t> out;
  if (n <= 0 || c <= 0) return out;
  const int64_t k = (n + c - 1) / c, each = (n + k - 1) / k;
  for (int64_t left = n; left > 0; left -= each) out.push_back(std::min(each, left));
  return out;
}

}  // namespace infera
