#include "passes/rewrite.h"

#include <algorithm>

namespace infera::rewrite {

const Tensor* constant_of(const Graph& g, int v) {
  if (v < 0 || v >= static_cast<int>(g.values.size())) return nullptr;
  return g.values[v].constant.get();
}

int producer_of(const Graph& g, int v) {
  if (v < 0) return -1;
  auto makes = [&](int n) {
    if (n < 0 || n >= static_cast<int>(g.nodes.size()) || g.nodes[n].dead) return false;
    const auto& o = g.nodes[n].outputs;
    return std::find(o.begin(), o.end(), v) != o.end();
  };
  if (makes(g.values[v].producer)) return g.values[v].producer;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (makes(static_cast<int>(n))) return static_cast<int>(n);
  return -1;
}

int count_uses(const Graph& g, int v) {
  int c = 0;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    for (int i : n.inputs) c += (i == v);
  }
  return c;
}

int sole_consumer(const Graph& g, const std::vector<std::vector<int>>& cons, int v) {
  if (v < 0 || g.is_graph_output(v) || v >= static_cast<int>(cons.size())) return -1;
  int found = -1, slots = 0;
  for (int n : cons[v]) {
    if (n < 0 || n >= static_cast<int>(g.nodes.size()) || g.nodes[n].dead) continue;
    int s = static_cast<int>(std::count(g.nodes[n].inputs.begin(), g.nodes[n].inputs.end(), v));
    if (s == 0) continue;
    if (found >= 0 && found != n) return -1;
    found = n;
    slots += s;
  }
  if (found < 0 || slots != 1) return -1;
  // The consumer list may be stale: make sure no node added since reads v as well.
  return count_uses(g, v) == 1 ? found : -1;
}

void replace_uses(Graph& g, int from, int to, int except) {
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].dead || static_cast<int>(n) == except) continue;
    for (int& i : g.nodes[n].inputs)
      if (i == from) i = to;
  }
}

UseIndex::UseIndex(const Graph& g) {
  sync(g);
  for (int v : g.outputs) output_[v] = 1;
}

void UseIndex::sync(const Graph& g) {
  grow(g.values.size());
  for (; indexed_nodes_ < g.nodes.size(); ++indexed_nodes_) {
    const Node& node = g.nodes[indexed_nodes_];
    if (node.dead) continue;
    for (size_t s = 0; s < node.inputs.size(); ++s)
      if (node.inputs[s] >= 0)
        uses_[node.inputs[s]].emplace_back(static_cast<int>(indexed_nodes_), static_cast<int>(s));
  }
}

void UseIndex::grow(size_t nv) {
  if (uses_.size() < nv) {
    uses_.resize(nv);
    output_.resize(nv, 0);
  }
}

std::vector<std::pair<int, int>> UseIndex::readers(const Graph& g, int v) {
  sync(g);
  std::vector<std::pair<int, int>> r;
  if (v < 0 || v >= static_cast<int>(uses_.size())) return r;
  for (auto [n, s] : uses_[v])
    if (!g.nodes[n].dead && g.nodes[n].inputs[s] == v) r.emplace_back(n, s);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

int UseIndex::count(const Graph& g, int v) { return static_cast<int>(readers(g, v).size()); }

int sole_consumer(const Graph& g, UseIndex& idx, int v) {
  if (v < 0 || idx.is_graph_output(v)) return -1;
  auto r = idx.readers(g, v);
  return r.size() == 1 ? r[0].first : -1;
}

void replace_uses(Graph& g, UseIndex& idx, int from, int to, int except) {
  if (from < 0 || to < 0 || from == to) return;
  std::vector<std::pair<int, int>> keep;
  for (auto [n, s] : idx.readers(g, from)) {
    if (n == except) {
      keep.emplace_back(n, s);
      continue;
    }
    g.nodes[n].inputs[s] = to;
    idx.uses_[to].emplace_back(n, s);
  }
  idx.uses_[from] = std::move(keep);
}

bool bypass_node(Graph& g, int node, UseIndex* idx) {
  Node& n = g.nodes[node];
  if (n.dead || n.inputs.empty() || n.outputs.empty()) return false;
  int x = n.inputs[0], y = n.outputs[0];
  if (x < 0 || y < 0) return false;
  auto rewire = [&](int from, int to) {
    if (idx)
      replace_uses(g, *idx, from, to, node);
    else
      replace_uses(g, from, to, node);
  };
  auto is_output = [&](int v) { return idx ? idx->is_graph_output(v) : g.is_graph_output(v); };
  if (!is_output(y)) {
    rewire(y, x);
    n.dead = true;
    return true;
  }
  // y must keep its name: make x's producer write y instead, when x is free to vanish.
  int p = producer_of(g, x);
  if (p < 0 || is_output(x)) return false;
  rewire(x, y);
  for (int& o : g.nodes[p].outputs)
    if (o == x) o = y;
  g.values[y].producer = p;
  g.values[x].producer = -1;
  g.nodes[node].dead = true;
  return true;
}

int add_constant(Graph& g, const std::string& base, Tensor t) {
  int v = g.add_value(g.unique_name(base), t.dtype(), Shape::of(t.dims()));
  g.values[v].constant = std::make_shared<const Tensor>(std::move(t));
  return v;
}

bool read_floats(const Tensor& t, std::vector<double>& out) {
  out.resize(static_cast<size_t>(t.numel()));
  if (t.dtype() == DataType::kFloat32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data_as<float>()[i];
    return true;
  }
  if (t.dtype() == DataType::kFloat64) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data_as<double>()[i];
    return true;
  }
  out.clear();
  return false;
}

Result<Tensor> make_floats(DataType dt, std::vector<int64_t> dims, const std::vector<double>& vals) {
  if (dt != DataType::kFloat32 && dt != DataType::kFloat64)
    return Status::error(std::string("make_floats: unsupported dtype ") + dtype_name(dt));
  auto r = Tensor::make(dt, std::move(dims));
  if (!r.is_ok()) return r.status();
  Tensor t = r.take();
  if (static_cast<size_t>(t.numel()) != vals.size()) return Status::error("make_floats: size mismatch");
  for (size_t i = 0; i < vals.size(); ++i) {
    if (dt == DataType::kFloat32)
      t.data_as<float>()[i] = static_cast<float>(vals[i]);
    else
      t.data_as<double>()[i] = vals[i];
  }
  return t;
}

}  // namespace infera::rewrite
