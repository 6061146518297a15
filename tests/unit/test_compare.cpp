// The comparison helpers of op_test_util.h: a wrong, NaN or Inf output must fail the assertions
// every kernel test makes (EXPECT_LT(normalized_error(...), tol), EXPECT_EQ(..., 0)).
#include <gtest/gtest-spi.h>

#include <limits>

#include "op_test_util.h"

namespace infera::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor vec(std::vector<float> v) { return make_tensor<float>(DataType::kFloat32, {int64_t(v.size())}, v); }

TEST(Compare, ExactAndSmallErrors) {
  EXPECT_EQ(normalized_error(vec({1, -2, 3}), vec({1, -2, 3})), 0.0);
  EXPECT_NEAR(normalized_error(vec({1, -2, 3.003f}), vec({1, -2, 3})), 1e-3, 1e-6);  // 0.003 / 3
  EXPECT_GT(normalized_error(vec({1, -2, 4}), vec({1, -2, 3})), 0.3);
}

TEST(Compare, NaNOutputFails) {
  const Tensor ref = vec({1, 2, 3});
  EXPECT_EQ(normalized_error(vec({1, kNaN, 3}), ref), std::numeric_limits<double>::infinity());
  EXPECT_EQ(normalized_error(vec({kNaN, kNaN, kNaN}), ref), std::numeric_limits<double>::infinity());
  // The assertions the kernel tests make must fail on it, not only the number.
  EXPECT_NONFATAL_FAILURE(EXPECT_LT(normalized_error(vec({kNaN, kNaN, kNaN}), ref), 1e-3), "");
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(normalized_error(vec({1, kNaN, 3}), ref), 0), "");
}

TEST(Compare, NaNReferenceNeedsNaN) {
  EXPECT_EQ(normalized_error(vec({1, kNaN, 3}), vec({1, kNaN, 3})), 0.0);  // NaN where NaN: a match
  EXPECT_EQ(normalized_error(vec({1, 0, 3}), vec({1, kNaN, 3})), std::numeric_limits<double>::infinity());
  EXPECT_EQ(normalized_error(vec({1, kInf, 3}), vec({1, kNaN, 3})), std::numeric_limits<double>::infinity());
}

TEST(Compare, InfMustMatchExactly) {
  EXPECT_EQ(normalized_error(vec({1, kInf, -kInf}), vec({1, kInf, -kInf})), 0.0);
  EXPECT_EQ(normalized_error(vec({1, kInf, 3}), vec({1, 2, 3})), std::numeric_limits<double>::infinity());
  EXPECT_EQ(normalized_error(vec({1, 2, 3}), vec({1, kInf, 3})), std::numeric_limits<double>::infinity());
  EXPECT_EQ(normalized_error(vec({1, -kInf, 3}), vec({1, kInf, 3})), std::numeric_limits<double>::infinity());
  EXPECT_NONFATAL_FAILURE(EXPECT_LT(normalized_error(vec({kInf, 2, 3}), vec({1, 2, 3})), 1e-3), "");
}

TEST(Compare, ScaleIgnoresNonFiniteReference) {
  // The scale is the largest finite reference magnitude: an Inf in the reference does not hide errors.
  EXPECT_NEAR(normalized_error(vec({kInf, 1.5f}), vec({kInf, 1})), 0.5, 1e-9);
}

TEST(Compare, ShapeOrDtypeMismatchFails) {
  EXPECT_GE(normalized_error(vec({1, 2, 3}), vec({1, 2})), 1e30);
  Tensor i = make_tensor<int32_t>(DataType::kInt32, {3}, {1, 2, 3});
  EXPECT_GE(normalized_error(i, i), 1e30);
}

TEST(Compare, RawPointerHelpers) {
  const float got[] = {1, kNaN};
  const double ref[] = {1, 2};
  EXPECT_EQ(max_abs_error(got, ref, 2), std::numeric_limits<double>::infinity());
  EXPECT_EQ(max_abs_error(got, ref, 1), 0.0);
  const double ref2[] = {1, 4};
  const float got2[] = {1, 3};
  EXPECT_DOUBLE_EQ(max_abs_error(got2, ref2, 2), 1.0);
  EXPECT_DOUBLE_EQ(normalized_error(got2, ref2, 2), 0.25);
}

}  // namespace
}  // namespace infera::test
