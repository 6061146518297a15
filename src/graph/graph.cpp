#include "graph/graph.h"

#include <algorithm>
#include <set>

namespace infera {

std::string Dim::str() const {
  if (known()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

Shape Shape::of(const std::vector<int64_t>& d) {
  Shape s;
  s.rank_known = true;
  for (int64_t v : d) s.dims.emplace_back(v);
  return s;
}

Shape Shape::of_rank(size_t rank) {
  Shape s;
  s.rank_known = true;
  s.dims.resize(rank);
  return s;
}

bool Shape::fully_known() const {
  if (!rank_known) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

std::vector<int64_t> Shape::concrete() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.value);
  return out;
}

int64_t Shape::numel() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.value;
  return n;
}

std::string Shape::str() const {
  if (!rank_known) return "[?]";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].str();
  }
  return s + "]";
}

int64_t Node::attr_int(const std::string& k, int64_t dflt) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? dflt : it->second.i;
}

float Node::attr_float(const std::string& k, float dflt) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? dflt : it->second.f;
}

std::string Node::attr_string(const std::string& k, const std::string& dflt) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? dflt : it->second.s;
}

std::vector<int64_t> Node::attr_ints(const std::string& k, const std::vector<int64_t>& dflt) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? dflt : it->second.ints;
}

std::vector<float> Node::attr_floats(const std::string& k, const std::vector<float>& dflt) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? dflt : it->second.floats;
}

std::string Node::label() const {
  std::string op = domain.empty() ? op_type : domain + "." + op_type;
  return "node '" + name + "' (" + op + ")";
}

int Graph::add_value(const std::string& name, DataType dtype, Shape shape) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  values.push_back(std::move(v));
  int id = static_cast<int>(values.size()) - 1;
  if (!name.empty()) by_name_[name] = id;
  return id;
}

int Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::string Graph::unique_name(const std::string& base) {
  if (find_value(base) < 0) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (find_value(n) < 0) return n;
  }
}

int Graph::add_node(Node n) {
  int id = static_cast<int>(nodes.size());
  for (int o : n.outputs)
    if (o >= 0) values[o].producer = id;
  nodes.push_back(std::move(n));
  return id;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int v : nodes[i].inputs)
      if (v >= 0 && (c[v].empty() || c[v].back() != static_cast<int>(i))) c[v].push_back(static_cast<int>(i));
  }
  return c;
}

bool Graph::is_graph_output(int v) const { return std::find(outputs.begin(), outputs.end(), v) != outputs.end(); }

size_t Graph::live_node_count() const {
  size_t n = 0;
  for (const Node& nd : nodes) n += nd.dead ? 0 : 1;
  return n;
}

Status Graph::compact() {
  // Drop dead nodes (in place: a pass that removed nothing costs one scan, not a copy).
  size_t kept = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    if (kept != i) nodes[kept] = std::move(nodes[i]);
    ++kept;
  }
  nodes.resize(kept);
  // Drop values nothing references.
  std::vector<char> used(values.size(), 0);
  for (int v : inputs) used[v] = 1;
  for (int v : outputs) used[v] = 1;
  for (const Node& n : nodes) {
    for (int v : n.inputs)
      if (v >= 0) used[v] = 1;
    for (int v : n.outputs)
      if (v >= 0) used[v] = 1;
  }
  if (std::find(used.begin(), used.end(), 0) != used.end()) {
    std::vector<int> remap(values.size(), -1);
    size_t nv = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!used[i]) continue;
      remap[i] = static_cast<int>(nv);
      if (nv != i) values[nv] = std::move(values[i]);
      ++nv;
    }
    values.resize(nv);
    auto fix = [&](std::vector<int>& ids) {
      for (int& v : ids)
        if (v >= 0) v = remap[v];
    };
    fix(inputs);
    fix(outputs);
    for (Node& n : nodes) {
      fix(n.inputs);
      fix(n.outputs);
    }
    // Ids shifted: the name map is rebuilt only then.
    by_name_.clear();
    for (size_t i = 0; i < values.size(); ++i)
      if (!values[i].name.empty()) by_name_[values[i].name] = static_cast<int>(i);
  }
  return topo_sort(*this);
}

Status topo_sort(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs) {
      if (o < 0) continue;
      if (producer[o] >= 0)
        return Status::error(g.source + ": tensor '" + g.values[o].name + "' is produced twice, by " +
                             g.nodes[producer[o]].label() + " and " + g.nodes[i].label());
      if (g.values[o].constant)
        return Status::error(g.source + ": " + g.nodes[i].label() + " output '" + g.values[o].name +
                             "' has the same name as an initializer");
      producer[o] = static_cast<int>(i);
    }
  }
  std::vector<char> is_input(nv, 0);
  for (int v : g.inputs) is_input[v] = 1;
  // Readers of each node's outputs as one flat array (CSR): one allocation, not one per node.
  const size_t nn = g.nodes.size();
  std::vector<int> pending(nn, 0);
  std::vector<size_t> user_begin(nn + 1, 0);
  for (size_t i = 0; i < nn; ++i) {
    for (int v : g.nodes[i].inputs) {
      if (v < 0) continue;
      if (producer[v] >= 0) {
        pending[i]++;
        user_begin[producer[v] + 1]++;
      } else if (!is_input[v] && !g.values[v].constant) {
        return Status::error(g.source + ": " + g.nodes[i].label() + " reads tensor '" + g.values[v].name +
                             "', which no node, input or initializer defines");
      }
    }
  }
  for (size_t i = 0; i < nn; ++i) user_begin[i + 1] += user_begin[i];
  std::vector<int> users(user_begin[nn]);
  std::vector<size_t> fill(user_begin.begin(), user_begin.end() - 1);
  for (size_t i = 0; i < nn; ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0 && producer[v] >= 0) users[fill[producer[v]]++] = static_cast<int>(i);
  // Kahn's algorithm, FIFO: the order passes and plans have always seen.
  std::vector<int> order;
  order.reserve(nn);
  for (size_t i = 0; i < nn; ++i)
    if (pending[i] == 0) order.push_back(static_cast<int>(i));
  for (size_t head = 0; head < order.size(); ++head) {
    const int n = order[head];
    for (size_t u = user_begin[n]; u < user_begin[n + 1]; ++u)
      if (--pending[users[u]] == 0) order.push_back(users[u]);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i] > 0) return Status::error(g.source + ": the graph has a cycle through " + g.nodes[i].label());
  }
  for (int v : g.outputs)
    if (producer[v] < 0 && !is_input[v] && !g.values[v].constant)
      return Status::error(g.source + ": graph output '" + g.values[v].name + "' is not produced by any node");
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (int n : order) sorted.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(sorted);
  for (Value& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs)
      if (o >= 0) g.values[o].producer = static_cast<int>(i);
  return Status::ok();
}

}  // namespace infera
