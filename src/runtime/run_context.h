// A run context: everything one run of a plan mutates — an arena per device, the scratch of the
// step kernels, each kernel's state, the tensor views of every value, dynamic-shape tensors, the
// device streams and a captured GPU graph. Made once and reused: a run of a static-shape plan
// allocates nothing. Several run contexts of one plan run at once on different threads.
#pragma once

#include <memory>
#include <vector>

#include "plan/plan.h"
#include "runtime/arena_pool.h"

namespace infera {

class RunContext {
 public:
  // Arenas and scratch come from `pool` when given (and go back to it), else straight from
  // the backends.
  static Result<std::unique_ptr<RunContext>> make(std::shared_ptr<const Plan> plan,
                                                  std::shared_ptr<ArenaPool> pool = nullptr);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // inputs[i]: graph input i (dims as the plan's; host memory, or the plan's device where
  // plan().input_on_device[i]); outputs[i]: a tensor of graph output i's dtype and dims to write
  // into (host, or the device where plan().output_on_device[i]), or an empty Tensor to be
  // allocated (data-dependent shapes). Timings (when given) get one entry per step.
  Status run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
             std::vector<StepTiming>* timings, double* device_ms = nullptr);
  const Plan& plan() const { return *plan_; }
  size_t allocated_bytes() const { return allocated_; }
  bool graph_captured() const;

 private:
  explicit RunContext(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  Status run_dynamic(size_t s);
  // Runs (or, capturing, enqueues) every step; host steps wait for the device work before them.
  Status run_steps(bool capturing, std::vector<StepTiming>* timings);
  Status sync_devices();
  Status run_graph(const std::vector<void*>& key);

  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<ArenaPool> pool_;
  std::vector<ArenaPool::Block> blocks_;          // from pool_: arenas and scratch
  std::vector<void*> arenas_;                     // per plan arena
  std::vector<void*> scratch_;                    // per plan arena
  std::vector<std::unique_ptr<Stream>> streams_;  // per plan arena (null on the CPU)
  size_t allocated_ = 0;
  std::vector<std::unique_ptr<KernelState>> states_;    // per step
  std::vector<TensorRef> refs_;                         // per plan value
  std::vector<std::vector<const TensorRef*>> step_in_;  // per step: pointers into refs_
  std::vector<std::vector<TensorRef*>> step_out_;
  std::vector<Tensor> dynamic_;  // per plan value (dynamic steps)
  std::vector<float> bounds_;    // per plan value: magnitude bounds known in this run (RunResources)
  std::vector<char> direct_;     // per graph output: may be bound to the caller's buffer
  std::vector<char> bound_;      // per graph output: bound in this run
  // Graphs: pinned copies of host inputs (the graph reads fixed addresses), the device
  // pointers the captured graph was made with, and whether capture works here.
  const Backend* pinner_ = nullptr;
  std::vector<void*> staging_;                  // per graph input
  std::vector<std::vector<void*>> graph_keys_;  // per graph slot of the stream: the addresses it was captured with
  std::vector<int> graph_used_;                 // per slot: the run that last replayed it (LRU)
  std::vector<void*> key_;
  int runs_ = 0;
  bool graph_failed_ = false;
};

}  // namespace infera
