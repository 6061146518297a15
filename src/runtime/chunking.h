// Batch chunking (SessionOptions::memory_budget_bytes, docs/memory.md): when one run of a batch
// would hold more than the budget on the session's device, the batch is split along axis 0 into
// the largest chunks that fit; each chunk runs as an ordinary plan of its own batch size, writing
// its rows of the outputs in place. Only graphs whose samples are independent may be split:
// check_chunkable() proves that from the value shapes at two batch sizes and the nodes' axes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"
#include "ops/op.h"

namespace infera {

// The graph inputs' batch: every input has dim 0 of one symbol. Else an error naming the input.
Status batch_symbol(const Graph& g, std::string& symbol);

// True when the samples of a batch are independent: with the value infos of the same graph at
// batch sizes na and nb (na != nb, both from infer_values), every value computed from an input
// has dim 0 = the batch and its other dims equal at both sizes, every output does, no folded
// value whose data depends on the batch (Shape, Size) reaches a data input, and no node mixes
// samples along axis 0 (Softmax/CumSum/LayerNorm/Reduce/TopK/Gather/Slice... over axis 0, the
// batch as a weight or a MatMul's right operand, a Transpose that moves axis 0). The error names
// the node or value in the way.
Status check_chunkable(const Graph& g, const std::vector<ValueInfo>& a, int64_t na, const std::vector<ValueInfo>& b,
                       int64_t nb);

// A lower bound on the memory one run needs at these value infos: the largest sum of one node's
// non-constant inputs and outputs, which must all be live while it runs. float_bytes: the
// storage of a float value (2 for fp16 plans).
size_t lower_bound_bytes(const Graph& g, const std::vector<ValueInfo>& infos, size_t float_bytes);

// What one run of a plan holds on `device` (PlanReport::peak_bytes): the weights there (on the
// CPU: every constant), its arenas and its scratch.
size_t plan_peak_bytes(const PlanReport& r, const Device& device);

// The chunks of a batch n run with chunks of at most c rows: sizes, in order (the last may be
// smaller; the others equal, as balanced as c allows).
std::vector<int64_t> chunk_sizes(int64_t n, int64_t c);

// Rows [at, at + c) of t (a batch of n along axis 0), as a view on t's device.
inline Tensor batch_rows(const Tensor& t, int64_t n, int64_t at, int64_t c) {
  std::vector<int64_t> d = t.dims();
  const size_t row = n ? t.nbytes() / static_cast<size_t>(n) : 0;
  d[0] = c;
  return Tensor::view(t.dtype(), d, static_cast<char*>(const_cast<void*>(t.data())) + row * at, t.device());
}

}  // namespace infera
