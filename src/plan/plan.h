// A plan: the graph specialized to one set of concrete input shapes — per-value shapes,
// plan-time folded values, backend kernel per node, layouts, and arena offsets.
#pragma once

#include <memory>
#include <vector>

#include "backends/cpu/backend.h"
#include "graph/graph.h"
#include "ops/op.h"

namespace infera {

struct PlanStep {
  int node = -1;
  const OpKernel* op = nullptr;
  std::unique_ptr<AccelKernel> accel;  // null: run the reference kernel
  bool dynamic = false;                // output shapes are known only when running
};

struct Plan {
  std::vector<ValueInfo> infos;  // per value: dtype, concrete shape (if static), value (if folded)
  std::vector<Layout> layouts;   // per value
  std::vector<int64_t> offsets;  // per value: byte offset into the arena, -1 if not there
  std::vector<PlanStep> steps;   // in execution order
  PlanReport report;
  std::shared_ptr<void> arena;  // report.arena_bytes, 64-byte aligned
};

// Makes a plan. kernels[i] is the OpKernel of g.nodes[i]. input_dims[i] is the concrete
// shape of g.inputs[i].
Result<std::unique_ptr<Plan>> make_plan(const Graph& g, const std::vector<std::unique_ptr<OpKernel>>& kernels,
                                        const std::vector<std::vector<int64_t>>& input_dims, bool use_dnnl,
                                        int num_threads);

// Liveness-based offsets: values[i] lives over steps [first[i], last[i]] and takes size[i]
// bytes (0: not in the arena, offset -1); returns offsets (multiples of alignment, a power of
// two: 64 for host arenas, 256 for GPU ones) and the arena size. Greedy by size, best fit;
// O(n log n) for real graphs (src/plan/memory.cpp says how).
size_t plan_memory(const std::vector<size_t>& size, const std::vector<int>& first, const std::vector<int>& last,
                   std::vector<int64_t>& offsets, size_t alignment = 64);

}  // namespace infera
