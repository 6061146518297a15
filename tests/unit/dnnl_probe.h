// What oneDNN offers on the CPU the tests run on: the perf-db tests expect a search only where there
// are two algorithms to choose from (oneDNN 2.6 has Winograd on AVX-512 only, not on AVX2).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend_harness.h"
#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_internal.h"
#include "op_test_util.h"
#include "ops/infer.h"
#include "ops/op.h"

namespace infera::test {

inline bool onednn_has_winograd() { return cpu::has_winograd(); }

// The implementation name of the dnnl kernel made for case c with every 4-D non-constant value in
// format f (where the backend takes it), or "declined: why".
inline std::string impl_of(const OpCase& c, Format f) {
  auto be = find_backend("dnnl", Device::cpu());
  if (!be.is_ok()) return "no dnnl backend";
  Node n;
  n.name = "probe";
  n.op_type = c.op;
  n.domain = c.domain;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].empty() ? -1 : static_cast<int>(i));
  n.outputs = {static_cast<int>(c.inputs.size())};
  auto op = make_kernel(n, c.opset);
  if (!op.is_ok()) return "declined: " + op.message();
  std::vector<ValueInfo> in(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) continue;
    in[i].dtype = c.inputs[i].dtype();
    in[i].shape = Shape::of(c.inputs[i].dims());
    if (std::find(c.const_inputs.begin(), c.const_inputs.end(), static_cast<int>(i)) != c.const_inputs.end())
      in[i].value = std::make_shared<Tensor>(c.inputs[i].clone());
  }
  std::vector<const ValueInfo*> ins;
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(c.inputs[i].empty() ? nullptr : &in[i]);
  InferContext ictx(n, c.opset, ins);
  Status s = op.value()->infer(ictx);
  if (!s.is_ok()) return "declined: " + s.message();
  ValueInfo y = ictx.outputs()[0];
  StepRequest req;
  req.node = &n;
  req.op = op.value().get();
  req.opset = c.opset;
  req.inputs = ins;
  req.outputs = {&y};
  req.num_threads = 2;
  Support sup = be.value()->supports(req);
  if (!sup.ok) return "declined: " + sup.reason;
  for (size_t i = 0; i < ins.size(); ++i)
    req.input_formats.push_back(
        ins[i] && !ins[i]->value && ins[i]->shape.rank() == 4 && format_in(sup.input_formats[i], f) ? f
                                                                                                    : Format::kPlain);
  req.output_formats = {format_in(sup.output_formats[0], f) ? f : Format::kPlain};
  auto k = be.value()->create(req);
  if (!k.is_ok() || !k.value()) return "declined at creation";
  return k.value()->impl_name();
}

// Our own AVX-512 conv kernels (grouped 8x8, small-spatial) run here: AVX-512 and nChw16c blocks.
inline bool own_avx512_conv_here() {
  return __builtin_cpu_supports("avx512f") && dnnl_blocked_format() == Format::kNChw16c;
}

// A Conv (act "" and no z) or FusedConv case for those kernels' tests: x [N, C, H, W], m filters of
// C / group channels, kh x kw; bias (constant when bias_const), residual Z of Y's shape; weights
// uniform in [-w_range, w_range].
inline OpCase conv_op_case(const std::vector<int64_t>& x, int64_t m, int64_t group, int64_t kh, int64_t kw,
                           const std::vector<int64_t>& pads, const std::vector<int64_t>& strides, uint32_t seed,
                           const std::string& act, bool bias, bool z, bool bias_const, const std::vector<int64_t>& dil,
                           float w_range = 1.f) {
  OpCase c;
  const bool fused = !act.empty() || z;
  c.op = fused ? "FusedConv" : "Conv";
  c.domain = fused ? "com.infera" : "";
  c.attrs = {{"pads", attr_ints(pads)}, {"strides", attr_ints(strides)}};
  if (group != 1) c.attrs["group"] = attr_i(group);
  if (dil != std::vector<int64_t>{1, 1}) c.attrs["dilations"] = attr_ints(dil);
  if (!act.empty()) c.attrs["activation"] = attr_s(act);
  if (act == "LeakyRelu") c.attrs["activation_alpha"] = attr_f(0.1f);
  if (act == "Clip") c.attrs["activation_alpha"] = attr_f(-0.3f), c.attrs["activation_beta"] = attr_f(0.4f);
  c.inputs = {random_tensor(x, seed), random_tensor({m, x[1] / group, kh, kw}, seed + 1, -w_range, w_range)};
  c.inputs.push_back(bias ? random_tensor({m}, seed + 2) : Tensor());
  c.const_inputs = bias && bias_const ? std::vector<int>{1, 2} : std::vector<int>{1};
  if (z) {
    const int64_t oh = (x[2] + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1;
    const int64_t ow = (x[3] + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1;
    c.inputs.push_back(random_tensor({x[0], m, oh, ow}, seed + 3));
  }
  return c;
}

// A conv case's description for failure messages: op, X and W shapes, pads, strides, bias.
inline std::string conv_case_what(const OpCase& c, const std::string& extra) {
  auto ints = [&](const char* name) {
    std::string r = std::string(" ") + name;
    for (int64_t v : c.attrs.at(name).ints) r += " " + std::to_string(v);
    return r;
  };
  std::string s = c.op + " X" + Shape::of(c.inputs[0].dims()).str() + " W" + Shape::of(c.inputs[1].dims()).str() +
                  ints("pads") + ints("strides");
  return s + (c.inputs[2].empty() ? " no bias" : "") + (extra.empty() ? "" : " " + extra);
}

// Our own conv kernels' NaN / Inf contract in a chain of convs (a guarded oneDNN conv after them
// trusts the bound they carry): the session `ours` and the reference session `ref`, both taking
// inputs x [xd] and z [zd], run finite inputs and special values (NaN, Inf, 1e33) written into x or
// z at 4 positions (x's at index * x_step) in turn; outputs equal where the reference gives NaN / Inf,
// within 1e-3 relative elsewhere, and some case must give a NaN output (else it proves nothing).
template <class S>
void expect_specials_match(S& ours, S& ref, const std::vector<int64_t>& xd, const std::vector<int64_t>& zd,
                           uint32_t seed, int64_t x_step) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  struct Special {
    const char* what;
    float x, z;  // written at a few positions (0: none)
  };
  const Special cases[] = {{"finite", 0, 0},      {"NaN in x", kNaN, 0}, {"finite again", 0, 0},
                           {"NaN in z", 0, kNaN}, {"Inf in x", kInf, 0}, {"finite", 0, 0},
                           {"Inf in z", 0, kInf}, {"large x", 1e33f, 0}, {"finite last", 0, 0}};
  int nan_outputs = 0;
  for (const Special& c : cases) {
    Tensor x = random_tensor(xd, seed), z = random_tensor(zd, seed + 1);
    for (int64_t i : {5, 300, 777, 2000}) {
      if (c.x != 0) x.data_as<float>()[i * x_step] = c.x;
      if (c.z != 0) z.data_as<float>()[i] = c.z;
    }
    auto a = ours->run({{"x", x}, {"z", z}});
    auto b = ref->run({{"x", x}, {"z", z}});
    ASSERT_TRUE(a.is_ok()) << c.what << ": " << a.message();
    ASSERT_TRUE(b.is_ok()) << c.what << ": " << b.message();
    const float* pa = a.value()[0].template data_as<float>();
    const float* pb = b.value()[0].template data_as<float>();
    int bad = 0;
    for (int64_t i = 0; i < a.value()[0].numel() && bad < 5; ++i) {
      const bool same = std::isnan(pb[i])   ? std::isnan(pa[i])
                        : std::isinf(pb[i]) ? pa[i] == pb[i]
                                            : std::fabs(pa[i] - pb[i]) <= 1e-3f * (1.f + std::fabs(pb[i]));
      if (!same) ++bad, ADD_FAILURE() << c.what << ": out[" << i << "] = " << pa[i] << ", reference " << pb[i];
      nan_outputs += std::isnan(pb[i]);
    }
  }
  EXPECT_GT(nan_outputs, 0) << "no case made a NaN output: the test proves nothing";
}

}  // namespace infera::test
