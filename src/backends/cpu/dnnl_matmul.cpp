// Gemm / com.infera.FusedGemm (act(alpha * A' B' + beta * C)) and MatMul through the oneDNN
// matmul primitive. Constant B is scaled by alpha and reordered once; constant C becomes
// beta * C as a bias (a [1, N] row) or a binary-add post-op (other broadcasts).
#include <cstring>

#include "backends/cpu/dnnl_internal.h"
#include "ops/matmul.h"

namespace infera::cpu {
namespace {

struct GemmPlan {
  int64_t m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  bool has_c = false, c_const = false;
  int64_t cm = 1, cn = 1;  // C broadcast to [cm, cn]
  std::vector<EltOp> act;
  bool act_loop = false;  // as ConvPlan's: Relu/Clip/HardSigmoid as a NaN-keeping loop after
  Activation loop_act;
  bool fused = false;
};

bool plan_gemm(const StepRequest& req, GemmPlan& p) {
  const auto* op = dynamic_cast<const GemmOp*>(req.op);
  if (!op || !req.has_in(0) || !req.has_in(1)) return false;
  const Dims a = req.in_dims(0), b = req.in_dims(1), y = req.out_dims(0);
  if (a.size() != 2 || b.size() != 2 || y.size() != 2) return false;
  p.trans_a = op->attrs().trans_a;
  p.trans_b = op->attrs().trans_b;
  p.alpha = op->attrs().alpha;
  p.beta = op->attrs().beta;
  p.m = p.trans_a ? a[1] : a[0];
  p.k = p.trans_a ? a[0] : a[1];
  p.n = p.trans_b ? b[0] : b[1];
  if ((p.trans_b ? b[1] : b[0]) != p.k || y != Dims{p.m, p.n} || p.m <= 0 || p.n <= 0 || p.k <= 0) return false;
  const bool b_const = req.inputs[1]->value != nullptr;
  if (!b_const && p.alpha != 1.f) return false;
  p.has_c = req.has_in(2) && p.beta != 0.f;
  if (p.has_c) {
    const Dims c = req.in_dims(2);
    if (c.size() > 2) return false;
    if (c.size() == 1) p.cn = c[0];
    if (c.size() == 2) p.cm = c[0], p.cn = c[1];
    if ((p.cm != 1 && p.cm != p.m) || (p.cn != 1 && p.cn != p.n)) return false;
    p.c_const = req.inputs[2]->value != nullptr;
    if (!p.c_const && p.beta != 1.f) return false;
  }
  p.fused = op->fused();
  p.loop_act = op->activation();
  return fused_activation(op->activation(), p.act, p.act_loop);
}

memory::desc matrix_md(int64_t rows, int64_t cols, bool transposed) {
  // A logical [rows, cols] matrix stored row-major, or stored as its transpose.
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::format_tag::ba : memory::format_tag::ab);
}

}  // namespace

Support gemm_query(const StepRequest& req) {
  GemmPlan p;
  if (!plan_gemm(req, p)) return Support::no("a Gemm oneDNN does not take (C broadcast, non-constant B with alpha)");
  Support s;
  s.ok = true;
  return s;
}

std::unique_ptr<DnnlKernel> gemm_create(const StepRequest& req) {
  using namespace dnnl;
  GemmPlan p;
  if (!plan_gemm(req, p)) return nullptr;
  const bool b_const = req.inputs[1]->value != nullptr;
  const memory::desc a_md = matrix_md(p.m, p.k, p.trans_a);
  const memory::desc b_md = b_const ? memory::desc({p.k, p.n}, memory::data_type::f32, memory::format_tag::any)
                                    : matrix_md(p.k, p.n, p.trans_b);
  const memory::desc y_md = matrix_md(p.m, p.n, false);
  const bool c_as_bias = p.has_c && p.c_const && p.cm == 1 && p.cn == p.n;
  const memory::desc c_md = matrix_md(p.cm, p.cn, false);
  post_ops po;
  if (p.has_c && !c_as_bias) po.append_binary(algorithm::binary_add, c_md);
  append_eltwise_ops(po, p.act);
  primitive_attr attr;
  attr.set_post_ops(po);
  matmul::desc d(a_md, b_md, c_as_bias ? c_md : memory::desc(), y_md);
  matmul::primitive_desc pd(d, user_scratchpad(attr), engine());

  auto k = std::make_unique<DnnlKernel>(p.fused ? "dnnl fused gemm" : "dnnl gemm");
  k->set_impl(pd.impl_info_str());
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = k->bind_input(0, a_md);
  args[DNNL_ARG_DST] = k->bind_output(0, y_md);
  if (b_const) {
    // alpha folded into the weights.
    const Tensor& bt = *req.inputs[1]->value;
    std::vector<float> scaled(bt.data_as<float>(), bt.data_as<float>() + bt.numel());
    if (p.alpha != 1.f)
      for (float& v : scaled) v *= p.alpha;
    memory user(matrix_md(p.k, p.n, p.trans_b), engine(), scaled.data());
    uint32_t alpha_bits;
    std::memcpy(&alpha_bits, &p.alpha, 4);
    args[DNNL_ARG_WEIGHTS] =
        packed_weights(*k, req, "gemm:alpha=" + std::to_string(alpha_bits), user, pd.weights_desc());
  } else {
    args[DNNL_ARG_WEIGHTS] = k->bind_input(1, b_md);
  }
  if (p.has_c) {
    memory c;
    if (p.c_const) {
      c = k->own(c_md);
      const float* src = req.inputs[2]->value->data_as<float>();
      float* dst = static_cast<float*>(c.get_data_handle());
      for (int64_t i = 0; i < p.cm * p.cn; ++i) dst[i] = p.beta * src[i];
    } else {
      c = k->bind_input(2, c_md);
    }
    args[c_as_bias ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1)] = c;
  }
  k->add_step(matmul(pd), args);
  if (p.act_loop) {
    k->set_after(activation_after(p.loop_act, {p.m, p.n}, Format::kPlain));
    k->set_impl(pd.impl_info_str() + std::string(" + ") + activation_name(p.loop_act.kind) + " loop (NaN kept)");
  }
  return k;
}

// ---------------------------------------------------------------- MatMul
namespace {

struct MatMulPlan {
  Dims a, b, y;  // same rank >= 2 (1-D operands promoted, batch dims padded with 1)
};

bool plan_matmul(const StepRequest& req, MatMulPlan& p) {
  if (!req.has_in(0) || !req.has_in(1)) return false;
  Dims a = req.in_dims(0), b = req.in_dims(1);
  if (a.empty() || b.empty()) return false;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const size_t r = std::max(a.size(), b.size());
  if (r > 6) return false;
  a.insert(a.begin(), r - a.size(), 1);
  b.insert(b.begin(), r - b.size(), 1);
  if (a[r - 1] != b[r - 2]) return false;
  Dims y(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1) return false;
    y[i] = std::max(a[i], b[i]);
  }
  y[r - 2] = a[r - 2];
  y[r - 1] = b[r - 1];
  int64_t ny = 1;
  for (int64_t v : y) ny *= v;
  int64_t no = 1;
  for (int64_t v : req.out_dims(0)) no *= v;
  if (ny != no || ny == 0 || a[r - 1] == 0) return false;
  bool b_2d = true;  // B the same matrix for every batch: one GEMM with M = batch x M
  for (size_t i = 0; i + 2 < r; ++i) b_2d = b_2d && b[i] == 1;
  if (b_2d && r > 2) {
    const int64_t m = ny / y[r - 1];
    a = {m, a[r - 1]}, y = {m, y[r - 1]}, b = {b[r - 2], b[r - 1]};
  }
  p.a = a, p.b = b, p.y = y;
  return true;
}

}  // namespace

Support matmul_query(const StepRequest& req) {
  MatMulPlan p;
  if (!plan_matmul(req, p)) return Support::no("a MatMul oneDNN does not take (rank > 6, empty)");
  Support s;
  s.ok = true;
  return s;
}

std::unique_ptr<DnnlKernel> matmul_create(const StepRequest& req) {
  using namespace dnnl;
  MatMulPlan p;
  if (!plan_matmul(req, p)) return nullptr;
  const bool b_const = req.inputs[1]->value != nullptr;
  const memory::desc a_md = plain_md(p.a), y_md = plain_md(p.y);
  const memory::desc b_md =
      b_const ? memory::desc(p.b, memory::data_type::f32, memory::format_tag::any) : plain_md(p.b);
  matmul::desc d(a_md, b_md, y_md);
  matmul::primitive_desc pd(d, user_scratchpad(), engine());
  auto k = std::make_unique<DnnlKernel>("dnnl matmul");
  k->set_impl(pd.impl_info_str());
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = k->bind_input(0, a_md);
  args[DNNL_ARG_DST] = k->bind_output(0, y_md);
  if (b_const) {
    memory user(plain_md(p.b), engine(), const_cast<void*>(req.inputs[1]->value->data()));
    args[DNNL_ARG_WEIGHTS] = packed_weights(*k, req, "matmul", user, pd.weights_desc());
  } else {
    args[DNNL_ARG_WEIGHTS] = k->bind_input(1, b_md);
  }
  k->add_step(matmul(pd), args);
  return k;
}

}  // namespace infera::cpu
