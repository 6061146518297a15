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
    return Status::error(StatusCode::kUnsupported, std::string("precision ") + precision_name(o.precision) +
                                                       " is not available yet (fp32; fp16 on a GPU)");
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
    s = run_passes(g, default_passes(), &summary.passes);
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
    po.graph_mode = opts.gpu_graphs;
    // One database handle per build (its counters are this plan's); the entries are shared.
    TuneSettings ts{opts.conv_algo, opts.winograd, opts.search, verbose};
    std::unique_ptr<PerfDb> db =
        PerfDb::open(opts.search == SessionOptions::SearchMode::kOff ? "none" : opts.perf_db, ts);
    po.perf_db = db.get();
    Result<std::shared_ptr<const Plan>> p =
        guarded([&]() -> Result<std::shared_ptr<const Plan>> { return make_plan(graph, dims, po); });
    Status saved = db->flush();
    if (verbose >= 1)
      std::fprintf(stderr, "infera: perf db %s: %zu choices found, %zu timed%s%s\n",
                   db->path().empty() ? "(in memory)" : db->path().c_str(), db->found(), db->timed(),
                   saved.is_ok() ? "" : "; not saved: ", saved.is_ok() ? "" : saved.message().c_str());
    lock.lock();
    e->perf_found = db->found();
    e->perf_timed = db->timed();
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

namespace {

Dims with_batch(Dims d, int64_t n) {
  for (auto& x : d) x[0] = n;
  return d;
}

std::string mib(size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%zu bytes (%.1f MiB)", b, b / 1048576.0);
  return buf;
}

}  // namespace

size_t SessionImpl::peak_of(const Plan& p) const {
  size_t n = plan_peak_bytes(p.report, opts.device);
  // A GPU session's budget also bounds what its host steps hold (steps no GPU kernel takes).
  if (opts.device.is_gpu()) n += plan_peak_bytes(p.report, Device::cpu()) - p.report.weight_bytes;
  return n;
}

size_t SessionImpl::chunk_peak(const Plan& p) const {
  const size_t one = peak_of(p);
  if (!opts.device.is_gpu()) return one;
  // Two run contexts, so that one chunk's copies overlap the previous chunk's compute.
  auto it = p.report.weight_bytes_per_device.find(opts.device.str());
  return 2 * one - (it == p.report.weight_bytes_per_device.end() ? 0 : it->second);
}

Result<int64_t> SessionImpl::chunk_for(const Dims& dims) {
  if (budget == 0 || dims.empty()) return int64_t(0);
  {
    std::lock_guard<std::mutex> l(chunk_mu);
    auto it = chunk_of.find(dims);
    if (it != chunk_of.end()) return it->second;
  }
  auto remember = [&](int64_t c) -> Result<int64_t> {
    std::lock_guard<std::mutex> l(chunk_mu);
    if (chunk_of.size() >= 1024) chunk_of.clear();  // input signatures come from callers: bounded
    chunk_of[dims] = c;
    return c;
  };
  auto whole_info = infer_values(graph, dims);
  if (!whole_info.is_ok()) return int64_t(0);  // the run reports the same error with its context
  const size_t lb = lower_bound_bytes(graph, whole_info.value(), opts.precision == Precision::kFp16 ? 2 : 4);
  size_t whole = 0;  // the whole batch's plan, when one was made
  if (lb <= budget) {
    auto e = entry_for(dims);
    if (e.is_ok()) {
      whole = peak_of(*e.value()->plan);
      if (whole <= budget) return remember(0);
    } else if (e.status().code() != StatusCode::kOutOfMemory) {
      return e.status();
    }
  }
  const std::string dev = opts.device.str();
  auto too_big = [&](const std::string& why) {
    return Status::error(StatusCode::kOutOfMemory,
                         "this batch needs " + std::string(whole ? "" : "at least ") + mib(whole ? whole : lb) +
                             " on " + dev + " (weights, arena and scratch), over the memory budget of " + mib(budget) +
                             (opts.memory_budget_bytes ? "" : " (the device's memory)") + ", and " + why);
  };
  if (whole) {  // not run whole: its plan (and the weights its kernels hold) need not stay cached
    std::lock_guard<std::mutex> l(mu);
    plans.erase(dims);
  }
  std::string sym;
  const int64_t n = dims[0].empty() ? 0 : dims[0][0];
  if (Status b = batch_symbol(graph, sym); !b.is_ok()) return too_big("it cannot run in chunks: " + b.message());
  if (n < 2) return too_big("a batch of " + std::to_string(n) + " cannot be split");
  // The samples must be independent: shapes at half the batch against the whole one.
  auto half = infer_values(graph, with_batch(dims, n / 2));
  Status sep = half.is_ok() ? check_chunkable(graph, half.value(), n / 2, whole_info.value(), n) : half.status();
  if (!sep.is_ok()) return too_big("it cannot run in chunks: " + sep.message());
  // Plans of chunk sizes until one fits: bytes = fixed (weights) + per-row x rows, learned from
  // each plan made (the whole batch's, or else the lower bound, gives the first guess).
  double fixed = 0, per = static_cast<double>(whole ? whole : lb) / static_cast<double>(n);
  auto guess = [&](double room) {
    return std::clamp<int64_t>(static_cast<int64_t>((room - fixed) / std::max(per, 1.0)), 1, n - 1);
  };
  int64_t c = guess(static_cast<double>(budget)), best = 0;
  size_t best_peak = 0;
  std::vector<int64_t> tried;
  for (int tries = 0; tries < 12 && !best; ++tries) {
    tried.push_back(c);
    auto e = entry_for(with_batch(dims, c));
    if (!e.is_ok() && e.status().code() != StatusCode::kOutOfMemory) return e.status();
    const size_t pk = e.is_ok() ? chunk_peak(*e.value()->plan) : SIZE_MAX;
    if (e.is_ok()) {
      const PlanReport& r = e.value()->plan->report;
      auto at = [&](const std::map<std::string, size_t>& m) {
        auto it = m.find(dev);
        return it == m.end() ? size_t(0) : it->second;
      };
      fixed = static_cast<double>(opts.device.is_cpu() ? r.weight_bytes : at(r.weight_bytes_per_device));
      per = (static_cast<double>(pk) - fixed) / static_cast<double>(c);
    }
    if (verbose >= 2) std::fprintf(stderr, "infera: chunk of %lld: %s\n", static_cast<long long>(c), mib(pk).c_str());
    if (pk <= budget) {
      best = c, best_peak = pk;
    } else if (c == 1) {
      return Status::error(StatusCode::kOutOfMemory,
                           "the memory budget of " + mib(budget) +
                               " is too small for batch 1 of this model: it needs " +
                               (pk == SIZE_MAX ? std::string("more (its plan ran out of memory)") : mib(pk)) + " on " +
                               dev + " (weights, arena and scratch)");
    } else {
      c = pk == SIZE_MAX ? c / 2 : std::min(guess(static_cast<double>(budget)), c - 1);
    }
  }
  if (!best) return too_big("no chunk size fit after 12 plans");
  // One step up when the fit leaves room (arenas are nearly, not exactly, linear in the batch).
  if (static_cast<double>(best_peak) < 0.9 * static_cast<double>(budget) && best < n - 1) {
    const int64_t up = guess(static_cast<double>(budget) * 0.98);
    if (up > best) {
      tried.push_back(up);
      auto e = entry_for(with_batch(dims, up));
      if (e.is_ok() && chunk_peak(*e.value()->plan) <= budget) best = up;
    }
  }
  // Balanced chunks (37 in at most 12: 10, 10, 10, 7): at most two plan sizes are run; the plans
  // made only to measure are dropped (on a GPU each holds its own copy of the weights).
  const std::vector<int64_t> sizes = chunk_sizes(n, best);
  best = sizes.front();
  {
    std::lock_guard<std::mutex> l(mu);
    for (int64_t t : tried)
      if (t != sizes.front() && t != sizes.back()) plans.erase(with_batch(dims, t));
  }
  if (verbose >= 1)
    std::fprintf(stderr, "infera: batch %lld runs in %zu chunks of at most %lld (memory budget %s)\n",
                 static_cast<long long>(n), sizes.size(), static_cast<long long>(best), mib(budget).c_str());
  return remember(best);
}

Status SessionImpl::run_chunked(const std::map<std::string, Tensor>& in, const Dims& dims, int64_t chunk,
                                std::vector<Tensor>& out, bool allocate, const RunOptions& ro) {
  const int64_t n = dims[0][0];
  auto info = infer_values(graph, dims);
  if (!info.is_ok()) return info.status();
  std::vector<std::vector<int64_t>> od;
  for (int v : graph.outputs) od.push_back(info.value()[v].shape.concrete());  // chunkable: known
  if (allocate) {
    out.clear();
    for (size_t i = 0; i < od.size(); ++i) {
      auto t = Tensor::make(outputs[i].dtype, od[i]);
      if (!t.is_ok()) return t.status().prefixed("output '" + outputs[i].name + "': ");
      out.push_back(t.take());
    }
  } else {
    if (out.size() != od.size())
      return Status::error(
          StatusCode::kInvalidInput,
          "run: " + std::to_string(out.size()) + " output tensors given, the model has " + std::to_string(od.size()));
    for (size_t i = 0; i < od.size(); ++i)
      if (out[i].dtype() != outputs[i].dtype || out[i].dims() != od[i] || (!out[i].data() && out[i].numel() != 0))
        return Status::error(StatusCode::kInvalidInput, "run: output '" + outputs[i].name + "' must be " +
                                                            dtype_name(outputs[i].dtype) + " " + dims_str(od[i]) +
                                                            " with a buffer");
  }
  // Rows [at, at + c) of every input and output, as views: each chunk writes its rows in place.
  auto rows = [](const Tensor& t, int64_t n, int64_t at, int64_t c) {
    std::vector<int64_t> d = t.dims();
    const size_t row = n ? t.nbytes() / static_cast<size_t>(n) : 0;
    d[0] = c;
    return Tensor::view(t.dtype(), d, static_cast<char*>(const_cast<void*>(t.data())) + row * at, t.device());
  };
  const std::vector<int64_t> sizes = chunk_sizes(n, chunk);
  std::vector<int64_t> first(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) first[i] = first[i - 1] + sizes[i - 1];
  std::vector<std::vector<StepTiming>> timings(sizes.size());
  std::vector<double> device_ms(sizes.size(), 0);
  auto one = [&](size_t i) -> Status {
    const int64_t at = first[i], c = sizes[i];
    std::map<std::string, Tensor> vin;
    for (const auto& [name, t] : in) vin.emplace(name, rows(t, n, at, c));
    std::vector<Tensor> vout;
    for (const Tensor& t : out) vout.push_back(rows(t, n, at, c));
    RunOptions r;
    if (ro.profile) r.profile = &timings[i];
    if (ro.device_ms) r.device_ms = &device_ms[i];
    Status s = run(vin, vout, false, r);
    return s.is_ok() ? s
                     : s.prefixed("rows " + std::to_string(at) + ".." + std::to_string(at + c - 1) + " of the batch: ");
  };
  // On a GPU two threads take alternate chunks, each on its own run context and stream (the
  // budget counted two): the copies of one overlap the compute of the other.
  const size_t lanes = opts.device.is_gpu() && sizes.size() > 1 ? 2 : 1;
  std::vector<Status> err(lanes, Status::ok());
  auto lane = [&](size_t k) {
    for (size_t i = k; i < sizes.size() && err[k].is_ok(); i += lanes) err[k] = one(i);
  };
  if (lanes == 1) {
    lane(0);
  } else {
    std::thread second(lane, 1);
    lane(0);
    second.join();
  }
  for (const Status& e : err)
    if (!e.is_ok()) return e;
  std::vector<StepTiming> all;
  double device_total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    all.insert(all.end(), timings[i].begin(), timings[i].end());
    device_total += device_ms[i];
  }
  if (ro.profile) *ro.profile = std::move(all);
  if (ro.device_ms) *ro.device_ms = device_total;
  return Status::ok();
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
    std::map<std::string, int64_t> symbols;
    for (const IoInfo& io : impl_->inputs) {
      auto it = input_shapes.find(io.name);
      if (it == input_shapes.end())
        return Status::error(StatusCode::kInvalidInput, "missing shape for input '" + io.name + "'");
      Status s = check_dims(io, it->second, symbols);
      if (!s.is_ok()) return s;
      dims.push_back(it->second);
    }
    for (auto& [name, d] : input_shapes) {
      bool known = false;
      for (const IoInfo& io : impl_->inputs) known = known || io.name == name;
      if (!known) return Status::error(StatusCode::kInvalidInput, "unknown input '" + name + "'");
    }
    auto chunk = impl_->chunk_for(dims);
    if (!chunk.is_ok()) return chunk.status();
    const int64_t c = chunk.value();
    auto e = impl_->entry_for(c ? with_batch(dims, c) : dims);
    if (!e.is_ok()) return e.status();
    PlanReport r = e.value()->plan->report;
    r.perf_db_found = e.value()->perf_found;
    r.perf_db_timed = e.value()->perf_timed;
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
