#include "ops/infer.h"

namespace infera {

static std::string shape_clash(const Graph& g, const Node& n, int v, const ValueInfo& got) {
  const Value& val = g.values[v];
  return n.label() + ": output '" + val.name + "' has declared type " + dtype_name(val.dtype) + " " + val.shape.str() +
         " but the op gives " + dtype_name(got.dtype) + " " + got.shape.str();
}

// Keeps the more informative of a declared (value_info) and an inferred shape; refuses
// a clash between two known dims.
static bool merge_shape(const Shape& declared, const Shape& inferred, Shape& out) {
  if (!declared.rank_known) {
    out = inferred;
    return true;
  }
  if (!inferred.rank_known) {
    out = declared;
    return true;
  }
  if (declared.rank() != inferred.rank()) return false;
  out = inferred;
  for (int i = 0; i < inferred.rank(); ++i) {
    const Dim& d = declared.dims[i];
    const Dim& f = inferred.dims[i];
    if (d.known() && f.known() && d.value != f.value) return false;
    if (!f.known() && (d.known() || !d.symbol.empty()) && f.symbol.empty()) out.dims[i] = d;
  }
  return true;
}

Status attach_ops(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.dead || n.op) continue;
    auto k = make_kernel(n, g.opset);
    if (!k.is_ok()) return k.status();
    n.op = std::shared_ptr<const OpKernel>(k.take());
  }
  return Status::ok();
}

Status infer_graph(Graph& g) {
  Status attached = attach_ops(g);
  if (!attached.is_ok()) return attached;
  std::vector<ValueInfo> infos(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    infos[i].dtype = g.values[i].dtype;
    infos[i].shape = g.values[i].shape;
    infos[i].value = g.values[i].constant;
  }
  for (Node& n : g.nodes) {
    if (n.dead) continue;
    // Every supported op but Constant reads its first input, and the kernels rely on it.
    if (n.op_type != "Constant" && (n.inputs.empty() || n.inputs[0] < 0))
      return Status::error(n.label() + ": input 0 is required but " +
                           (n.inputs.empty() ? "the node has no inputs" : "its name is empty"));
    std::vector<const ValueInfo*> in;
    for (int v : n.inputs) in.push_back(v >= 0 ? &infos[v] : nullptr);
    InferContext ctx(n, g.opset, in);
    Status s = n.op->infer(ctx);
    if (!s.is_ok()) return s;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      int v = n.outputs[o];
      if (v < 0) continue;
      ValueInfo& got = ctx.outputs()[o];
      Value& val = g.values[v];
      if (got.dtype == DataType::kUndefined)
        return Status::error(n.label() + ": inference gave no type for output '" + val.name + "'");
      // Declared types from value_info/outputs are hints; a clash with a known dim is an error.
      if (val.dtype != DataType::kUndefined && val.dtype != got.dtype) return Status::error(shape_clash(g, n, v, got));
      Shape merged;
      if (!merge_shape(val.shape, got.shape, merged)) return Status::error(shape_clash(g, n, v, got));
      val.dtype = got.dtype;
      val.shape = merged;
      infos[v].dtype = got.dtype;
      infos[v].shape = merged;
    }
  }
  return Status::ok();
}

Result<std::vector<Tensor>> evaluate_node(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
  std::shared_ptr<const OpKernel> op = node.op;
  if (!op) {
    auto k = make_kernel(node, opset);
    if (!k.is_ok()) return k.status();
    op = k.take();
  }
  std::vector<ValueInfo> infos(inputs.size());
  std::vector<const ValueInfo*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      in.push_back(nullptr);
      continue;
    }
    infos[i].dtype = inputs[i]->dtype();
    infos[i].shape = Shape::of(inputs[i]->dims());
    infos[i].value = std::shared_ptr<const Tensor>(inputs[i], [](const Tensor*) {});
    in.push_back(&infos[i]);
  }
  InferContext ctx(node, opset, in);
  Status s = op->infer(ctx);
  if (!s.is_ok()) return s;
  std::vector<TensorRef> in_refs(inputs.size());
  std::vector<const TensorRef*> ip(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    in_refs[i] = TensorRef::of(*inputs[i]);
    ip[i] = &in_refs[i];
  }
  return compute_node(node, *op, ip, ctx.outputs());
}

Result<std::vector<Tensor>> compute_node(const Node& n, const OpKernel& k, const std::vector<const TensorRef*>& inputs,
                                         const std::vector<ValueInfo>& outputs) {
  std::vector<Tensor> outs(n.outputs.size());
  std::vector<TensorRef> out_refs(n.outputs.size());
  std::vector<TensorRef*> op(n.outputs.size(), nullptr);
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o] < 0) continue;
    const ValueInfo& vi = outputs[o];
    if (!vi.shape.fully_known())
      return Status::error(n.label() + ": output shape " + vi.shape.str() + " unknown after inference");
    auto t = Tensor::make(vi.dtype, vi.shape.concrete());
    if (!t.is_ok()) return Status::error(n.label() + ": " + t.message());
    outs[o] = t.take();
    out_refs[o] = TensorRef::of(outs[o]);
    op[o] = &out_refs[o];
  }
  ComputeContext ctx(n, inputs, op, 1);
  Status s = k.compute(ctx);
  if (!s.is_ok()) return s;
  return outs;
}

}  // namespace infera
