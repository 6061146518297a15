// Shared test utility: runs one node through make_kernel -> infer -> compute on host
// tensors, and compares tensors with a normalized error. Used by every test_<family>.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "graph/graph.h"
#include "ops/op.h"

namespace infera::test {

inline Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::kInt;
  a.i = v;
  return a;
}
inline Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::kFloat;
  a.f = v;
  return a;
}
inline Attribute attr_s(std::string v) {
  Attribute a;
  a.kind = Attribute::kString;
  a.s = std::move(v);
  return a;
}
inline Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::kInts;
  a.ints = std::move(v);
  return a;
}
inline Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::kFloats;
  a.floats = std::move(v);
  return a;
}

// Seeded uniform random float tensor in [lo, hi).
inline Tensor random_tensor(std::vector<int64_t> dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::make(DataType::kFloat32, std::move(dims)).take();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  float* p = t.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  return t;
}

template <class T>
Tensor make_tensor(DataType dt, std::vector<int64_t> dims, const std::vector<T>& vals) {
  Tensor t = Tensor::make(dt, std::move(dims)).take();
  for (size_t i = 0; i < vals.size() && i < static_cast<size_t>(t.numel()); ++i) t.data_as<T>()[i] = vals[i];
  return t;
}

// Runs op_type on the inputs (an empty Tensor = optional input left out). Inputs marked
// constant (indices in const_inputs) are visible to infer() as values, as initializers are.
inline Result<std::vector<Tensor>> run_op(const std::string& op_type, std::map<std::string, Attribute> attrs,
                                          const std::vector<Tensor>& inputs, int num_outputs = 1, int64_t opset = 17,
                                          std::vector<int> const_inputs = {}, const std::string& domain = "") {
  Node n;
  n.name = "test_" + op_type;
  n.op_type = op_type;
  n.domain = domain;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) n.inputs.push_back(inputs[i].empty() ? -1 : static_cast<int>(i));
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(static_cast<int>(inputs.size()) + i);
  auto k = make_kernel(n, opset);
  if (!k.is_ok()) return k.status();
  std::vector<ValueInfo> infos(inputs.size());
  std::vector<const ValueInfo*> in_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      in_ptrs.push_back(nullptr);
      continue;
    }
    infos[i].dtype = inputs[i].dtype();
    infos[i].shape = Shape::of(inputs[i].dims());
    if (std::find(const_inputs.begin(), const_inputs.end(), static_cast<int>(i)) != const_inputs.end())
      infos[i].value = std::make_shared<Tensor>(inputs[i]);
    in_ptrs.push_back(&infos[i]);
  }
  InferContext ictx(n, opset, in_ptrs);
  Status s = k.value()->infer(ictx);
  if (!s.is_ok()) return s;
  // Data-dependent output shapes: infer again with every input value known.
  bool known = true;
  for (auto& o : ictx.outputs()) known = known && o.shape.fully_known();
  std::vector<ValueInfo> all_infos = infos;
  if (!known) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].empty()) all_infos[i].value = std::make_shared<Tensor>(inputs[i]);
    std::vector<const ValueInfo*> p2;
    for (size_t i = 0; i < inputs.size(); ++i) p2.push_back(inputs[i].empty() ? nullptr : &all_infos[i]);
    InferContext ictx2(n, opset, p2);
    s = k.value()->infer(ictx2);
    if (!s.is_ok()) return s;
    ictx.outputs() = ictx2.outputs();
  }
  std::vector<Tensor> outs;
  for (auto& o : ictx.outputs()) {
    if (!o.shape.fully_known()) return Status::error("output shape not known after inference: " + o.shape.str());
    auto t = Tensor::make(o.dtype, o.shape.concrete());
    if (!t.is_ok()) return t.status();
    outs.push_back(t.take());
  }
  std::vector<TensorRef> in_refs(inputs.size()), out_refs(outs.size());
  std::vector<const TensorRef*> ip;
  std::vector<TensorRef*> op;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_refs[i] = TensorRef::of(inputs[i]);
    ip.push_back(inputs[i].empty() ? nullptr : &in_refs[i]);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    out_refs[i] = TensorRef::of(outs[i]);
    op.push_back(&out_refs[i]);
  }
  ComputeContext cctx(n, ip, op, 1);
  s = k.value()->compute(cctx);
  if (!s.is_ok()) return s;
  return outs;
}

// Comparison against a reference. Non-finite values must match exactly: a NaN where the reference
// has NaN, or an Inf where it has the same Inf, is a match; a NaN or Inf where the reference is
// finite (or the reverse), or an Inf of the other sign, makes the error +infinity, so every
// EXPECT_LT(err, tol) and EXPECT_EQ(err, 0) fails. (std::max alone drops NaN: an all-NaN output
// would score 0.)
inline bool nonfinite_mismatch(double got, double ref) {
  const bool gf = std::isfinite(got), rf = std::isfinite(ref);
  if (gf && rf) return false;
  if (std::isnan(got) || std::isnan(ref)) return std::isnan(got) != std::isnan(ref);
  return got != ref;  // at least one is +-Inf, neither NaN
}

// max |got-ref| over n values, with the non-finite rule above (matching non-finite pairs add 0).
template <class G, class R>
double max_abs_error(const G* got, const R* ref, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    if (nonfinite_mismatch(g, r)) return std::numeric_limits<double>::infinity();
    if (std::isfinite(r)) m = std::max(m, std::fabs(g - r));
  }
  return m;
}

// max |got-ref| / max(1e-6, max |ref| over finite ref): normalized error against the reference.
template <class G, class R>
double normalized_error(const G* got, const R* ref, size_t n) {
  double r = 1e-6;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(static_cast<double>(ref[i]))) r = std::max(r, std::fabs(static_cast<double>(ref[i])));
  return max_abs_error(got, ref, n) / r;
}

// The same on float32 tensors; another dtype or shape is 1e30 (fails every bound).
inline double normalized_error(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims() || a.dtype() != DataType::kFloat32 || b.dtype() != DataType::kFloat32) return 1e30;
  return normalized_error(a.data_as<float>(), b.data_as<float>(), static_cast<size_t>(a.numel()));
}

// got against want by normalized_error's rule (NaN / Inf where want has them, finite values within
// tol of max |finite want|); a failure names the first element that breaks it.
inline void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-4) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  const double err = normalized_error(got, want);
  if (err <= tol) return;
  const float *a = got.data_as<float>(), *b = want.data_as<float>();
  const size_t n = static_cast<size_t>(want.numel());
  double r = 1e-6;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(b[i])) r = std::max(r, std::fabs(static_cast<double>(b[i])));
  size_t i = 0;
  while (i < n && !nonfinite_mismatch(a[i], b[i]) && !(std::isfinite(b[i]) && std::fabs(double(a[i]) - b[i]) > tol * r))
    ++i;
  ADD_FAILURE() << what << ": normalized error " << err << " over " << tol << "; element " << i << " is "
                << (i < n ? a[i] : 0.f) << ", want " << (i < n ? b[i] : 0.f);
}

}  // namespace infera::test
