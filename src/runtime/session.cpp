#include <omp.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "backends/cpu/backend.h"
#include "frontend/onnx/import.h"
#include "graph/infer.h"
#include "passes/pass.h"
#include "plan/plan.h"
#include "runtime/executor.h"

namespace infera {

class SessionImpl {
 public:
  Graph graph;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  SessionOptions opts;
  int threads = 1;
  bool use_dnnl = true;
  std::vector<IoInfo> inputs, outputs;
  ModelSummary summary;
  // Plans per input-shape signature, with the step at which each was last used: each plan holds
  // its arena and backend-reordered weights, so at most opts.max_cached_plans are kept (LRU).
  std::map<std::vector<std::vector<int64_t>>, std::pair<std::unique_ptr<Plan>, uint64_t>> plans;
  uint64_t clock = 0;
  std::mutex mu;

  Status init(Graph g, const SessionOptions& o);
  Result<Plan*> plan_for(const std::vector<std::vector<int64_t>>& dims);
  Result<std::vector<Tensor>> run(const std::map<std::string, Tensor>& inputs, std::vector<StepTiming>* timings);
};

static std::vector<IoInfo> io_of(const Graph& g, const std::vector<int>& ids) {
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

Status SessionImpl::init(Graph g, const SessionOptions& o) {
  opts = o;
  if (!o.device.is_cpu())
    return Status::error(StatusCode::kUnsupported,
                         "device " + o.device.str() + " is not available: this build has no GPU backend");
  if (o.precision != Precision::kFp32)
    return Status::error(StatusCode::kUnsupported,
                         std::string("precision ") + precision_name(o.precision) + " is not available yet (fp32 only)");
  use_dnnl = o.backends.empty();
  for (const std::string& b : o.backends) {
    if (b != "dnnl" && b != "ref")
      return Status::error(StatusCode::kInvalidInput, "unknown backend '" + b + "' (available: dnnl, ref)");
    if (b == "dnnl") use_dnnl = true;
  }
  threads = o.num_threads > 0 ? o.num_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  omp_set_num_threads(threads);
  dnnl_set_threads(threads);
  summary.ir_version = g.ir_version;
  summary.opset = g.opset;
  summary.producer = g.producer;
  summary.node_count_original = g.nodes.size();
  for (const Node& n : g.nodes) summary.op_histogram[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
  for (const Value& v : g.values)
    if (v.constant && (v.constant->dtype() == DataType::kFloat32 || v.constant->dtype() == DataType::kFloat64))
      summary.parameter_count += v.constant->numel();
  // Attributes are checked once, when each kernel is made; then shapes and types.
  Status s = infer_graph(g);
  if (!s.is_ok()) return s;
  if (o.optimize) {
    s = run_passes(g, default_passes(), &summary.passes);
    if (!s.is_ok()) return s;
  }
  for (const Node& n : g.nodes) {
    auto k = make_kernel(n, g.opset);
    if (!k.is_ok()) return k.status();
    kernels.push_back(k.take());
  }
  summary.node_count = g.nodes.size();
  for (const Node& n : g.nodes)
    summary.op_histogram_optimized[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
  graph = std::move(g);
  inputs = io_of(graph, graph.inputs);
  outputs = io_of(graph, graph.outputs);
  return Status::ok();
}

Result<Plan*> SessionImpl::plan_for(const std::vector<std::vector<int64_t>>& dims) {
  auto it = plans.find(dims);
  if (it != plans.end()) {
    it->second.second = ++clock;
    return it->second.first.get();
  }
  auto p = make_plan(graph, kernels, dims, use_dnnl, threads);
  if (!p.is_ok()) return p.status();
  const size_t cap = static_cast<size_t>(std::max(1, opts.max_cached_plans));
  while (plans.size() >= cap) {
    auto oldest = plans.begin();
    for (auto i = plans.begin(); i != plans.end(); ++i)
      if (i->second.second < oldest->second.second) oldest = i;
    plans.erase(oldest);
  }
  Plan* raw = p.value().get();
  plans[dims] = {p.take(), ++clock};
  return raw;
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::load(const std::string& path, const SessionOptions& opts) {
  auto g = import_onnx_file(path);
  if (!g.is_ok()) return g.status().or_code(StatusCode::kInvalidModel);
  auto impl = std::make_unique<SessionImpl>();
  Status s = impl->init(g.take(), opts).or_code(StatusCode::kInvalidModel);
  if (!s.is_ok()) return s.message().rfind(path, 0) == 0 ? s : s.prefixed(path + ": ");
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<std::unique_ptr<Session>> Session::load_from_memory(const std::string& bytes, const std::string& model_dir,
                                                           const SessionOptions& opts) {
  auto g = import_onnx_bytes(bytes, model_dir, "<memory>");
  if (!g.is_ok()) return g.status().or_code(StatusCode::kInvalidModel);
  auto impl = std::make_unique<SessionImpl>();
  Status s = impl->init(g.take(), opts).or_code(StatusCode::kInvalidModel);
  if (!s.is_ok()) return s;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const ModelSummary& Session::summary() const { return impl_->summary; }
const SessionOptions& Session::options() const { return impl_->opts; }

size_t Session::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  size_t n = 0;
  for (auto& [k, e] : impl_->plans) n += e.first->report.arena_bytes + e.first->report.weight_bytes;
  return n;
}

size_t Session::cached_plan_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->plans.size();
}

// Checks one input's dims against the declared ones; symbolic dims must agree across inputs.
static Status check_dims(const IoInfo& io, const std::vector<int64_t>& dims, std::map<std::string, int64_t>& symbols) {
  auto dims_str = [](const std::vector<int64_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
  };
  if (io.rank_known) {
    if (io.dims.size() != dims.size())
      return Status::error("input '" + io.name + "': expected rank " + std::to_string(io.dims.size()) +
                           ", found rank " + std::to_string(dims.size()) + " " + dims_str(dims));
  }
  for (size_t i = 0; i < io.dims.size() && i < dims.size(); ++i) {
    if (dims[i] < 0) return Status::error("input '" + io.name + "': negative dimension");
    if (io.dims[i].value >= 0 && io.dims[i].value != dims[i])
      return Status::error("input '" + io.name + "': dim " + std::to_string(i) + " must be " +
                           std::to_string(io.dims[i].value) + ", found " + std::to_string(dims[i]) + " (shape " +
                           dims_str(dims) + ")");
    if (!io.dims[i].symbol.empty()) {
      auto [it, fresh] = symbols.emplace(io.dims[i].symbol, dims[i]);
      if (!fresh && it->second != dims[i])
        return Status::error("input '" + io.name + "': dim " + std::to_string(i) + " ('" + io.dims[i].symbol +
                             "') is " + std::to_string(dims[i]) + " but another input gave it " +
                             std::to_string(it->second));
    }
  }
  return Status::ok();
}

Result<PlanReport> Session::prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::vector<int64_t>> dims;
  std::map<std::string, int64_t> symbols;
  for (const IoInfo& io : impl_->inputs) {
    auto it = input_shapes.find(io.name);
    if (it == input_shapes.end()) return Status::error("missing shape for input '" + io.name + "'");
    Status s = check_dims(io, it->second, symbols);
    if (!s.is_ok()) return s;
    dims.push_back(it->second);
  }
  auto p = impl_->plan_for(dims);
  if (!p.is_ok()) return p.status().or_code(StatusCode::kInvalidInput);
  return p.value()->report;
}

Result<std::vector<Tensor>> Session::run(const std::map<std::string, Tensor>& inputs) {
  return impl_->run(inputs, nullptr);
}

Result<std::vector<Tensor>> SessionImpl::run(const std::map<std::string, Tensor>& inputs,
                                             std::vector<StepTiming>* timings) {
  SessionImpl* impl_ = this;
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [name, t] : inputs) {
    bool known = false;
    for (const IoInfo& io : impl_->inputs) known = known || io.name == name;
    if (!known) {
      std::string names;
      for (const IoInfo& io : impl_->inputs) names += (names.empty() ? "'" : ", '") + io.name + "'";
      return Status::error("unknown input '" + name + "' (model inputs: " + names + ")");
    }
  }
  std::vector<std::vector<int64_t>> dims;
  std::vector<const Tensor*> ptrs;
  std::map<std::string, int64_t> symbols;
  for (const IoInfo& io : impl_->inputs) {
    auto it = inputs.find(io.name);
    if (it == inputs.end()) return Status::error("missing input '" + io.name + "'");
    const Tensor& t = it->second;
    if (t.dtype() != io.dtype)
      return Status::error("input '" + io.name + "': expected dtype " + dtype_name(io.dtype) + ", found " +
                           dtype_name(t.dtype()));
    Status s = check_dims(io, t.dims(), symbols);
    if (!s.is_ok()) return s;
    dims.push_back(t.dims());
    ptrs.push_back(&t);
  }
  auto p = impl_->plan_for(dims);
  if (!p.is_ok()) return p.status().or_code(StatusCode::kInvalidInput);
  // OpenMP's thread count is per calling thread: set it here, not only where the session was made.
  omp_set_num_threads(impl_->threads);
  auto r = execute_plan(impl_->graph, *p.value(), ptrs, impl_->threads, timings);
  if (!r.is_ok()) return r.status().or_code(StatusCode::kInvalidInput);
  return r;
}

Status Session::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs,
                    const RunOptions& run_options) {
  auto r = impl_->run(inputs, run_options.profile);
  if (!r.is_ok()) return r.status();
  if (outputs.size() != r.value().size())
    return Status::error(StatusCode::kInvalidInput, "run: " + std::to_string(outputs.size()) +
                                                        " output tensors given, the model has " +
                                                        std::to_string(r.value().size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& got = r.value()[i];
    if (outputs[i].dtype() != got.dtype() || outputs[i].dims() != got.dims() || !outputs[i].data())
      return Status::error(StatusCode::kInvalidInput, "run: output '" + impl_->outputs[i].name + "' must be " +
                                                          dtype_name(got.dtype()) + " of the computed dims");
    if (got.nbytes()) std::memcpy(outputs[i].data(), got.data(), got.nbytes());
  }
  return Status::ok();
}

}  // namespace infera
