// fold_batchnorm: folds an inference BatchNormalization into the Conv, Gemm or MatMul (2-D) before
// it, as new weight/bias constants. Assumes constant BN params and weights, and that the producer's
// output feeds only the BN; shared constants are never changed in place (new ones are made).
#include <cmath>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

// BN as y = x * mul[c] + add[c] over channel axis 1.
struct BnAffine {
  std::vector<double> mul, add;
};

bool bn_affine(const Graph& g, const Node& bn, BnAffine& a) {
  if (!is_onnx_op(bn, "BatchNormalization") || bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0] < 0)
    return false;
  if (bn.attr_int("training_mode", 0) != 0) return false;
  for (size_t o = 1; o < bn.outputs.size(); ++o) {
    int v = bn.outputs[o];
    if (v >= 0 && (count_uses(g, v) > 0 || g.is_graph_output(v))) return false;
  }
  std::vector<double> p[4];
  for (int i = 0; i < 4; ++i) {
    const Tensor* t = constant_of(g, bn.inputs[1 + i]);
    if (!t || t->rank() != 1 || !read_floats(*t, p[i])) return false;
    if (p[i].size() != p[0].size()) return false;
  }
  double eps = bn.attr_float("epsilon", 1e-5f);
  size_t c = p[0].size();
  a.mul.resize(c);
  a.add.resize(c);
  for (size_t i = 0; i < c; ++i) {
    double var = p[3][i] + eps;
    if (!(var > 0) || !std::isfinite(var)) return false;
    a.mul[i] = p[0][i] / std::sqrt(var);
    a.add[i] = p[1][i] - p[2][i] * a.mul[i];
  }
  return true;
}

// Conv: W [M, C/g, k...] scaled per output channel m; bias B' = B * mul + add.
bool fold_into_conv(Graph& g, Node& conv, const BnAffine& a) {
  const Tensor* w = constant_of(g, conv.inputs.size() > 1 ? conv.inputs[1] : -1);
  int b_id = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
  const Tensor* b = constant_of(g, b_id);
  std::vector<double> wv, bv;
  if (!w || w->rank() < 3 || !read_floats(*w, wv) || w->dims()[0] != int64_t(a.mul.size())) return false;
  if (b_id >= 0 && (!b || b->dtype() != w->dtype() || !read_floats(*b, bv) || bv.size() != a.mul.size())) return false;
  if (bv.empty()) bv.assign(a.mul.size(), 0.0);
  size_t m = a.mul.size(), per = m ? wv.size() / m : 0;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < per; ++j) wv[i * per + j] *= a.mul[i];
    bv[i] = bv[i] * a.mul[i] + a.add[i];
  }
  auto nw = make_floats(w->dtype(), w->dims(), wv);
  auto nb = make_floats(w->dtype(), {int64_t(m)}, bv);
  if (!nw.is_ok() || !nb.is_ok()) return false;
  conv.inputs.resize(3);
  conv.inputs[1] = add_constant(g, conv.name + "_W_bn", nw.take());
  conv.inputs[2] = add_constant(g, conv.name + "_B_bn", nb.take());
  return true;
}

// Gemm: Y = alpha*A*B + beta*C over features n; scale B's columns and rebuild C' with beta 1.
bool fold_into_gemm(Graph& g, Node& gemm, const BnAffine& a) {
  const Tensor* w = constant_of(g, gemm.inputs.size() > 1 ? gemm.inputs[1] : -1);
  int c_id = gemm.inputs.size() > 2 ? gemm.inputs[2] : -1;
  const Tensor* c = constant_of(g, c_id);
  std::vector<double> wv, cv;
  bool trans_b = gemm.attr_int("transB", 0) != 0;
  if (!w || w->rank() != 2 || !read_floats(*w, wv)) return false;
  int64_t n = trans_b ? w->dims()[0] : w->dims()[1], k = trans_b ? w->dims()[1] : w->dims()[0];
  if (n != int64_t(a.mul.size())) return false;
  if (c_id >= 0 && (!c || c->dtype() != w->dtype() || c->rank() > 2 || !read_floats(*c, cv))) return false;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) wv[trans_b ? i * k + j : j * n + i] *= a.mul[i];
  // C broadcasts to [rows, n]; rows > 1 only when C is [M, n] or [M, 1].
  double beta = gemm.attr_float("beta", 1.0f);
  int64_t rows = (c && c->rank() == 2) ? c->dims()[0] : 1;
  int64_t c_cols = !c || c->rank() == 0 ? 1 : c->dims()[c->rank() - 1];
  if (c && c_cols != 1 && c_cols != n) return false;
  std::vector<double> nc(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      double cval = c ? beta * cv[static_cast<size_t>(r * c_cols + (c_cols == 1 ? 0 : i))] : 0.0;
      nc[static_cast<size_t>(r * n + i)] = cval * a.mul[i] + a.add[i];
    }
  auto nw = make_floats(w->dtype(), w->dims(), wv);
  auto ncv = make_floats(w->dtype(), rows == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{rows, n}, nc);
  if (!nw.is_ok() || !ncv.is_ok()) return false;
  gemm.inputs.resize(3);
  gemm.inputs[1] = add_constant(g, gemm.name + "_B_bn", nw.take());
  gemm.inputs[2] = add_constant(g, gemm.name + "_C_bn", ncv.take());
  Attribute one;
  one.kind = Attribute::kFloat;
  one.f = 1.0f;
  gemm.attrs["beta"] = one;
  gemm.op.reset();  // attributes changed: the typed op is made again
  return true;
}

// MatMul X[M,K] x W[K,N] -> Gemm(X, W * mul, add).
bool fold_into_matmul(Graph& g, Node& mm, const BnAffine& a) {
  if (mm.inputs.size() != 2) return false;
  const Shape& xs = g.values[mm.inputs[0]].shape;
  const Tensor* w = constant_of(g, mm.inputs[1]);
  std::vector<double> wv;
  if (!xs.rank_known || xs.rank() != 2 || !w || w->rank() != 2 || !read_floats(*w, wv)) return false;
  int64_t k = w->dims()[0], n = w->dims()[1];
  if (n != int64_t(a.mul.size())) return false;
  for (int64_t j = 0; j < k; ++j)
    for (int64_t i = 0; i < n; ++i) wv[j * n + i] *= a.mul[i];
  auto nw = make_floats(w->dtype(), w->dims(), wv);
  auto nb = make_floats(w->dtype(), {n}, a.add);
  if (!nw.is_ok() || !nb.is_ok()) return false;
  mm.op_type = "Gemm";
  mm.op.reset();
  mm.inputs = {mm.inputs[0], add_constant(g, mm.name + "_B_bn", nw.take()),
               add_constant(g, mm.name + "_C_bn", nb.take())};
  return true;
}

class FoldBatchnorm : public Pass {
 public:
  const char* name() const override { return "fold_batchnorm"; }

  Status run(Graph& g) override {
    UseIndex idx(g);  // exact readers in O(readers): a chain of k fusions is O(n + k), not O(n k)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].dead || !is_onnx_op(g.nodes[i], "BatchNormalization")) continue;
      BnAffine a;
      if (!bn_affine(g, g.nodes[i], a)) continue;
      int y = g.nodes[i].inputs[0], z = g.nodes[i].outputs[0];
      int p = producer_of(g, y);
      if (p < 0 || sole_consumer(g, idx, y) != static_cast<int>(i)) continue;
      Node& prod = g.nodes[p];
      if (prod.outputs.empty() || prod.outputs[0] != y) continue;
      bool done = false;
      if (is_onnx_op(prod, "Conv"))
        done = fold_into_conv(g, prod, a);
      else if (is_onnx_op(prod, "Gemm"))
        done = fold_into_gemm(g, prod, a);
      else if (is_onnx_op(prod, "MatMul"))
        done = fold_into_matmul(g, prod, a);
      if (!done) continue;
      // The producer now writes the BN's output, keeping its name.
      prod.outputs[0] = z;
      g.values[z].producer = p;
      g.values[y].producer = -1;
      g.nodes[i].dead = true;
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm() { return std::make_unique<FoldBatchnorm>(); }

}  // namespace infera
