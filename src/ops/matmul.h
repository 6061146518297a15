// Reference GEMM kernels shared by MatMul/Gemm and by other ops (Conv's im2col path).
#pragma once

#include <cstdint>

#include "ops/activation.h"
#include "ops/op.h"

namespace infera {

struct GemmAttrs {
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
};

// Gemm (A, B, C?) and com.infera.FusedGemm (Gemm, then the activation); kernels in matmul.cpp.
class GemmOp : public OpKernel {
 public:
  const GemmAttrs& attrs() const { return attrs_; }
  bool fused() const { return fused_; }
  const Activation& activation() const { return act_; }
  // A FusedGemm made by a pass.
  static std::shared_ptr<const OpKernel> make_fused(const GemmAttrs& a, int64_t opset, Activation act);

 protected:
  GemmAttrs attrs_;
  Activation act_;
  bool fused_ = false;
};

// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose when ta/tb.
// lda/ldb/ldc are row strides of the stored matrices (A is K x M when ta, B is N x K when tb).
// beta == 0 ignores C's old contents. Cache-blocked, accumulates in float, parallel over rows
// and column blocks; every C element is computed by one thread in a fixed order, so results
// are bit-identical for any num_threads (0 = all).
void sgemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, int num_threads);

// The same for float64 (accumulates in double).
void dgemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
               const double* B, int64_t ldb, double beta, double* C, int64_t ldc, int num_threads);

}  // namespace infera
