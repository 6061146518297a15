// The oneDNN backend's Concat as copies (dnnl_misc.cpp copy_concat_create): large enough that each
// input is split into 64 KiB pieces shared by two threads, in every format the backend offers
// (plain, and blocked when every input's channels fill whole blocks), against the reference. And the
// Transposes the backend takes (dnnl_misc.cpp: the 4-D channel moves as one reorder, the 4-D side
// plain or blocked) in every format it offers, and the permutations it leaves to the reference.
#include <gtest/gtest.h>

#include "backend_harness.h"

namespace infera::test {
namespace {

TEST(DnnlConcatCopy, LargeChannelConcatsInPieces) {
  uint32_t seed = 7100;
  OpCase c;
  c.op = "Concat";
  c.attrs = {{"axis", attr_i(1)}};
  // 3 images x (64 + 32 + 16) channels x 37 x 41: 1.5 MiB out, each input many pieces per image.
  c.inputs = {random_tensor({3, 64, 37, 41}, seed++), random_tensor({3, 32, 37, 41}, seed++),
              random_tensor({3, 16, 37, 41}, seed++)};
  check_case(c, "concat channels, whole blocks, 1.5 MiB");
  // Channels that do not fill blocks: plain copies (or oneDNN's concat in a blocked format).
  c.inputs = {random_tensor({2, 24, 50, 50}, seed++), random_tensor({2, 13, 50, 50}, seed++)};
  check_case(c, "concat channels, partial blocks, 0.7 MiB");
}

TEST(DnnlConcatCopy, LargeConcatAlongOtherAxes) {
  uint32_t seed = 7200;
  for (int64_t axis : {0, 2, 3}) {
    OpCase c;
    c.op = "Concat";
    c.attrs = {{"axis", attr_i(axis)}};
    std::vector<int64_t> a{2, 16, 60, 70}, b = a;
    b[static_cast<size_t>(axis)] = 3;
    c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++), random_tensor(a, seed++)};
    check_case(c, "concat axis " + std::to_string(axis) + ", large");
  }
}

TEST(DnnlConcatCopy, BatchOneSmallRuns) {
  uint32_t seed = 7300;
  OpCase c;
  c.op = "Concat";
  c.attrs = {{"axis", attr_i(1)}};
  c.inputs = {random_tensor({1, 16, 3, 3}, seed++), random_tensor({1, 32, 3, 3}, seed++),
              random_tensor({1, 16, 3, 3}, seed++), random_tensor({1, 48, 3, 3}, seed++)};
  check_case(c, "concat channels, four small inputs (below the threads' threshold)");
}

TEST(DnnlTranspose, ChannelMovesInEveryFormat) {
  uint32_t seed = 7400;
  // Channels that fill blocks, that do not (padded blocks), one image and several.
  for (std::vector<int64_t> nchw : {std::vector<int64_t>{1, 32, 7, 9}, {2, 21, 5, 6}, {3, 96, 14, 14}}) {
    OpCase to_last;
    to_last.op = "Transpose";
    to_last.attrs = {{"perm", attr_ints({0, 2, 3, 1})}};
    to_last.inputs = {random_tensor(nchw, seed++)};
    EXPECT_GE(check_case(to_last, "transpose (0,2,3,1) of " + Shape::of(nchw).str())["dnnl"].modes, 2)
        << "plain and blocked X";
    OpCase to_second;
    to_second.op = "Transpose";
    to_second.attrs = {{"perm", attr_ints({0, 3, 1, 2})}};
    to_second.inputs = {random_tensor({nchw[0], nchw[2], nchw[3], nchw[1]}, seed++)};
    EXPECT_GE(check_case(to_second, "transpose (0,3,1,2) into " + Shape::of(nchw).str())["dnnl"].modes, 2)
        << "plain and blocked Y";
  }
}

TEST(DnnlTranspose, OtherPermutationsAreLeftToTheReference) {
  OpCase c;
  c.op = "Transpose";
  c.attrs = {{"perm", attr_ints({0, 1, 3, 2})}};
  c.inputs = {random_tensor({2, 3, 4, 5}, 7500)};
  EXPECT_FALSE(check_case(c, "transpose (0,1,3,2)", {})["dnnl"].claimed);
  c.attrs = {{"perm", attr_ints({2, 0, 1})}};
  c.inputs = {random_tensor({2, 3, 4}, 7501)};
  EXPECT_FALSE(check_case(c, "transpose 3-D", {})["dnnl"].claimed);
}

}  // namespace
}  // namespace infera::test
