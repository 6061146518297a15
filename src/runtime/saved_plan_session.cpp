// Saved plans, the session side: Session::save_plan (plans prepared, the choices they used
// recorded, typed ops checked against their attributes) and load (refuse a plan made for another
// machine or other options, rebuild the graph without passes, serve the embedded choices, prepare
// the saved shapes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <typeinfo>

#include "frontend/onnx/import.h"
#include "ops/conv.h"
#include "ops/infer.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/op.h"
#include "plan/plan.h"
#include "runtime/saved_plan.h"
#include "runtime/session_impl.h"
#include "tune/keys.h"

namespace infera {

namespace {

using SO = SessionOptions;

// This machine as a saved plan's header names it, for device d.
Status identity_of(const Device& d, SavedPlanHeader& h) {
  const std::string cpu = tune::cpu_device_name();  // "cpu: <model> [<isa>]"
  const size_t br = cpu.rfind(" [");
  h.cpu_device = br == std::string::npos ? cpu : cpu.substr(0, br);
  h.cpu_isa = br == std::string::npos ? "" : cpu.substr(br + 2, cpu.size() - br - 3);
  h.cpu_libs = tune::cpu_libs();
  h.gpu_device.clear(), h.gpu_arch.clear(), h.gpu_libs.clear();
  if (!d.is_gpu()) return Status::ok();
  for (const BackendInfo& b : available_backends()) {
    if (b.name != "gpu" || b.device != d.str()) continue;
    if (!b.available) return Status::error(StatusCode::kUnsupported, d.str() + " is not usable here: " + b.details);
    h.gpu_device = b.version;  // "cuda NVIDIA H200"
    // details: "<name>, arch 90, 132 multiprocessors, 143771 MiB; cuDNN 9.19, ..."
    const std::string det = b.details.substr(0, b.details.find(';'));
    const size_t a = det.find(", ");
    h.gpu_arch = a == std::string::npos ? det : det.substr(a + 2);
    const GpuLibraryVersions v = gpu_library_versions();
    h.gpu_libs = v.vendor + " runtime " + std::to_string(v.runtime) + " driver " + std::to_string(v.driver) + " dnn " +
                 std::to_string(v.dnn) + " blas " + std::to_string(v.blas);
    return Status::ok();
  }
  return Status::error(StatusCode::kUnsupported, "there is no GPU " + d.str() + " here (no GPU backend or device)");
}

bool same_window(const ConvAttrs& a, const ConvAttrs& b) {
  return a.kernel_shape == b.kernel_shape && a.strides == b.strides && a.pads == b.pads && a.dilations == b.dilations &&
         a.auto_pad == b.auto_pad && a.group == b.group;
}

// Makes every node's attributes describe its typed op (a pass may set the op directly: the fused
// epilogues of FusedConv/FusedGemm get their activation attributes), then checks that the op made
// from the attributes is the one the node has. A node whose state cannot be carried is refused:
// a saved plan never loads as a different model.
}  // namespace

Status attributes_for_ops(Graph& g) {
  for (Node& n : g.nodes) {
    if (!n.op) return Status::error(StatusCode::kInternal, n.label() + " has no typed op");
    const auto* conv = dynamic_cast<const ConvOp*>(n.op.get());
    const auto* gemm = dynamic_cast<const GemmOp*>(n.op.get());
    if (conv && conv->fused()) activation_to_attrs(n, conv->activation());
    if (gemm && gemm->fused()) activation_to_attrs(n, gemm->activation());
    const auto* bn = dynamic_cast<const BatchNormOp*>(n.op.get());
    if (bn && bn->fused()) activation_to_attrs(n, bn->activation());
    auto made = make_kernel(n, g.opset);
    if (!made.is_ok())
      return Status::error(StatusCode::kUnsupported,
                           "cannot save " + n.label() + ": its attributes do not make its op (" + made.message() + ")");
    const OpKernel& m = *made.value();
    bool same = typeid(m) == typeid(*n.op);
    if (conv) {
      const auto* c = dynamic_cast<const ConvOp*>(&m);
      same = c && c->fused() == conv->fused() && c->activation() == conv->activation() &&
             same_window(c->attrs(), conv->attrs());
    } else if (gemm) {
      const auto* c = dynamic_cast<const GemmOp*>(&m);
      const GemmAttrs &x = c ? c->attrs() : gemm->attrs(), &y = gemm->attrs();
      same = c && c->fused() == gemm->fused() && c->activation() == gemm->activation() && x.trans_a == y.trans_a &&
             x.trans_b == y.trans_b && x.alpha == y.alpha && x.beta == y.beta;
    } else if (bn) {
      const auto* c = dynamic_cast<const BatchNormOp*>(&m);
      same = c && c->fused() == bn->fused() && c->activation() == bn->activation() && c->epsilon() == bn->epsilon() &&
             c->training() == bn->training() && c->spatial() == bn->spatial();
    }
    if (!same)
      return Status::error(StatusCode::kUnsupported,
                           "cannot save " + n.label() +
                               ": a graph pass gave it a typed op that its attributes do not describe (the saved "
                               "plan would load as a different model)");
  }
  return Status::ok();
}

namespace {

std::string backends_str(const std::vector<std::string>& b) {
  std::string s;
  for (const std::string& x : b) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::string shape_line(const std::map<std::string, std::vector<int64_t>>& m) {
  std::string s;
  for (auto& [name, d] : m) s += (s.empty() ? "" : ", ") + name + " " + Shape::of(d).str();
  return s;
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Status::error(StatusCode::kIo, path + ": cannot create a file beside it: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : err);
    ::unlink(tmp.c_str());
    return Status::error(StatusCode::kIo, path + ": cannot write the saved plan: " + why);
  }
  return Status::ok();
}

// A plan-shaping option: left at its default it takes the plan's value; set to another value than
// the plan's, the load is refused (a plan is the result of its options).
template <class T, class Str>
Status adopt(T& field, const T& dflt, const T& planned, const char* what, Str str, const std::string& flag) {
  if (field == planned) return Status::ok();
  if (field == dflt) {
    field = planned;
    return Status::ok();
  }
  return Status::error(StatusCode::kInvalidInput, std::string("the options ask for ") + what + " " + str(field) +
                                                      ", the plan was built with " + str(planned) +
                                                      ": rebuild it with `infera build" + flag + "`");
}

Status refuse(const std::string& what, const std::string& planned, const std::string& here) {
  return Status::error(StatusCode::kInvalidModel, "this saved plan was made for " + what + " '" + planned +
                                                      "', this machine has '" + here +
                                                      "': rebuild it with `infera build` here");
}

std::string prec(Precision p) { return precision_name(p); }
std::string onoff(bool b) { return b ? "on" : "off"; }
std::string algo(SO::ConvAlgo a) { return conv_algo_name(a); }
std::string wino(SO::WinogradMode w) {
  return w == SO::WinogradMode::kOn ? "on" : w == SO::WinogradMode::kOff ? "off" : "auto";
}
std::string search(SO::SearchMode m) { return search_name(m); }

// The header against this infera, the caller's options and this machine; o becomes the options
// the session is made with.
Status check_header(const SavedPlanHeader& h, SessionOptions& o) {
  if (h.infera_version != version())
    return Status::error(StatusCode::kInvalidModel, "this saved plan was made by infera " + h.infera_version +
                                                        ", this is infera " + version() +
                                                        ": rebuild it with `infera build`");
  // The options that shape a plan come from the plan; the others (threads, caches, memory, limits,
  // verbosity, GPU graphs) from the caller.
  const SessionOptions d;
  if (o.device != h.device) {
    if (o.device == d.device)
      o.device = h.device;                               // left at its default: the plan's device
    else if (!(o.device.is_gpu() && h.device.is_gpu()))  // another GPU of the same kind: checked below
      return Status::error(StatusCode::kInvalidInput,
                           "the options ask for device " + o.device.str() + ", the plan was built for " +
                               h.device.str() + ": rebuild it with `infera build --device " + o.device.str() + "`");
  }
  for (Status st :
       {adopt(o.precision, d.precision, h.precision, "precision", prec, " --precision " + prec(o.precision)),
        adopt(o.optimize, d.optimize, h.optimize, "graph passes", onoff, o.optimize ? "" : " --no-optimize"),
        adopt(o.conv_algo, d.conv_algo, h.conv_algo, "conv algo", algo, " --conv-algo " + algo(o.conv_algo)),
        adopt(o.winograd, d.winograd, h.winograd, "winograd", wino, " --winograd " + wino(o.winograd)),
        adopt(o.search, d.search, h.search, "search", search, " --search " + search(o.search))})
    if (!st.is_ok()) return st;
  if (h.device.is_gpu()) {  // GPU-only options: a CPU plan does not depend on them
    for (Status st : {adopt(o.allow_tf32, d.allow_tf32, h.allow_tf32, "tf32", onoff, o.allow_tf32 ? " --tf32" : ""),
                      adopt(o.vendor_libraries, d.vendor_libraries, h.vendor_libraries, "vendor libraries", onoff,
                            o.vendor_libraries ? "" : " --no-vendor-libs")})
      if (!st.is_ok()) return st;
  }
  if (!o.backends.empty()) {
    std::vector<std::string> asked = o.backends;
    if (std::find(asked.begin(), asked.end(), "ref") == asked.end()) asked.push_back("ref");
    if (asked != h.backends)
      return Status::error(StatusCode::kInvalidInput, "the options ask for backends " + backends_str(asked) +
                                                          ", the plan was built with " + backends_str(h.backends) +
                                                          ": rebuild it with `infera build`");
  }
  o.backends = h.backends;
  // The machine: device, architecture, libraries.
  SavedPlanHeader here;
  if (Status st = identity_of(o.device, here); !st.is_ok()) return st.or_code(StatusCode::kUnsupported);
  if (o.device.is_gpu()) {
    if (h.gpu_device != here.gpu_device) return refuse("the GPU", h.gpu_device, here.gpu_device);
    if (h.gpu_arch != here.gpu_arch) return refuse("the GPU architecture", h.gpu_arch, here.gpu_arch);
    if (h.gpu_libs != here.gpu_libs) return refuse("the GPU libraries", h.gpu_libs, here.gpu_libs);
  } else if (h.cpu_device != here.cpu_device) {
    return refuse("the CPU", h.cpu_device, here.cpu_device);
  }
  if (h.cpu_isa != here.cpu_isa) return refuse("the CPU architecture (oneDNN ISA)", h.cpu_isa, here.cpu_isa);
  if (h.cpu_libs != here.cpu_libs) return refuse("the CPU library", h.cpu_libs, here.cpu_libs);

  return Status::ok();
}

}  // namespace

Status Session::save_plan(const std::string& path,
                          const std::vector<std::map<std::string, std::vector<int64_t>>>& input_shapes) {
  SessionImpl::Active active(*impl_);
  return guarded([&]() -> Status {
    SessionImpl& s = *impl_;
    if (input_shapes.empty())
      return Status::error(StatusCode::kInvalidInput, "save_plan: give at least one set of input shapes");
    SavedPlan sp;
    sp.header.infera_version = version();
    sp.header.device = s.opts.device;
    if (Status st = identity_of(s.opts.device, sp.header); !st.is_ok()) return st;
    sp.header.precision = s.opts.precision;
    sp.header.allow_tf32 = s.opts.allow_tf32;
    sp.header.vendor_libraries = s.opts.vendor_libraries;
    sp.header.optimize = s.opts.optimize;
    sp.header.conv_algo = s.opts.conv_algo;
    sp.header.winograd = s.opts.winograd;
    sp.header.search = s.opts.search;
    for (const auto& b : s.backends) sp.header.backends.push_back(b->name());
    sp.header.model = s.graph.source;
    // Each shape: prepared (checked, cached), then planned again with a database handle that
    // keeps every choice it serves or times: what a load needs to make the same plan untimed.
    std::map<std::string, PerfEntry> used;
    // The packed weights these shapes' plans use (found in the session's or converted now).
    auto packed = std::make_shared<PackedWeights>(s.packed);
    for (size_t i = 0; i < input_shapes.size(); ++i) {
      auto rep = prepare(input_shapes[i]);
      if (!rep.is_ok()) return rep.status().prefixed("save_plan: shapes " + std::to_string(i) + ": ");
      std::vector<std::vector<int64_t>> dims;
      for (const IoInfo& io : s.inputs) dims.push_back(input_shapes[i].at(io.name));
      TuneSettings ts{s.opts.conv_algo, s.opts.winograd, s.opts.search, s.verbose};
      std::unique_ptr<PerfDb> db = PerfDb::open(s.opts.search == SO::SearchMode::kOff ? "none" : s.opts.perf_db, ts);
      db->keep_used();
      PlanOptions po;
      po.backends = s.backends;
      po.num_threads = s.threads;
      po.verbose = s.verbose;
      po.limits = s.opts.limits;
      po.graph_mode = s.opts.gpu_graphs;
      po.perf_db = db.get();
      po.packed = packed.get();
      auto p = make_plan(s.graph, dims, po);
      if (!p.is_ok()) return p.status().prefixed("save_plan: shapes " + std::to_string(i) + ": ");
      (void)db->flush();  // what this build timed (perf_db "none": nothing) joins the file as in prepare()
      for (PerfEntry& e : db->used()) used[e.key.str()] = std::move(e);
      sp.shapes.push_back(input_shapes[i]);
    }
    for (auto& [k, e] : used) sp.choices.push_back(e);
    sp.graph = s.graph;  // nodes share their constants and typed ops with the session's graph
    if (Status st = attributes_for_ops(sp.graph); !st.is_ok()) return st.prefixed("save_plan: ");
    sp.summary = s.summary;
    for (PackedWeights::Entry& e : packed->entries())
      if (e.save && e.blob->device() < 0) sp.packed.push_back(std::move(e));  // host bytes only
    return write_file_atomic(path, encode_saved_plan(sp));
  });
}

Result<std::unique_ptr<Session>> load_saved_plan(const std::string& bytes, const std::string& source,
                                                 const SessionOptions& opts, const SessionFactory& make) {
  auto at = [&](const Status& s) { return s.prefixed(source + ": "); };
  // Limits may be lowered, never raised past the constants the code was checked for.
  limits::Limits lim = opts.limits;
  const limits::Limits top;
  lim.max_model_bytes = std::min(lim.max_model_bytes, top.max_model_bytes);
  lim.max_tensor_elements = std::min(lim.max_tensor_elements, top.max_tensor_elements);
  lim.max_rank = std::min(lim.max_rank, top.max_rank);
  lim.max_nodes = std::min(lim.max_nodes, top.max_nodes);
  lim.max_node_io = std::min(lim.max_node_io, top.max_node_io);
  lim.max_attribute_elements = std::min(lim.max_attribute_elements, top.max_attribute_elements);
  SessionOptions o = opts;
  auto decoded = decode_saved_plan(bytes, lim, true, [&](const SavedPlanHeader& h) { return check_header(h, o); });
  if (!decoded.is_ok()) return at(decoded.status());
  SavedPlan sp = decoded.take();
  const SavedPlanHeader& h = sp.header;
  // The graph as the passes left it: typed ops from the attributes, shapes inferred again (the
  // file is untrusted: inference re-checks every node), no passes.
  const bool optimize = o.optimize;
  o.optimize = false;
  o.perf_db = perf_db_embed(sp.choices);
  sp.graph.source = source;
  auto impl = std::make_unique<SessionImpl>();
  Status st = impl->init(std::move(sp.graph), o).or_code(StatusCode::kInvalidModel);
  if (!st.is_ok()) return at(st);
  impl->opts.optimize = optimize;
  for (PackedWeights::Entry& e : sp.packed) impl->packed->pin(e.key, e.layout, std::move(e.blob));
  ModelSummary& m = impl->summary;
  m.node_count_original = sp.summary.node_count_original;
  m.op_histogram = sp.summary.op_histogram;
  m.passes = sp.summary.passes;
  m.parameter_count = sp.summary.parameter_count;
  auto& props = m.metadata.metadata_props;
  props["infera.plan.format"] = std::to_string(kSavedPlanFormat);
  props["infera.plan.infera"] = h.infera_version;
  props["infera.plan.model"] = h.model;
  props["infera.plan.device"] = h.device.str() + (h.device.is_gpu() ? " (" + h.gpu_device + ")" : "");
  props["infera.plan.arch"] = h.device.is_gpu() ? h.gpu_arch + "; cpu " + h.cpu_isa : h.cpu_isa;
  props["infera.plan.cpu"] = h.cpu_device;
  props["infera.plan.libraries"] = h.cpu_libs + (h.device.is_gpu() ? "; " + h.gpu_libs : "");
  props["infera.plan.options"] = "precision " + prec(h.precision) + ", tf32 " + onoff(h.allow_tf32) +
                                 ", vendor libraries " + onoff(h.vendor_libraries) + ", passes " + onoff(h.optimize) +
                                 ", conv algo " + algo(h.conv_algo) + ", winograd " + wino(h.winograd) + ", search " +
                                 search(h.search) + ", backends " + backends_str(h.backends);
  props["infera.plan.choices"] = std::to_string(sp.choices.size());
  char mib[32];
  std::snprintf(mib, sizeof mib, " (%.1f MiB)", impl->packed->bytes() / 1048576.0);
  props["infera.plan.packed"] = std::to_string(sp.packed.size()) + mib;
  std::string shapes;
  for (auto& s : sp.shapes) shapes += (shapes.empty() ? "" : "; ") + shape_line(s);
  props["infera.plan.shapes"] = shapes;
  std::unique_ptr<Session> session = make(std::move(impl));
  for (size_t i = 0; i < sp.shapes.size(); ++i) {
    auto r = session->prepare(sp.shapes[i]);
    if (!r.is_ok()) return at(r.status().prefixed("saved shapes " + shape_line(sp.shapes[i]) + ": "));
  }
  return session;
}

Result<std::unique_ptr<Session>> load_saved_plan_file(const std::string& path, const SessionOptions& opts,
                                                      const SessionFactory& make) {
  auto bytes = read_binary_file(path, "saved plan", std::min(opts.limits.max_model_bytes, limits::kMaxModelBytes));
  if (!bytes.is_ok()) return bytes.status().or_code(StatusCode::kInvalidModel);
  return load_saved_plan(bytes.value(), path, opts, make);
}

}  // namespace infera
