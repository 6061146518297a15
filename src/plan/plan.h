// A plan: the graph specialized to one set of concrete input shapes — per value its shape,
// device, format and arena offset; per step its backend and kernel; the copy / reorder steps
// inserted where backends or formats meet. Immutable once made and shared by every run context
// (src/runtime/run_context.h holds what a run mutates).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/graph.h"
#include "ops/op.h"
#include "plan/bounds.h"

namespace infera {

struct PlanValue {
  enum class Home : uint8_t {
    kArena,     // a slice of its device's arena (offset)
    kInput,     // a graph input: the caller's tensor
    kConstant,  // an initializer or a value folded at plan time (info.value)
    kDynamic,   // allocated when running (output shapes known only then)
    kAbsent,    // never produced (an optional output no step writes)
  };
  std::string name;
  ValueInfo info;  // dtype, concrete shape (if static), contents (constants)
  Home home = Home::kAbsent;
  Device device;
  Format format = Format::kPlain;
  size_t bytes = 0;
  int64_t offset = -1;   // into the arena of its device (kArena)
  int arena = -1;        // index into Plan::arenas (kArena)
  int graph_value = -1;  // the graph value it holds (a converted copy holds its source's)
};

struct PlanStep {
  int node = -1;  // graph node; -1 for an inserted conversion (see convert_node)
  const OpKernel* op = nullptr;
  const Backend* backend = nullptr;
  std::shared_ptr<const StepKernel> kernel;
  std::vector<int> inputs, outputs;  // plan value ids, -1 where absent
  std::vector<Format> input_formats, output_formats;
  bool dynamic = false;  // output shapes known only when running (reference kernels)
  // Nothing to run: static outputs of zero elements each, or a Concat whose inputs their
  // producers wrote into its output (Concat in place).
  bool skip = false;
  int arena = -1;                      // the Plan::arenas entry of its backend's device (scratch, stream)
  std::string op_name;                 // "Conv", "com.infera.FusedConv", "reorder", "copy"
  std::shared_ptr<Node> convert_node;  // conversions: a node for labels and messages
};

// The memory of one device: its activation arena and the scratch of its steps (the largest
// need of any one step: steps of a run context run one after the other).
struct PlanArena {
  Device device;
  const Backend* allocator = nullptr;  // the first backend of that device in the list
  // Host arenas of plans with a GPU: pinned by that backend (full-speed copies, graph capture).
  const Backend* pinner = nullptr;
  size_t bytes = 0;
  size_t scratch_bytes = 0;
  size_t alignment = 64;
};

struct Plan {
  const Graph* graph = nullptr;   // the session's graph (outlives its plans)
  std::vector<PlanValue> values;  // the first graph.values.size() are the graph's values
  std::vector<PlanStep> steps;    // in execution order
  std::vector<int> inputs;        // per graph input: plan value id
  std::vector<int> outputs;       // per graph output: plan value id (host, plain)
  std::vector<PlanArena> arenas;  // one per device that has values or steps
  // GPU plans: every step on one device, none dynamic: the run may be captured into a graph.
  bool graphable = false;
  SessionOptions::GraphMode graph_mode = SessionOptions::GraphMode::kAuto;
  // Per graph input / output: whether the caller may hand a tensor on the plan's device (its only
  // readers / its writer are conversion steps that copy from or to anywhere).
  std::vector<char> input_on_device, output_on_device;
  size_t scratch_bytes = 0;                              // host scratch per run context: the largest step's need
  std::vector<std::shared_ptr<const Backend>> backends;  // keeps the step backends alive
  // Magnitude bounds (plan/bounds.h): per step, how its outputs' follow from its inputs'; per
  // value, the bound each run starts with.
  std::vector<BoundRule> bound_rules;
  std::vector<float> initial_bounds;
  int num_threads = 1;
  PlanReport report;

  const Node& node_of(const PlanStep& s) const { return s.node >= 0 ? graph->nodes[s.node] : *s.convert_node; }
};

struct PlanOptions {
  std::vector<std::shared_ptr<const Backend>> backends;  // priority order; one must run dynamic steps
  int num_threads = 1;
  SessionOptions::GraphMode graph_mode = SessionOptions::GraphMode::kAuto;
  int verbose = 0;
  PerfDb* perf_db = nullptr;
  PackedWeights* packed = nullptr;  // the session's (StepRequest::packed)
  limits::Limits limits;            // the session's (lowered) limits: inferred shapes are checked against them
};

// Makes a plan. input_dims[i] is the concrete shape of g.inputs[i]; every live node has its
// typed op (attach_ops).
Result<std::shared_ptr<const Plan>> make_plan(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                                              const PlanOptions& opts);

// The shape (and, where folded, the value) of every graph value for these input dims, as
// make_plan infers them; no backend is asked (batch chunking compares two batch sizes).
Result<std::vector<ValueInfo>> infer_values(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims);

// Liveness-based offsets: values[i] lives over steps [first[i], last[i]] and takes size[i]
// bytes (0: not in the arena, offset -1); returns offsets (multiples of alignment, a power of
// two: 64 for host arenas, 256 for GPU ones) and the arena size. Greedy by size, best fit;
// O(n log n) for real graphs (src/plan/memory.cpp says how).
size_t plan_memory(const std::vector<size_t>& size, const std::vector<int>& first, const std::vector<int>& last,
                   std::vector<int64_t>& offsets, size_t alignment = 64);

}  // namespace infera
