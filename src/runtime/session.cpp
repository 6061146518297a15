// Session: load -> check -> optimize once; a plan per input-shape signature (LRU-bounded), each
// with a pool of run contexts, so that run() may be called from many threads at once: the
// session lock covers only the plan lookup and the pool, never a run.
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <thread>

#include "backends/backend.h"
#include "frontend/onnx/import.h"
#include "ops/infer.h"
#include "passes/pass.h"
#include "plan/plan.h"
#include "runtime/chunking.h"
#include "runtime/run_context.h"
#include "runtime/saved_plan.h"
#include "runtime/session_impl.h"
#include "tune/perfdb.h"

namespace infera {

namespace {

std::string op_key(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type; }

std::vector<IoInfo> io_of(const Graph& g, const std::vector<int>& ids) {
  std::vector<IoInfo> r;
  for (int v : ids) {
    IoInfo io;
    io.name = g.values[v].name;
    io.dtype = g.values[v].dtype;
    io.rank_known = g.values[v].shape.rank_known;
    if (io.rank_known)
      for (const Dim& d : g.values[v].shape.dims) io.dims.push_back(IoDim{d.value, d.symbol});
    r.push_back(std::move(io));
  }
  return r;
}

std::string dims_str(const std::vector<int64_t>& d) { return Shape::of(d).str(); }

// Checks one input's dims against the declared ones; symbolic dims must agree across inputs.
Status check_dims(const IoInfo& io, const std::vector<int64_t>& dims, std::map<std::string, int64_t>& symbols) {
  if (io.rank_known && io.dims.size() != dims.size())
    return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': expected rank " +
                                                        std::to_string(io.dims.size()) + ", found rank " +
                                                        std::to_string(dims.size()) + " " + dims_str(dims));
  for (size_t i = 0; i < io.dims.size() && i < dims.size(); ++i) {
    if (dims[i] < 0) return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': negative dimension");
    if (io.dims[i].value >= 0 && io.dims[i].value != dims[i])
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': dim " + std::to_string(i) +
                                                          " must be " + std::to_string(io.dims[i].value) + ", found " +
                                                          std::to_string(dims[i]) + " (shape " + dims_str(dims) + ")");
    if (!io.dims[i].symbol.empty()) {
      auto [it, fresh] = symbols.emplace(io.dims[i].symbol, dims[i]);
      if (!fresh && it->second != dims[i])
        return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': dim " + std::to_string(i) + " ('" +
                                                            io.dims[i].symbol + "') is " + std::to_string(dims[i]) +
                                                            " but another input gave it " + std::to_string(it->second));
    }
  }
  return Status::ok();
}

}  // namespace

namespace {

// The stack an OpenMP worker gets: libgomp's OMP_STACKSIZE / GOMP_STACKSIZE (a number with an
// optional B/K/M/G suffix, K when none), else the threads' default (RLIMIT_STACK through glibc).
size_t omp_stack_bytes() {
  for (const char* var : {"OMP_STACKSIZE", "GOMP_STACKSIZE"}) {
    const char* e = std::getenv(var);
    if (!e || !*e) continue;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(e, &end, 10);
    if (end == e) continue;
    while (*end == ' ') ++end;
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(*end)));
    const unsigned shift = u == 'B' ? 0 : u == 'M' ? 20 : u == 'G' ? 30 : 10;
    return static_cast<size_t>(v) << shift;
  }
  pthread_attr_t a;
  size_t bytes = 8u << 20;
  if (pthread_getattr_default_np(&a) == 0) {
    pthread_attr_getstacksize(&a, &bytes);
    pthread_attr_destroy(&a);
  }
  return bytes;
}

// Refuses a thread count whose worker stacks cannot be mapped under RLIMIT_AS (what is mapped now
// counted): libgomp would otherwise end the process with its own message ("Thread creation
// failed") at the first parallel region. Half of what is left must stay for arenas and weights.
Status check_thread_stacks(int threads) {
  rlimit as{};
  if (threads <= 1 || getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return Status::ok();
  std::ifstream statm("/proc/self/statm");
  unsigned long long pages = 0;
  statm >> pages;
  const unsigned long long mapped = pages * static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
  const unsigned long long left = as.rlim_cur > mapped ? as.rlim_cur - mapped : 0;
  const unsigned long long stack = omp_stack_bytes(), need = static_cast<unsigned long long>(threads - 1) * stack;
  if (need <= left / 2) return Status::ok();
  return Status::error(StatusCode::kOutOfMemory,
                       std::to_string(threads) + " threads: " + std::to_string(threads - 1) + " worker stacks of " +
                           std::to_string(stack >> 20) + " MiB (RLIMIT_STACK or OMP_STACKSIZE) do not fit in the " +
                           std::to_string(left >> 20) + " MiB of address space RLIMIT_AS leaves (" +
                           std::to_string(as.rlim_cur >> 20) + " MiB limit); use fewer threads or smaller stacks");
}

}  // namespace

Status SessionImpl::init(Graph g, const SessionOptions& o) {
  opts = o;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (o.num_threads < 0 || o.num_threads > 1024)
    return Status::error(StatusCode::kInvalidInput,
                         "num_threads must be in [0, 1024] (0 = all cores), found " + std::to_string(o.num_threads));
  threads = o.num_threads > 0 ? o.num_threads : static_cast<int>(hw);
  if (Status s = check_thread_stacks(threads); !s.is_ok()) return s;
  verbose = o.verbose >= 0 ? o.verbose : [] {
    const char* e = std::getenv("INFERA_VERBOSE");
    return e && *e ? std::atoi(e) : 0;
  }();
  max_contexts = o.max_run_contexts > 0 ? static_cast<size_t>(o.max_run_contexts) : hw;
  if (o.precision == Precision::kInt8 || o.precision == Precision::kMixed)
    return Status::error(StatusCode::kUnsupported,
                         std::string("precision ") + precision_name(o.precision) +
                             " needs calibration data, which a session cannot guess: quantize the model first "
                             "(infera quantize MODEL --calibration DATA -o OUT.onnx [--precision mixed]) and run "
                             "OUT.onnx, whose quantized layers run in int8 (a session runs fp32; fp16 on a GPU)");
  if (o.precision == Precision::kFp16 && !o.device.is_gpu())
    return Status::error(StatusCode::kUnsupported, "precision fp16 runs on a GPU (device gpu); the CPU runs fp32");
  // The device's backends first, then the CPU's: steps no GPU kernel takes run there, with the
  // copies the planner inserts. "ref" always comes last: every op has a reference kernel.
  std::vector<std::string> names = o.backends.empty() ? default_backends(o.device) : o.backends;
  if (o.backends.empty() && o.device.is_gpu()) names.push_back("dnnl");
  if (std::find(names.begin(), names.end(), "ref") == names.end()) names.push_back("ref");
  BackendOptions bo;
  bo.precision = o.precision;
  bo.tf32 = o.allow_tf32;
  bo.vendor_libs = o.vendor_libraries;
  bo.verbose = verbose;
  bool device_backend = o.device.is_cpu();
  for (const std::string& n : names) {
    auto b = find_backend(n, n == "gpu" ? o.device : Device::cpu(), bo);
    if (!b.is_ok()) return b.status();
    device_backend = device_backend || b.value()->device() == o.device;
    backends.push_back(b.take());
  }
  if (!device_backend)
    return Status::error(StatusCode::kInvalidInput, "no backend of the list runs on " + o.device.str());
  pool = std::make_shared<ArenaPool>(o.arena_extend);
  budget = o.memory_budget_bytes;
  for (const auto& b : backends)
    if (budget == 0 && b->device() == o.device) budget = b->memory_bytes();  // a GPU's memory; 0 on the host
  summary.ir_version = g.ir_version;
  summary.opset = g.opset;
  summary.producer = g.producer;
  summary.metadata = g.metadata;
  summary.node_count_original = g.nodes.size();
  for (const Node& n : g.nodes) summary.op_histogram[op_key(n)]++;
  for (const Value& v : g.values)
    if (v.constant && (v.constant->dtype() == DataType::kFloat32 || v.constant->dtype() == DataType::kFloat64))
      summary.parameter_count += v.constant->numel();
  // Attributes are parsed once (the typed op of each node); then shapes and types.
  Status s = infer_graph(g);
  if (!s.is_ok()) return s;
  if (o.optimize) {
    s = run_passes(g, default_passes(o.device.is_cpu()), &summary.passes);
    if (!s.is_ok()) return s;
  }
  s = attach_ops(g);
  if (!s.is_ok()) return s;
  summary.node_count = g.nodes.size();
  for (const Node& n : g.nodes) summary.op_histogram_optimized[op_key(n)]++;
  for (const Value& v : g.values)
    if (v.constant) constant_bytes += v.constant->nbytes();
  graph = std::move(g);
  inputs = io_of(graph, graph.inputs);
  outputs = io_of(graph, graph.outputs);
  return Status::ok();
}

Status SessionImpl::validate(const std::map<std::string, Tensor>& in, Dims& dims,
                             std::vector<const Tensor*>& ptrs) const {
  for (auto& [name, t] : in) {
    bool known = false;
    for (const IoInfo& io : inputs) known = known || io.name == name;
    if (!known) {
      std::string names;
      for (const IoInfo& io : inputs) names += (names.empty() ? "'" : ", '") + io.name + "'";
      return Status::error(StatusCode::kInvalidInput, "unknown input '" + name + "' (model inputs: " + names + ")");
    }
  }
  std::map<std::string, int64_t> symbols;
  for (const IoInfo& io : inputs) {
    auto it = in.find(io.name);
    if (it == in.end()) return Status::error(StatusCode::kInvalidInput, "missing input '" + io.name + "'");
    const Tensor& t = it->second;
    if (t.dtype() != io.dtype)
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': expected dtype " +
                                                          dtype_name(io.dtype) + ", found " + dtype_name(t.dtype()));
    if (!t.device().is_cpu() && t.device() != opts.device)
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' is on " + t.device().str() +
                                                          "; this session runs on " + opts.device.str());
    if (!t.data() && t.numel() != 0)
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' has no data");
    Status s = check_dims(io, t.dims(), symbols);
    if (!s.is_ok()) return s;
    dims.push_back(t.dims());
    ptrs.push_back(&t);
  }
  return Status::ok();
}

Result<std::shared_ptr<PlanEntry>> SessionImpl::entry_for(const Dims& dims) {
  std::shared_ptr<PlanEntry> e;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(dims);
    if (it == plans.end()) {
      // Evict the least recently used plans; runs in flight keep theirs alive.
      const size_t cap = static_cast<size_t>(std::max(1, opts.max_cached_plans));
      while (plans.size() >= cap) {
        auto oldest = plans.begin();
        for (auto i = plans.begin(); i != plans.end(); ++i)
          if (i->second->last_used < oldest->second->last_used) oldest = i;
        plans.erase(oldest);
      }
      it = plans.emplace(dims, std::make_shared<PlanEntry>()).first;
    }
    e = it->second;
    e->last_used = ++clock;
  }
  std::unique_lock<std::mutex> lock(e->mu);
  if (!e->built && !e->building) {
    e->building = true;
    lock.unlock();
    PlanOptions po;
    po.backends = backends;
    po.num_threads = threads;
    po.verbose = verbose;
    po.limits = opts.limits;
    po.graph_mode = opts.gpu_graphs;
    // One database handle per build (its counters are this plan's); the entries are shared.
    TuneSettings ts{opts.conv_algo, opts.winograd, opts.search, verbose};
    std::unique_ptr<PerfDb> db =
        PerfDb::open(opts.search == SessionOptions::SearchMode::kOff ? "none" : opts.perf_db, ts);
    po.perf_db = db.get();
    PackedWeights used(packed);  // this build's lookups (the entries are the session's)
    po.packed = &used;
    Result<std::shared_ptr<const Plan>> p =
        guarded([&]() -> Result<std::shared_ptr<const Plan>> { return make_plan(graph, dims, po); });
    Status saved = db->flush();
    if (verbose >= 1) {
      std::fprintf(stderr, "infera: perf db %s: %zu choices found, %zu timed%s%s\n",
                   db->path().empty() ? "(in memory)" : db->path().c_str(), db->found(), db->timed(),
                   saved.is_ok() ? "" : "; not saved: ", saved.is_ok() ? "" : saved.message().c_str());
      std::fprintf(stderr, "infera: packed weights: %llu reused, %llu converted (the session holds %zu, %.1f MiB)\n",
                   static_cast<unsigned long long>(used.hits()), static_cast<unsigned long long>(used.misses()),
                   packed->size(), packed->bytes() / 1048576.0);
    }
    lock.lock();
    e->perf_found = db->found();
    e->perf_timed = db->timed();
    e->weights_reused = static_cast<size_t>(used.hits());
    e->weights_converted = static_cast<size_t>(used.misses());
    e->building = false;
    e->built = true;
    if (p.is_ok())
      e->plan = p.take();
    else
      e->error = p.status().or_code(StatusCode::kInvalidInput);
    e->built_cv.notify_all();
  }
  e->built_cv.wait(lock, [&] { return e->built; });
  if (!e->plan) {
    Status err = e->error;
    lock.unlock();
    std::lock_guard<std::mutex> g(mu);  // a failed plan is not kept: the next call tries again
    auto it = plans.find(dims);
    if (it != plans.end() && it->second == e) plans.erase(it);
    return err;
  }
  return e;
}

Status SessionImpl::run(const std::map<std::string, Tensor>& in, std::vector<Tensor>& out, bool allocate,
                        const RunOptions& ro) {
  Dims dims;
  std::vector<const Tensor*> ptrs;
  Status s = validate(in, dims, ptrs);
  if (!s.is_ok()) return s;
  auto chunk = chunk_for(dims);
  if (!chunk.is_ok()) return chunk.status();
  if (chunk.value() > 0) return run_chunked(in, dims, chunk.value(), out, allocate, ro);
  auto entry = entry_for(dims);
  if (!entry.is_ok()) return entry.status();
  PlanEntry& e = *entry.value();
  const Plan& plan = *e.plan;
  for (size_t i = 0; i < ptrs.size(); ++i)
    if (!ptrs[i]->device().is_cpu() && !plan.input_on_device[i])
      return Status::error(StatusCode::kInvalidInput, "input '" + inputs[i].name + "' is on " +
                                                          ptrs[i]->device().str() +
                                                          ", but its first reader in this plan runs on the host: "
                                                          "give a host tensor");
  if (allocate) {
    out.clear();
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const PlanValue& pv = plan.values[plan.outputs[i]];
      if (!pv.info.shape.fully_known()) {
        out.emplace_back();  // data-dependent: allocated by the run
        continue;
      }
      auto t = Tensor::make(pv.info.dtype, pv.info.shape.concrete());
      if (!t.is_ok()) return t.status().prefixed("output '" + outputs[i].name + "': ");
      out.push_back(t.take());
    }
  } else if (out.size() != plan.outputs.size()) {
    return Status::error(StatusCode::kInvalidInput, "run: " + std::to_string(out.size()) +
                                                        " output tensors given, the model has " +
                                                        std::to_string(plan.outputs.size()));
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      const PlanValue& pv = plan.values[plan.outputs[i]];
      if (out[i].empty() || (!out[i].data() && out[i].numel() != 0))
        return Status::error(StatusCode::kInvalidInput, "run: output '" + outputs[i].name + "' has no buffer");
      if (!out[i].device().is_cpu() && (out[i].device() != opts.device || !plan.output_on_device[i]))
        return Status::error(StatusCode::kInvalidInput, "run: output '" + outputs[i].name + "' on " +
                                                            out[i].device().str() +
                                                            " cannot be written by this plan: give a host tensor");
      if (out[i].dtype() != pv.info.dtype || (pv.info.shape.fully_known() && out[i].dims() != pv.info.shape.concrete()))
        return Status::error(StatusCode::kInvalidInput, "run: output '" + outputs[i].name + "' must be " +
                                                            dtype_name(pv.info.dtype) + " " + pv.info.shape.str() +
                                                            ", found " + dtype_name(out[i].dtype()) + " " +
                                                            Shape::of(out[i].dims()).str());
    }
  }
  std::unique_ptr<RunContext> rc;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    if (!e.free.empty()) {
      rc = std::move(e.free.back());
      e.free.pop_back();
    }
  }
  if (!rc) {
    auto made = RunContext::make(entry.value()->plan, pool);
    if (!made.is_ok()) return made.status();
    rc = made.take();
    std::lock_guard<std::mutex> lock(e.mu);
    ++e.contexts;
  }
  std::vector<Tensor*> out_ptrs;
  for (Tensor& t : out) out_ptrs.push_back(&t);
  s = rc->run(ptrs, out_ptrs, ro.profile, ro.device_ms);
  std::lock_guard<std::mutex> lock(e.mu);
  if (e.free.size() < max_contexts)
    e.free.push_back(std::move(rc));
  else
    --e.contexts;
  return s.or_code(StatusCode::kInvalidInput);
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  if (impl_) impl_->wait_idle();
}

Result<std::unique_ptr<Session>> Session::load(const std::string& path, const SessionOptions& opts) {
  return guarded([&]() -> Result<std::unique_ptr<Session>> {
    auto make = [](std::unique_ptr<SessionImpl> i) { return std::unique_ptr<Session>(new Session(std::move(i))); };
    if (is_saved_plan_file(path)) return load_saved_plan_file(path, opts, make);  // saved_plan_session.cpp
    auto g = import_onnx_file(path, opts.limits);
    if (!g.is_ok()) return g.status().or_code(StatusCode::kInvalidModel);
    auto impl = std::make_unique<SessionImpl>();
    Status s = impl->init(g.take(), opts).or_code(StatusCode::kInvalidModel);
    if (!s.is_ok()) return s.message().rfind(path, 0) == 0 ? s : s.prefixed(path + ": ");
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  });
}

Result<std::unique_ptr<Session>> Session::load_from_memory(const std::string& bytes, const std::string& model_dir,
                                                           const SessionOptions& opts) {
  return guarded([&]() -> Result<std::unique_ptr<Session>> {
    auto make = [](std::unique_ptr<SessionImpl> i) { return std::unique_ptr<Session>(new Session(std::move(i))); };
    if (is_saved_plan(bytes)) return load_saved_plan(bytes, "<memory>", opts, make);
    auto g = import_onnx_bytes(bytes, model_dir, "<memory>", opts.limits);
    if (!g.is_ok()) return g.status().or_code(StatusCode::kInvalidModel);
    auto impl = std::make_unique<SessionImpl>();
    Status s = impl->init(g.take(), opts).or_code(StatusCode::kInvalidModel);
    if (!s.is_ok()) return s;
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  });
}

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const ModelSummary& Session::summary() const { return impl_->summary; }
const SessionOptions& Session::options() const { return impl_->opts; }

Status SessionImpl::dims_of(const std::map<std::string, std::vector<int64_t>>& shapes, Dims& dims) const {
  std::map<std::string, int64_t> symbols;
  dims.clear();
  for (const IoInfo& io : inputs) {
    auto it = shapes.find(io.name);
    if (it == shapes.end())
      return Status::error(StatusCode::kInvalidInput, "missing shape for input '" + io.name + "'");
    Status s = check_dims(io, it->second, symbols);
    if (!s.is_ok()) return s;
    dims.push_back(it->second);
  }
  for (auto& [name, d] : shapes) {
    bool known = false;
    for (const IoInfo& io : inputs) known = known || io.name == name;
    if (!known) return Status::error(StatusCode::kInvalidInput, "unknown input '" + name + "'");
  }
  return Status::ok();
}

Status Session::check_batch_split(const std::map<std::string, std::vector<int64_t>>& input_shapes) const {
  SessionImpl::Active active(*impl_);
  return guarded([&]() -> Status {
    Dims dims;
    if (Status s = impl_->dims_of(input_shapes, dims); !s.is_ok()) return s;
    return impl_->check_split(dims);
  });
}

size_t Session::cached_plan_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->plans.size();
}

size_t Session::allocated_bytes() const {
  std::vector<std::shared_ptr<PlanEntry>> entries;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& [k, e] : impl_->plans) entries.push_back(e);
  }
  size_t n = impl_->constant_bytes + impl_->pool->stats().idle_bytes;
  for (auto& e : entries) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->plan) continue;
    n += e->plan->report.weight_bytes - impl_->constant_bytes;  // kernel-held weights
    for (auto& rc : e->free) n += rc->allocated_bytes();
    const size_t busy = e->contexts - e->free.size();  // running now: same size as an idle one
    n += busy * (e->plan->report.arena_bytes + e->plan->report.scratch_bytes);
  }
  return n;
}

Result<PlanReport> Session::prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  SessionImpl::Active active(*impl_);
  return guarded([&]() -> Result<PlanReport> {
    Dims dims;
    if (Status s = impl_->dims_of(input_shapes, dims); !s.is_ok()) return s;
    auto chunk = impl_->chunk_for(dims);
    if (!chunk.is_ok()) return chunk.status();
    const int64_t c = chunk.value();
    auto e = impl_->entry_for(c ? with_batch(dims, c) : dims);
    if (!e.is_ok()) return e.status();
    PlanReport r = e.value()->plan->report;
    r.perf_db_found = e.value()->perf_found;
    r.perf_db_timed = e.value()->perf_timed;
    r.weights_reused = e.value()->weights_reused;
    r.weights_converted = e.value()->weights_converted;
    r.peak_bytes = c ? impl_->chunk_peak(*e.value()->plan) : impl_->peak_of(*e.value()->plan);
    if (c) {
      r.chunk_batch = c;
      r.chunks = static_cast<int64_t>(chunk_sizes(dims[0][0], c).size());
      r.flops *= static_cast<double>(dims[0][0]) / static_cast<double>(c);  // the whole batch's
      for (auto& d : r.output_dims)
        if (!d.empty()) d[0] = dims[0][0];
    }
    return r;
  });
}

Result<std::vector<Tensor>> Session::run(const std::map<std::string, Tensor>& inputs) {
  SessionImpl::Active active(*impl_);
  return guarded([&]() -> Result<std::vector<Tensor>> {
    std::vector<Tensor> out;
    Status s = impl_->run(inputs, out, true, RunOptions{});
    if (!s.is_ok()) return s;
    return out;
  });
}

Status Session::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs,
                    const RunOptions& run_options) {
  SessionImpl::Active active(*impl_);
  return guarded([&]() -> Status { return impl_->run(inputs, outputs, false, run_options); });
}

}  // namespace infera
