// Calibration range rules on known histograms: percentile of the mass, TensorRT's entropy threshold
// (clips a long sparse tail, keeps a dense range), and the degenerate all-zero histogram.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "infera/quantize.h"
#include "quant/qdq_model.h"

namespace infera {
namespace {

TEST(QuantCalib, PercentileOfUniformMass) {
  std::vector<double> h(2048, 1.0);
  EXPECT_NEAR(amax_percentile(h, 4.f, 50.0), 2.f, 4.f / 2048 + 1e-6);
  EXPECT_NEAR(amax_percentile(h, 4.f, 99.0), 3.96f, 4.f / 2048 + 1e-6);
  EXPECT_FLOAT_EQ(amax_percentile(h, 4.f, 100.0), 4.f);
  EXPECT_EQ(amax_percentile(std::vector<double>(2048, 0.0), 0.f, 99.9), 0.f);
}

TEST(QuantCalib, EntropyClipsASparseTailAndKeepsADenseRange) {
  // |x| of a Gaussian (sigma = 1) with a few outliers at 20: the threshold lands far below the outliers.
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.f, 1.f);
  const float hmax = 20.f;
  std::vector<double> h(2048, 0.0);
  for (int i = 0; i < 200000; ++i) h[std::min(2047, int(std::fabs(n(rng)) / hmax * 2048))] += 1;
  h[2047] += 5;
  const float t = amax_entropy(h, hmax);
  EXPECT_GT(t, 2.5f);
  EXPECT_LT(t, 8.f);
  // ReLU outputs: half the mass exactly 0 (bin 0). The spike must not pull the threshold down.
  std::vector<double> r = h;
  r[0] += 2000000;
  const float tr = amax_entropy(r, hmax);
  EXPECT_GT(tr, 2.5f);
  EXPECT_LT(tr, 8.f);
  // Uniform mass over the whole range: nothing to clip.
  EXPECT_GT(amax_entropy(std::vector<double>(2048, 1.0), 4.f), 3.8f);
}

TEST(QuantCalib, EntropyFindsTheThresholdWhereQuantizationIsExact) {
  // A histogram whose |x| mass ends at bin 1000 and is constant on each of the 128 levels that
  // threshold makes (level j: bins ceil(j * 1000/128) .. ceil((j+1) * 1000/128) - 1, the reference's
  // digitize over linspace(0, 1000, 129)). There Q == P: KL = 0, the only zero (a larger threshold
  // merges unequal levels, a smaller one folds mass into its last bin), so the threshold is bin 1000.
  // Failed with the floor() grouping, which cut these levels one bin early.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> count(50, 5000);
  std::vector<double> h(2048, 0.0);
  const int t = 1000;
  for (int j = 0; j < 128; ++j) {
    const double c = count(rng);
    for (int k = static_cast<int>(std::ceil(j * (t / 128.0))); k < static_cast<int>(std::ceil((j + 1) * (t / 128.0)));
         ++k)
      h[k] = c;
  }
  EXPECT_FLOAT_EQ(amax_entropy(h, 2048.f), static_cast<float>(t));
}

TEST(QuantCalib, MethodNames) {
  CalibMethod m;
  double p;
  ASSERT_TRUE(parse_calib_method("percentile:99.9", m, p).is_ok());
  EXPECT_EQ(m, CalibMethod::kPercentile);
  EXPECT_DOUBLE_EQ(p, 99.9);
  EXPECT_EQ(calib_method_name(m, p), "percentile:99.9");
  ASSERT_TRUE(parse_calib_method("entropy", m, p).is_ok());
  EXPECT_EQ(calib_method_name(m, p), "entropy");
  EXPECT_FALSE(parse_calib_method("percentile:0", m, p).is_ok());
  EXPECT_FALSE(parse_calib_method("percentile:abc", m, p).is_ok());
  EXPECT_FALSE(parse_calib_method("kl", m, p).is_ok());
}

}  // namespace
}  // namespace infera
