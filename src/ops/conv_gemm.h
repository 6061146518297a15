// A small register-blocked GEMM for the reference Conv/ConvTranspose kernels:
// C[M,N] += A[M,K] * B[K,N] (row-major, leading dims given). Single-threaded; callers split
// the work. The summation order of each C element depends only on K, so results do not
// depend on how callers tile M or N.
#pragma once

#include <algorithm>
#include <cstdint>

namespace infera {

namespace gemm_detail {

template <class T, int NR>
inline void micro_full(int64_t kc, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  T c0[NR] = {}, c1[NR] = {}, c2[NR] = {}, c3[NR] = {};
  const T* a0 = A;
  const T* a1 = A + lda;
  const T* a2 = A + 2 * lda;
  const T* a3 = A + 3 * lda;
  for (int64_t k = 0; k < kc; ++k) {
    const T* b = B + k * ldb;
    const T x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
#pragma omp simd
    for (int j = 0; j < NR; ++j) {
      c0[j] += x0 * b[j];
      c1[j] += x1 * b[j];
      c2[j] += x2 * b[j];
      c3[j] += x3 * b[j];
    }
  }
  for (int j = 0; j < NR; ++j) {
    C[j] += c0[j];
    C[ldc + j] += c1[j];
    C[2 * ldc + j] += c2[j];
    C[3 * ldc + j] += c3[j];
  }
}

// Edge tiles (mr < 4 or nr < NR): same summation order as micro_full.
template <class T, int NR>
inline void micro_edge(int64_t kc, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc, int64_t mr,
                       int64_t nr) {
  T acc[NR];
  for (int64_t r = 0; r < mr; ++r) {
    std::fill_n(acc, NR, T(0));
    const T* a = A + r * lda;
    for (int64_t k = 0; k < kc; ++k) {
      const T x = a[k];
      const T* b = B + k * ldb;
      for (int64_t j = 0; j < nr; ++j) acc[j] += x * b[j];
    }
    for (int64_t j = 0; j < nr; ++j) C[r * ldc + j] += acc[j];
  }
}

}  // namespace gemm_detail

template <class T>
void gemm_acc(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  constexpr int NR = sizeof(T) == 4 ? 16 : 8;
  constexpr int64_t KC = 256;
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    const int64_t kc = std::min(KC, K - k0);
    for (int64_t j = 0; j < N; j += NR) {
      const int64_t nr = std::min<int64_t>(NR, N - j);
      for (int64_t i = 0; i < M; i += 4) {
        const int64_t mr = std::min<int64_t>(4, M - i);
        const T* a = A + i * lda + k0;
        const T* b = B + k0 * ldb + j;
        T* c = C + i * ldc + j;
        if (mr == 4 && nr == NR)
          gemm_detail::micro_full<T, NR>(kc, a, lda, b, ldb, c, ldc);
        else
          gemm_detail::micro_edge<T, NR>(kc, a, lda, b, ldb, c, ldc, mr, nr);
      }
    }
  }
}

}  // namespace infera
