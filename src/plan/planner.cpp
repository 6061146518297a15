#include <chrono>
#include <cstdlib>
#include <cstring>

#include "graph/infer.h"
#include "ops/util.h"
#include "plan/plan.h"

namespace infera {

namespace {

constexpr int64_t kFoldLimit = 1 << 16;  // elements: plan-time folding is for shape math

bool verbose() {
  static const bool v = std::getenv("INFERA_VERBOSE") != nullptr;
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
  if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose") {
    auto w = dims(1, false), y = dims(0, false), x = dims(0, false);
    y = dims(0, true);
    if (w.size() < 3 || y.size() < 3 || x.size() < 3) return 0;
    double k = 1;
    for (size_t i = 1; i < w.size(); ++i) k *= static_cast<double>(w[i]);  // Cin/group * kernel
    if (op == "ConvTranspose") {
      double xs = 1;
      for (int64_t d : x) xs *= static_cast<double>(d);
      double ks = 1;
      for (size_t i = 2; i < w.size(); ++i) ks *= static_cast<double>(w[i]);
      return 2.0 * xs * static_cast<double>(w[1]) * ks;
    }
    double ys = 1;
    for (int64_t d : y) ys *= static_cast<double>(d);
    return 2.0 * ys * k;
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

// Runs a kernel on plan-time known values (shape math). Inputs whose data the op does
// not read are passed as data-less views.
Status fold_step(const Node& n, const OpKernel& op, std::vector<ValueInfo>& infos, std::vector<ValueInfo>& outs) {
  std::vector<TensorRef> in_refs(n.inputs.size());
  std::vector<const TensorRef*> ip(n.inputs.size(), nullptr);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    int v = n.inputs[i];
    if (v < 0) continue;
    if (infos[v].value) {
      in_refs[i] = TensorRef::of(*infos[v].value);
    } else {
      in_refs[i] = TensorRef{infos[v].dtype, infos[v].shape.concrete(), nullptr};
    }
    ip[i] = &in_refs[i];
  }
  auto results = compute_node(n, op, ip, outs);
  if (!results.is_ok()) return results.status();
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) outs[o].value = std::make_shared<Tensor>(std::move(results.value()[o]));
  return Status::ok();
}

// Makes the outputs of follows_input steps plain where none of their full-size inputs is
// blocked, until nothing changes (a demoted value can demote its readers' outputs in turn).
void demote_followers(const Graph& g, const std::vector<PlanStep>& steps, const std::vector<AccelSupport>& sup,
                      const std::vector<ValueInfo>& infos, std::vector<Layout>& layouts) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (!sup[s].supported || !sup[s].follows_input) continue;
      const Node& n = g.nodes[steps[s].node];
      for (int y : n.outputs) {
        if (y < 0 || layouts[y] != Layout::kBlocked) continue;
        bool fed = false;
        for (int x : n.inputs)
          fed = fed ||
                (x >= 0 && layouts[x] == Layout::kBlocked && infos[x].shape.concrete() == infos[y].shape.concrete());
        if (!fed) {
          layouts[y] = Layout::kPlain;
          changed = true;
        }
      }
    }
  }
}

}  // namespace

Result<std::unique_ptr<Plan>> make_plan(const Graph& g, const std::vector<std::unique_ptr<OpKernel>>& kernels,
                                        const std::vector<std::vector<int64_t>>& input_dims, bool use_dnnl,
                                        int num_threads) {
  auto t0 = std::chrono::steady_clock::now();
  auto p = std::make_unique<Plan>();
  const size_t nv = g.values.size();
  p->infos.resize(nv);
  p->layouts.assign(nv, Layout::kPlain);
  p->offsets.assign(nv, -1);
  std::vector<char> is_input(nv, 0);
  for (size_t i = 0; i < nv; ++i) {
    p->infos[i].dtype = g.values[i].dtype;
    if (g.values[i].constant) {
      p->infos[i].shape = g.values[i].shape;
      p->infos[i].value = g.values[i].constant;
    }
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    p->infos[g.inputs[i]].shape = Shape::of(input_dims[i]);
    is_input[g.inputs[i]] = 1;
  }

  // 1. Concrete inference; plan-time folding of small values computed from constants/shapes.
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    const OpKernel& op = *kernels[ni];
    std::vector<const ValueInfo*> in;
    for (int v : n.inputs) in.push_back(v >= 0 ? &p->infos[v] : nullptr);
    InferContext ctx(n, g.opset, in);
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
        return Status::error(n.label() + ": output '" + g.values[n.outputs[o]].name + "' shape " + sh.str() +
                             " is too large");
      out_elems += ne;
    }
    bool foldable = all_known && out_elems <= kFoldLimit;
    for (size_t i = 0; foldable && i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      if (v >= 0 && !p->infos[v].value && (op.needs_data(i) || !p->infos[v].shape.fully_known())) foldable = false;
    }
    if (foldable) {
      s = fold_step(n, op, p->infos, ctx.outputs());
      if (!s.is_ok()) return s;
    } else {
      PlanStep st;
      st.node = static_cast<int>(ni);
      st.op = &op;
      st.dynamic = !all_known;
      p->steps.push_back(std::move(st));
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) p->infos[n.outputs[o]] = std::move(ctx.outputs()[o]);
  }

  // 2. Backend choice and layouts: a value stays blocked between accelerated nodes.
  const size_t ns = p->steps.size();
  std::vector<std::vector<std::pair<size_t, size_t>>> users(nv);  // (step, slot)
  std::vector<int> producer_step(nv, -1), producer_slot(nv, -1);
  for (size_t s = 0; s < ns; ++s) {
    const Node& n = g.nodes[p->steps[s].node];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) users[n.inputs[i]].emplace_back(s, i);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) {
        producer_step[n.outputs[o]] = static_cast<int>(s);
        producer_slot[n.outputs[o]] = static_cast<int>(o);
      }
  }
  auto request_for = [&](size_t s) {
    const Node& n = g.nodes[p->steps[s].node];
    AccelRequest r;
    r.node = &n;
    r.op = p->steps[s].op;
    r.opset = g.opset;
    r.num_threads = num_threads;
    for (int v : n.inputs) {
      r.inputs.push_back(v >= 0 ? &p->infos[v] : nullptr);
      r.input_layouts.push_back(v >= 0 ? p->layouts[v] : Layout::kPlain);
    }
    for (int v : n.outputs) {
      r.outputs.push_back(v >= 0 ? &p->infos[v] : nullptr);
      r.output_layouts.push_back(v >= 0 ? p->layouts[v] : Layout::kPlain);
    }
    return r;
  };
  if (use_dnnl) {
    std::vector<char> declined(ns, 0);
    for (int attempt = 0; attempt < 64; ++attempt) {
      std::vector<AccelSupport> sup(ns);
      for (size_t s = 0; s < ns; ++s) {
        p->steps[s].accel.reset();
        if (!p->steps[s].dynamic && !declined[s]) sup[s] = dnnl_query(request_for(s));
      }
      std::fill(p->layouts.begin(), p->layouts.end(), Layout::kPlain);
      for (size_t v = 0; v < nv; ++v) {
        int s = producer_step[v];
        if (s < 0 || !sup[s].supported || users[v].empty() || g.is_graph_output(static_cast<int>(v))) continue;
        if (static_cast<size_t>(producer_slot[v]) >= sup[s].output_blocked_ok.size() ||
            !sup[s].output_blocked_ok[producer_slot[v]])
          continue;
        const ValueInfo& vi = p->infos[v];
        if (vi.dtype != DataType::kFloat32 || vi.shape.rank() != 4) continue;
        bool ok = true;
        for (auto [c, slot] : users[v])
          ok = ok && sup[c].supported && slot < sup[c].input_blocked_ok.size() && sup[c].input_blocked_ok[slot];
        if (ok) p->layouts[v] = Layout::kBlocked;
      }
      demote_followers(g, p->steps, sup, p->infos, p->layouts);
      bool redo = false;
      for (size_t s = 0; s < ns && !redo; ++s) {
        if (!sup[s].supported) continue;
        auto k = dnnl_create(request_for(s));
        // oneDNN's reference implementations ("ref:any") are slower than our own kernels.
        if (k.is_ok() && k.value() && k.value()->impl_name().find("ref:") != std::string::npos)
          k = Status::error("oneDNN offers only its reference implementation: " + k.value()->impl_name());
        if (!k.is_ok() || !k.value()) {
          if (verbose())
            fprintf(stderr, "infera: %s declined by oneDNN: %s\n", g.nodes[p->steps[s].node].label().c_str(),
                    k.is_ok() ? "no kernel" : k.message().c_str());
          declined[s] = 1;
          redo = true;
        } else {
          p->steps[s].accel = k.take();
        }
      }
      if (!redo) break;
    }
  }

  // 3. Memory: liveness over steps, one 64-byte-aligned arena.
  std::vector<size_t> size(nv, 0);
  std::vector<int> first(nv, 0), last(nv, -1);
  for (size_t s = 0; s < ns; ++s) {
    const PlanStep& st = p->steps[s];
    const Node& n = g.nodes[st.node];
    for (int v : n.inputs)
      if (v >= 0) last[v] = std::max(last[v], static_cast<int>(s));
    if (st.dynamic) continue;
    for (int v : n.outputs) {
      if (v < 0) continue;
      first[v] = static_cast<int>(s);
      last[v] = std::max(last[v], static_cast<int>(s));
      const ValueInfo& vi = p->infos[v];
      size[v] = p->layouts[v] == Layout::kBlocked ? blocked_bytes(vi.shape.concrete())
                                                  : static_cast<size_t>(vi.shape.numel()) * dtype_size(vi.dtype);
      if (size[v] == 0) size[v] = 1;  // empty tensors still get a valid pointer
    }
  }
  for (int v : g.outputs) last[v] = static_cast<int>(ns);
  size_t naive = 0;
  for (size_t v = 0; v < nv; ++v) naive += (size[v] + 63) / 64 * 64;
  size_t arena = plan_memory(size, first, last, p->offsets);
  if (arena > host_memory_bytes())
    return Status::error("the plan needs " + std::to_string(arena >> 20) + " MiB of activations, more than this " +
                         "machine's " + std::to_string(host_memory_bytes() >> 20) + " MiB; use a smaller batch");
  void* mem = std::aligned_alloc(64, std::max<size_t>(64, (arena + 63) / 64 * 64));
  if (!mem) return Status::error("out of memory allocating a " + std::to_string(arena) + "-byte arena");
  p->arena = std::shared_ptr<void>(mem, [](void* q) { std::free(q); });

  PlanReport& r = p->report;
  r.arena_bytes = arena;
  r.naive_bytes = naive;
  r.steps = ns;
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].constant) r.weight_bytes += g.values[v].constant->nbytes();
  for (auto& st : p->steps) {
    if (st.accel) {
      r.accelerated_steps++;
      r.weight_bytes += st.accel->weight_bytes();
      if (verbose())
        fprintf(stderr, "infera: %s -> %s\n", g.nodes[st.node].label().c_str(), st.accel->impl_name().c_str());
    }
    r.flops += node_flops(g.nodes[st.node], p->infos);
  }
  for (int v : g.outputs) {
    const Shape& sh = p->infos[v].shape;
    std::vector<int64_t> d;
    for (const Dim& dim : sh.dims) d.push_back(dim.value);
    r.output_dims.push_back(d);
  }
  r.steps_per_backend["dnnl"] = r.accelerated_steps;
  r.steps_per_backend["ref"] = ns - r.accelerated_steps;
  r.arena_bytes_per_device["cpu"] = arena;
  r.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace infera
