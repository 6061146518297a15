// MatMul (numpy batched), Gemm and com.infera.FusedGemm (Gemm + activation), and the
// reference GEMM kernels (sgemm_ref/dgemm_ref) they share with other ops.
#include "ops/matmul.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "ops/op.h"
#include "ops/util.h"

#include "ops/elementwise.h"

namespace infera {
namespace {

// C = alpha * op(A) * op(B) + beta * C over row chunks x column blocks. Per element the
// sum runs over K in blocks of KB in a fixed order, whatever the partition.
template <class T>
void gemm_blocked(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
                  int64_t ldb, T beta, T* C, int64_t ldc, int num_threads) {
  if (M <= 0 || N <= 0) return;
  constexpr int64_t NB = 256, KB = 256, MR = 4;
  int nt = num_threads > 0 ? num_threads : omp_get_max_threads();
  if (static_cast<double>(M) * N * std::max<int64_t>(K, 1) < 65536.0) nt = 1;
  const int64_t col_blocks = (N + NB - 1) / NB;
  int64_t row_chunk = std::max<int64_t>(MR, (M + nt - 1) / nt);
  row_chunk = (row_chunk + MR - 1) / MR * MR;  // groups of MR rows stay aligned to the start
  const int64_t row_blocks = (M + row_chunk - 1) / row_chunk;

  parallel_for(row_blocks * col_blocks, nt, [&](int64_t tb0, int64_t tb1) {
    std::vector<T> panel(tb ? KB * NB : 0);
    std::vector<T> acc(MR * NB);
    for (int64_t t = tb0; t < tb1; ++t) {
      const int64_t i0 = (t / col_blocks) * row_chunk, i1 = std::min(M, i0 + row_chunk);
      const int64_t j0 = (t % col_blocks) * NB, nb = std::min(NB, N - j0);
      for (int64_t i = i0; i < i1; ++i) {
        T* c = C + i * ldc + j0;
        if (beta == T(0))
          std::fill(c, c + nb, T(0));
        else if (beta != T(1))
          for (int64_t j = 0; j < nb; ++j) c[j] *= beta;
      }
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t kb = std::min(KB, K - k0);
        const T* bp;
        int64_t bs;
        if (tb) {
          for (int64_t j = 0; j < nb; ++j) {
            const T* src = B + (j0 + j) * ldb + k0;
            for (int64_t kk = 0; kk < kb; ++kk) panel[kk * NB + j] = src[kk];
          }
          bp = panel.data();
          bs = NB;
        } else {
          bp = B + k0 * ldb + j0;
          bs = ldb;
        }
        for (int64_t i = i0; i < i1; i += MR) {
          const int64_t mr = std::min(MR, i1 - i);
          std::fill(acc.begin(), acc.begin() + mr * NB, T(0));
          T* a0 = acc.data();
          T* a1 = a0 + NB;
          T* a2 = a1 + NB;
          T* a3 = a2 + NB;
          for (int64_t kk = 0; kk < kb; ++kk) {
            const T* brow = bp + kk * bs;
            const int64_t k = k0 + kk;
            T av[MR];
            for (int64_t r = 0; r < mr; ++r) av[r] = ta ? A[k * lda + i + r] : A[(i + r) * lda + k];
            if (mr == MR) {
              const T x0 = av[0], x1 = av[1], x2 = av[2], x3 = av[3];
              for (int64_t j = 0; j < nb; ++j) {
                const T b = brow[j];
                a0[j] += x0 * b;
                a1[j] += x1 * b;
                a2[j] += x2 * b;
                a3[j] += x3 * b;
              }
            } else {
              for (int64_t r = 0; r < mr; ++r) {
                T* ar = acc.data() + r * NB;
                const T x = av[r];
                for (int64_t j = 0; j < nb; ++j) ar[j] += x * brow[j];
              }
            }
          }
          for (int64_t r = 0; r < mr; ++r) {
            T* c = C + (i + r) * ldc + j0;
            const T* ar = acc.data() + r * NB;
            for (int64_t j = 0; j < nb; ++j) c[j] += alpha * ar[j];
          }
        }
      }
    }
  });
}

// Integer GEMM: wrapping 64-bit accumulation; alpha/beta applied in double when not 1.
template <class T>
void gemm_int(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const T* A, const T* B, double beta,
              T* C, int num_threads) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  const bool exact = alpha == 1.0 && (beta == 0.0 || beta == 1.0);
  parallel_for(M, static_cast<double>(M) * N * K > 65536.0 ? num_threads : 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t j = 0; j < N; ++j) {
        uint64_t s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const T a = ta ? A[k * lda + i] : A[i * lda + k];
          const T v = tb ? B[j * ldb + k] : B[k * ldb + j];
          s += static_cast<uint64_t>(static_cast<int64_t>(a)) * static_cast<uint64_t>(static_cast<int64_t>(v));
        }
        T& c = C[i * N + j];
        if (exact) {
          uint64_t r = s + (beta == 1.0 ? static_cast<uint64_t>(static_cast<int64_t>(c)) : 0);
          c = static_cast<T>(r);
        } else {
          c = static_cast<T>(alpha * static_cast<double>(static_cast<int64_t>(s)) + beta * static_cast<double>(c));
        }
      }
  });
}

bool gemm_supported(DataType dt) { return dt == DataType::kFloat32 || dt == DataType::kFloat64 || (is_integer(dt)); }

// Runs C = alpha*op(A)*op(B) + beta*C for contiguous matrices of dtype dt.
void gemm_any(DataType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void* A,
              const void* B, double beta, void* C, int nt) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  if (dt == DataType::kFloat32) {
    sgemm_ref(ta, tb, M, N, K, static_cast<float>(alpha), static_cast<const float*>(A), lda,
              static_cast<const float*>(B), ldb, static_cast<float>(beta), static_cast<float*>(C), N, nt);
    return;
  }
  if (dt == DataType::kFloat64) {
    dgemm_ref(ta, tb, M, N, K, alpha, static_cast<const double*>(A), lda, static_cast<const double*>(B), ldb, beta,
              static_cast<double*>(C), N, nt);
    return;
  }
  dispatch(dt, TypeSet::kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      gemm_int<T>(ta, tb, M, N, K, alpha, static_cast<const T*>(A), static_cast<const T*>(B), beta, static_cast<T*>(C),
                  nt);
  });
}

// ------------------------------------------------------------------------------- MatMul
class MatMulKernel : public OpKernel {
 public:
  MatMulKernel(const Node& n, int64_t opset) {}
  Status init() { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("expects 2 inputs (A, B)");
    const ValueInfo& a = ctx.in(0);
    const ValueInfo& b = ctx.in(1);
    if (!gemm_supported(a.dtype)) return ctx.error("input 'A' has unsupported dtype %s", dtype_name(a.dtype));
    if (a.dtype != b.dtype)
      return ctx.error("inputs 'A' and 'B' must have the same dtype, found %s and %s", dtype_name(a.dtype),
                       dtype_name(b.dtype));
    if (!a.shape.rank_known || !b.shape.rank_known) {
      ctx.set_output(0, a.dtype, Shape::unknown());
      return Status::ok();
    }
    if (a.shape.rank() < 1 || b.shape.rank() < 1)
      return ctx.error("inputs must have rank >= 1, found ranks %d and %d", a.shape.rank(), b.shape.rank());
    std::vector<Dim> ad = a.shape.dims, bd = b.shape.dims;
    const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
    if (a1) ad.insert(ad.begin(), Dim(1));
    if (b1) bd.push_back(Dim(1));
    const Dim& ka = ad.back();
    const Dim& kb = bd[bd.size() - 2];
    if (ka.known() && kb.known() && ka.value != kb.value)
      return ctx.error("inner dims differ: 'A' %s has K = %lld, 'B' %s has K = %lld", a.shape.str().c_str(),
                       (long long)ka.value, b.shape.str().c_str(), (long long)kb.value);
    Shape batch;
    Shape sa(std::vector<Dim>(ad.begin(), ad.end() - 2)), sb(std::vector<Dim>(bd.begin(), bd.end() - 2));
    if (!broadcast_shapes(sa, sb, batch))
      return ctx.error("batch dims of 'A' %s and 'B' %s do not broadcast", a.shape.str().c_str(),
                       b.shape.str().c_str());
    std::vector<Dim> out = batch.dims;
    if (!a1) out.push_back(ad[ad.size() - 2]);
    if (!b1) out.push_back(bd.back());
    ctx.set_output(0, a.dtype, Shape(std::move(out)));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& a = ctx.in(0);
    const TensorRef& b = ctx.in(1);
    TensorRef& y = ctx.out(0);
    std::vector<int64_t> ad = a.dims, bd = b.dims;
    if (ad.empty() || bd.empty()) return ctx.error("inputs must have rank >= 1");
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    if (bd[bd.size() - 2] != K)
      return ctx.error("inner dims differ: %lld vs %lld", (long long)K, (long long)bd[bd.size() - 2]);
    std::vector<int64_t> ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2), ob;
    if (!broadcast_dims(ab, bb, ob)) return ctx.error("batch dims do not broadcast");
    int64_t nbatch = 1;
    if (!checked_numel(ob, nbatch)) return ctx.error("batch size overflows");
    if (nbatch * M * N != y.numel()) return ctx.error("output size mismatch");
    const size_t es = dtype_size(a.dtype);
    const char* pa = static_cast<const char*>(a.data);
    const char* pb = static_cast<const char*>(b.data);
    char* py = static_cast<char*>(y.data);
    if (y.numel() == 0) return Status::ok();
    if (std::all_of(bb.begin(), bb.end(), [](int64_t d) { return d == 1; })) {
      // B is one matrix: A's batch folds into rows, in output order.
      gemm_any(a.dtype, false, false, nbatch * M, N, K, 1.0, pa, pb, 0.0, py, ctx.num_threads);
      return Status::ok();
    }
    const std::vector<int64_t> sa = broadcast_strides(ab, ob), sb = broadcast_strides(bb, ob);
    const int64_t r = static_cast<int64_t>(ob.size());
    auto one = [&](int64_t bi, int nt) {
      int64_t oa = 0, obb = 0, rem = bi;
      for (int64_t d = r - 1; d >= 0; --d) {
        const int64_t idx = rem % ob[d];
        rem /= ob[d];
        oa += idx * sa[d];
        obb += idx * sb[d];
      }
      gemm_any(a.dtype, false, false, M, N, K, 1.0, pa + oa * M * K * es, pb + obb * K * N * es, 0.0,
               py + bi * M * N * es, nt);
    };
    const int nt = ctx.num_threads > 0 ? ctx.num_threads : omp_get_max_threads();
    if (nbatch >= nt && nt > 1) {
      parallel_for(nbatch, nt, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i) one(i, 1);
      });
    } else {
      for (int64_t i = 0; i < nbatch; ++i) one(i, nt);
    }
    return Status::ok();
  }
};

// ------------------------------------------------------------------------------- Gemm
class GemmKernel : public GemmOp {
 public:
  GemmKernel(const GemmAttrs& a, int64_t opset, Activation act) : opset_(opset) {
    attrs_ = a;
    act_ = act;
    fused_ = true;
  }
  GemmKernel(const Node& n, int64_t opset) : opset_(opset) {
    attrs_.trans_a = n.attr_int("transA", 0) != 0;
    attrs_.trans_b = n.attr_int("transB", 0) != 0;
    attrs_.alpha = n.attr_float("alpha", 1.f);
    attrs_.beta = n.attr_float("beta", 1.f);
  }
  Status init() { return status_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("expects inputs A and B");
    if (opset_ < 11 && !ctx.has_input(2)) return ctx.error("input 'C' is required before opset 11");
    const ValueInfo& a = ctx.in(0);
    const ValueInfo& b = ctx.in(1);
    if (!gemm_supported(a.dtype)) return ctx.error("input 'A' has unsupported dtype %s", dtype_name(a.dtype));
    if (a.dtype != b.dtype)
      return ctx.error("inputs 'A' and 'B' must have the same dtype, found %s and %s", dtype_name(a.dtype),
                       dtype_name(b.dtype));
    if (ctx.has_input(2) && ctx.in(2).dtype != a.dtype)
      return ctx.error("input 'C' must have dtype %s, found %s", dtype_name(a.dtype), dtype_name(ctx.in(2).dtype));
    Status s = check_extra(ctx);
    if (!s.is_ok()) return s;
    if (!a.shape.rank_known || !b.shape.rank_known) {
      ctx.set_output(0, a.dtype, Shape::of_rank(2));
      return Status::ok();
    }
    if (a.shape.rank() != 2 || b.shape.rank() != 2)
      return ctx.error("inputs 'A' and 'B' must be 2-D, found %s and %s", a.shape.str().c_str(), b.shape.str().c_str());
    const Dim m = a.shape.dims[attrs_.trans_a ? 1 : 0], ka = a.shape.dims[attrs_.trans_a ? 0 : 1];
    const Dim kb = b.shape.dims[attrs_.trans_b ? 1 : 0], n = b.shape.dims[attrs_.trans_b ? 0 : 1];
    if (ka.known() && kb.known() && ka.value != kb.value)
      return ctx.error("inner dims differ: 'A' %s (transA=%d) has K = %lld, 'B' %s (transB=%d) has K = %lld",
                       a.shape.str().c_str(), (int)attrs_.trans_a, (long long)ka.value, b.shape.str().c_str(),
                       (int)attrs_.trans_b, (long long)kb.value);
    if (ctx.has_input(2) && ctx.in(2).shape.rank_known) {
      const Shape& c = ctx.in(2).shape;
      if (c.rank() > 2) return ctx.error("input 'C' must have rank <= 2, found %s", c.str().c_str());
      const Dim target[2] = {m, n};
      for (int i = 0; i < c.rank(); ++i) {
        const Dim& d = c.dims[i];
        const Dim& t = target[2 - c.rank() + i];
        if (d.known() && t.known() && d.value != 1 && d.value != t.value)
          return ctx.error("input 'C' %s does not broadcast to [%lld,%lld]", c.str().c_str(), (long long)m.value,
                           (long long)n.value);
      }
    }
    ctx.set_output(0, a.dtype, Shape({m, n}));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& a = ctx.in(0);
    const TensorRef& b = ctx.in(1);
    TensorRef& y = ctx.out(0);
    if (a.rank() != 2 || b.rank() != 2) return ctx.error("inputs 'A' and 'B' must be 2-D");
    const int64_t M = a.dims[attrs_.trans_a ? 1 : 0], K = a.dims[attrs_.trans_a ? 0 : 1];
    const int64_t N = b.dims[attrs_.trans_b ? 0 : 1];
    if (b.dims[attrs_.trans_b ? 1 : 0] != K) return ctx.error("inner dims differ");
    if (y.numel() != M * N) return ctx.error("output size mismatch");
    double beta = attrs_.beta;
    if (ctx.has_input(2) && beta != 0.0) {
      const TensorRef& c = ctx.in(2);
      if (c.rank() > 2) return ctx.error("input 'C' must have rank <= 2");
      std::vector<int64_t> cd = c.dims;
      while (cd.size() < 2) cd.insert(cd.begin(), 1);
      if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N))
        return ctx.error("input 'C' does not broadcast to [%lld,%lld]", (long long)M, (long long)N);
      const int64_t s0 = cd[0] == 1 ? 0 : cd[1], s1 = cd[1] == 1 ? 0 : 1;
      dispatch(a.dtype, TypeSet::kNumeric, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* cp = c.ptr<T>();
        T* yp = y.ptr<T>();
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) yp[i * N + j] = cp[i * s0 + j * s1];
      });
    } else {
      beta = 0.0;
    }
    if (!is_float(a.dtype) && beta != 0.0 && beta != 1.0) {
      // Integer beta: scale C first so gemm_int adds it exactly once.
      dispatch(a.dtype, TypeSet::kNumeric, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* yp = y.ptr<T>();
        for (int64_t i = 0; i < M * N; ++i) yp[i] = static_cast<T>(beta * static_cast<double>(yp[i]));
      });
      beta = 1.0;
    }
    gemm_any(a.dtype, attrs_.trans_a, attrs_.trans_b, M, N, K, attrs_.alpha, a.data, b.data, beta, y.data,
             ctx.num_threads);
    if (act_.is_identity()) return Status::ok();
    if (y.dtype == DataType::kFloat32)
      apply_activation(act_, y.ptr<float>(), y.numel());
    else if (y.dtype == DataType::kFloat64)
      apply_activation(act_, y.ptr<double>(), y.numel());
    else
      return ctx.error("activation %s needs float inputs", activation_name(act_.kind));
    return Status::ok();
  }

 protected:
  virtual Status check_extra(InferContext& ctx) const {
    if (!act_.is_identity() && !is_float(ctx.in(0).dtype))
      return ctx.error("activation '%s' needs float inputs, found %s", activation_name(act_.kind),
                       dtype_name(ctx.in(0).dtype));
    return Status::ok();
  }

  int64_t opset_;
  Status status_;
};

// ------------------------------------------------------------------------------- FusedGemm
// Gemm followed by an activation (the com.infera attribute form, parsed once here).
class FusedGemmKernel : public GemmKernel {
 public:
  FusedGemmKernel(const Node& n, int64_t opset) : GemmKernel(n, opset) {
    fused_ = true;
    Status s = activation_from_attrs(n, act_);
    if (!s.is_ok()) status_ = s;
  }
};

}  // namespace

void sgemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int num_threads) {
  gemm_blocked<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, num_threads);
}

void dgemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
               const double* B, int64_t ldb, double beta, double* C, int64_t ldc, int num_threads) {
  gemm_blocked<double>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, num_threads);
}

std::shared_ptr<const OpKernel> GemmOp::make_fused(const GemmAttrs& a, int64_t opset, Activation act) {
  return std::make_shared<GemmKernel>(a, opset, act);
}

void register_matmul_ops(OpRegistry& r) {
  r.add("MatMul", factory_of<MatMulKernel>());
  r.add("Gemm", factory_of<GemmKernel>());
  r.add("FusedGemm", factory_of<FusedGemmKernel>(), "com.infera");
}

}  // namespace infera
