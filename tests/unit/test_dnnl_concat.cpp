// The oneDNN backend's Concat as copies (dnnl_misc.cpp copy_concat_create): large enough that each
// input is split into 64 KiB pieces shared by two threads, in every format the backend offers
// (plain, and blocked when every input's channels fill whole blocks), against the reference.
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

}  // namespace
}  // namespace infera::test
