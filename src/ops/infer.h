// The inference driver: attaches typed ops to nodes, infers whole graphs, evaluates single
// nodes. It sits in the ops layer, above the IR (src/graph knows nothing of ops) and below the
// passes, the planner and the runtime, which all drive it.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "ops/op.h"

namespace infera {

// Makes the typed op of every live node whose Node::op is null (unknown op or domain, bad
// attribute -> error naming the node).
Status attach_ops(Graph& g);

// attach_ops, then infers dtype and (symbolic) shape of every value, in node order. Graph inputs
// and constants keep theirs. Errors name the node, op, tensor and expected vs found value.
Status infer_graph(Graph& g);

// Runs kernel k of node n on inputs (nullptr = left out; an input whose data k does not read,
// see OpKernel::needs_data, may have null data) into fresh tensors of the inferred outputs
// (dtype and fully known shape per slot). Absent outputs come back as empty Tensors.
Result<std::vector<Tensor>> compute_node(const Node& n, const OpKernel& k, const std::vector<const TensorRef*>& inputs,
                                         const std::vector<ValueInfo>& outputs);

// Runs one node's reference kernel on host tensors (constant folding, plan-time folding).
// inputs[i] may be nullptr for an absent optional input. Returns one tensor per output
// slot (empty Tensor for absent outputs).
Result<std::vector<Tensor>> evaluate_node(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs);

}  // namespace infera
