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

void register_elementwise_ops(OpRegistry& r) {
  register_elementwise_unary_ops(r);
  register_elementwise_binary_ops(r);
  register_cast_ops(r);
}

}  // namespace infera
