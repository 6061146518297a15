// Softmax/LogSoftmax/Hardmax (both axis semantics) and TopK against naive formulas.
#include <cmath>

#include "op_test_util.h"

namespace infera::test {
namespace {

// Reference over an [outer, n, inner] view.
Tensor naive_softmax(const Tensor& x, int64_t outer, int64_t n, int64_t inner, const std::string& op) {
  Tensor y = Tensor::make(DataType::kFloat32, x.dims()).take();
  const float* p = x.data_as<float>();
  float* q = y.data_as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      double m = -INFINITY, s = 0;
      int64_t arg = 0;
      for (int64_t j = 0; j < n; ++j)
        if (p[at(j)] > m) m = p[at(j)], arg = j;
      for (int64_t j = 0; j < n; ++j) s += std::exp(p[at(j)] - m);
      for (int64_t j = 0; j < n; ++j) {
        if (op == "Softmax")
          q[at(j)] = static_cast<float>(std::exp(p[at(j)] - m) / s);
        else if (op == "LogSoftmax")
          q[at(j)] = static_cast<float>(p[at(j)] - m - std::log(s));
        else
          q[at(j)] = j == arg ? 1.f : 0.f;
      }
    }
  return y;
}

TEST(SoftmaxOps, PerAxisOpset13AndFlattenedBefore) {
  Tensor x = random_tensor({2, 3, 4}, 9, -5.f, 5.f);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      const int64_t a = (axis + 3) % 3;
      // opset 13: along the axis.
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < a; ++i) outer *= x.dims()[i];
      for (int64_t i = a + 1; i < 3; ++i) inner *= x.dims()[i];
      auto r13 = run_op(op, {{"axis", attr_i(axis)}}, {x}, 1, 13);
      ASSERT_TRUE(r13.is_ok()) << r13.message();
      EXPECT_LT(normalized_error(r13.value()[0], naive_softmax(x, outer, x.dims()[a], inner, op)), 1e-5) << op << axis;
      // opset 11: flattened to 2-D at the axis.
      int64_t n = 1;
      for (int64_t i = a; i < 3; ++i) n *= x.dims()[i];
      auto r11 = run_op(op, {{"axis", attr_i(axis)}}, {x}, 1, 11);
      ASSERT_TRUE(r11.is_ok()) << r11.message();
      EXPECT_LT(normalized_error(r11.value()[0], naive_softmax(x, outer, n, 1, op)), 1e-5) << op << axis;
    }
    // Defaults: -1 from 13, 1 before.
    auto d13 = run_op(op, {}, {x}, 1, 13);
    EXPECT_LT(normalized_error(d13.value()[0], naive_softmax(x, 6, 4, 1, op)), 1e-5);
    auto d11 = run_op(op, {}, {x}, 1, 11);
    EXPECT_LT(normalized_error(d11.value()[0], naive_softmax(x, 2, 12, 1, op)), 1e-5);
    EXPECT_FALSE(run_op(op, {{"axis", attr_i(3)}}, {x}, 1, 13).is_ok());
  }
}

TEST(SoftmaxOps, LargeValuesStayFinite) {
  Tensor x = make_tensor<float>(DataType::kFloat32, {1, 3}, {1000.f, 1001.f, 1002.f});
  auto r = run_op("Softmax", {}, {x});
  ASSERT_TRUE(r.is_ok());
  double s = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isfinite(r.value()[0].data_as<float>()[i]));
    s += r.value()[0].data_as<float>()[i];
  }
  EXPECT_NEAR(s, 1.0, 1e-6);
}

TEST(TopKOps, LargestSmallestAxesAndTies) {
  Tensor x = random_tensor({3, 6, 4}, 21);
  // Ties: equal values, the lower index must come first.
  x.data_as<float>()[0 * 24 + 1 * 4 + 0] = 2.f;
  x.data_as<float>()[0 * 24 + 4 * 4 + 0] = 2.f;
  Tensor K = make_tensor<int64_t>(DataType::kInt64, {1}, {3});
  for (int largest : {0, 1}) {
    auto r = run_op("TopK", {{"axis", attr_i(1)}, {"largest", attr_i(largest)}}, {x, K}, 2, 11, {1});
    ASSERT_TRUE(r.is_ok()) << r.message();
    const Tensor& v = r.value()[0];
    const Tensor& idx = r.value()[1];
    ASSERT_EQ(v.dims(), (std::vector<int64_t>{3, 3, 4}));
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < 4; ++i) {
        std::vector<std::pair<float, int64_t>> col;
        for (int64_t j = 0; j < 6; ++j) col.push_back({x.data_as<float>()[o * 24 + j * 4 + i], j});
        std::stable_sort(col.begin(), col.end(),
                         [&](auto& a, auto& b) { return largest ? a.first > b.first : a.first < b.first; });
        for (int64_t j = 0; j < 3; ++j) {
          EXPECT_EQ(v.data_as<float>()[o * 12 + j * 4 + i], col[j].first);
          EXPECT_EQ(idx.data_as<int64_t>()[o * 12 + j * 4 + i], col[j].second);
        }
      }
  }
  // Opset < 10: k as attribute, last axis by default.
  Tensor t = make_tensor<float>(DataType::kFloat32, {2, 4}, {1, 4, 4, 2, -1, -2, 7, 0});
  auto r9 = run_op("TopK", {{"k", attr_i(2)}}, {t}, 2, 9);
  ASSERT_TRUE(r9.is_ok()) << r9.message();
  const int64_t* ix = r9.value()[1].data_as<int64_t>();
  EXPECT_EQ(ix[0], 1);
  EXPECT_EQ(ix[1], 2);
  EXPECT_EQ(ix[2], 2);
  EXPECT_EQ(ix[3], 3);
  // K unknown at load: the axis dim is unknown, then concrete at run time.
  auto r_dyn = run_op("TopK", {}, {t, make_tensor<int64_t>(DataType::kInt64, {1}, {4})}, 2, 17);
  ASSERT_TRUE(r_dyn.is_ok()) << r_dyn.message();
  EXPECT_EQ(r_dyn.value()[0].dims(), (std::vector<int64_t>{2, 4}));
  // k larger than the axis is refused.
  EXPECT_FALSE(run_op("TopK", {}, {t, make_tensor<int64_t>(DataType::kInt64, {1}, {5})}, 2, 17, {1}).is_ok());
  EXPECT_FALSE(run_op("TopK", {}, {t}, 2, 9).is_ok());  // k attr missing
}

TEST(TopKOps, IntegerInput) {
  Tensor t = make_tensor<int32_t>(DataType::kInt32, {5}, {3, -1, 9, 3, 0});
  auto r = run_op("TopK", {{"largest", attr_i(0)}}, {t, make_tensor<int64_t>(DataType::kInt64, {1}, {2})}, 2, 11, {1});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].data_as<int32_t>()[0], -1);
  EXPECT_EQ(r.value()[0].data_as<int32_t>()[1], 0);
  EXPECT_EQ(r.value()[1].data_as<int64_t>()[1], 4);
}

}  // namespace
}  // namespace infera::test
