#include "runtime/executor.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace infera {

Result<std::vector<Tensor>> execute_plan(const Graph& g, Plan& plan, const std::vector<const Tensor*>& inputs,
                                         int num_threads, std::vector<StepTiming>* timings) {
  if (timings) timings->clear();
  const size_t nv = g.values.size();
  std::vector<TensorRef> refs(nv);
  std::vector<Tensor> dynamic_values(nv);
  char* arena = static_cast<char*>(plan.arena.get());
  for (size_t i = 0; i < g.inputs.size(); ++i) refs[g.inputs[i]] = TensorRef::of(*inputs[i]);
  for (size_t v = 0; v < nv; ++v) {
    const ValueInfo& vi = plan.infos[v];
    if (vi.value)
      refs[v] = TensorRef::of(*vi.value);
    else if (plan.offsets[v] >= 0)
      refs[v] = TensorRef{vi.dtype, vi.shape.concrete(), arena + plan.offsets[v]};
  }
  std::vector<const TensorRef*> ip;
  std::vector<TensorRef*> op;
  // INFERA_PROFILE=1: time per op kind and implementation, printed after each run.
  static const bool profile = std::getenv("INFERA_PROFILE") != nullptr;
  std::map<std::string, std::pair<double, int>> by_kind;
  for (PlanStep& st : plan.steps) {
    const Node& n = g.nodes[st.node];
    if (st.dynamic) {
      // Shapes depend on values: infer again with every input known, then allocate.
      std::vector<ValueInfo> infos(n.inputs.size());
      std::vector<const ValueInfo*> in(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        int v = n.inputs[i];
        if (v < 0) continue;
        infos[i].dtype = refs[v].dtype;
        infos[i].shape = Shape::of(refs[v].dims);
        infos[i].value = std::make_shared<Tensor>(Tensor::view(refs[v].dtype, refs[v].dims, refs[v].data));
        in[i] = &infos[i];
      }
      InferContext ctx(n, g.opset, in);
      Status s = st.op->infer(ctx);
      if (!s.is_ok()) return s;
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        int v = n.outputs[o];
        if (v < 0) continue;
        const Shape& sh = ctx.outputs()[o].shape;
        if (!sh.fully_known())
          return Status::error(n.label() + ": output '" + g.values[v].name + "' shape " + sh.str() +
                               " still unknown with all inputs known");
        auto t = Tensor::make(ctx.outputs()[o].dtype, sh.concrete());
        if (!t.is_ok()) return Status::error(n.label() + ": output '" + g.values[v].name + "': " + t.message());
        dynamic_values[v] = t.take();
        refs[v] = TensorRef::of(dynamic_values[v]);
      }
    }
    ip.assign(n.inputs.size(), nullptr);
    op.assign(n.outputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) ip[i] = &refs[n.inputs[i]];
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) op[o] = &refs[n.outputs[o]];
    ComputeContext ctx(n, ip, op, num_threads);
    const bool timed = profile || timings;
    auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status s = st.accel ? st.accel->run(ctx) : st.op->compute(ctx);
    if (!s.is_ok()) return s;
    if (timed) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (timings)
        timings->push_back(
            StepTiming{n.name, (n.domain.empty() ? "" : n.domain + ".") + n.op_type, st.accel ? "dnnl" : "ref", ms});
      if (!profile) continue;
      auto& e = by_kind[(n.domain.empty() ? "" : n.domain + ".") + n.op_type + (st.accel ? " [dnnl]" : " [ref]")];
      e.first += ms;
      e.second++;
    }
  }
  if (profile) {
    double total = 0;
    for (auto& [k, e] : by_kind) total += e.first;
    fprintf(stderr, "infera profile: %.3f ms in %zu steps\n", total, plan.steps.size());
    for (auto& [k, e] : by_kind)
      fprintf(stderr, "  %-36s %5d x %10.3f ms %5.1f%%\n", k.c_str(), e.second, e.first, 100 * e.first / total);
  }
  std::vector<Tensor> outs;
  for (int v : g.outputs) {
    const TensorRef& r = refs[v];
    if (!r.data && r.numel() != 0) return Status::error("graph output '" + g.values[v].name + "' was not computed");
    auto t = Tensor::make(r.dtype, r.dims);
    if (!t.is_ok()) return Status::error("graph output '" + g.values[v].name + "': " + t.message());
    Tensor out = t.take();
    if (out.nbytes()) std::memcpy(out.data(), r.data, out.nbytes());
    outs.push_back(std::move(out));
  }
  return outs;
}

}  // namespace infera
