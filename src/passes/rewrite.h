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

// Makes every live node (except `except`) read `to` where it read `from`.
void replace_uses(Graph& g, int from, int to, int except = -1);

// Removes live node `node` whose first output equals its first input, rewiring readers to the
// input. A graph output keeps its name (the input's producer writes it instead); false, and the
// node stays, when that cannot be done (the input is a graph input, constant or graph output).
bool bypass_node(Graph& g, int node);

// Adds a constant value named after base (made unique).
int add_constant(Graph& g, const std::string& base, Tensor t);

// Reads a float32/float64 tensor as doubles; false for other dtypes.
bool read_floats(const Tensor& t, std::vector<double>& out);

// Makes a float32/float64 tensor of dims from doubles (vals.size() must equal the numel).
Result<Tensor> make_floats(DataType dt, std::vector<int64_t> dims, const std::vector<double>& vals);

// True for the default ONNX domain ("" or "ai.onnx").
inline bool is_onnx_op(const Node& n, const char* op) {
  return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx");
}

}  // namespace infera::rewrite
