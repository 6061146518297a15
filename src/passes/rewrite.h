// Small graph-editing helpers shared by the passes: constants, uses, producers, rewiring.
// Passes keep Graph invariants loose (dead nodes, stale producers); these helpers cope with that.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"

namespace infera::rewrite {

// The constant contents of value v, or nullptr (v < 0 or not a constant).
const Tensor* constant_of(const Graph& g, int v);

// The live node producing v, or -1 (graph input, constant, or produced by a dead node).
int producer_of(const Graph& g, int v);

// Input slots of live nodes that read v (a node reading v twice counts twice).
int count_uses(const Graph& g, int v);

// The one live node reading v through exactly one input slot, when v is not a graph output
// and has no other reader; -1 otherwise. cons is Graph::consumers(), possibly stale.
int sole_consumer(const Graph& g, const std::vector<std::vector<int>>& cons, int v);

// Makes every live node (except `except`) read `to` where it read `from`. Scans the graph: a
// pass that rewires many values uses a UseIndex instead.
void replace_uses(Graph& g, int from, int to, int except = -1);

// The readers of every value (node, input slot) and which values are graph outputs, built once
// (O(n)) and kept current, so that a pass rewiring or querying k values costs O(n + k) instead of
// O(n k). Nodes appended to the graph and new values are picked up by every query (sync); inputs
// of nodes already indexed must change only through replace_uses(g, idx, ...) (entries that went
// stale otherwise are skipped, but a reader added behind the index's back is missed).
class UseIndex {
 public:
  explicit UseIndex(const Graph& g);
  // Indexes the nodes appended and the values added since the last call.
  void sync(const Graph& g);
  // Input slots of live nodes that read v.
  int count(const Graph& g, int v);
  bool is_graph_output(int v) const { return v >= 0 && v < static_cast<int>(output_.size()) && output_[v]; }

 private:
  friend void replace_uses(Graph& g, UseIndex& idx, int from, int to, int except);
  friend int sole_consumer(const Graph& g, UseIndex& idx, int v);
  void grow(size_t nv);
  // The live (node, slot) pairs reading v now, each once.
  std::vector<std::pair<int, int>> readers(const Graph& g, int v);
  std::vector<std::vector<std::pair<int, int>>> uses_;  // per value: (node, slot), possibly stale
  std::vector<char> output_;
  size_t indexed_nodes_ = 0;
};

// sole_consumer through the index: O(readers of v), exact (no stale consumer lists).
int sole_consumer(const Graph& g, UseIndex& idx, int v);

// replace_uses through the index: touches only the readers of `from`.
void replace_uses(Graph& g, UseIndex& idx, int from, int to, int except = -1);

// Removes live node `node` whose first output equals its first input, rewiring readers to the
// input. A graph output keeps its name (the input's producer writes it instead); false, and the
// node stays, when that cannot be done (the input is a graph input, constant or graph output).
// With an index, rewiring costs the readers of the values involved, not a graph scan.
bool bypass_node(Graph& g, int node, UseIndex* idx = nullptr);

// Adds a constant value named after base (made unique).
int add_constant(Graph& g, const std::string& base, Tensor t);

// Reads a float32/float64 tensor as doubles; false for other dtypes.
bool read_floats(const Tensor& t, std::vector<double>& out);

// Makes a float32/float64 tensor of dims from doubles (vals.size() must equal the numel).
Result<Tensor> make_floats(DataType dt, std::vector<int64_t> dims, const std::vector<double>& vals);

// True for the default ONNX domain ("" or "ai.onnx").
inline bool is_onnx_op(const Node& n, const char* op) { return n.is_onnx(op); }

}  // namespace infera::rewrite
