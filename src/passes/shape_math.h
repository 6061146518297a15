// Folding of PyTorch's shape arithmetic when some dims (the batch) stay symbolic: helpers of
// fold_constants. Each returns true when it rewrote the node.
#pragma once

#include "graph/graph.h"

namespace infera {

// Gather(Shape(x), constant indices), axis 0, where every picked dim of x is known: the Gather's
// output becomes a constant and the node dead.
bool fold_gather_of_shape(Graph& g, Node& n);

// Reshape(x, Concat(pieces)) where each piece is a constant or a dim of some Shape(s) (Gather,
// maybe Unsqueezed) equal to x's dim at the same position (same symbol): the shape input becomes a
// constant with 0 there ("copy the input dim", allowzero 0). Leaves the Concat to dead-node removal.
bool resolve_reshape_shape(Graph& g, Node& n);

}  // namespace infera
