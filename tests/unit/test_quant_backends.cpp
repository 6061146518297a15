// com.infera.QConv (the int8 conv the quantize_qdq pass makes) on every backend that takes it
// (oneDNN's int8 convolution; the GPU's int8 implicit GEMM) against its reference kernel, bit for
// bit, on seeded random int8 data: zero points, per-channel and per-tensor weight scales, bias,
// residual, ReLU, groups, strides, padding, 1x1, an odd channel count, filters whose sums may pass
// 2^24 (the fp32 path without VNNI splits them); and per-tensor
// QuantizeLinear / DequantizeLinear; int8 / uint8 MaxPool.
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
      // Sums past 2^24 possible (K = 4608): without VNNI the exact fp32 path splits the channels.
      {{1, 512, 5, 5}, {16, 512, 3, 3}, 1, 1, 1, s8, s8, true, true, true, true, -3, 2, 1},
      {{2, 512, 4, 4}, {8, 512, 3, 3}, 1, 1, 1, u8, u8, false, true, false, false, 128, 5, 0},
  };
  uint32_t seed = 100;
  for (const QCase& q : cases) {
    OpCase c = make_case(q, seed += 10);
    check_case(c, "qconv X" + Shape::of(q.x).str() + " W" + Shape::of(q.w).str() + (q.residual ? " +Z" : "") +
                      (q.relu ? " relu" : ""));
  }
}

// The cases the GPU's int8 kernels take (int8 X, no groups, a zero point only without padding):
// the GPU must claim each, in fp32 and fp16 mode alike (int8 values do not depend on it).
TEST(QuantBackends, QConvOnTheGpuMatchesReference) {
  const DataType s8 = DataType::kInt8, u8 = DataType::kUInt8;
  const QCase cases[] = {
      {{1, 16, 10, 10}, {32, 16, 3, 3}, 1, 1, 1, s8, s8, true, true, false, true, 0, 5, 0},
      {{2, 3, 12, 12}, {16, 3, 3, 3}, 1, 2, 1, s8, s8, true, true, false, true, 0, -7, 0},  // stem: space-to-depth
      {{2, 3, 23, 21}, {64, 3, 7, 7}, 1, 2, 3, s8, s8, true, true, true, true, 0, 4, -3},   // ResNet's stem, +Z
      {{1, 4, 16, 16}, {24, 4, 5, 5}, 1, 2, 2, s8, u8, false, true, false, false, 0, 120, 0},
      {{1, 3, 9, 9}, {8, 3, 3, 3}, 1, 1, 1, s8, s8, true, true, false, true, 0, 2, 0},  // C < 16: to 16
      {{2, 32, 8, 8}, {64, 32, 1, 1}, 1, 1, 0, s8, s8, true, false, true, true, -3, -10, 7},
      {{2, 64, 14, 14}, {128, 64, 3, 3}, 1, 1, 1, s8, s8, true, true, true, true, 0, 3, -4},
      {{1, 32, 9, 9}, {48, 32, 1, 1}, 1, 2, 0, s8, u8, false, true, false, false, 5, 128, 0},
      {{1, 10, 7, 7}, {24, 10, 3, 3}, 1, 1, 1, s8, u8, true, true, true, false, 0, 100, 90},
      {{1, 17, 6, 6}, {16, 17, 3, 3}, 1, 1, 1, s8, s8, true, true, false, true, 0, 0, 0},  // odd C >= 16: to 18
  };
  uint32_t seed = 700;
  for (const QCase& q : cases) {
    OpCase c = make_case(q, seed += 10);
    const std::string what = "gpu qconv X" + Shape::of(q.x).str() + " W" + Shape::of(q.w).str() +
                             (q.residual ? " +Z" : "") + (q.relu ? " relu" : "");
    auto runs = check_case(c, what, {"dnnl", "gpu", "gpu-fp16"});
    const bool stem = q.x[1] <= 4 && q.stride == 2 && q.w[2] >= 3;  // gpu_conv.cpp's SpaceToDepthStem
    if (runs.count("gpu"))
      EXPECT_EQ(runs["gpu"].impl.find("space-to-depth") != std::string::npos, stem) << what << ": " << runs["gpu"].impl;
  }
}

// Float values a half holds exactly, k/4 steps of the scale apart: the fp16 GPU quantizes the
// same numbers as the reference, ties (k + 0.5) and saturation included.
Tensor quarter_steps(std::vector<int64_t> dims, float scale, int kmax, uint32_t seed) {
  Tensor t = Tensor::make(DataType::kFloat32, std::move(dims)).take();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-4 * kmax, 4 * kmax);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(u(rng)) * 0.25f * scale;
  return t;
}

TEST(QuantBackends, QuantizeAndDequantizeLinearPerTensor) {
  struct Q {
    std::vector<int64_t> dims;
    DataType dt;
    int zp;
  };
  const Q cases[] = {{{2, 8, 5, 5}, DataType::kInt8, -3},
                     {{6, 20}, DataType::kUInt8, 128},
                     {{1, 24, 3, 7}, DataType::kUInt8, 0},
                     {{3, 5, 4}, DataType::kInt8, 0}};
  uint32_t seed = 900;
  for (const Q& q : cases) {
    const float scale = 0.0625f;  // a power of two: x / scale is exact
    const std::string what = std::string(dtype_name(q.dt)) + " " + Shape::of(q.dims).str();
    Tensor sc = Tensor::make(DataType::kFloat32, {}).take();
    sc.data_as<float>()[0] = scale;
    Tensor zp = Tensor::make(q.dt, {}).take();
    if (q.dt == DataType::kInt8)
      zp.data_as<int8_t>()[0] = static_cast<int8_t>(q.zp);
    else
      zp.data_as<uint8_t>()[0] = static_cast<uint8_t>(q.zp);
    OpCase qc;
    qc.op = "QuantizeLinear";
    qc.inputs = {quarter_steps(q.dims, scale, 300, seed += 3), sc, zp};
    qc.const_inputs = {1, 2};
    check_case(qc, "quantize " + what, {"gpu", "gpu-fp16"});
    OpCase dc;
    dc.op = "DequantizeLinear";
    dc.inputs = {q.dt == DataType::kInt8 ? random_ints<int8_t>(q.dt, q.dims, seed += 3, -128, 127)
                                         : random_ints<uint8_t>(q.dt, q.dims, seed += 3, 0, 255),
                 sc, zp};
    dc.const_inputs = {1, 2};
    check_case(dc, "dequantize " + what, {"gpu", "gpu-fp16"});
  }
}

// int8 / uint8 MaxPool (what quantize_qdq makes of DQ -> MaxPool -> Q): oneDNN (plain and NHWC) and
// the GPU (NHWC, 16-channel vectors and scalar) must take it and match the reference bit for bit.
TEST(QuantBackends, MaxPoolInt8OnEveryBackend) {
  struct P {
    std::vector<int64_t> x;
    int64_t k, stride, pad, dil;
    bool ceil, u8;
  };
  const P cases[] = {
      {{2, 64, 12, 12}, 3, 2, 1, 1, false, false},  // ResNet's stem pool
      {{1, 16, 9, 9}, 2, 2, 0, 1, true, true},
      {{2, 5, 8, 7}, 3, 1, 1, 2, false, false},  // C = 5: the scalar kernel; dilation
      {{1, 48, 7, 7}, 3, 2, 0, 1, true, true},
  };
  uint32_t seed = 1300;
  for (const P& q : cases) {
    OpCase c;
    c.op = "MaxPool";
    c.opset = 13;
    c.attrs["kernel_shape"] = attr_ints({q.k, q.k});
    c.attrs["strides"] = attr_ints({q.stride, q.stride});
    c.attrs["pads"] = attr_ints({q.pad, q.pad, q.pad, q.pad});
    c.attrs["dilations"] = attr_ints({q.dil, q.dil});
    c.attrs["ceil_mode"] = attr_i(q.ceil);
    const DataType dt = q.u8 ? DataType::kUInt8 : DataType::kInt8;
    c.inputs.push_back(q.u8 ? random_ints<uint8_t>(dt, q.x, seed += 7, 0, 255)
                            : random_ints<int8_t>(dt, q.x, seed += 7, -128, 127));
    // oneDNN's int8 pooling has no dilation (its reference would run: declined).
    const std::vector<std::string> must =
        q.dil == 1 ? std::vector<std::string>{"dnnl", "gpu", "gpu-fp16"} : std::vector<std::string>{"gpu", "gpu-fp16"};
    check_case(c, std::string("int8 max pool ") + dtype_name(dt) + " X" + Shape::of(q.x).str(), must);
  }
}

}  // namespace
}  // namespace infera::test
