// infera._infera: the Python extension over the public C++ API (include/infera/infera.h) only, and the
// CLI's calibration-data library (infera.quantize reads .npy files and image folders as the CLI does).
// The ONNX Runtime-shaped surface (InferenceSession, SessionOptions, providers, IoBinding) is
// Python (python/infera/_session.py); this file is its hot path: feeds -> tensors, one
// Session::run with the GIL released, outputs -> arrays that own the result (no copy).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calib.h"  // tools/cli (infera_calib_data): calibration samples from files, images
#include "convert.h"
#include "image.h"
#include "infera/multi_device.h"
#include "infera/quantize.h"

namespace infera::py {

namespace {

// The exception types, by StatusCode (kOk unused); created once at import.
PyObject* g_errors[8] = {};

PyObject* error_type(StatusCode c) {
  const int i = static_cast<int>(c);
  return i > 0 && i < 8 && g_errors[i] ? g_errors[i] : g_errors[0];
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

nb::list io_list(const std::vector<IoInfo>& ios) {
  nb::list out;
  for (const IoInfo& io : ios) {
    nb::object shape = nb::none();
    if (io.rank_known) {
      nb::list dims;
      for (const IoDim& d : io.dims) {
        if (d.value >= 0)
          dims.append(d.value);
        else if (!d.symbol.empty())
          dims.append(d.symbol);
        else
          dims.append(nb::none());
      }
      shape = dims;
    }
    out.append(nb::make_tuple(io.name, ort_type_name(io.dtype), shape, dtype_name(io.dtype)));
  }
  return out;
}

// A name from Python as UTF-8; a str that has none (a lone surrogate) is InvalidInput, not the
// RuntimeError (std::bad_cast) of nb::cast.
std::string utf8_of(nb::handle s, const char* what) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (!p) {
    PyErr_Clear();
    raise_error(StatusCode::kInvalidInput, std::string(what) + ": a str that is not valid Unicode (a lone surrogate?)");
  }
  return std::string(p, static_cast<size_t>(n));
}

nb::dict report_dict(const PlanReport& r) {
  nb::dict d;
  d["arena_bytes"] = r.arena_bytes;
  d["naive_bytes"] = r.naive_bytes;
  d["weight_bytes"] = r.weight_bytes;
  d["scratch_bytes"] = r.scratch_bytes;
  d["arena_bytes_per_device"] = r.arena_bytes_per_device;
  d["scratch_bytes_per_device"] = r.scratch_bytes_per_device;
  d["weight_bytes_per_device"] = r.weight_bytes_per_device;
  d["steps"] = r.steps;
  d["accelerated_steps"] = r.accelerated_steps;
  d["inserted_steps"] = r.inserted_steps;
  d["steps_per_backend"] = r.steps_per_backend;
  d["build_ms"] = r.build_ms;
  d["flops"] = r.flops;
  d["perf_db_found"] = r.perf_db_found;
  d["perf_db_timed"] = r.perf_db_timed;
  d["weights_reused"] = r.weights_reused;
  d["weights_converted"] = r.weights_converted;
  d["output_dims"] = r.output_dims;
  d["peak_bytes"] = r.peak_bytes;
  d["chunk_batch"] = r.chunk_batch;
  d["chunks"] = r.chunks;
  return d;
}

// {name: array} -> tensors on `dev` (held keeps what they view alive); in_index: the inputs' dtypes.
std::map<std::string, Tensor> feeds_of(nb::handle feeds, std::vector<Feed>& held,
                                       const std::map<std::string, DataType>& in_index, Device dev) {
  if (!PyDict_Check(feeds.ptr()))
    raise_error(StatusCode::kInvalidInput,
                std::string("input_feed must be a dict {name: array}, found ") + nb::type_name(feeds.type()).c_str());
  std::map<std::string, Tensor> in;
  held.reserve(PyDict_Size(feeds.ptr()));
  for (auto [k, v] : nb::borrow<nb::dict>(feeds)) {
    if (!nb::isinstance<nb::str>(k))
      raise_error(StatusCode::kInvalidInput,
                  std::string("input_feed keys must be input names (str), found ") + nb::type_name(k.type()).c_str());
    std::string name = utf8_of(k, "input_feed key");
    auto it = in_index.find(name);  // unknown names: Session::run names them and the model's inputs
    held.push_back(to_feed(v, name, it == in_index.end() ? DataType::kUndefined : it->second, dev));
    in.emplace(name, held.back().tensor);
  }
  return in;
}

class PySession {
 public:
  PySession(std::shared_ptr<Session> s) : s_(std::move(s)) {
    for (const IoInfo& io : s_->inputs()) in_index_[io.name] = io.dtype;
    for (size_t i = 0; i < s_->outputs().size(); ++i) out_index_[s_->outputs()[i].name] = i;
    device_ = s_->options().device;
  }

  std::shared_ptr<Session> get() const {
    if (!s_) raise_error(StatusCode::kInvalidInput, "this InferenceSession is closed");
    return s_;
  }
  void close() { s_.reset(); }
  bool closed() const { return !s_; }
  nb::list inputs() const { return io_list(get()->inputs()); }
  nb::list outputs() const { return io_list(get()->outputs()); }
  std::string device() const { return device_.str(); }

  nb::dict summary() const {
    const ModelSummary& m = get()->summary();
    nb::dict d;
    d["ir_version"] = m.ir_version;
    d["opset"] = m.opset;
    d["producer"] = m.producer;
    d["node_count"] = m.node_count;
    d["node_count_original"] = m.node_count_original;
    d["parameter_count"] = m.parameter_count;
    d["op_histogram"] = m.op_histogram;
    const ModelMetadata& md = m.metadata;
    d["producer_name"] = md.producer_name;
    d["producer_version"] = md.producer_version;
    d["graph_name"] = md.graph_name;
    d["domain"] = md.domain;
    d["description"] = md.description;
    d["graph_description"] = md.graph_description;
    d["version"] = md.model_version;
    d["custom_metadata_map"] = md.metadata_props;
    return d;
  }

  size_t allocated_bytes() const { return get()->allocated_bytes(); }
  size_t cached_plan_count() const { return get()->cached_plan_count(); }

  void save_plan(const std::string& path, const std::vector<std::map<std::string, std::vector<int64_t>>>& shapes) {
    auto s = get();
    Status st = Status::ok();
    {
      nb::gil_scoped_release unlocked;
      st = s->save_plan(path, shapes);
    }
    if (!st.is_ok()) raise_status(st);
  }

  nb::dict prepare(const std::map<std::string, std::vector<int64_t>>& shapes) {
    auto s = get();
    Result<PlanReport> r = PlanReport{};
    {
      nb::gil_scoped_release unlocked;
      r = s->prepare(shapes);
    }
    if (!r.is_ok()) raise_status(r.status());
    return report_dict(r.value());
  }

  // run(None | [names], {name: array}, dlpack, profile): the selected outputs in order.
  // `profile` (a list or None) receives (node, op, backend, ms) per executed step.
  nb::list run(nb::handle names, nb::handle feeds, bool dlpack, nb::handle profile) {
    auto s = get();
    std::vector<size_t> pick = select(names);
    std::vector<Feed> held;
    std::map<std::string, Tensor> in = convert_feeds(feeds, held);
    const bool want_profile = !profile.is_none();
    // GPU outputs stay on the device for DLPack consumers; profiles need caller outputs.
    const bool preallocate = want_profile || (dlpack && device_.is_gpu());
    std::vector<Tensor> out;
    std::vector<StepTiming> steps;
    Status st;
    {
      nb::gil_scoped_release unlocked;
      if (preallocate) {
        st = allocate(*s, in, out, dlpack ? device_ : Device::cpu());
        if (st.is_ok()) {
          RunOptions ro;
          if (want_profile) ro.profile = &steps;
          st = s->run(in, out, ro);
        }
      } else {
        auto r = s->run(in);
        if (r.is_ok())
          out = r.take();
        else
          st = r.status();
      }
    }
    held.clear();
    if (!st.is_ok()) raise_status(st);
    if (want_profile) {
      nb::list p = nb::borrow<nb::list>(profile);
      for (const StepTiming& t : steps) p.append(nb::make_tuple(t.node, t.op, t.backend, t.ms));
    }
    nb::list result;
    for (size_t i : pick) result.append(to_python(std::move(out[i]), dlpack, s->outputs()[i].name));
    return result;
  }

  // IoBinding: `bound` has one entry per model output, a writable array (written in place) or
  // None (allocated here). Returns every output: the bound objects themselves where given.
  nb::list run_bound(nb::handle feeds, nb::list bound, bool dlpack) {
    auto s = get();
    const auto& outs = s->outputs();
    if (bound.size() != outs.size())
      raise_error(StatusCode::kInvalidInput, "run_bound: " + std::to_string(bound.size()) +
                                                 " output slots given, the model has " + std::to_string(outs.size()));
    std::vector<Feed> held;
    std::map<std::string, Tensor> in = convert_feeds(feeds, held);
    std::vector<Feed> bound_feeds(outs.size());
    for (size_t i = 0; i < outs.size(); ++i)
      if (!bound[i].is_none()) bound_feeds[i] = to_output(bound[i], outs[i].name, outs[i].dtype, device_);
    std::vector<Tensor> out;
    Status st;
    {
      nb::gil_scoped_release unlocked;
      st = allocate(*s, in, out, dlpack ? device_ : Device::cpu());
      for (size_t i = 0; st.is_ok() && i < outs.size(); ++i) {
        if (bound_feeds[i].tensor.empty()) continue;
        if (bound_feeds[i].tensor.dims() != out[i].dims())
          st = Status::error(StatusCode::kInvalidInput, "output '" + outs[i].name + "': the bound buffer has shape " +
                                                            dims_str(bound_feeds[i].tensor.dims()) +
                                                            ", this run writes " + dims_str(out[i].dims()));
        else
          out[i] = bound_feeds[i].tensor;
      }
      if (st.is_ok()) st = s->run(in, out);
    }
    held.clear();
    if (!st.is_ok()) raise_status(st);
    nb::list result;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!bound[i].is_none())
        result.append(bound[i]);
      else
        result.append(to_python(std::move(out[i]), dlpack, outs[i].name));
    }
    return result;
  }

  // For tests: the data pointer the session would read for this feed, and whether it was copied.
  nb::tuple probe_feed(const std::string& name, nb::handle value) {
    auto it = in_index_.find(name);
    Feed f = to_feed(value, name, it == in_index_.end() ? DataType::kUndefined : it->second, device_);
    return nb::make_tuple(reinterpret_cast<uintptr_t>(f.tensor.data()), f.copied);
  }

 private:
  std::vector<size_t> select(nb::handle names) const {
    std::vector<size_t> pick;
    if (names.is_none()) {
      for (size_t i = 0; i < out_index_.size(); ++i) pick.push_back(i);
      return pick;
    }
    if (nb::isinstance<nb::str>(names))
      raise_error(StatusCode::kInvalidInput, "output_names must be a list of names or None, found a str");
    nb::object it = nb::steal(PyObject_GetIter(names.ptr()));
    if (!it.is_valid()) {
      PyErr_Clear();
      raise_error(StatusCode::kInvalidInput, std::string("output_names must be a list of names or None, found ") +
                                                 nb::type_name(names.type()).c_str());
    }
    for (nb::handle n : names) {  // an empty list means all, as in ORT
      if (!nb::isinstance<nb::str>(n))
        raise_error(StatusCode::kInvalidInput,
                    std::string("output_names: expected str, found ") + nb::type_name(n.type()).c_str());
      std::string name = utf8_of(n, "output_names");
      auto f = out_index_.find(name);
      if (f == out_index_.end()) {
        std::string known;
        for (const IoInfo& o : s_->outputs()) known += (known.empty() ? "'" : ", '") + o.name + "'";
        raise_error(StatusCode::kInvalidInput, "unknown output '" + name + "' (model outputs: " + known + ")");
      }
      pick.push_back(f->second);
    }
    if (pick.empty())
      for (size_t i = 0; i < out_index_.size(); ++i) pick.push_back(i);
    return pick;
  }

  std::map<std::string, Tensor> convert_feeds(nb::handle feeds, std::vector<Feed>& held) const {
    return feeds_of(feeds, held, in_index_, device_);
  }

  // Outputs of this input shape on `on`, from the plan's output dims (prepare: cached).
  static Status allocate(Session& s, const std::map<std::string, Tensor>& in, std::vector<Tensor>& out, Device on) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (auto& [name, t] : in) shapes[name] = t.dims();
    for (const IoInfo& io : s.inputs())
      if (!shapes.count(io.name)) return Status::error(StatusCode::kInvalidInput, "missing input '" + io.name + "'");
    for (auto& [name, t] : in) {
      bool known = false;
      for (const IoInfo& io : s.inputs()) known = known || io.name == name;
      if (!known) return Status::error(StatusCode::kInvalidInput, "unknown input '" + name + "'");
    }
    auto r = s.prepare(shapes);
    if (!r.is_ok()) return r.status();
    out.clear();
    for (size_t i = 0; i < r.value().output_dims.size(); ++i) {
      const auto& dims = r.value().output_dims[i];
      for (int64_t d : dims)
        if (d < 0)
          return Status::error(StatusCode::kUnsupported, "output '" + s.outputs()[i].name +
                                                             "' has a data-dependent shape: it cannot be preallocated "
                                                             "(run without profile / bound outputs)");
      auto t = on.is_cpu() ? Tensor::make(s.outputs()[i].dtype, dims) : Tensor::make_on(on, s.outputs()[i].dtype, dims);
      if (!t.is_ok()) return t.status().prefixed("output '" + s.outputs()[i].name + "': ");
      out.push_back(t.take());
    }
    return Status::ok();
  }

  std::shared_ptr<Session> s_;
  std::map<std::string, DataType> in_index_;
  std::map<std::string, size_t> out_index_;
  Device device_;
};

// The shared loader's messages (tools/cli) name the CLI's options; Python's name its arguments.
Status python_names(const Status& st) {
  std::string m = st.message();
  const std::pair<const char*, const char*> names[] = {{"--calib-preprocess SPEC", "preprocess=SPEC"},
                                                       {"--calib-preprocess", "preprocess"},
                                                       {"--max-image-pixels", "max_image_pixels"}};
  for (const auto& [cli, py] : names)
    for (size_t at = m.find(cli); at != std::string::npos; at = m.find(cli, at + std::strlen(py)))
      m.replace(at, std::strlen(cli), py);
  return Status::error(st.or_code(StatusCode::kInvalidInput).code(), m);
}

// infera.quantize: calibration over sample batches (arrays, or read from `path` as `infera quantize
// --calibration PATH [--calib-preprocess SPEC]` reads them), then the QDQ model (infera quantize's core).
nb::dict quantize_model(const std::string& model, const std::string& out, const std::string& path, nb::list samples,
                        const std::string& method, int num_threads, double budget,
                        const std::vector<std::string>& force_float, const std::vector<std::string>& force_int8,
                        const std::optional<std::vector<int64_t>>& labels, const std::optional<std::string>& preprocess,
                        int64_t batch, int64_t max_image_pixels) {
  CalibrationOptions o;
  if (Status st = parse_calib_method(method, o.method, o.percentile); !st.is_ok()) raise_status(st);
  o.num_threads = num_threads;
  if (preprocess) {  // the spec first, as the CLI checks it before loading anything
    auto spec = cli::parse_preprocess(*preprocess);
    if (!spec.is_ok()) raise_status(python_names(spec.status()));
  }
  if (max_image_pixels == 0) max_image_pixels = cli::kMaxImagePixels;
  if (max_image_pixels < 1 || max_image_pixels > cli::kMaxImagePixels)
    raise_error(StatusCode::kInvalidInput, "max_image_pixels must be in 1.." + std::to_string(cli::kMaxImagePixels) +
                                               ", found " + std::to_string(max_image_pixels));
  std::vector<Feed> feeds;  // the arrays stay alive while calibrating
  std::vector<CalibrationSample> cs;
  if (!path.empty()) {
    Result<std::vector<CalibrationSample>> loaded = std::vector<CalibrationSample>{};
    {
      nb::gil_scoped_release unlocked;
      loaded = cli::load_model_calibration(model, path, batch, preprocess.value_or(""), max_image_pixels);
    }
    if (!loaded.is_ok()) raise_status(python_names(loaded.status()));
    cs = loaded.take();
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string name = "calibration sample " + std::to_string(i);
    feeds.push_back(to_feed(samples[i], name, DataType::kUndefined, Device::cpu()));
    cs.push_back({name, feeds.back().tensor});
  }
  if (labels) {  // counted before calibrating: one label per sample row, in order (>= 0: __init__.py)
    int64_t rows = 0;
    for (const CalibrationSample& c : cs) rows += c.tensor.dims().empty() ? 1 : c.tensor.dims()[0];
    if (static_cast<int64_t>(labels->size()) != rows)
      raise_error(StatusCode::kInvalidInput, "labels: " + std::to_string(labels->size()) + " labels for " +
                                                 std::to_string(rows) +
                                                 " calibration sample rows (one per row of the samples, in order)");
  }
  Result<CalibrationTable> t = CalibrationTable{};
  Result<MixedPlan> mix = MixedPlan{};
  {
    nb::gil_scoped_release unlocked;
    t = calibrate(model, cs, o);
    std::vector<std::string> floats;
    if (t.is_ok() && budget >= 0) {  // mixed precision
      MixedOptions mo;
      mo.budget = budget;
      mo.force_float = force_float;
      mo.force_int8 = force_int8;
      mo.num_threads = num_threads;
      if (labels) mo.labels = *labels;  // the budget and errors are then top-1 points
      mix = choose_mixed(model, t.value(), cs, mo);
      if (!mix.is_ok()) t = mix.status();
      if (mix.is_ok()) floats = mix.value().float_layers();
    }
    if (t.is_ok()) {
      Status w = write_qdq_model(model, t.value(), out, floats);
      if (!w.is_ok()) t = w;
    }
  }
  if (!t.is_ok()) raise_status(t.status());
  nb::dict d;
  d["method"] = t.value().method;
  d["amax"] = t.value().amax;
  if (budget >= 0) {
    const MixedPlan& mp = mix.value();
    nb::list layers;
    for (const LayerChoice& l : mp.layers) {
      nb::dict e;
      e["layer"] = l.layer;
      e["precision"] = l.int8 ? "int8" : "fp32";
      e["sensitivity"] = l.sensitivity;
      e["why"] = l.why;
      layers.append(e);
    }
    d["layers"] = layers;
    d["measure"] = mp.top1 ? "top1" : "relative_error";
    d["all_int8_error"] = mp.all_int8;
    d["estimated_error"] = mp.estimated;
    d["measured_error"] = mp.measured;
    if (mp.top1) {
      d["float_top1"] = mp.float_top1;
      d["rows"] = mp.rows;
    }
  }
  return d;
}

SessionOptions options_of(const std::string& device, const std::string& precision,
                          const std::vector<std::string>& backends, int num_threads, bool optimize,
                          int max_cached_plans, int max_run_contexts, bool allow_tf32, bool vendor_libraries,
                          const std::string& gpu_graphs, int verbose, const std::string& perf_db,
                          size_t memory_budget_bytes, const std::string& arena_extend) {
  SessionOptions o;
  auto dev = Device::parse(device);
  if (!dev.is_ok()) raise_status(dev.status());
  o.device = dev.value();
  auto prec = parse_precision(precision);
  if (!prec.is_ok()) raise_status(prec.status());
  o.precision = prec.value();
  o.backends = backends;
  o.num_threads = num_threads;
  o.optimize = optimize;
  o.max_cached_plans = max_cached_plans;
  o.max_run_contexts = max_run_contexts;
  o.allow_tf32 = allow_tf32;
  o.vendor_libraries = vendor_libraries;
  if (gpu_graphs == "auto")
    o.gpu_graphs = SessionOptions::GraphMode::kAuto;
  else if (gpu_graphs == "on")
    o.gpu_graphs = SessionOptions::GraphMode::kOn;
  else if (gpu_graphs == "off")
    o.gpu_graphs = SessionOptions::GraphMode::kOff;
  else
    raise_error(StatusCode::kInvalidInput, "enable_graph must be None (auto), True or False");
  o.verbose = verbose;
  o.perf_db = perf_db;  // "": the default file; "none": no database
  o.memory_budget_bytes = memory_budget_bytes;
  if (arena_extend == "kSameAsRequested")
    o.arena_extend = SessionOptions::ArenaExtend::kSameAsRequested;
  else if (arena_extend == "kNextPowerOfTwo")
    o.arena_extend = SessionOptions::ArenaExtend::kNextPowerOfTwo;
  else
    raise_error(StatusCode::kInvalidInput, "arena_extend_strategy must be \"kNextPowerOfTwo\" or \"kSameAsRequested\"");
  return o;
}

PySession load(nb::handle model, const std::string& model_dir, const std::string& device, const std::string& precision,
               const std::vector<std::string>& backends, int num_threads, bool optimize, int max_cached_plans,
               int max_run_contexts, bool allow_tf32, bool vendor_libraries, const std::string& gpu_graphs, int verbose,
               const std::string& perf_db, size_t memory_budget_bytes, const std::string& arena_extend) {
  const SessionOptions o =
      options_of(device, precision, backends, num_threads, optimize, max_cached_plans, max_run_contexts, allow_tf32,
                 vendor_libraries, gpu_graphs, verbose, perf_db, memory_budget_bytes, arena_extend);
  Result<std::unique_ptr<Session>> r = std::unique_ptr<Session>();
  if (nb::isinstance<nb::bytes>(model)) {
    nb::bytes b = nb::borrow<nb::bytes>(model);
    std::string bytes(b.c_str(), b.size());
    nb::gil_scoped_release unlocked;
    r = Session::load_from_memory(bytes, model_dir, o);
  } else if (nb::isinstance<nb::str>(model)) {
    std::string path = nb::cast<std::string>(model);
    nb::gil_scoped_release unlocked;
    r = Session::load(path, o);
  } else {
    raise_error(StatusCode::kInvalidInput, std::string("path_or_bytes must be a str, os.PathLike or bytes, found ") +
                                               nb::type_name(model.type()).c_str());
  }
  if (!r.is_ok()) raise_status(r.status());
  return PySession(std::shared_ptr<Session>(r.take()));
}

// MultiDeviceSession (include/infera/multi_device.h): host feeds in, numpy outputs out.
class PyMultiSession {
 public:
  explicit PyMultiSession(std::shared_ptr<MultiDeviceSession> m) : m_(std::move(m)) {
    for (const IoInfo& io : m_->inputs()) in_index_[io.name] = io.dtype;
  }
  nb::list inputs() const { return io_list(m_->inputs()); }
  nb::list outputs() const { return io_list(m_->outputs()); }
  size_t device_count() const { return m_->device_count(); }
  nb::list run(nb::handle names, nb::handle feeds) {
    const auto& outs = m_->outputs();
    std::vector<size_t> pick;
    if (names.is_none()) {
      for (size_t i = 0; i < outs.size(); ++i) pick.push_back(i);
    } else {
      for (nb::handle h : names) {
        if (!nb::isinstance<nb::str>(h)) raise_error(StatusCode::kInvalidInput, "output names must be str");
        const std::string n = utf8_of(h, "output name");
        size_t i = 0;
        while (i < outs.size() && outs[i].name != n) ++i;
        if (i == outs.size()) raise_error(StatusCode::kInvalidInput, "unknown output '" + n + "'");
        pick.push_back(i);
      }
    }
    std::vector<Feed> held;
    std::map<std::string, Tensor> in = feeds_of(feeds, held, in_index_, Device::cpu());
    Result<std::vector<Tensor>> r = std::vector<Tensor>{};
    {
      nb::gil_scoped_release unlocked;
      r = m_->run(in);
    }
    held.clear();
    if (!r.is_ok()) raise_status(r.status());
    std::vector<Tensor> out = r.take();
    nb::list result;
    for (size_t i : pick) result.append(to_python(std::move(out[i]), false, outs[i].name));
    return result;
  }
  nb::list stats() const {
    nb::list l;
    for (const DeviceStats& d : m_->stats()) {
      nb::dict x;
      x["device"] = d.device.str();
      x["numa_node"] = d.numa_node;
      x["pinned"] = d.pinned;
      x["runs"] = d.runs;
      x["rows"] = d.rows;
      x["busy_ms"] = d.busy_ms;
      l.append(x);
    }
    return l;
  }
  void reset_stats() { m_->reset_stats(); }

 private:
  std::shared_ptr<MultiDeviceSession> m_;
  std::map<std::string, DataType> in_index_;
};

PyMultiSession load_multi(const std::string& path, const std::string& devices, const std::string& mode,
                          const std::string& device, const std::string& precision,
                          const std::vector<std::string>& backends, int num_threads, bool optimize,
                          int max_cached_plans, int max_run_contexts, bool allow_tf32, bool vendor_libraries,
                          const std::string& gpu_graphs, int verbose, const std::string& perf_db,
                          size_t memory_budget_bytes, const std::string& arena_extend) {
  (void)device;  // each engine's device comes from the list
  const SessionOptions o =
      options_of("cpu", precision, backends, num_threads, optimize, max_cached_plans, max_run_contexts, allow_tf32,
                 vendor_libraries, gpu_graphs, verbose, perf_db, memory_budget_bytes, arena_extend);
  auto list = parse_device_list(devices);
  if (!list.is_ok()) raise_status(list.status());
  MultiDeviceOptions m;
  m.devices = list.value();
  if (mode == "throughput")
    m.mode = MultiDeviceOptions::Mode::kThroughput;
  else if (mode != "latency")
    raise_error(StatusCode::kInvalidInput, "mode must be \"latency\" or \"throughput\", got \"" + mode + "\"");
  Result<std::unique_ptr<MultiDeviceSession>> r = std::unique_ptr<MultiDeviceSession>();
  {
    nb::gil_scoped_release unlocked;
    r = MultiDeviceSession::load(path, o, m);
  }
  if (!r.is_ok()) raise_status(r.status());
  return PyMultiSession(std::shared_ptr<MultiDeviceSession>(r.take()));
}

nb::list backends_list() {
  nb::list out;
  for (const BackendInfo& b : available_backends()) {
    nb::dict d;
    d["name"] = b.name;
    d["device"] = b.device;
    d["available"] = b.available;
    d["version"] = b.version;
    d["details"] = b.details;
    out.append(d);
  }
  return out;
}

void make_errors(nb::module_& m) {
  struct Spec {
    StatusCode code;
    const char* name;
    PyObject* extra_base;
    const char* doc;
  };
  PyObject* base = PyErr_NewExceptionWithDoc("infera.InferaError",
                                             "Base of infera's errors. `code` is the library's status code name "
                                             "(\"invalid input\", ...); the message names what is wrong.",
                                             PyExc_RuntimeError, nullptr);
  g_errors[0] = base;
  PyObject_SetAttrString(base, "code", nb::str("internal").ptr());
  m.attr("InferaError") = nb::handle(base);
  const Spec specs[] = {
      {StatusCode::kInvalidModel, "InvalidModel", nullptr, "The model file is malformed or inconsistent."},
      {StatusCode::kInvalidInput, "InvalidInput", PyExc_ValueError,
       "An input, shape, dtype, name or option is wrong (also a ValueError)."},
      {StatusCode::kUnsupported, "Unsupported", nullptr, "Valid, but not implemented here (op, precision, device)."},
      {StatusCode::kOutOfMemory, "OutOfMemory", PyExc_MemoryError,
       "Host or device memory (or a configured limit) exhausted (also a MemoryError)."},
      {StatusCode::kDeviceError, "DeviceError", nullptr, "A device runtime or library call failed."},
      {StatusCode::kIo, "IoError", nullptr, "A file could not be read or written."},
      {StatusCode::kInternal, "InternalError", nullptr, "A bug in infera: please report it."},
  };
  for (const Spec& s : specs) {
    PyObject* bases = s.extra_base ? PyTuple_Pack(2, base, s.extra_base) : PyTuple_Pack(1, base);
    PyObject* t = PyErr_NewExceptionWithDoc((std::string("infera.") + s.name).c_str(), s.doc, bases, nullptr);
    Py_DECREF(bases);
    PyObject_SetAttrString(t, "code", nb::str(status_code_name(s.code)).ptr());
    g_errors[static_cast<int>(s.code)] = t;
    m.attr(s.name) = nb::handle(t);
  }
}

}  // namespace

void raise_error(StatusCode code, const std::string& msg) {
  PyObject* text = PyUnicode_DecodeUTF8(msg.data(), static_cast<Py_ssize_t>(msg.size()), "replace");
  PyErr_SetObject(error_type(code), text);
  Py_XDECREF(text);
  throw nb::python_error();
}

void raise_status(const Status& s) { raise_error(s.code(), s.message()); }

}  // namespace infera::py

NB_MODULE(_infera, m) {
  using namespace infera::py;
  m.doc() = "infera's C++ core (include/infera/infera.h); use the `infera` package.";
  make_errors(m);
  m.def("quantize", &quantize_model, nb::arg("model"), nb::arg("out"), nb::arg("path"), nb::arg("samples"),
        nb::arg("method"), nb::arg("num_threads"), nb::arg("budget"), nb::arg("force_float"), nb::arg("force_int8"),
        nb::arg("labels").none(), nb::arg("preprocess").none(), nb::arg("batch"), nb::arg("max_image_pixels"));
  m.def("version", [] { return std::string(infera::version()); });
  m.def("available_backends", &backends_list);
  m.def("gpu_build", [] {
#ifdef INFERA_PY_GPU
    return std::string(INFERA_PY_GPU);
#else
    return std::string("off");
#endif
  });
  m.def("load", &load, nb::arg("model"), nb::arg("model_dir"), nb::arg("device"), nb::arg("precision"),
        nb::arg("backends"), nb::arg("num_threads"), nb::arg("optimize"), nb::arg("max_cached_plans"),
        nb::arg("max_run_contexts"), nb::arg("allow_tf32"), nb::arg("vendor_libraries"), nb::arg("gpu_graphs"),
        nb::arg("verbose"), nb::arg("perf_db"), nb::arg("memory_budget_bytes"), nb::arg("arena_extend"));
  m.def("load_multi", &load_multi, nb::arg("model"), nb::arg("devices"), nb::arg("mode"), nb::arg("device"),
        nb::arg("precision"), nb::arg("backends"), nb::arg("num_threads"), nb::arg("optimize"),
        nb::arg("max_cached_plans"), nb::arg("max_run_contexts"), nb::arg("allow_tf32"), nb::arg("vendor_libraries"),
        nb::arg("gpu_graphs"), nb::arg("verbose"), nb::arg("perf_db"), nb::arg("memory_budget_bytes"),
        nb::arg("arena_extend"));
  nb::class_<PyMultiSession>(m, "MultiSession")
      .def("inputs", &PyMultiSession::inputs)
      .def("outputs", &PyMultiSession::outputs)
      .def("device_count", &PyMultiSession::device_count)
      .def("stats", &PyMultiSession::stats)
      .def("reset_stats", &PyMultiSession::reset_stats)
      .def("run", &PyMultiSession::run, nb::arg("names").none(), nb::arg("feeds").none());
  nb::class_<PySession>(m, "Session")
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("summary", &PySession::summary)
      .def("device", &PySession::device)
      .def("close", &PySession::close)
      .def_prop_ro("closed", &PySession::closed)
      .def("allocated_bytes", &PySession::allocated_bytes)
      .def("cached_plan_count", &PySession::cached_plan_count)
      .def("prepare", &PySession::prepare)
      .def("save_plan", &PySession::save_plan)
      .def("run", &PySession::run, nb::arg("names").none(), nb::arg("feeds").none(), nb::arg("dlpack") = false,
           nb::arg("profile").none() = nb::none())
      .def("run_bound", &PySession::run_bound, nb::arg("feeds").none(), nb::arg("bound"), nb::arg("dlpack") = false)
      .def("probe_feed", &PySession::probe_feed);
}
