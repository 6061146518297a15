#include "runtime/run_context.h"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "ops/infer.h"
#include "runtime/fault.h"

namespace infera {

namespace {

// Sets the OpenMP thread count of the calling thread for one run and restores it after: the
// count is per session, never state that one session changes under another.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : prev_(omp_get_max_threads()), n_(n) {
    if (n_ > 0 && n_ != prev_) omp_set_num_threads(n_);
  }
  ~OmpThreads() {
    if (n_ > 0 && n_ != prev_) omp_set_num_threads(prev_);
  }

 private:
  int prev_, n_;
};

int env_verbose() {
  static const int v = [] {
    const char* e = std::getenv("INFERA_VERBOSE");
    return e && *e ? std::atoi(e) : 0;
  }();
  return v;
}

}  // namespace

Result<std::unique_ptr<RunContext>> RunContext::make(std::shared_ptr<const Plan> plan,
                                                     std::shared_ptr<ArenaPool> pool) {
  std::unique_ptr<RunContext> rc(new RunContext(std::move(plan)));
  rc->pool_ = std::move(pool);
  const Plan& p = *rc->plan_;
  // Returned to the pool, or freed, by the destructor: pushed before anything can fail.
  auto get = [&](const Backend* owner, bool pinned, size_t bytes) -> Result<void*> {
    if (rc->pool_) {
      auto b = rc->pool_->take(owner, pinned, bytes);
      if (!b.is_ok()) return b.status();
      rc->blocks_.push_back(b.value());
      rc->allocated_ += b.value().bytes;
      return b.value().data;
    }
    auto m = pinned ? owner->allocate_host(bytes) : owner->allocate(bytes);
    if (m.is_ok()) rc->allocated_ += bytes;
    return m;
  };
  for (const PlanArena& a : p.arenas) {
    rc->arenas_.push_back(nullptr);
    rc->scratch_.push_back(nullptr);
    rc->streams_.push_back(a.allocator->make_stream());
    auto mem = a.pinner ? get(a.pinner, true, std::max<size_t>(a.bytes, 1))
                        : get(a.allocator, false, std::max<size_t>(a.bytes, 1));
    if (!mem.is_ok()) return mem.status();
    rc->arenas_.back() = mem.value();
    if (a.scratch_bytes) {
      auto scratch = get(a.allocator, false, a.scratch_bytes);
      if (!scratch.is_ok()) return scratch.status();
      rc->scratch_.back() = scratch.value();
    }
    if (a.pinner) rc->pinner_ = a.pinner;
  }
  rc->refs_.resize(p.values.size());
  rc->dynamic_.resize(p.values.size());
  for (size_t v = 0; v < p.values.size(); ++v) {
    const PlanValue& pv = p.values[v];
    TensorRef& r = rc->refs_[v];
    r.dtype = pv.info.dtype;
    if (pv.info.shape.fully_known()) r.dims = pv.info.shape.concrete();
    if (pv.home == PlanValue::Home::kConstant) {
      r = TensorRef::of(*pv.info.value);
    } else if (pv.home == PlanValue::Home::kArena) {
      r.data = static_cast<char*>(rc->arenas_[pv.arena]) + pv.offset;
    }
  }
  for (const PlanStep& st : p.steps) {
    rc->states_.push_back(st.kernel->make_state());
    std::vector<const TensorRef*> in;
    std::vector<TensorRef*> out;
    for (int v : st.inputs) in.push_back(v >= 0 ? &rc->refs_[v] : nullptr);
    for (int v : st.outputs) out.push_back(v >= 0 ? &rc->refs_[v] : nullptr);
    rc->step_in_.push_back(std::move(in));
    rc->step_out_.push_back(std::move(out));
  }
  // Graph outputs that an arena step writes (once) may go straight into the caller's buffer.
  rc->direct_.assign(p.outputs.size(), 0);
  rc->bound_.assign(p.outputs.size(), 0);
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const int v = p.outputs[i];
    bool once = true;
    for (size_t j = 0; j < p.outputs.size(); ++j) once = once && (j == i || p.outputs[j] != v);
    rc->direct_[i] = v >= 0 && once && p.values[v].home == PlanValue::Home::kArena;
  }
  // Graphs read host inputs from pinned copies at fixed addresses, made at the first graph run
  // that has that input on the host (a device-resident input needs none: no pinning of a
  // 64 GiB batch that is already on the GPU).
  rc->staging_.assign(p.inputs.size(), nullptr);
  rc->key_.assign(p.inputs.size() + p.outputs.size(), nullptr);
  return rc;
}

RunContext::~RunContext() {
  const Plan& p = *plan_;
  for (auto& s : streams_)
    if (s) (void)s->synchronize();  // nothing may still write into the memory freed below
  for (const ArenaPool::Block& b : blocks_) pool_->give(b);
  for (size_t a = 0; a < arenas_.size() && !pool_; ++a) {
    if (arenas_[a]) {
      if (p.arenas[a].pinner)
        p.arenas[a].pinner->deallocate_host(arenas_[a]);
      else
        p.arenas[a].allocator->deallocate(arenas_[a]);
    }
    if (scratch_[a]) p.arenas[a].allocator->deallocate(scratch_[a]);
  }
  for (void* s : staging_)
    if (s) pinner_->deallocate_host(s);
}

bool RunContext::graph_captured() const {
  for (const auto& s : streams_)
    if (s && s->has_graph()) return true;
  return false;
}

// Shapes depend on values: infer again with every input known, then allocate the outputs.
Status RunContext::run_dynamic(size_t s) {
  const Plan& p = *plan_;
  const PlanStep& st = p.steps[s];
  const Node& n = p.node_of(st);
  std::vector<ValueInfo> infos(st.inputs.size());
  std::vector<const ValueInfo*> in(st.inputs.size(), nullptr);
  for (size_t i = 0; i < st.inputs.size(); ++i) {
    const int v = st.inputs[i];
    if (v < 0) continue;
    const TensorRef& r = refs_[v];
    infos[i].dtype = r.dtype;
    infos[i].shape = Shape::of(r.dims);
    infos[i].value = std::make_shared<Tensor>(Tensor::view(r.dtype, r.dims, r.data));
    in[i] = &infos[i];
  }
  InferContext ctx(n, p.graph->opset, in);
  Status s_ = st.op->infer(ctx);
  if (!s_.is_ok()) return s_;
  for (size_t o = 0; o < st.outputs.size(); ++o) {
    const int v = st.outputs[o];
    if (v < 0) continue;
    const Shape& sh = ctx.outputs()[o].shape;
    if (!sh.fully_known())
      return Status::error(n.label() + ": output '" + p.values[v].name + "' shape " + sh.str() +
                           " still unknown with all inputs known");
    auto t = Tensor::make(ctx.outputs()[o].dtype, sh.concrete());
    if (!t.is_ok()) return t.status().prefixed(n.label() + ": output '" + p.values[v].name + "': ");
    dynamic_[v] = t.take();
    refs_[v] = TensorRef::of(dynamic_[v]);
  }
  return Status::ok();
}

Status RunContext::sync_devices() {
  for (auto& stream : streams_)
    if (stream) {
      Status s = stream->synchronize();
      if (!s.is_ok()) return s;
    }
  return Status::ok();
}

Status RunContext::run_steps(bool capturing, std::vector<StepTiming>* timings) {
  const Plan& p = *plan_;
  // INFERA_PROFILE=1: time per op kind and implementation, printed after each run.
  static const bool profile = std::getenv("INFERA_PROFILE") != nullptr;
  const bool timed = !capturing && (profile || timings);
  if (timings) timings->clear();
  std::map<std::string, std::pair<double, int>> by_kind;
  bool device_pending = false;  // device work enqueued since the last synchronization
  bounds_ = p.initial_bounds;   // make_plan made them (plan/bounds.h)
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const PlanStep& st = p.steps[s];
    const bool on_device = streams_[st.arena] != nullptr;
    if (!on_device && device_pending) {  // a host step reads what the device wrote
      Status sy = sync_devices();
      if (!sy.is_ok()) return sy;
      device_pending = false;
    }
    if (st.dynamic) {
      Status d = run_dynamic(s);
      if (!d.is_ok()) return d;
    }
    if (st.skip) {  // a Concat in place: its producers wrote its output
      apply_bound_rule(p, s, bounds_.data());
      continue;
    }
    RunResources res;
    res.scratch = scratch_[st.arena];
    res.scratch_bytes = p.arenas[st.arena].scratch_bytes;
    res.state = states_[s].get();
    res.stream = on_device ? streams_[st.arena]->native() : nullptr;
    res.bounds = bounds_.data();
    res.in_values = st.inputs.data();
    res.out_values = st.outputs.data();
    ComputeContext ctx(p.node_of(st), step_in_[s].data(), step_in_[s].size(), step_out_[s].data(), step_out_[s].size(),
                       p.num_threads, res);
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status status =
        fault::hit(fault::Kind::kLaunch)
            ? Status::error(StatusCode::kDeviceError, ctx.node.label() + ": kernel launch failed (injected fault)")
            : st.kernel->run(ctx);
    if (!status.is_ok()) return status;
    // A conversion (reorder, copy) keeps the values: and so their bound.
    if (st.node < 0 && st.inputs.size() == 1 && st.outputs.size() == 1 && st.inputs[0] >= 0 && st.outputs[0] >= 0)
      bounds_[st.outputs[0]] = bounds_[st.inputs[0]];
    apply_bound_rule(p, s, bounds_.data());
    device_pending = device_pending || on_device;
    if (timed) {
      if (on_device) {  // a device step's time: until its work is done
        Status sy = streams_[st.arena]->synchronize();
        if (!sy.is_ok()) return sy;
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (timings)
        timings->push_back(StepTiming{st.node >= 0 ? ctx.node.name : "", st.op_name, st.backend->name(), ms});
      if (profile) {
        auto& e = by_kind[st.op_name + " [" + st.backend->name() + "]"];
        e.first += ms;
        e.second++;
      }
    }
  }
  if (profile && !by_kind.empty()) {
    double total = 0;
    for (auto& [k, e] : by_kind) total += e.first;
    std::fprintf(stderr, "infera profile: %.3f ms in %zu steps\n", total, p.steps.size());
    for (auto& [k, e] : by_kind)
      std::fprintf(stderr, "  %-36s %5d x %10.3f ms %5.1f%%\n",  // op names may come from the model: escaped
                   Status::error(StatusCode::kInternal, k).message().c_str(), e.second, e.first, 100 * e.first / total);
  }
  return Status::ok();
}

// The first graphed run runs the steps plainly (lazy module loading, first-launch attributes);
// the next one captures them, later ones replay. A graph is made for the device addresses it
// reads and writes: new caller device buffers mean a new capture.
Status RunContext::run_graph(const std::vector<void*>& key) {
  Stream& stream = *streams_[plan_->steps[0].arena];
  if (runs_ == 1) return run_steps(false, nullptr);
  // One captured graph per set of I/O addresses, up to the stream's slots (least recently used
  // replaced): alternating buffers replay instead of capturing again.
  const size_t slots = std::max<size_t>(1, stream.graph_slots());
  if (graph_keys_.size() != slots) graph_keys_.assign(slots, {}), graph_used_.assign(slots, 0);
  size_t slot = slots;
  for (size_t i = 0; i < slots && slot == slots; ++i) {
    stream.select_graph(i);
    if (stream.has_graph() && graph_keys_[i] == key) slot = i;
  }
  if (slot < slots) {
    graph_used_[slot] = runs_;
    stream.select_graph(slot);
    return stream.replay();
  }
  slot = static_cast<size_t>(std::min_element(graph_used_.begin(), graph_used_.end()) - graph_used_.begin());
  stream.select_graph(slot);
  stream.drop_graph();
  graph_keys_[slot].clear();
  Status s = stream.begin_capture();
  if (s.is_ok()) {
    Status r = run_steps(true, nullptr);
    s = stream.end_capture();
    if (!r.is_ok()) s = r;
  }
  if (s.is_ok()) {
    graph_keys_[slot] = key;
    graph_used_[slot] = runs_;
    return stream.replay();
  }
  if (plan_->graph_mode == SessionOptions::GraphMode::kOn) return s.prefixed("GPU graph capture: ");
  if (std::max(env_verbose(), 0) >= 1)
    std::fprintf(stderr, "infera: GPU graph capture failed, running without: %s\n", s.message().c_str());
  graph_failed_ = true;
  stream.drop_graph();
  return run_steps(false, nullptr);
}

Status RunContext::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                       std::vector<StepTiming>* timings, double* device_ms) {
  const Plan& p = *plan_;
  if (inputs.size() != p.inputs.size() || outputs.size() != p.outputs.size())
    return Status::error(StatusCode::kInternal, "run: wrong number of inputs or outputs for the plan");
  ++runs_;
  static const bool profile = std::getenv("INFERA_PROFILE") != nullptr;
  const bool graph = p.graphable && p.graph_mode != SessionOptions::GraphMode::kOff && !timings && !profile &&
                     !graph_failed_ && streams_[p.steps[0].arena] && streams_[p.steps[0].arena]->can_capture();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    void* data = const_cast<void*>(t.data());
    key_[i] = nullptr;
    if (!t.device().is_cpu()) {
      key_[i] = data;  // read in place by the upload step
    } else if (graph && pinner_) {
      if (!staging_[i]) {
        const PlanValue& pv = p.values[p.inputs[i]];
        const size_t bytes = static_cast<size_t>(pv.info.shape.numel()) * dtype_size(pv.info.dtype);
        auto s = pinner_->allocate_host(std::max<size_t>(bytes, 1));
        if (!s.is_ok()) return s.status();
        staging_[i] = s.value();
        allocated_ += bytes;
      }
      if (t.nbytes()) std::memcpy(staging_[i], data, t.nbytes());
      data = staging_[i];
    }
    refs_[p.inputs[i]].data = data;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = *outputs[i];
    const bool on_device = !t.empty() && !t.device().is_cpu();
    // Host outputs of a graph stay in the (pinned) arena and are copied after; device outputs
    // are written by the download step in place.
    bound_[i] = direct_[i] && !t.empty() && t.nbytes() == refs_[p.outputs[i]].nbytes() && (!graph || on_device);
    key_[inputs.size() + i] = bound_[i] && on_device ? const_cast<void*>(t.data()) : nullptr;
    if (bound_[i]) refs_[p.outputs[i]].data = const_cast<void*>(t.data());
  }
  OmpThreads omp_threads(p.num_threads);
  Stream* timer = nullptr;
  if (device_ms) {
    *device_ms = -1;
    for (auto& st : streams_)
      if (st && !timer) timer = st.get();
  }
  Status status = timer ? timer->time_begin() : Status::ok();
  if (status.is_ok()) status = graph ? run_graph(key_) : run_steps(false, timings);
  if (status.is_ok() && timer) {
    auto ms = timer->time_end();
    if (ms.is_ok())
      *device_ms = ms.value();
    else
      status = ms.status();
  }
  if (status.is_ok()) status = sync_devices();  // the host reads device results after this
  // Arena pointers back for the outputs bound to caller buffers (a later run may not bind them).
  for (size_t i = 0; i < outputs.size(); ++i) {
    const PlanValue& pv = p.values[p.outputs[i]];
    if (bound_[i]) refs_[p.outputs[i]].data = static_cast<char*>(arenas_[pv.arena]) + pv.offset;
  }
  if (!status.is_ok()) return status;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (bound_[i]) continue;
    const int v = p.outputs[i];
    const TensorRef& r = refs_[v];
    if (!r.data && r.numel() != 0) return Status::error("graph output '" + p.values[v].name + "' was not computed");
    if (outputs[i]->empty()) {  // the returning form of a data-dependent shape: allocated now
      auto t = Tensor::make(r.dtype, r.dims);
      if (!t.is_ok()) return t.status().prefixed("graph output '" + p.values[v].name + "': ");
      *outputs[i] = t.take();
    } else if (outputs[i]->dtype() != r.dtype || outputs[i]->dims() != r.dims) {
      return Status::error(StatusCode::kInvalidInput,
                           "output '" + p.values[v].name + "' is " + Shape::of(r.dims).str() + " " +
                               dtype_name(r.dtype) + ", the tensor given is " + Shape::of(outputs[i]->dims()).str() +
                               " " + dtype_name(outputs[i]->dtype()));
    } else if (!outputs[i]->device().is_cpu()) {
      return Status::error(StatusCode::kInvalidInput, "output '" + p.values[v].name + "' cannot be written on " +
                                                          outputs[i]->device().str() +
                                                          " by this plan: give a host tensor");
    }
    if (r.nbytes()) std::memcpy(outputs[i]->data(), r.data, r.nbytes());
  }
  return Status::ok();
}

}  // namespace infera
