// Data-movement, LayerNorm and reduction steps on every backend that claims them (the GPU's
// strided copies, LayerNorm and reduce kernels; backend_harness.h), against the reference
// kernels, in every format the backend offers (NHWC operands included) and in place where it
// allows. `must` = {"gpu"}: where a GPU backend exists it has to take each case.
#include <random>

#include "backend_harness.h"

namespace infera::test {
namespace {

const std::vector<std::string> kGpu{"gpu"};

Tensor ints(std::vector<int64_t> v) {
  Tensor t = Tensor::make(DataType::kInt64, {static_cast<int64_t>(v.size())}).take();
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

TEST(MemOps, Transpose) {
  uint32_t seed = 3000;
  struct T {
    std::vector<int64_t> dims, perm;
  };
  const std::vector<T> cases{{{2, 8, 5, 6}, {0, 2, 3, 1}},  // ConvNeXt: NCHW -> NHWC
                             {{2, 5, 6, 8}, {0, 3, 1, 2}},  // and back
                             {{3, 4, 5}, {2, 0, 1}},
                             {{2, 3, 4, 5, 6}, {4, 1, 3, 0, 2}},
                             {{7, 1, 9}, {}},                       // no perm: reversed
                             {{2, 2, 29, 7, 7}, {0, 2, 1, 3, 4}}};  // ShuffleNet channel shuffle
  for (const T& t : cases) {
    OpCase c;
    c.op = "Transpose";
    if (!t.perm.empty()) c.attrs = {{"perm", attr_ints(t.perm)}};
    c.inputs = {random_tensor(t.dims, seed++)};
    check_case(c, "transpose", kGpu);
  }
}

TEST(MemOps, Slice) {
  uint32_t seed = 3100;
  struct S {
    std::vector<int64_t> dims, starts, ends, axes, steps;
  };
  const std::vector<S> cases{{{2, 16, 5, 5}, {0}, {8}, {1}, {1}},  // channel half
                             {{2, 16, 5, 5}, {8}, {1000}, {1}, {}},
                             {{3, 10, 7}, {-1, 1}, {-1000, 6}, {2, 1}, {-2, 2}},  // negative step, clamped
                             {{4, 6}, {1, 0}, {3, 6}, {}, {}},                    // default axes
                             {{2, 6, 4, 4}, {1, 3}, {4, 0}, {-1, 1}, {1, -1}}};
  for (const S& s : cases) {
    OpCase c;
    c.op = "Slice";
    c.opset = 13;
    c.inputs = {random_tensor(s.dims, seed++), ints(s.starts), ints(s.ends)};
    c.const_inputs = {1, 2};
    if (!s.axes.empty() || !s.steps.empty()) {
      c.inputs.push_back(s.axes.empty() ? Tensor() : ints(s.axes));
      if (!s.axes.empty()) c.const_inputs.push_back(3);
    }
    if (!s.steps.empty()) {
      c.inputs.push_back(ints(s.steps));
      c.const_inputs.push_back(4);
    }
    check_case(c, "slice", kGpu);
  }
  OpCase c;  // opset 9: attributes
  c.op = "Slice";
  c.opset = 9;
  c.attrs = {{"starts", attr_ints({1, 2})}, {"ends", attr_ints({3, -1})}, {"axes", attr_ints({0, 2})}};
  c.inputs = {random_tensor({4, 3, 8}, seed++)};
  check_case(c, "slice opset 9", kGpu);
}

TEST(MemOps, Split) {
  uint32_t seed = 3200;
  OpCase c;
  c.op = "Split";
  c.opset = 13;
  c.attrs = {{"axis", attr_i(1)}};
  c.inputs = {random_tensor({2, 12, 5, 5}, seed++), ints({4, 8})};
  c.const_inputs = {1};
  c.num_outputs = 2;
  check_case(c, "split channels 4+8", kGpu);
  c.attrs = {{"axis", attr_i(-1)}};
  c.inputs = {random_tensor({3, 4, 9}, seed++)};
  c.const_inputs = {};
  c.num_outputs = 3;
  check_case(c, "split last axis in 3", kGpu);
  c.opset = 18;
  c.attrs = {{"axis", attr_i(0)}, {"num_outputs", attr_i(2)}};
  c.inputs = {random_tensor({5, 3, 2, 2}, seed++)};
  c.num_outputs = 2;
  check_case(c, "split opset 18 num_outputs (3+2)", kGpu);
}

// com.infera.ChannelShuffle (fuse_channel_shuffle's node): oneDNN's plane copies, the GPU's strided
// copies (parts on multiples of the group; the reference's otherwise).
TEST(MemOps, ChannelShuffle) {
  uint32_t seed = 3250;
  struct S {
    std::vector<int64_t> dims;
    int64_t group;
    std::vector<int64_t> split;
    bool gpu;
  };
  const std::vector<S> cases{{{1, 116, 7, 7}, 2, {58, 58}, true},  // ShuffleNet's units
                             {{3, 48, 5, 6}, 4, {24, 24}, true},  {{2, 12, 5, 5}, 3, {3, 9}, true},
                             {{2, 16, 3, 3}, 4, {}, true},   // one output
                             {{3, 8, 10}, 2, {2, 6}, true},  // rank 3
                             {{2, 10, 4, 4}, 2, {3, 7}, false}};
  for (const S& t : cases) {
    OpCase c;
    c.op = "ChannelShuffle";
    c.domain = "com.infera";
    c.attrs = {{"group", attr_i(t.group)}};
    if (!t.split.empty()) c.attrs["split"] = attr_ints(t.split);
    c.num_outputs = t.split.empty() ? 1 : static_cast<int>(t.split.size());
    c.inputs = {random_tensor(t.dims, seed++)};
    check_case(c, "channel shuffle",
               t.gpu ? std::vector<std::string>{"dnnl", "gpu"} : std::vector<std::string>{"dnnl"});
  }
}

TEST(MemOps, ConcatAnyAxis) {
  uint32_t seed = 3300;
  for (int64_t axis : {0, 2, -1}) {
    OpCase c;
    c.op = "Concat";
    c.attrs = {{"axis", attr_i(axis)}};
    std::vector<int64_t> a{2, 3, 4, 5}, b = a;
    b[axis < 0 ? 3 : axis] = 2;
    c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++), random_tensor(a, seed++)};
    check_case(c, "concat 4-D axis " + std::to_string(axis), kGpu);
  }
  OpCase c;
  c.op = "Concat";
  c.attrs = {{"axis", attr_i(1)}};
  c.inputs = {random_tensor({3, 7}, seed++), random_tensor({3, 2}, seed++)};
  check_case(c, "concat 2-D", kGpu);
}

TEST(MemOps, Expand) {
  uint32_t seed = 3400;
  OpCase c;
  c.op = "Expand";
  c.opset = 13;
  c.inputs = {random_tensor({1, 6, 1, 1}, seed++), ints({2, 6, 3, 4})};
  c.const_inputs = {1};
  check_case(c, "expand [1,6,1,1] -> [2,6,3,4]", kGpu);
  c.inputs = {random_tensor({5, 1}, seed++), ints({2, 1, 5, 3})};
  check_case(c, "expand with new leading dims", kGpu);
}

TEST(MemOps, LayerNormalization) {
  uint32_t seed = 3500;
  for (const char* domain : {"", "com.infera"}) {
    for (int64_t axis : {-1, -2}) {
      for (bool bias : {true, false}) {
        OpCase c;
        c.op = "LayerNormalization";
        c.domain = domain;
        c.attrs = {{"axis", attr_i(axis)}, {"epsilon", attr_f(1e-5f)}};
        const std::vector<int64_t> x{2, 7, 6, 96};
        const std::vector<int64_t> w = axis == -1 ? std::vector<int64_t>{96} : std::vector<int64_t>{6, 96};
        c.inputs = {random_tensor(x, seed++, -3, 3), random_tensor(w, seed++, 0.5f, 1.5f)};
        c.const_inputs = {1};
        if (bias) {
          c.inputs.push_back(random_tensor(w, seed++));
          c.const_inputs.push_back(2);
        }
        check_case(c, std::string("layernorm ") + domain + " axis " + std::to_string(axis) + (bias ? " bias" : ""),
                   kGpu, 1e-4);
      }
    }
  }
}

TEST(MemOps, Reductions) {
  uint32_t seed = 3600;
  struct R {
    std::vector<int64_t> dims, axes;
    int64_t keepdims;
  };
  const std::vector<R> cases{{{2, 8, 5, 6}, {2, 3}, 1},  // global pooling over H, W (NHWC: contiguous too)
                             {{2, 8, 5, 6}, {1}, 1},     // over channels
                             {{2, 8, 5, 6}, {1}, 0},    {{3, 4, 50}, {-1}, 0},
                             {{3, 4, 50}, {0}, 1},      {{6, 7}, {}, 1}};  // all axes
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    for (const R& r : cases) {
      OpCase c;
      c.op = op;
      c.opset = 13;
      c.attrs = {{"keepdims", attr_i(r.keepdims)}};
      c.inputs = {random_tensor(r.dims, seed++)};
      const bool axes_input = std::string(op) == "ReduceSum";  // opset 13: ReduceSum's axes are an input
      if (!r.axes.empty()) {
        if (axes_input) {
          c.inputs.push_back(ints(r.axes));
          c.const_inputs = {1};
        } else {
          c.attrs["axes"] = attr_ints(r.axes);
        }
      }
      check_case(c, std::string(op) + " " + std::to_string(r.dims.size()) + "-D", kGpu);
    }
  }
}

}  // namespace
}  // namespace infera::test
