// Elementwise op family: registration and the shared broadcast plan. The kernels live in
// elementwise_unary.cpp (math, activations, Clip), elementwise_binary.cpp (arithmetic,
// logic, comparison, variadic, Where, PRelu) and cast.cpp (Cast, CastLike, Identity).
#include "ops/elementwise.h"

namespace infera {

BroadcastPlan BroadcastPlan::make(const std::vector<const std::vector<int64_t>*>& ins,
                                  const std::vector<int64_t>& out_dims) {
  BroadcastPlan p;
  p.num_inputs = static_cast<int>(ins.size());
  const int k_n = p.num_inputs;
  std::vector<int64_t> strides[kMaxInputs];
  for (int k = 0; k < k_n; ++k) strides[k] = broadcast_strides(*ins[k], out_dims);
  // Keep dims of size > 1, merging a dim into the previous kept one when every input
  // walks both with one stride (the outer stride equals inner stride * inner dim).
  std::vector<int64_t> dims;
  std::vector<int64_t> st[kMaxInputs];
  for (size_t i = 0; i < out_dims.size(); ++i) {
    const int64_t d = out_dims[i];
    if (d == 1) continue;
    bool merge = !dims.empty();
    for (int k = 0; k < k_n && merge; ++k) merge = st[k].back() == strides[k][i] * d;
    if (merge) {
      dims.back() *= d;
      for (int k = 0; k < k_n; ++k) st[k].back() = strides[k][i];
    } else {
      dims.push_back(d);
      for (int k = 0; k < k_n; ++k) st[k].push_back(strides[k][i]);
    }
  }
  if (dims.empty()) return p;  // a single element: rows = inner = 1, strides 0
  p.inner = dims.back();
  for (int k = 0; k < k_n; ++k) {
    p.inner_stride[k] = st[k].back();
    p.outer_strides[k].assign(st[k].begin(), st[k].end() - 1);
  }
  p.outer.assign(dims.begin(), dims.end() - 1);
  for (int64_t d : p.outer) p.rows *= d;
  return p;
}

Status run_in_float32(ComputeContext& ctx, const Float32Body& body) {
  std::vector<const TensorRef*> ins(ctx.num_inputs(), nullptr);
  bool narrow = is_narrow_float(ctx.out(0).dtype);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ctx.has_input(i)) continue;
    ins[i] = &ctx.in(i);
    narrow = narrow || is_narrow_float(ins[i]->dtype);
  }
  if (!narrow) return body(ins, ctx.out(0));
  std::vector<std::vector<float>> store(ins.size() + 1);
  std::vector<TensorRef> wide(ins.size() + 1);
  auto widen = [&](const TensorRef& t, size_t slot) {
    wide[slot] = TensorRef{DataType::kFloat32, t.dims, nullptr};
    store[slot].resize(static_cast<size_t>(t.numel()));
    wide[slot].data = store[slot].data();
    const uint16_t* p = t.ptr<uint16_t>();
    float* q = store[slot].data();
    const bool half = t.dtype == DataType::kFloat16;
    for (size_t j = 0; j < store[slot].size(); ++j) q[j] = half ? half_to_float(p[j]) : bfloat16_to_float(p[j]);
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] && is_narrow_float(ins[i]->dtype)) {
      widen(*ins[i], i);
      ins[i] = &wide[i];
    }
  }
  TensorRef& out = ctx.out(0);
  if (!is_narrow_float(out.dtype)) return body(ins, out);
  TensorRef& wout = wide.back();
  wout = TensorRef{DataType::kFloat32, out.dims, nullptr};
  store.back().resize(static_cast<size_t>(out.numel()));
  wout.data = store.back().data();
  Status s = body(ins, wout);
  if (!s.is_ok()) return s;
  uint16_t* q = out.ptr<uint16_t>();
  const float* p = store.back().data();
  const bool half = out.dtype == DataType::kFloat16;
  for (size_t j = 0; j < store.back().size(); ++j) q[j] = half ? float_to_half(p[j]) : float_to_bfloat16(p[j]);
  return Status::ok();
}

void register_elementwise_ops(OpRegistry& r) {
  register_elementwise_unary_ops(r);
  register_elementwise_binary_ops(r);
  register_cast_ops(r);
}

}  // namespace infera
