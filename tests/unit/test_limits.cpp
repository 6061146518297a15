// SessionOptions::limits (issue 7): each limit, lowered below what a small model needs, refuses
// that model with a message naming the limit; the defaults load it; values past the constants
// (or <= 0) are refused naming the field; the tensor readers apply the same limits.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "frontend/onnx/import.h"
#include "infera/limits.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "runtime/tensor_io.h"

namespace infera {
namespace {

using test::ModelBuilder;

// x [1,2,4,4] -> Transpose(perm 4 ints) -> Add(K [1,2,4,4]) -> y: 2 nodes, a node with 2
// inputs, rank 4, 32-element tensors, a 4-element list attribute, protobuf nesting of 6.
ModelBuilder small_model() {
  ModelBuilder b;
  b.input("x", {1, 2, 4, 4});
  test::set_ints(b.node("Transpose", {"x"}, {"t"}, "tr"), "perm", {0, 1, 3, 2});
  std::vector<float> k(32);
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.25f * static_cast<float>(i);
  b.floats("K", {1, 2, 4, 4}, k);
  b.node("Add", {"t", "K"}, {"y"}, "add");
  b.output("y");
  return b;
}

struct Lowered {
  const char* field;
  void (*set)(limits::Limits&);
};
const Lowered kLowered[] = {
    {"max_model_bytes", [](limits::Limits& l) { l.max_model_bytes = 64; }},
    {"max_nodes", [](limits::Limits& l) { l.max_nodes = 1; }},
    {"max_rank", [](limits::Limits& l) { l.max_rank = 3; }},
    {"max_tensor_elements", [](limits::Limits& l) { l.max_tensor_elements = 16; }},
    {"max_node_io", [](limits::Limits& l) { l.max_node_io = 1; }},
    {"max_attribute_elements", [](limits::Limits& l) { l.max_attribute_elements = 3; }},
    {"max_nesting", [](limits::Limits& l) { l.max_nesting = 3; }},
};

TEST(SessionLimits, DefaultsLoadTheModelAndItRunsRight) {
  auto s = small_model().load();
  ASSERT_TRUE(s.is_ok()) << s.message();
  Tensor x = test::random_tensor({1, 2, 4, 4}, 3);
  auto out = s.value()->run({{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.message();
  const float* y = out.value()[0].data_as<float>();
  const float* xv = x.data_as<float>();
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 4; ++w) {
        const int o = (c * 4 + h) * 4 + w;
        EXPECT_EQ(y[o], xv[(c * 4 + w) * 4 + h] + 0.25f * static_cast<float>(o));
      }
}

TEST(SessionLimits, EachLoweredLimitRefusesTheModelNamingIt) {
  const ModelBuilder b = small_model();
  for (const Lowered& l : kLowered) {
    SessionOptions o;
    l.set(o.limits);
    auto s = b.load(true, true, o);
    ASSERT_FALSE(s.is_ok()) << l.field;
    EXPECT_EQ(s.code(), StatusCode::kInvalidModel) << l.field;
    EXPECT_NE(s.message().find(std::string("(") + l.field + ")"), std::string::npos) << s.message();
    // Just enough again: loads (the check is the limit, not something else the change broke).
    SessionOptions fits;
    auto again = b.load(true, true, fits);
    EXPECT_TRUE(again.is_ok()) << again.message();
  }
}

TEST(SessionLimits, LimitsAtExactlyWhatTheModelNeedsLoad) {
  const ModelBuilder b = small_model();
  SessionOptions o;
  o.limits.max_model_bytes = static_cast<int64_t>(b.m.SerializeAsString().size());
  o.limits.max_nodes = 2;
  o.limits.max_rank = 4;
  o.limits.max_tensor_elements = 32;
  o.limits.max_node_io = 2;
  o.limits.max_attribute_elements = 4;
  o.limits.max_nesting = 8;
  auto s = b.load(true, true, o);
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST(SessionLimits, ModelFileSizeIsCheckedBeforeReading) {
  const ModelBuilder b = small_model();
  char path[] = "/tmp/infera-limits-XXXXXX.onnx";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  const std::string bytes = b.m.SerializeAsString();
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  SessionOptions o;
  o.limits.max_model_bytes = 64;
  auto s = Session::load(path, o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("is larger than the limit of 64 bytes (max_model_bytes)"), std::string::npos)
      << s.message();
  EXPECT_TRUE(Session::load(path, SessionOptions()).is_ok());
  unlink(path);
}

TEST(SessionLimits, ValuesPastTheConstantsOrNotPositiveAreRefusedNamingTheField) {
  struct Bad {
    const char* text;
    void (*set)(limits::Limits&);
  } cases[] = {
      {"limits.max_rank = 33 is not in 1..32", [](limits::Limits& l) { l.max_rank = limits::kMaxRank + 1; }},
      {"limits.max_rank = 0 ", [](limits::Limits& l) { l.max_rank = 0; }},
      {"limits.max_nesting = -1 ", [](limits::Limits& l) { l.max_nesting = -1; }},
      {"limits.max_nodes = 2097153 ", [](limits::Limits& l) { l.max_nodes = limits::kMaxNodes + 1; }},
      {"limits.max_model_bytes = 2147483648 ", [](limits::Limits& l) { l.max_model_bytes = int64_t(1) << 31; }},
      {"limits.max_tensor_file_bytes = 0 ", [](limits::Limits& l) { l.max_tensor_file_bytes = 0; }},
      {"limits.max_tensor_elements = 1099511627777 ",
       [](limits::Limits& l) { l.max_tensor_elements = limits::kMaxTensorElements + 1; }},
      {"limits.max_node_io = 65537 ", [](limits::Limits& l) { l.max_node_io = limits::kMaxNodeIo + 1; }},
      {"limits.max_attribute_elements = 0 ", [](limits::Limits& l) { l.max_attribute_elements = 0; }},
  };
  const ModelBuilder b = small_model();
  for (const Bad& c : cases) {
    SessionOptions o;
    c.set(o.limits);
    auto s = b.load(true, true, o);
    ASSERT_FALSE(s.is_ok()) << c.text;
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << c.text;
    EXPECT_NE(s.message().find(c.text), std::string::npos) << s.message();
    Status direct = check_limits(o.limits);
    EXPECT_FALSE(direct.is_ok()) << c.text;
    // The tensor readers refuse the same values.
    EXPECT_FALSE(load_tensor_file_limited("/nonexistent.npy", o.limits).is_ok());
  }
  EXPECT_TRUE(check_limits(limits::Limits()).is_ok());
}

std::string npy_of(const std::string& dict, size_t payload_bytes) {
  std::string h = dict;
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  std::string f("\x93NUMPY\x01\x00", 8);
  f += static_cast<char>(h.size() & 0xff);
  f += static_cast<char>(h.size() >> 8);
  return f + h + std::string(payload_bytes, '\0');
}

TEST(SessionLimits, TensorReadersApplyRankElementsAndFileBytes) {
  const std::string npy = npy_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }", 96);
  limits::Limits lim;
  EXPECT_TRUE(tensor_from_npy_bytes(npy, "x.npy", lim).is_ok());
  lim.max_rank = 2;
  auto r = tensor_from_npy_bytes(npy, "x.npy", lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("rank 3 is more than the limit of 2 (max_rank)"), std::string::npos) << r.message();
  lim = limits::Limits();
  lim.max_tensor_elements = 23;
  r = tensor_from_npy_bytes(npy, "x.npy", lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("more than 23 elements (max_tensor_elements)"), std::string::npos) << r.message();
  lim.max_tensor_elements = 24;
  EXPECT_TRUE(tensor_from_npy_bytes(npy, "x.npy", lim).is_ok());

  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 3, 4}) tp.add_dims(d);
  for (int i = 0; i < 24; ++i) tp.add_float_data(1.f);
  const std::string pb = tp.SerializeAsString();
  lim = limits::Limits();
  EXPECT_TRUE(tensor_from_pb_bytes(pb, "x.pb", lim).is_ok());
  lim.max_rank = 2;
  r = tensor_from_pb_bytes(pb, "x.pb", lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("(max_rank)"), std::string::npos) << r.message();
  lim = limits::Limits();
  lim.max_tensor_elements = 10;
  r = tensor_from_pb_bytes(pb, "x.pb", lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("(max_tensor_elements)"), std::string::npos) << r.message();
  lim = limits::Limits();
  lim.max_tensor_file_bytes = 16;
  r = tensor_from_pb_bytes(pb, "x.pb", lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("(max_tensor_file_bytes)"), std::string::npos) << r.message();
  lim = limits::Limits();
  lim.max_nesting = 1;  // a TensorProto is one message: nesting 1 is enough
  EXPECT_TRUE(tensor_from_pb_bytes(pb, "x.pb", lim).is_ok());

  // From a file: its size before it is read.
  char path[] = "/tmp/infera-limits-XXXXXX.npy";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, npy.data(), npy.size()), static_cast<ssize_t>(npy.size()));
  close(fd);
  lim = limits::Limits();
  EXPECT_TRUE(load_tensor_file_limited(path, lim).is_ok());
  EXPECT_TRUE(load_tensor_file(path).is_ok());
  lim.max_tensor_file_bytes = static_cast<int64_t>(npy.size()) - 1;
  r = load_tensor_file_limited(path, lim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("(max_tensor_file_bytes)"), std::string::npos) << r.message();
  lim.max_tensor_file_bytes = static_cast<int64_t>(npy.size());
  EXPECT_TRUE(load_tensor_file_limited(path, lim).is_ok());
  unlink(path);
}

TEST(SessionLimits, ALoweredNestingLimitIsNamedOnlyWhenItIsTheCause) {
  // Bytes that are no protobuf at all: the plain parse error, not a nesting complaint.
  SessionOptions o;
  o.limits.max_nesting = 3;
  auto s = Session::load_from_memory(std::string("\xff\xff\xff\xff garbage", 13), "", o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().find("max_nesting"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("protobuf parse failed"), std::string::npos) << s.message();
}

// What inference computes is held to the lowered limits too, at the batch the caller runs:
// x [N,4] -> Tile(1,8) -> Unsqueeze(0) -> y [1,N,32]; fine at batch 1 under 64 elements and rank 3,
// refused at batch 4 (128 elements) and, with max_rank 2, for the rank-3 Unsqueeze output.
TEST(SessionLimits, InferredShapesAreHeldToTheLoweredLimits) {
  ModelBuilder b;
  b.input("x", {1, 4});
  b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  b.ints("reps", {1, 8});
  b.ints("axes", {0});
  b.node("Tile", {"x", "reps"}, {"t"}, "tile");
  b.node("Unsqueeze", {"t", "axes"}, {"y"}, "unsq");
  b.output("y");
  SessionOptions o;
  o.limits.max_tensor_elements = 64;
  auto s = b.load(true, true, o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto one = s.value()->run({{"x", test::random_tensor({1, 4}, 5)}});
  ASSERT_TRUE(one.is_ok()) << one.message();
  EXPECT_EQ(one.value()[0].dims(), (std::vector<int64_t>{1, 1, 32}));
  auto four = s.value()->run({{"x", test::random_tensor({4, 4}, 5)}});
  ASSERT_FALSE(four.is_ok());
  EXPECT_EQ(four.code(), StatusCode::kInvalidInput);
  EXPECT_NE(four.message().find("(max_tensor_elements)"), std::string::npos) << four.message();
  EXPECT_NE(four.message().find("'tile'"), std::string::npos) << four.message();

  SessionOptions r;
  r.limits.max_rank = 2;
  auto s2 = b.load(true, true, r);
  Status st = s2.is_ok() ? s2.value()->run({{"x", test::random_tensor({1, 4}, 5)}}).status() : s2.status();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("(max_rank)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace infera
