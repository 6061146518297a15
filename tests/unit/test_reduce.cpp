// Reduce* and ArgMax/ArgMin against naive formulas on seeded random data.
#include <cmath>
#include <functional>

#include "op_test_util.h"

namespace infera::test {
namespace {

Tensor axes_tensor(std::vector<int64_t> axes) {
  return make_tensor<int64_t>(DataType::kInt64, {static_cast<int64_t>(axes.size())}, axes);
}

// Naive reference over a 3-D tensor [A,B,C] for a set of reduced axes, keepdims=1 layout.
Tensor naive_reduce3(const Tensor& x, std::vector<bool> red,
                     const std::function<double(const std::vector<double>&)>& f) {
  const auto& d = x.dims();
  std::vector<int64_t> od(3);
  for (int i = 0; i < 3; ++i) od[i] = red[i] ? 1 : d[i];
  Tensor y = Tensor::make(DataType::kFloat32, od).take();
  for (int64_t a = 0; a < od[0]; ++a)
    for (int64_t b = 0; b < od[1]; ++b)
      for (int64_t c = 0; c < od[2]; ++c) {
        std::vector<double> vals;
        for (int64_t i = 0; i < d[0]; ++i)
          for (int64_t j = 0; j < d[1]; ++j)
            for (int64_t k = 0; k < d[2]; ++k) {
              if ((!red[0] && i != a) || (!red[1] && j != b) || (!red[2] && k != c)) continue;
              vals.push_back(x.data_as<float>()[(i * d[1] + j) * d[2] + k]);
            }
        y.data_as<float>()[(a * od[1] + b) * od[2] + c] = static_cast<float>(f(vals));
      }
  return y;
}

struct ReduceCase {
  const char* op;
  std::function<double(const std::vector<double>&)> f;
};

std::vector<ReduceCase> reduce_cases() {
  auto sum = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  };
  return {
      {"ReduceSum", sum},
      {"ReduceMean", [=](const std::vector<double>& v) { return sum(v) / v.size(); }},
      {"ReduceMax", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }},
      {"ReduceMin", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd",
       [](const std::vector<double>& v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       }},
      {"ReduceL1",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += std::fabs(x);
         return s;
       }},
      {"ReduceL2",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return std::sqrt(s);
       }},
      {"ReduceSumSquare",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return s;
       }},
      {"ReduceLogSum", [=](const std::vector<double>& v) { return std::log(sum(v)); }},
      {"ReduceLogSumExp",
       [](const std::vector<double>& v) {
         double s = 0;
         for (double x : v) s += std::exp(x);
         return std::log(s);
       }},
  };
}

TEST(ReduceOps, AllKindsAllAxisSetsAttrAndInput) {
  Tensor x = random_tensor({3, 4, 5}, 7, 0.5f, 1.5f);  // positive so LogSum is defined
  const std::vector<std::vector<int64_t>> axis_sets = {{0}, {1}, {2}, {0, 2}, {-1, -2}, {0, 1, 2}, {}};
  for (const auto& rc : reduce_cases()) {
    for (const auto& axes : axis_sets) {
      std::vector<bool> red(3, axes.empty());
      for (int64_t a : axes) red[(a + 3) % 3] = true;
      Tensor ref = naive_reduce3(x, red, rc.f);
      // opset 11: axes attribute; opset 18: axes input.
      std::map<std::string, Attribute> at;
      if (!axes.empty()) at["axes"] = attr_ints(axes);
      auto r11 = run_op(rc.op, at, {x}, 1, 11);
      ASSERT_TRUE(r11.is_ok()) << rc.op << ": " << r11.message();
      EXPECT_LT(normalized_error(r11.value()[0], ref), 1e-5) << rc.op;
      auto r18 = run_op(rc.op, {}, {x, axes_tensor(axes)}, 1, 18, {1});
      ASSERT_TRUE(r18.is_ok()) << rc.op << ": " << r18.message();
      EXPECT_LT(normalized_error(r18.value()[0], ref), 1e-5) << rc.op;
    }
  }
}

TEST(ReduceOps, KeepdimsZeroDropsAxes) {
  Tensor x = random_tensor({2, 3, 4}, 3);
  auto r = run_op("ReduceSum", {{"keepdims", attr_i(0)}}, {x, axes_tensor({1})}, 1, 13, {1});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 3; ++j) s += x.data_as<float>()[(i * 3 + j) * 4 + k];
      EXPECT_NEAR(r.value()[0].data_as<float>()[i * 4 + k], s, 1e-5);
    }
  auto all = run_op("ReduceMean", {{"keepdims", attr_i(0)}}, {x}, 1, 11);
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all.value()[0].rank(), 0);
}

TEST(ReduceOps, NoopWithEmptyAxes) {
  Tensor x = random_tensor({2, 3}, 5);
  auto r = run_op("ReduceSum", {{"noop_with_empty_axes", attr_i(1)}}, {x, axes_tensor({})}, 1, 13, {1});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(normalized_error(r.value()[0], x), 0.0);
  // Without the axes input at all: also a no-op.
  auto r2 = run_op("ReduceMax", {{"noop_with_empty_axes", attr_i(1)}}, {x}, 1, 18);
  ASSERT_TRUE(r2.is_ok()) << r2.message();
  EXPECT_EQ(normalized_error(r2.value()[0], x), 0.0);
  // Before opset 13, axes as attr are mandatory-free: all axes reduced.
  auto r3 = run_op("ReduceSum", {}, {x}, 1, 11);
  ASSERT_TRUE(r3.is_ok());
  EXPECT_EQ(r3.value()[0].dims(), (std::vector<int64_t>{1, 1}));
}

TEST(ReduceOps, IntegerAndEmptySet) {
  Tensor xi = make_tensor<int32_t>(DataType::kInt32, {2, 3}, {1, -2, 3, 4, 5, -6});
  auto r = run_op("ReduceSum", {{"axes", attr_ints({1})}, {"keepdims", attr_i(0)}}, {xi}, 1, 11);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].data_as<int32_t>()[0], 2);
  EXPECT_EQ(r.value()[0].data_as<int32_t>()[1], 3);
  auto mx = run_op("ReduceMax", {{"axes", attr_ints({0})}}, {xi}, 1, 11);
  ASSERT_TRUE(mx.is_ok());
  EXPECT_EQ(mx.value()[0].data_as<int32_t>()[1], 5);
  // Reducing an empty axis gives the identity.
  Tensor e = Tensor::make(DataType::kFloat32, {2, 0}).take();
  auto s = run_op("ReduceSum", {}, {e, axes_tensor({1})}, 1, 18, {1});
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s.value()[0].data_as<float>()[0], 0.f);
  auto p = run_op("ReduceProd", {}, {e, axes_tensor({1})}, 1, 18, {1});
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p.value()[0].data_as<float>()[1], 1.f);
  auto m = run_op("ReduceMax", {}, {e, axes_tensor({1})}, 1, 18, {1});
  ASSERT_TRUE(m.is_ok());
  EXPECT_TRUE(std::isinf(m.value()[0].data_as<float>()[0]));
}

TEST(ReduceOps, RefusesBadAxes) {
  Tensor x = random_tensor({2, 3}, 1);
  EXPECT_FALSE(run_op("ReduceSum", {{"axes", attr_ints({2})}}, {x}, 1, 11).is_ok());
  EXPECT_FALSE(run_op("ReduceSum", {{"axes", attr_ints({0, -2})}}, {x}, 1, 11).is_ok());
  EXPECT_FALSE(run_op("ReduceMean", {}, {x, axes_tensor({-3})}, 1, 18, {1}).is_ok());
  EXPECT_FALSE(run_op("ReduceMean", {{"axes", attr_ints({0})}}, {x}, 1, 18).is_ok());
}

TEST(ReduceOps, SymbolicDimsAndUnknownAxes) {
  auto k = make_kernel(
      [] {
        Node n;
        n.name = "r";
        n.op_type = "ReduceMean";
        n.attrs["axes"] = attr_ints({2, 3});
        n.inputs = {0};
        n.outputs = {1};
        return n;
      }(),
      17);
  ASSERT_TRUE(k.is_ok());
  ValueInfo in;
  in.dtype = DataType::kFloat32;
  in.shape = Shape({Dim::sym("batch"), Dim(8), Dim(7), Dim(7)});
  Node n;
  n.op_type = "ReduceMean";
  n.outputs = {1};
  InferContext ctx(n, 17, {&in});
  ASSERT_TRUE(k.value()->infer(ctx).is_ok());
  EXPECT_EQ(ctx.outputs()[0].shape.str(), "[batch,8,1,1]");
}

TEST(ArgOps, MaxMinKeepdimsLastIndex) {
  Tensor x = random_tensor({3, 5, 4}, 11);
  // Introduce ties along axis 1.
  x.data_as<float>()[0 * 20 + 1 * 4 + 2] = 5.f;
  x.data_as<float>()[0 * 20 + 3 * 4 + 2] = 5.f;
  for (bool is_max : {true, false})
    for (int last : {0, 1})
      for (int keep : {0, 1}) {
        auto r = run_op(is_max ? "ArgMax" : "ArgMin",
                        {{"axis", attr_i(-2)}, {"keepdims", attr_i(keep)}, {"select_last_index", attr_i(last)}}, {x});
        ASSERT_TRUE(r.is_ok()) << r.message();
        const Tensor& y = r.value()[0];
        EXPECT_EQ(y.dtype(), DataType::kInt64);
        EXPECT_EQ(y.dims(), keep ? (std::vector<int64_t>{3, 1, 4}) : (std::vector<int64_t>{3, 4}));
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t k = 0; k < 4; ++k) {
            int64_t best = 0;
            for (int64_t j = 1; j < 5; ++j) {
              float v = x.data_as<float>()[i * 20 + j * 4 + k], b = x.data_as<float>()[i * 20 + best * 4 + k];
              if (is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = j;
            }
            EXPECT_EQ(y.data_as<int64_t>()[i * 4 + k], best);
          }
      }
  Tensor tie = make_tensor<float>(DataType::kFloat32, {4}, {1, 3, 3, 0});
  EXPECT_EQ(run_op("ArgMax", {}, {tie}).value()[0].data_as<int64_t>()[0], 1);
  EXPECT_EQ(run_op("ArgMax", {{"select_last_index", attr_i(1)}}, {tie}).value()[0].data_as<int64_t>()[0], 2);
  EXPECT_FALSE(run_op("ArgMax", {{"axis", attr_i(3)}}, {x}).is_ok());
}

}  // namespace
}  // namespace infera::test
