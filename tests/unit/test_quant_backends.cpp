// com.infera.QConv (the int8 conv the quantize_qdq pass makes) on every backend that takes it
// (oneDNN's int8 convolution) against its reference kernel, on seeded random int8 data: zero points,
// per-channel and per-tensor weight scales, bias, residual, ReLU, groups, strides, padding, 1x1.
#include "backend_harness.h"

namespace infera::test {
namespace {

template <class T>
Tensor random_ints(DataType dt, std::vector<int64_t> dims, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::make(dt, std::move(dims)).take();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = static_cast<T>(u(rng));
  return t;
}

struct QCase {
  std::vector<int64_t> x, w;
  int64_t group, stride, pad;
  DataType xt, yt;
  bool per_channel, bias, residual, relu;
  int64_t xz, yz, zz;
};

OpCase make_case(const QCase& q, uint32_t seed) {
  OpCase c;
  c.op = "QConv";
  c.domain = "com.infera";
  c.attrs["group"] = attr_i(q.group);
  c.attrs["strides"] = attr_ints({q.stride, q.stride});
  c.attrs["pads"] = attr_ints({q.pad, q.pad, q.pad, q.pad});
  c.attrs["x_scale"] = attr_f(0.02f);
  c.attrs["x_zero_point"] = attr_i(q.xz);
  std::vector<float> ws;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.002f, 0.01f);
  for (int64_t m = 0; m < (q.per_channel ? q.w[0] : 1); ++m) ws.push_back(u(rng));
  c.attrs["w_scales"] = attr_floats(ws);
  c.attrs["y_scale"] = attr_f(0.05f);
  c.attrs["y_zero_point"] = attr_i(q.yz);
  c.attrs["y_dtype"] = attr_i(static_cast<int64_t>(q.yt));
  if (q.relu) c.attrs["activation"] = attr_s("Relu");
  if (q.xt == DataType::kUInt8)
    c.inputs.push_back(random_ints<uint8_t>(q.xt, q.x, seed + 1, 0, 255));
  else
    c.inputs.push_back(random_ints<int8_t>(q.xt, q.x, seed + 1, -128, 127));
  c.inputs.push_back(random_ints<int8_t>(DataType::kInt8, q.w, seed + 2, -127, 127));
  c.const_inputs = {1, 2};
  c.inputs.push_back(q.bias ? random_ints<int32_t>(DataType::kInt32, {q.w[0]}, seed + 3, -3000, 3000) : Tensor());
  if (q.residual) {
    const int64_t oh = (q.x[2] + 2 * q.pad - q.w[2]) / q.stride + 1, ow = (q.x[3] + 2 * q.pad - q.w[3]) / q.stride + 1;
    const std::vector<int64_t> yd{q.x[0], q.w[0], oh, ow};
    c.inputs.push_back(q.yt == DataType::kUInt8 ? random_ints<uint8_t>(q.yt, yd, seed + 4, 0, 255)
                                                : random_ints<int8_t>(q.yt, yd, seed + 4, -128, 127));
    c.attrs["z_scale"] = attr_f(0.04f);
    c.attrs["z_zero_point"] = attr_i(q.zz);
  }
  return c;
}

TEST(QuantBackends, QConvOnEveryBackendMatchesReference) {
  const DataType s8 = DataType::kInt8, u8 = DataType::kUInt8;
  const QCase cases[] = {
      {{1, 16, 10, 10}, {32, 16, 3, 3}, 1, 1, 1, s8, s8, true, true, false, false, -3, 5, 0},
      {{2, 16, 9, 9}, {16, 16, 3, 3}, 1, 2, 1, u8, u8, true, true, false, true, 128, 0, 0},
      {{1, 32, 8, 8}, {64, 32, 1, 1}, 1, 1, 0, s8, s8, true, false, true, true, 0, -10, 7},
      {{1, 32, 8, 8}, {32, 4, 3, 3}, 8, 1, 1, s8, s8, false, true, true, false, 4, 0, -2},
      {{1, 3, 12, 12}, {8, 3, 3, 3}, 1, 1, 1, s8, s8, true, true, false, true, 1, -128, 0},
  };
  uint32_t seed = 100;
  for (const QCase& q : cases) {
    OpCase c = make_case(q, seed += 10);
    check_case(c, "qconv X" + Shape::of(q.x).str() + " W" + Shape::of(q.w).str() + (q.residual ? " +Z" : "") +
                      (q.relu ? " relu" : ""));
  }
}

}  // namespace
}  // namespace infera::test
