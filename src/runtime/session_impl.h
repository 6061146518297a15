// The session's state, shared by session.cpp (load, plans, runs) and the files that add to it
// (saved plans). Not a public header.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "backends/backend.h"
#include "backends/packed_weights.h"
#include "graph/graph.h"
#include "infera/infera.h"
#include "plan/plan.h"
#include "runtime/arena_pool.h"
#include "runtime/run_context.h"

namespace infera {

using Dims = std::vector<std::vector<int64_t>>;

// dims with dim 0 of every input set to n (every input has a batch axis: chunking checked it).
inline Dims with_batch(Dims d, int64_t n) {
  for (auto& x : d) x[0] = n;
  return d;
}

// Runs f and turns an exception that reached the API boundary into an error Status.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status::error(StatusCode::kOutOfMemory, "out of memory");
  } catch (const std::exception& e) {
    return Status::error(StatusCode::kInternal, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return Status::error(StatusCode::kInternal, "unexpected exception");
  }
}

// One plan with its pool of run contexts. Built once by the first thread that needs it; the
// others wait for it.
struct PlanEntry {
  std::mutex mu;
  std::condition_variable built_cv;
  bool building = false, built = false;
  std::shared_ptr<const Plan> plan;
  Status error;
  std::vector<std::unique_ptr<RunContext>> free;  // idle run contexts
  size_t contexts = 0;                            // made and alive (idle or running)
  std::atomic<uint64_t> last_used{0};
  size_t perf_found = 0, perf_timed = 0;             // this plan's algorithm choices (PlanReport::perf_db_*)
  size_t weights_reused = 0, weights_converted = 0;  // PlanReport::weights_*
};

class SessionImpl {
 public:
  Graph graph;
  SessionOptions opts;
  int threads = 1, verbose = 0;
  size_t max_contexts = 1;
  std::vector<std::shared_ptr<const Backend>> backends;
  std::vector<IoInfo> inputs, outputs;
  ModelSummary summary;
  size_t constant_bytes = 0;

  // Weights the backends converted into their formats, shared by every plan of the session
  // (and written into saved plans; a loaded plan's come from the file).
  std::shared_ptr<PackedWeights> packed = std::make_shared<PackedWeights>();

  // Arena blocks of every run context (declared before the plans: it outlives their contexts).
  std::shared_ptr<ArenaPool> pool;

  std::mutex mu;  // guards plans and clock (never held while planning or running)
  std::map<Dims, std::shared_ptr<PlanEntry>> plans;
  uint64_t clock = 0;

  // Calls inside run()/prepare() now: ~Session waits for them (a session destroyed while another
  // thread runs on it finishes that run first; a call that starts after ~Session began is UB).
  std::mutex active_mu;
  std::condition_variable active_cv;
  int active = 0;
  struct Active {
    SessionImpl& s;
    explicit Active(SessionImpl& x) : s(x) {
      std::lock_guard<std::mutex> l(s.active_mu);
      ++s.active;
    }
    ~Active() {
      std::lock_guard<std::mutex> l(s.active_mu);
      if (--s.active == 0) s.active_cv.notify_all();
    }
  };
  void wait_idle() {
    std::unique_lock<std::mutex> l(active_mu);
    active_cv.wait(l, [&] { return active == 0; });
  }

  // Memory budget on opts.device (0: none) and the chunk batch chosen per input signature (0:
  // the batch runs whole; runtime/chunking.h).
  size_t budget = 0;
  std::mutex chunk_mu;
  std::map<Dims, int64_t> chunk_of;

  Status init(Graph g, const SessionOptions& o);
  Status validate(const std::map<std::string, Tensor>& in, Dims& dims, std::vector<const Tensor*>& ptrs) const;
  Result<std::shared_ptr<PlanEntry>> entry_for(const Dims& dims);
  // The inputs' dims in model order from a name -> shape map (each checked against its input).
  Status dims_of(const std::map<std::string, std::vector<int64_t>>& shapes, Dims& dims) const;
  // Ok when a batch of these dims may be split along axis 0 (Session::check_batch_split); whole:
  // the value infos at dims, when the caller has them.
  Status check_split(const Dims& dims, const std::vector<ValueInfo>* whole = nullptr) const;
  Status run(const std::map<std::string, Tensor>& in, std::vector<Tensor>& out, bool allocate, const RunOptions& ro);
  // The plan's bytes on the session's device for one run (PlanReport::peak_bytes).
  size_t peak_of(const Plan& p) const;
  // What a chunked run of this plan holds: on a GPU two run contexts (pipelined chunks).
  size_t chunk_peak(const Plan& p) const;
  // The chunk batch for these input dims under the budget (0: whole), choosing it on first use.
  Result<int64_t> chunk_for(const Dims& dims);
  Status run_chunked(const std::map<std::string, Tensor>& in, const Dims& dims, int64_t chunk, std::vector<Tensor>& out,
                     bool allocate, const RunOptions& ro);
};

}  // namespace infera
