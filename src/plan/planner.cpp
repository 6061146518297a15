// make_plan: concrete inference and plan-time folding, a backend per step (the first in the list
// that supports it), a format per value, in-place steps, kernels (each made once: a decline
// re-plans only what it changes), conversion steps where formats or devices meet, and memory
// per device. Names no backend.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "ops/infer.h"
#include "ops/util.h"
#include "plan/plan.h"

namespace infera {

namespace {

constexpr int64_t kFoldLimit = 1 << 16;  // elements: plan-time folding is for shape math

int env_verbose() {
  static const int v = [] {
    const char* e = std::getenv("INFERA_VERBOSE");
    return e && *e ? std::atoi(e) : 0;
  }();
  return v;
}

double node_flops(const Node& n, const std::vector<ValueInfo>& infos) {
  auto dims = [&](int slot, bool out) -> std::vector<int64_t> {
    const auto& ids = out ? n.outputs : n.inputs;
    if (slot >= static_cast<int>(ids.size()) || ids[slot] < 0) return {};
    const Shape& s = infos[ids[slot]].shape;
    return s.fully_known() ? s.concrete() : std::vector<int64_t>{};
  };
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "FusedConv" || op == "QConv" || op == "ConvTranspose") {  // QConv: int8 ops
    auto w = dims(1, false), x = dims(0, false), y = dims(0, true);
    if (w.size() < 3 || y.size() < 3 || x.size() < 3) return 0;
    if (op == "ConvTranspose") {
      double xs = 1, ks = 1;
      for (int64_t d : x) xs *= static_cast<double>(d);
      for (size_t i = 2; i < w.size(); ++i) ks *= static_cast<double>(w[i]);
      return 2.0 * xs * static_cast<double>(w[1]) * ks;
    }
    double k = 1, ys = 1;
    for (size_t i = 1; i < w.size(); ++i) k *= static_cast<double>(w[i]);  // Cin/group * kernel
    for (int64_t d : y) ys *= static_cast<double>(d);
    return 2.0 * ys * k;
  }
  if (op == "InvertedResidual") {  // expand, depthwise, project
    auto x = dims(0, false), we = dims(1, false), wd = dims(3, false), wp = dims(5, false), y = dims(0, true);
    if (x.size() != 4 || wd.size() != 4 || wp.size() != 4 || y.size() != 4) return 0;
    const double in = static_cast<double>(x[0] * x[2] * x[3]), out = static_cast<double>(y[0] * y[2] * y[3]);
    const double e = static_cast<double>(wd[0]);
    return 2.0 * (we.size() == 4 ? in * e * static_cast<double>(we[1]) : 0.0) +
           2.0 * out * e * static_cast<double>(wd[2] * wd[3]) + 2.0 * out * e * static_cast<double>(wp[0]);
  }
  if (op == "Gemm" || op == "FusedGemm" || op == "MatMul") {
    auto a = dims(0, false), y = dims(0, true);
    if (a.empty() || y.empty()) return 0;
    double ys = 1;
    for (int64_t d : y) ys *= static_cast<double>(d);
    int64_t k = (op == "MatMul" || n.attr_int("transA", 0) == 0) ? a.back() : a.front();
    if (op == "MatMul" && a.size() == 1) k = a[0];
    return 2.0 * ys * static_cast<double>(k);
  }
  return 0;
}

// Runs a kernel on plan-time known values (shape math). Inputs whose data the op does not read
// are passed as data-less views.
Status fold_step(const Node& n, const OpKernel& op, std::vector<ValueInfo>& infos, std::vector<ValueInfo>& outs) {
  std::vector<TensorRef> in_refs(n.inputs.size());
  std::vector<const TensorRef*> ip(n.inputs.size(), nullptr);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    int v = n.inputs[i];
    if (v < 0) continue;
    if (infos[v].value)
      in_refs[i] = TensorRef::of(*infos[v].value);
    else
      in_refs[i] = TensorRef{infos[v].dtype, infos[v].shape.concrete(), nullptr};
    ip[i] = &in_refs[i];
  }
  auto results = compute_node(n, op, ip, outs);
  if (!results.is_ok()) return results.status();
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) outs[o].value = std::make_shared<Tensor>(std::move(results.value()[o]));
  return Status::ok();
}

std::string op_name_of(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type; }

// The planner's working state for one graph and one set of input shapes.
class Planner {
 public:
  Planner(const Graph& g, const PlanOptions& o) : g_(g), o_(o) {}
  Result<std::shared_ptr<const Plan>> run(const std::vector<std::vector<int64_t>>& input_dims);
  Result<std::vector<ValueInfo>> infer_only(const std::vector<std::vector<int64_t>>& input_dims) {
    Status s = infer_and_fold(input_dims);
    if (!s.is_ok()) return s;
    return std::move(infos_);
  }

 private:
  struct Step {
    int node = -1;
    bool dynamic = false;
    size_t backend = 0;         // index into o_.backends
    Support sup;                // that backend's answer
    std::set<size_t> declined;  // backends whose create() declined this step
  };
  struct Use {
    size_t step, slot;
  };

  Status infer_and_fold(const std::vector<std::vector<int64_t>>& input_dims);
  StepRequest request(size_t s, bool with_formats) const;
  Format input_format(size_t s, size_t slot, int v) const;
  Device device_of(int v) const { return producer_[v] >= 0 ? backend(producer_[v]).device() : Device::cpu(); }
  Status assign(size_t s);
  void decide_formats();
  void decide_aliases();
  void decide_slices();
  std::vector<size_t> prefix_concats(size_t s) const;
  Status make_kernels(bool& redo);
  Status build(std::shared_ptr<Plan>& p);
  bool verbose(int level) const { return std::max(o_.verbose, env_verbose()) >= level; }
  const Backend& backend(size_t s) const { return *o_.backends[steps_[s].backend]; }

  const Graph& g_;
  const PlanOptions& o_;
  std::vector<ValueInfo> infos_;                  // per graph value
  std::vector<Step> steps_;                       // graph nodes that run (not folded)
  std::vector<std::vector<Use>> users_;           // per graph value
  std::vector<int> producer_;                     // per graph value: step, or -1
  std::vector<Format> format_;                    // per graph value
  std::vector<std::vector<int>> alias_;           // per step, per output slot: input slot shared, or -1
  std::vector<std::vector<ChannelSlice>> slice_;  // per step, per output slot (Concat in place)
  std::vector<int> in_slice_;                     // per graph value: the value it is a slice of, or -1
  std::vector<size_t> dense_off_;                 // per graph value: a dense slice's byte offset in it
  std::vector<char> elided_;                      // per step: a Concat done in place by its producers
  // Kernels made, by (step, backend, formats, aliases): a re-plan after a decline reuses them.
  std::map<std::string, std::shared_ptr<const StepKernel>> made_;
  std::vector<std::shared_ptr<const StepKernel>> kernel_;  // per step, for the current choices
  size_t kernels_created_ = 0;
};

Status Planner::infer_and_fold(const std::vector<std::vector<int64_t>>& input_dims) {
  const size_t nv = g_.values.size();
  infos_.resize(nv);
  for (size_t i = 0; i < nv; ++i) {
    infos_[i].dtype = g_.values[i].dtype;
    if (g_.values[i].constant) {
      infos_[i].shape = g_.values[i].shape;
      infos_[i].value = g_.values[i].constant;
    }
  }
  for (size_t i = 0; i < g_.inputs.size(); ++i) infos_[g_.inputs[i]].shape = Shape::of(input_dims[i]);
  for (size_t ni = 0; ni < g_.nodes.size(); ++ni) {
    const Node& n = g_.nodes[ni];
    if (!n.op) return Status::error(StatusCode::kInternal, n.label() + ": no typed op attached");
    const OpKernel& op = *n.op;
    std::vector<const ValueInfo*> in;
    for (int v : n.inputs) in.push_back(v >= 0 ? &infos_[v] : nullptr);
    InferContext ctx(n, g_.opset, in);
    Status s = op.infer(ctx);
    if (!s.is_ok()) return s;
    bool all_known = true;
    int64_t out_elems = 0;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] < 0) continue;
      const Shape& sh = ctx.outputs()[o].shape;
      if (!sh.fully_known()) {
        all_known = false;
        continue;
      }
      int64_t ne;
      if (!checked_numel(sh.concrete(), ne) || ne > (int64_t(1) << 36))
        return Status::error(StatusCode::kInvalidInput, n.label() + ": output '" + g_.values[n.outputs[o]].name +
                                                            "' shape " + sh.str() + " is too large");
      // The session's lowered limits bind what inference computes as they bind what files say.
      if (ne > o_.limits.max_tensor_elements || static_cast<int64_t>(sh.rank()) > o_.limits.max_rank)
        return Status::error(StatusCode::kInvalidInput,
                             n.label() + ": output '" + g_.values[n.outputs[o]].name + "' shape " + sh.str() +
                                 (ne > o_.limits.max_tensor_elements
                                      ? " has " + std::to_string(ne) + " elements, over the limit of " +
                                            std::to_string(o_.limits.max_tensor_elements) + " (max_tensor_elements)"
                                      : " has rank " + std::to_string(sh.rank()) + ", over the limit of " +
                                            std::to_string(o_.limits.max_rank) + " (max_rank)"));
      out_elems += ne;
    }
    bool foldable = all_known && out_elems <= kFoldLimit;
    for (size_t i = 0; foldable && i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      if (v >= 0 && !infos_[v].value && (op.needs_data(i) || !infos_[v].shape.fully_known())) foldable = false;
    }
    if (foldable) {
      s = fold_step(n, op, infos_, ctx.outputs());
      if (!s.is_ok()) return s;
    } else {
      Step st;
      st.node = static_cast<int>(ni);
      st.dynamic = !all_known;
      steps_.push_back(std::move(st));
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) infos_[n.outputs[o]] = std::move(ctx.outputs()[o]);
  }
  users_.assign(nv, {});
  producer_.assign(nv, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = g_.nodes[steps_[s].node];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) users_[n.inputs[i]].push_back({s, i});
    for (int v : n.outputs)
      if (v >= 0) producer_[v] = static_cast<int>(s);
  }
  return Status::ok();
}

StepRequest Planner::request(size_t s, bool with_formats) const {
  const Node& n = g_.nodes[steps_[s].node];
  StepRequest r;
  r.node = &n;
  r.op = n.op.get();
  r.opset = g_.opset;
  r.num_threads = o_.num_threads;
  r.verbose = o_.verbose;
  r.perf_db = o_.perf_db;
  r.packed = o_.packed;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int v = n.inputs[i];
    r.inputs.push_back(v >= 0 ? &infos_[v] : nullptr);
    // Constants are host tensors in the plain format: backends take them at creation.
    r.input_formats.push_back(with_formats && v >= 0 && !infos_[v].value ? input_format(s, i, v) : Format::kPlain);
  }
  for (int v : n.outputs) {
    r.outputs.push_back(v >= 0 ? &infos_[v] : nullptr);
    r.output_formats.push_back(with_formats && v >= 0 ? format_[v] : Format::kPlain);
  }
  r.output_alias = with_formats ? alias_[s] : std::vector<int>(n.outputs.size(), -1);
  if (with_formats) r.output_slices = slice_[s];
  return r;
}

// The format step s reads value v in: v's own where the step is on v's device and reads it,
// else (a conversion comes first) the step's first non-plain format, or plain.
Format Planner::input_format(size_t s, size_t slot, int v) const {
  const FormatSet can_read = steps_[s].sup.input_formats[slot];
  if (device_of(v) == backend(s).device() && format_in(can_read, format_[v])) return format_[v];
  for (unsigned f = 1; f < static_cast<unsigned>(Format::kCount); ++f)
    if (format_in(can_read, static_cast<Format>(f)) && format_applies(static_cast<Format>(f), infos_[v].shape.rank()))
      return static_cast<Format>(f);
  return Format::kPlain;
}

// The first backend (not declined) that supports step s.
Status Planner::assign(size_t s) {
  Step& st = steps_[s];
  const Node& n = g_.nodes[st.node];
  for (size_t b = 0; b < o_.backends.size(); ++b) {
    if (st.declined.count(b)) continue;
    const Backend& be = *o_.backends[b];
    if (st.dynamic) {
      if (!be.runs_dynamic_steps()) continue;
      st.backend = b;
      st.sup = Support::plain(n.inputs.size(), n.outputs.size());
      return Status::ok();
    }
    Support sup = be.supports(request(s, false));
    if (sup.ok) {
      sup.input_formats.resize(n.inputs.size(), kPlainOnly);
      sup.output_formats.resize(n.outputs.size(), kPlainOnly);
      st.backend = b;
      st.sup = std::move(sup);
      return Status::ok();
    }
    if (verbose(1) && b + 1 < o_.backends.size())
      std::fprintf(
          stderr, "%s\n",  // names from the model: one escaped, capped line (Status's rule)
          Status::error(StatusCode::kInternal, "infera: " + n.label() + " not on " + be.name() + ": " + sup.reason)
              .message()
              .c_str());
  }
  return Status::error(StatusCode::kUnsupported, n.label() + ": no backend of this session runs it" +
                                                     (st.dynamic ? " (its output shapes depend on values)" : ""));
}

// A value takes the first non-plain format its producer can write and every reader on its
// device can read; graph outputs and values of dynamic steps stay plain. Then the outputs of
// follows_input steps become plain where none of their full-size inputs has their format,
// until nothing changes (a demoted value can demote its readers' outputs in turn).
void Planner::decide_formats() {
  const size_t nv = g_.values.size();
  format_.assign(nv, Format::kPlain);
  for (size_t v = 0; v < nv; ++v) {
    const int s = producer_[v];
    if (s < 0 || steps_[s].dynamic) continue;
    const Node& n = g_.nodes[steps_[s].node];
    size_t slot = 0;
    while (slot < n.outputs.size() && n.outputs[slot] != static_cast<int>(v)) ++slot;
    const FormatSet can_write = steps_[s].sup.output_formats[slot];
    const bool plain_ok = format_in(can_write, Format::kPlain);
    if (plain_ok && (users_[v].empty() || g_.is_graph_output(static_cast<int>(v)))) continue;
    const Device dev = backend(s).device();
    for (unsigned f = 1; f < static_cast<unsigned>(Format::kCount); ++f) {
      const Format fmt = static_cast<Format>(f);
      if (!format_in(can_write, fmt) || !format_applies(fmt, infos_[v].shape.rank())) continue;
      bool all = true;
      for (const Use& u : users_[v]) {
        if (backend(u.step).device() != dev) continue;  // other devices get a conversion anyway
        all = all && !steps_[u.step].dynamic && format_in(steps_[u.step].sup.input_formats[u.slot], fmt);
      }
      if (all || !plain_ok) {  // a producer that cannot write plain keeps its own format
        format_[v] = fmt;
        break;
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < steps_.size(); ++s) {
      if (!steps_[s].sup.follows_input) continue;
      const Node& n = g_.nodes[steps_[s].node];
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const int y = n.outputs[o];
        if (y < 0 || format_[y] == Format::kPlain || !format_in(steps_[s].sup.output_formats[o], Format::kPlain))
          continue;
        bool fed = false;
        for (int x : n.inputs)
          fed = fed || (x >= 0 && format_[x] == format_[y] && infos_[x].shape.concrete() == infos_[y].shape.concrete());
        if (!fed) {
          format_[y] = Format::kPlain;
          changed = true;
        }
      }
    }
  }
}

// In-place steps: output o takes input i's buffer when the backend allows it, input i is an
// arena value read for the last time here (once), in the same format, device and size, and
// neither is a graph output (graph outputs may be written straight into caller buffers).
void Planner::decide_aliases() {
  alias_.assign(steps_.size(), {});
  std::vector<char> taken(g_.values.size(), 0);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = g_.nodes[steps_[s].node];
    alias_[s].assign(n.outputs.size(), -1);
    if (steps_[s].dynamic) continue;
    for (auto [i, o] : steps_[s].sup.in_place) {
      if (i < 0 || o < 0 || static_cast<size_t>(i) >= n.inputs.size() || static_cast<size_t>(o) >= n.outputs.size())
        continue;
      const int z = n.inputs[i], y = n.outputs[o];
      if (z < 0 || y < 0 || taken[z] || alias_[s][o] >= 0) continue;
      const int pz = producer_[z];
      if (pz < 0 || steps_[pz].dynamic || backend(pz).device() != backend(s).device()) continue;
      if (g_.is_graph_output(z) || g_.is_graph_output(y) || format_[z] != format_[y]) continue;
      // The same bytes (a reshape may alias too: its shape differs, its buffer does not).
      if (infos_[z].dtype != infos_[y].dtype ||
          backend(s).value_bytes(infos_[z], format_[z]) != backend(s).value_bytes(infos_[y], format_[y]))
        continue;
      bool last = true;
      int reads = 0;
      for (const Use& u : users_[z]) {
        last = last && u.step <= s;
        reads += u.step == s;
      }
      if (!last || reads != 1) continue;
      alias_[s][o] = i;
      taken[z] = 1;
    }
  }
}

// Concat in place: every input of a Concat along channels becomes a channel slice of its output,
// written there by its producer, when every input qualifies (else the Concat copies them all): it
// is read by this Concat only (once), made by a static step on the same device that writes slices
// in its format (or, on the host at batch 1, any producer: dense slices, below) and does not run
// that output in place, and is not a graph output. The Concat's output is not a graph output
// either (those may be the caller's buffers). The Concat is skipped.
void Planner::decide_slices() {
  slice_.assign(steps_.size(), {});
  elided_.assign(steps_.size(), 0);
  in_slice_.assign(g_.values.size(), -1);
  dense_off_.assign(g_.values.size(), 0);
  for (size_t s = 0; s < steps_.size(); ++s) slice_[s].resize(g_.nodes[steps_[s].node].outputs.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = g_.nodes[steps_[s].node];
    if (!steps_[s].sup.concat_in_place || steps_[s].dynamic || n.outputs.size() != 1 || n.inputs.empty()) continue;
    const int y = n.outputs[0];
    if (y < 0 || g_.is_graph_output(y) || infos_[y].shape.rank() < 2 || !infos_[y].shape.fully_known()) continue;
    const int64_t channels = infos_[y].shape.dims[1].value;
    // Dense slices: on the host at batch 1, a channel slice of a plain value, or of a blocked one
    // at block-aligned channels, is one contiguous run: a dense tensor of its own at a byte offset
    // of the wide value, which any producer writes unaware (no Support::sliced_outputs needed).
    const std::vector<int64_t> yd = infos_[y].shape.concrete();
    const int64_t block = format_channel_block(format_[y]);
    const bool dense =
        backend(s).device().is_cpu() && yd[0] == 1 && (format_[y] == Format::kPlain || (yd.size() == 4 && block > 1));
    int64_t spatial = 1;
    for (size_t i = 2; i < yd.size(); ++i) spatial *= yd[i];
    // Dense slices also serve the Concats whose inputs are a prefix of this one's (DenseNet: layer
    // k reads cat(x0, y1 .. yk), the block's last Concat cat(x0, y1 .. yK)): at batch 1 each is the
    // channel prefix of the wide value, the same bytes, so its Concat is skipped too. Not when a
    // reader takes such a prefix in place (it would write into the wide value), or reads it after
    // a reader of the wide value took that in place.
    const std::vector<size_t> prefixes = dense ? prefix_concats(s) : std::vector<size_t>{};
    auto used_here = [&](int x) {  // read once by this Concat, else only by its prefix Concats
      int here = 0;
      for (const Use& u : users_[x]) {
        if (u.step == s)
          ++here;
        else if (std::find(prefixes.begin(), prefixes.end(), u.step) == prefixes.end())
          return false;
      }
      return here == 1;
    };
    std::vector<std::pair<int, size_t>> at;  // per input: (producer step, output slot)
    std::vector<int64_t> offsets;
    int64_t offset = 0;
    for (int x : n.inputs) {
      const int p = x >= 0 ? producer_[x] : -1;
      if (p < 0 || infos_[x].value || steps_[p].dynamic || g_.is_graph_output(x) || !used_here(x) ||
          format_[x] != format_[y] || backend(p).device() != backend(s).device() ||
          !format_in(steps_[s].sup.input_formats[at.size()], format_[x]))
        break;
      const int64_t c = infos_[x].shape.dims[1].value;
      if (dense ? c % block != 0 || backend(p).value_bytes(infos_[x], format_[x]) !=
                                        static_cast<size_t>(c * spatial) * dtype_size(infos_[x].dtype)
                : !format_in(steps_[p].sup.sliced_outputs, format_[x]))
        break;
      const auto& outs = g_.nodes[steps_[p].node].outputs;
      const size_t o = static_cast<size_t>(std::find(outs.begin(), outs.end(), x) - outs.begin());
      if (alias_[p][o] >= 0) break;
      at.emplace_back(p, o);
      offsets.push_back(offset);
      offset += infos_[x].shape.dims[1].value;
    }
    if (at.size() != n.inputs.size() || offset != channels) continue;
    for (size_t i = 0; i < at.size(); ++i) {
      if (dense)
        dense_off_[n.inputs[i]] = static_cast<size_t>(offsets[i] * spatial) * dtype_size(infos_[y].dtype);
      else
        slice_[at[i].first][at[i].second] = ChannelSlice{channels, offsets[i]};
      in_slice_[n.inputs[i]] = y;
    }
    for (size_t q : prefixes) {
      in_slice_[g_.nodes[steps_[q].node].outputs[0]] = y;  // at offset 0
      elided_[q] = 1;
    }
    elided_[s] = 1;
  }
}

// The Concat steps (other than s, not yet skipped) whose inputs are the first inputs of s's, in
// the same order, and whose output is a channel prefix of s's in the same format that nothing
// writes into: on the host at batch 1 each is then the same bytes as the start of s's output.
std::vector<size_t> Planner::prefix_concats(size_t s) const {
  const Node& n = g_.nodes[steps_[s].node];
  const int y = n.outputs[0];
  // Readers of the wide value that write into it, by step: a prefix must be read before them.
  size_t first_writer = SIZE_MAX;
  for (const Use& u : users_[y])
    for (int a : alias_[u.step])
      if (a == static_cast<int>(u.slot)) first_writer = std::min(first_writer, u.step);
  std::vector<size_t> r;
  for (const Use& u0 : n.inputs.empty() || n.inputs[0] < 0 ? std::vector<Use>{} : users_[n.inputs[0]]) {
    const size_t q = u0.step;
    if (q == s || u0.slot != 0 || elided_[q] || steps_[q].dynamic || !steps_[q].sup.concat_in_place) continue;
    const Node& m = g_.nodes[steps_[q].node];
    if (m.op_type != n.op_type || m.domain != n.domain || m.outputs.size() != 1 || m.inputs.empty() ||
        m.inputs.size() >= n.inputs.size() || !std::equal(m.inputs.begin(), m.inputs.end(), n.inputs.begin()) ||
        backend(q).device() != backend(s).device())
      continue;
    const int c = m.outputs[0];
    // (Not one of s's inputs: it would be a slice of s at another offset too.)
    if (c < 0 || g_.is_graph_output(c) || format_[c] != format_[y] || !infos_[c].shape.fully_known() ||
        std::find(n.inputs.begin(), n.inputs.end(), c) != n.inputs.end() ||
        backend(q).value_bytes(infos_[c], format_[c]) !=
            static_cast<size_t>(infos_[c].shape.numel()) * dtype_size(infos_[c].dtype))
      continue;
    bool ok = true;
    for (const Use& u : users_[c]) {
      ok = ok && u.step < first_writer;
      for (int a : alias_[u.step]) ok = ok && a != static_cast<int>(u.slot);
    }
    if (ok && std::find(r.begin(), r.end(), q) == r.end()) r.push_back(q);
  }
  return r;
}

std::string key_of(size_t s, size_t b, const StepRequest& r) {
  std::string k = std::to_string(s) + "/" + std::to_string(b) + ":";
  for (Format f : r.input_formats) k += static_cast<char>('a' + static_cast<int>(f));
  k += ">";
  for (Format f : r.output_formats) k += static_cast<char>('a' + static_cast<int>(f));
  for (int a : r.output_alias) k += "," + std::to_string(a);
  for (const ChannelSlice& c : r.output_slices)
    if (c.sliced()) k += "/" + std::to_string(c.offset) + ":" + std::to_string(c.channels);
  return k;
}

// Makes the kernel of every step for the current backends, formats and aliases (each at most
// once). A declined step goes to its next backend and redo is set.
Status Planner::make_kernels(bool& redo) {
  redo = false;
  kernel_.assign(steps_.size(), nullptr);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const StepRequest r = request(s, true);
    const std::string key = key_of(s, steps_[s].backend, r);
    auto it = made_.find(key);
    if (it == made_.end()) {
      auto k = backend(s).create(r);
      if (!k.is_ok()) return k.status();
      ++kernels_created_;
      it = made_.emplace(key, std::shared_ptr<const StepKernel>(k.take())).first;
    }
    if (it->second) {
      kernel_[s] = it->second;
      continue;
    }
    if (verbose(1))
      std::fprintf(stderr, "%s\n",  // names from the model: one escaped, capped line (Status's rule)
                   Status::error(StatusCode::kInternal, "infera: " + g_.nodes[steps_[s].node].label() +
                                                            " declined by " + backend(s).name() + " at creation")
                       .message()
                       .c_str());
    steps_[s].declined.insert(steps_[s].backend);
    Status st = assign(s);
    if (!st.is_ok()) return st;
    redo = true;
  }
  return Status::ok();
}

Result<std::shared_ptr<const Plan>> Planner::run(const std::vector<std::vector<int64_t>>& input_dims) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o_.backends.empty()) return Status::error(StatusCode::kInternal, "make_plan: no backends");
  Status s = infer_and_fold(input_dims);
  if (!s.is_ok()) return s;
  for (size_t i = 0; i < steps_.size(); ++i) {
    s = assign(i);
    if (!s.is_ok()) return s;
  }
  // Each round re-decides formats and aliases; kernels already made for unchanged requests
  // are reused, so a decline costs only the kernels it changes.
  for (int round = 0;; ++round) {
    decide_formats();
    decide_aliases();
    decide_slices();
    bool redo = false;
    s = make_kernels(redo);
    if (!s.is_ok()) return s;
    if (!redo) break;
    if (round > static_cast<int>(steps_.size() * o_.backends.size()) + 1)
      return Status::error(StatusCode::kInternal, "make_plan: backend choice does not settle");
  }
  auto p = std::make_shared<Plan>();
  s = build(p);
  if (!s.is_ok()) return s;
  make_bound_rules(*p);
  p->report.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const Plan>(std::move(p));
}

// Lays out the final plan: values, steps with conversions inserted, arenas, report.
Status Planner::build(std::shared_ptr<Plan>& p) {
  const size_t nv = g_.values.size();
  p->graph = &g_;
  p->backends = o_.backends;
  p->num_threads = o_.num_threads;
  p->values.resize(nv);
  for (size_t v = 0; v < nv; ++v) {
    PlanValue& pv = p->values[v];
    pv.name = g_.values[v].name;
    pv.info = infos_[v];
    pv.graph_value = static_cast<int>(v);
    pv.format = format_[v];
    if (infos_[v].value)
      pv.home = PlanValue::Home::kConstant;
    else if (producer_[v] >= 0)
      pv.home = steps_[producer_[v]].dynamic ? PlanValue::Home::kDynamic : PlanValue::Home::kArena;
    if (producer_[v] >= 0) pv.device = backend(producer_[v]).device();
  }
  for (int v : g_.inputs) p->values[v].home = PlanValue::Home::kInput;

  // Steps, with a conversion before the first reader that needs a value in another format or
  // on another device (shared by every reader with the same need).
  std::map<std::tuple<int, int, int, int>, int> converted;  // (value, device kind, index, format) -> plan value
  auto convert = [&](int v, Device dev, Format to) -> Result<int> {
    const PlanValue src = p->values[v];
    if (src.device == dev && src.format == to) return v;
    const auto key = std::make_tuple(v, static_cast<int>(dev.kind), dev.index, static_cast<int>(to));
    if (auto it = converted.find(key); it != converted.end()) return it->second;
    ConvertRequest cr;
    cr.value = &src.info;
    cr.from_device = src.device;
    cr.to_device = dev;
    cr.from = src.format;
    cr.to = to;
    cr.num_threads = o_.num_threads;
    std::unique_ptr<StepKernel> k;
    const Backend* by = nullptr;
    for (const auto& b : o_.backends) {
      auto made = b->create_convert(cr);
      if (!made.is_ok()) return made.status();
      if (made.value()) {
        k = made.take();
        by = b.get();
        break;
      }
    }
    if (!k)
      return Status::error(StatusCode::kUnsupported, "no backend converts '" + src.name + "' from " +
                                                         format_name(src.format) + " on " + src.device.str() + " to " +
                                                         format_name(to) + " on " + dev.str());
    PlanValue dst = src;
    dst.name = src.name + " (" + format_name(to) + (dev == src.device ? "" : " on " + dev.str()) + ")";
    dst.device = dev;
    dst.format = to;
    dst.home = src.home == PlanValue::Home::kDynamic ? PlanValue::Home::kDynamic : PlanValue::Home::kArena;
    const int id = static_cast<int>(p->values.size());
    p->values.push_back(dst);
    PlanStep st;
    st.backend = by;
    st.kernel = std::move(k);
    st.inputs = {v};
    st.outputs = {id};
    st.input_formats = {src.format};
    st.output_formats = {to};
    st.op_name = src.device == dev ? "reorder" : "copy";
    st.convert_node = std::make_shared<Node>();
    st.convert_node->name = st.op_name + " of '" + src.name + "'";
    st.convert_node->op_type = st.op_name;
    p->steps.push_back(std::move(st));
    ++p->report.inserted_steps;
    converted.emplace(key, id);
    return id;
  };

  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = g_.nodes[steps_[s].node];
    const Backend& be = backend(s);
    PlanStep st;
    st.node = steps_[s].node;
    st.op = n.op.get();
    st.backend = &be;
    st.kernel = kernel_[s];
    st.dynamic = steps_[s].dynamic;
    st.skip = elided_[s] != 0;
    st.op_name = op_name_of(n);
    const StepRequest r = request(s, true);
    st.input_formats = r.input_formats;
    st.output_formats = r.output_formats;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      // Constants stay where they are: a backend takes them at creation (weights reordered,
      // uploaded). Graph inputs live on the host, plain.
      if (v >= 0 && p->values[v].home != PlanValue::Home::kConstant) {
        auto c = convert(v, be.device(), r.input_formats[i]);
        if (!c.is_ok()) return c.status();
        v = c.value();
      }
      st.inputs.push_back(v);
    }
    st.outputs = n.outputs;
    p->steps.push_back(std::move(st));
  }
  for (int v : g_.outputs) {
    int id = v;
    if (p->values[v].home == PlanValue::Home::kArena || p->values[v].home == PlanValue::Home::kDynamic) {
      auto c = convert(v, Device::cpu(), Format::kPlain);
      if (!c.is_ok()) return c.status();
      id = c.value();
    }
    p->outputs.push_back(id);
  }
  for (int v : g_.inputs) p->inputs.push_back(v);
  // A step whose outputs all have zero elements writes nothing (kernels need not take empty sizes).
  for (PlanStep& st : p->steps) {
    if (st.skip) continue;
    int present = 0, empty = 0;
    for (int v : st.outputs) {
      if (v < 0) continue;
      ++present;
      empty += p->values[v].info.shape.numel() == 0;  // -1 unless fully known
    }
    st.skip = !st.dynamic && present > 0 && empty == present;
  }

  // Memory: liveness over the final steps, per device; in-place outputs share their input's
  // buffer (one interval for both).
  const size_t np = p->values.size();
  std::vector<int> root(np);
  std::iota(root.begin(), root.end(), 0);
  for (size_t s = 0, gs = 0; s < p->steps.size(); ++s) {
    const PlanStep& st = p->steps[s];
    if (st.node < 0) continue;
    while (gs < steps_.size() && steps_[gs].node != st.node) ++gs;
    for (size_t o = 0; o < alias_[gs].size(); ++o)
      if (alias_[gs][o] >= 0) root[st.outputs[o]] = root[st.inputs[alias_[gs][o]]];
  }
  // A channel slice lives in the wide value's buffer, from its producer on: its pointer is the
  // wide value's (the producer adds the channel offset).
  for (size_t v = 0; v < nv; ++v)
    if (in_slice_[v] >= 0) root[v] = root[in_slice_[v]];
  std::vector<size_t> size(np, 0);
  std::vector<int> first(np, INT32_MAX), last(np, -1);
  for (size_t s = 0; s < p->steps.size(); ++s) {
    const PlanStep& st = p->steps[s];
    for (int v : st.inputs)
      if (v >= 0) last[root[v]] = std::max(last[root[v]], static_cast<int>(s));
    for (int v : st.outputs) {
      if (v < 0) continue;
      PlanValue& pv = p->values[v];
      const int r = root[v];
      first[r] = std::min(first[r], static_cast<int>(s));
      last[r] = std::max(last[r], static_cast<int>(s));
      if (pv.home != PlanValue::Home::kArena) continue;
      pv.bytes = st.backend->value_bytes(pv.info, pv.format);
      if (pv.bytes == SIZE_MAX)
        return Status::error(StatusCode::kInvalidInput,
                             "value '" + pv.name + "' " + pv.info.shape.str() + " is too large");
      size[r] = std::max(size[r], std::max<size_t>(pv.bytes, 1));  // empty tensors still get a pointer
    }
  }
  for (int v : p->outputs)
    if (v >= 0) last[root[v]] = static_cast<int>(p->steps.size());
  size_t naive = 0;
  for (size_t v = 0; v < np; ++v)
    if (p->values[v].home == PlanValue::Home::kArena) naive += (std::max<size_t>(p->values[v].bytes, 1) + 63) / 64 * 64;
  // One arena per device, made by the first backend of that device.
  const Backend* pinner = nullptr;
  for (const auto& b : o_.backends)
    if (b->pins_host_memory() && !pinner) pinner = b.get();
  auto arena_for = [&](Device d) -> Result<int> {
    for (size_t i = 0; i < p->arenas.size(); ++i)
      if (p->arenas[i].device == d) return static_cast<int>(i);
    PlanArena pa;
    pa.device = d;
    for (const auto& b : o_.backends)
      if (b->device() == d && !pa.allocator) pa.allocator = b.get();
    if (!pa.allocator) return Status::error(StatusCode::kInternal, "no backend allocates on " + d.str());
    pa.alignment = std::max<size_t>(64, pa.allocator->alignment());
    if (d.is_cpu()) pa.pinner = pinner;
    p->arenas.push_back(pa);
    return static_cast<int>(p->arenas.size() - 1);
  };
  std::vector<int> arena_of(np, -1);
  for (size_t v = 0; v < np; ++v) {
    if (p->values[v].home != PlanValue::Home::kArena || root[v] != static_cast<int>(v)) continue;
    auto a = arena_for(p->values[v].device);
    if (!a.is_ok()) return a.status();
    arena_of[v] = a.value();
  }
  for (PlanStep& st : p->steps) {
    auto a = arena_for(st.backend->device());
    if (!a.is_ok()) return a.status();
    st.arena = a.value();
    PlanArena& pa = p->arenas[st.arena];
    pa.scratch_bytes = std::max(pa.scratch_bytes, st.kernel->scratch_bytes());
  }
  for (size_t a = 0; a < p->arenas.size(); ++a) {
    std::vector<size_t> sz(np, 0);
    for (size_t v = 0; v < np; ++v)
      if (arena_of[v] == static_cast<int>(a)) sz[v] = size[v];
    std::vector<int64_t> offsets;
    p->arenas[a].bytes = plan_memory(sz, first, last, offsets, p->arenas[a].alignment);
    for (size_t v = 0; v < np; ++v)
      if (arena_of[v] == static_cast<int>(a)) p->values[v].offset = offsets[v];
  }
  for (size_t v = 0; v < np; ++v) {
    if (p->values[v].home != PlanValue::Home::kArena) continue;
    p->values[v].arena = arena_of[root[v]];
    p->values[v].offset = p->values[root[v]].offset + static_cast<int64_t>(v < nv ? dense_off_[v] : 0);
  }
  size_t host = 0;
  for (const PlanArena& a : p->arenas)
    if (a.device.is_cpu()) host += a.bytes;
  if (host > host_memory_bytes())
    return Status::error(StatusCode::kOutOfMemory, "the plan needs " + std::to_string(host >> 20) +
                                                       " MiB of activations, more than this machine's " +
                                                       std::to_string(host_memory_bytes() >> 20) +
                                                       " MiB; use a smaller batch");

  // Graph capture and device-resident inputs / outputs.
  p->graph_mode = o_.graph_mode;
  p->graphable = !p->steps.empty();
  for (const PlanStep& st : p->steps)
    p->graphable = p->graphable && !st.dynamic && !st.backend->device().is_cpu() &&
                   st.backend->device() == p->steps[0].backend->device();
  for (int v : p->inputs) {
    bool ok = true, read = false;
    for (const PlanStep& st : p->steps)
      for (int x : st.inputs)
        if (x == v) read = true, ok = ok && st.node < 0 && !st.backend->device().is_cpu();
    p->input_on_device.push_back(ok && read);
  }
  for (int v : p->outputs) {
    bool ok = false;
    for (const PlanStep& st : p->steps)
      for (int y : st.outputs)
        if (y == v) ok = st.node < 0 && !st.backend->device().is_cpu();
    p->output_on_device.push_back(ok);
  }

  // Report.
  PlanReport& r = p->report;
  r.naive_bytes = naive;
  r.steps = p->steps.size();
  for (const PlanArena& a : p->arenas) {
    r.arena_bytes += a.bytes;
    r.arena_bytes_per_device[a.device.str()] += a.bytes;
  }
  for (size_t v = 0; v < nv; ++v)
    if (g_.values[v].constant) r.weight_bytes += g_.values[v].constant->nbytes();
  std::set<int> elided;  // nodes of Concats done in place
  for (size_t s = 0; s < steps_.size(); ++s)
    if (elided_[s]) elided.insert(steps_[s].node);
  for (const PlanStep& st : p->steps) {
    r.weight_bytes += st.kernel->weight_bytes();
    r.weight_bytes_per_device[st.backend->device().str()] += st.kernel->weight_bytes();
    r.steps_per_backend[st.backend->name()]++;
    if (std::string(st.backend->name()) != "ref" && st.node >= 0) r.accelerated_steps++;
    if (st.node >= 0) r.flops += node_flops(g_.nodes[st.node], infos_);
    PlanStepInfo info;
    const Node& n = p->node_of(st);
    info.node = st.node >= 0 ? n.name : "";
    info.op = st.op_name;
    info.backend = st.backend->name();
    info.impl = !st.skip                ? st.kernel->impl_name()
                : elided.count(st.node) ? "in place: its inputs' producers write their channel slices"
                                        : "nothing to run: empty outputs";
    info.dynamic = st.dynamic;
    info.flops = st.node >= 0 ? node_flops(g_.nodes[st.node], infos_) : 0;
    info.weight_bytes = st.kernel->weight_bytes();
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      info.input_formats.push_back(st.inputs[i] >= 0 ? format_name(p->values[st.inputs[i]].format) : "-");
      if (st.inputs[i] >= 0 && !p->values[st.inputs[i]].info.value) info.input_bytes += p->values[st.inputs[i]].bytes;
    }
    for (int v : st.outputs) {
      info.output_formats.push_back(v >= 0 ? format_name(p->values[v].format) : "-");
      if (v >= 0) info.output_bytes += p->values[v].bytes;
    }
    r.step_list.push_back(std::move(info));
    if (verbose(1))
      std::fprintf(stderr, "%s\n",  // names from the model: one escaped, capped line (Status's rule)
                   Status::error(StatusCode::kInternal,
                                 "infera: " + n.label() + " -> " + st.backend->name() + " " + st.kernel->impl_name())
                       .message()
                       .c_str());
  }
  for (const PlanArena& a : p->arenas) {
    r.scratch_bytes += a.scratch_bytes;
    r.scratch_bytes_per_device[a.device.str()] += a.scratch_bytes;
  }
  for (int v : g_.outputs) {
    std::vector<int64_t> d;
    for (const Dim& dim : infos_[v].shape.dims) d.push_back(dim.value);
    r.output_dims.push_back(d);
  }
  if (verbose(1))
    std::fprintf(stderr, "infera: plan of %zu steps, %zu kernels made\n", p->steps.size(), kernels_created_);
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<const Plan>> make_plan(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                                              const PlanOptions& opts) {
  if (input_dims.size() != g.inputs.size())
    return Status::error(StatusCode::kInvalidInput, "make_plan: " + std::to_string(input_dims.size()) +
                                                        " input shapes for " + std::to_string(g.inputs.size()) +
                                                        " inputs");
  Planner planner(g, opts);
  return planner.run(input_dims);
}

Result<std::vector<ValueInfo>> infer_values(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims) {
  if (input_dims.size() != g.inputs.size())
    return Status::error(StatusCode::kInvalidInput, "infer_values: wrong number of input shapes");
  PlanOptions none;
  Planner planner(g, none);
  return planner.infer_only(input_dims);
}

}  // namespace infera
