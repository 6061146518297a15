// MatMul, Gemm, FusedGemm and sgemm_ref against a naive triple loop in double.
#include <cmath>
#include <cstring>

#include "op_test_util.h"
#include "ops/matmul.h"

namespace infera::test {
namespace {

// Naive C[M,N] = sum_k A[m,k] B[k,n] with element accessors; double accumulation.
template <class FA, class FB>
std::vector<double> naive_mm(int64_t M, int64_t N, int64_t K, FA a, FB b) {
  std::vector<double> c(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(a(i, k)) * b(k, j);
      c[i * N + j] = s;
    }
  return c;
}

double max_rel_err(const float* got, const std::vector<double>& ref) {
  return normalized_error(got, ref.data(), ref.size());  // op_test_util.h: NaN/Inf fail
}

TEST(MatMulOps, SgemmRefAllTransposesOddSizesThreads) {
  const int64_t sizes[][3] = {{1, 1, 1}, {5, 7, 3}, {17, 300, 261}, {64, 33, 1000}, {3, 2, 4099}};
  for (auto& s : sizes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Tensor A = random_tensor(ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 1);
        Tensor B = random_tensor(tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 2);
        Tensor C0 = random_tensor({M, N}, 3);
        const float* a = A.data_as<float>();
        const float* b = B.data_as<float>();
        auto ref = naive_mm(
            M, N, K, [&](int64_t i, int64_t k) { return ta ? a[k * M + i] : a[i * K + k]; },
            [&](int64_t k, int64_t j) { return tb ? b[j * K + k] : b[k * N + j]; });
        for (size_t i = 0; i < ref.size(); ++i) ref[i] = 0.5 * ref[i] + 2.0 * C0.data_as<float>()[i];
        Tensor C1 = C0.clone(), C4 = C0.clone();
        sgemm_ref(ta, tb, M, N, K, 0.5f, a, ta ? M : K, b, tb ? K : N, 2.f, C1.data_as<float>(), N, 1);
        sgemm_ref(ta, tb, M, N, K, 0.5f, a, ta ? M : K, b, tb ? K : N, 2.f, C4.data_as<float>(), N, 4);
        EXPECT_LT(max_rel_err(C1.data_as<float>(), ref), 1e-5)
            << M << "x" << N << "x" << K << " ta" << ta << " tb" << tb;
        // Bit-identical for any thread count.
        EXPECT_EQ(std::memcmp(C1.data(), C4.data(), C1.nbytes()), 0);
      }
  }
}

TEST(MatMulOps, SgemmRefBetaZeroIgnoresNaN) {
  Tensor A = random_tensor({4, 3}, 1), B = random_tensor({3, 5}, 2);
  Tensor C = Tensor::make(DataType::kFloat32, {4, 5}).take();
  for (int64_t i = 0; i < 20; ++i) C.data_as<float>()[i] = NAN;
  sgemm_ref(false, false, 4, 5, 3, 1.f, A.data_as<float>(), 3, B.data_as<float>(), 5, 0.f, C.data_as<float>(), 5, 2);
  for (int64_t i = 0; i < 20; ++i) EXPECT_FALSE(std::isnan(C.data_as<float>()[i]));
}

TEST(MatMulOps, BatchedBroadcastAnd1D) {
  struct Case {
    std::vector<int64_t> a, b, y;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{4}, {4, 5}, {5}},
      {{3, 4}, {4}, {3}},
      {{4}, {4}, {}},
      {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
      {{3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{2, 3, 4}, {1, 4, 2}, {2, 3, 2}},
  };
  for (const auto& c : cases) {
    Tensor A = random_tensor(c.a, 5), B = random_tensor(c.b, 6);
    auto r = run_op("MatMul", {}, {A, B});
    ASSERT_TRUE(r.is_ok()) << r.message();
    const Tensor& Y = r.value()[0];
    ASSERT_EQ(Y.dims(), c.y);
    // Reference: promote, broadcast batch by index arithmetic.
    std::vector<int64_t> ad = c.a, bd = c.b;
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    std::vector<int64_t> ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
    const size_t r_ = std::max(ab.size(), bb.size());
    while (ab.size() < r_) ab.insert(ab.begin(), 1);
    while (bb.size() < r_) bb.insert(bb.begin(), 1);
    std::vector<int64_t> ob(r_);
    int64_t nb = 1;
    for (size_t i = 0; i < r_; ++i) nb *= (ob[i] = std::max(ab[i], bb[i]));
    for (int64_t bi = 0; bi < nb; ++bi) {
      int64_t rem = bi, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int64_t d = static_cast<int64_t>(r_) - 1; d >= 0; --d) {
        int64_t idx = rem % ob[d];
        rem /= ob[d];
        ia += (ab[d] == 1 ? 0 : idx) * sa;
        ib += (bb[d] == 1 ? 0 : idx) * sb;
        sa *= ab[d];
        sb *= bb[d];
      }
      const float* a = A.data_as<float>() + ia * M * K;
      const float* b = B.data_as<float>() + ib * K * N;
      auto ref = naive_mm(
          M, N, K, [&](int64_t i, int64_t k) { return a[i * K + k]; },
          [&](int64_t k, int64_t j) { return b[k * N + j]; });
      EXPECT_LT(max_rel_err(Y.data_as<float>() + bi * M * N, ref), 1e-5);
    }
  }
  EXPECT_FALSE(run_op("MatMul", {}, {random_tensor({3, 4}, 1), random_tensor({5, 2}, 1)}).is_ok());
}

TEST(MatMulOps, IntegerAndDouble) {
  Tensor A = make_tensor<int64_t>(DataType::kInt64, {2, 2}, {1, 2, 3, 4});
  Tensor B = make_tensor<int64_t>(DataType::kInt64, {2, 2}, {5, 6, 7, 8});
  auto r = run_op("MatMul", {}, {A, B});
  ASSERT_TRUE(r.is_ok()) << r.message();
  const int64_t* y = r.value()[0].data_as<int64_t>();
  EXPECT_EQ(y[0], 19);
  EXPECT_EQ(y[1], 22);
  EXPECT_EQ(y[2], 43);
  EXPECT_EQ(y[3], 50);
  Tensor Ad = make_tensor<double>(DataType::kFloat64, {1, 3}, {1.5, 2, -1});
  Tensor Bd = make_tensor<double>(DataType::kFloat64, {3, 1}, {2, 0.25, 4});
  auto rd = run_op("MatMul", {}, {Ad, Bd});
  ASSERT_TRUE(rd.is_ok());
  EXPECT_DOUBLE_EQ(rd.value()[0].data_as<double>()[0], 3.0 + 0.5 - 4.0);
}

TEST(GemmOps, AttributesAndBiasBroadcast) {
  const int64_t M = 6, N = 7, K = 9;
  const std::vector<std::vector<int64_t>> c_shapes = {{}, {1}, {N}, {M, 1}, {1, N}, {M, N}};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const auto& cs : c_shapes) {
        Tensor A = random_tensor(ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 1);
        Tensor B = random_tensor(tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 2);
        Tensor C = random_tensor(cs, 3);
        auto r = run_op(
            "Gemm", {{"transA", attr_i(ta)}, {"transB", attr_i(tb)}, {"alpha", attr_f(0.25f)}, {"beta", attr_f(-1.5f)}},
            {A, B, C});
        ASSERT_TRUE(r.is_ok()) << r.message();
        const float* a = A.data_as<float>();
        const float* b = B.data_as<float>();
        auto ref = naive_mm(
            M, N, K, [&](int64_t i, int64_t k) { return ta ? a[k * M + i] : a[i * K + k]; },
            [&](int64_t k, int64_t j) { return tb ? b[j * K + k] : b[k * N + j]; });
        std::vector<int64_t> cd = cs;
        while (cd.size() < 2) cd.insert(cd.begin(), 1);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            ref[i * N + j] =
                0.25 * ref[i * N + j] - 1.5 * C.data_as<float>()[(cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j)];
        EXPECT_LT(max_rel_err(r.value()[0].data_as<float>(), ref), 1e-5);
      }
}

TEST(GemmOps, OptionalCAndErrors) {
  Tensor A = random_tensor({3, 4}, 1), B = random_tensor({4, 2}, 2);
  auto r = run_op("Gemm", {}, {A, B}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  auto ref = naive_mm(
      3, 2, 4, [&](int64_t i, int64_t k) { return A.data_as<float>()[i * 4 + k]; },
      [&](int64_t k, int64_t j) { return B.data_as<float>()[k * 2 + j]; });
  EXPECT_LT(max_rel_err(r.value()[0].data_as<float>(), ref), 1e-6);
  EXPECT_FALSE(run_op("Gemm", {}, {A, B}, 1, 9).is_ok());                      // C required < 11
  EXPECT_FALSE(run_op("Gemm", {}, {A, random_tensor({3, 2}, 1)}).is_ok());     // K mismatch
  EXPECT_FALSE(run_op("Gemm", {}, {A, B, random_tensor({2, 2}, 1)}).is_ok());  // C not broadcastable
  EXPECT_FALSE(run_op("Gemm", {}, {random_tensor({2, 3, 4}, 1), B}).is_ok());  // rank 3
}

TEST(GemmOps, FusedGemmActivation) {
  Tensor A = random_tensor({5, 8}, 1), B = random_tensor({6, 8}, 2), C = random_tensor({6}, 3);
  std::map<std::string, Attribute> base = {{"transB", attr_i(1)}};
  auto plain = run_op("Gemm", base, {A, B, C});
  ASSERT_TRUE(plain.is_ok());
  auto none = run_op("FusedGemm", base, {A, B, C}, 1, 17, {}, "com.infera");
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_EQ(normalized_error(none.value()[0], plain.value()[0]), 0.0);
  auto at = base;
  at["activation"] = attr_s("Relu");
  auto relu = run_op("FusedGemm", at, {A, B, C}, 1, 17, {}, "com.infera");
  ASSERT_TRUE(relu.is_ok()) << relu.message();
  for (int64_t i = 0; i < 30; ++i)
    EXPECT_EQ(relu.value()[0].data_as<float>()[i], std::max(0.f, plain.value()[0].data_as<float>()[i]));
  at["activation"] = attr_s("LeakyRelu");
  at["activation_alpha"] = attr_f(0.1f);
  auto lrelu = run_op("FusedGemm", at, {A, B, C}, 1, 17, {}, "com.infera");
  ASSERT_TRUE(lrelu.is_ok()) << lrelu.message();
  for (int64_t i = 0; i < 30; ++i) {
    float v = plain.value()[0].data_as<float>()[i];
    EXPECT_FLOAT_EQ(lrelu.value()[0].data_as<float>()[i], v < 0 ? 0.1f * v : v);
  }
  at["activation"] = attr_s("NoSuchActivation");
  EXPECT_FALSE(run_op("FusedGemm", at, {A, B, C}, 1, 17, {}, "com.infera").is_ok());
}

}  // namespace
}  // namespace infera::test
