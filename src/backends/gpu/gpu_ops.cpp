// The GPU's other ops: pooling, BatchNormalization, activations and binary ops (one fused
// pointwise kernel each, broadcasts as strides), Concat along channels, Softmax, and the ops that
// only reinterpret bytes (Reshape, Flatten, Squeeze, Unsqueeze), and per-tensor QuantizeLinear /
// DequantizeLinear (int8 models). Copies, LayerNorm and reductions: gpu_memops.cpp.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/gpu/gpu_internal.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/quant.h"
#include "ops/softmax.h"
#include "ops/tensor_ops.h"

namespace infera::gpu_backend {
namespace {

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

// ---------------------------------------------------------------- pooling
struct PoolPlan {
  gpu::PoolShape shape;
  bool global = false;
};

bool plan_pool(const GpuConfig& c, const StepRequest& req, PoolPlan& p) {
  const auto* pool = dynamic_cast<const PoolOp*>(req.op);
  const auto* gpool = dynamic_cast<const GlobalPoolOp*>(req.op);
  if ((!pool && !gpool) || !req.has_in(0) || req.inputs[0]->value || req.has_out(1)) return false;
  const Dims x = req.in_dims(0), y = req.out_dims(0);
  if (x.size() != 4 || y.size() != 4) return false;
  gpu::PoolShape& s = p.shape;
  // float32 (held as the device's float storage), or int8 / uint8 for a windowed max pool: max
  // commutes with the monotone (De)QuantizeLinear, so DQ -> MaxPool -> Q with one scale is this.
  const DataType dt = req.inputs[0]->dtype;
  const bool byte = dt == DataType::kInt8 || dt == DataType::kUInt8;
  if ((dt != DataType::kFloat32 && !(byte && pool && pool->is_max())) || req.outputs[0]->dtype != dt) return false;
  s.dtype = byte ? gpu::DType::kS8 : c.dtype();
  s.uint8 = dt == DataType::kUInt8;
  s.n = static_cast<int>(x[0]), s.c = static_cast<int>(x[1]), s.h = static_cast<int>(x[2]),
  s.w = static_cast<int>(x[3]);
  if (gpool) {
    p.global = true;
    s.kind = gpool->is_max() ? gpu::PoolKind::kMax : gpu::PoolKind::kAvg;
    return true;
  }
  const PoolAttrs& a = pool->attrs();
  std::vector<int64_t> pads, yd;
  if (!pool_resolve(a, x, pads, yd).is_ok() || yd != y) return false;
  s.kind = pool->is_max() ? gpu::PoolKind::kMax : gpu::PoolKind::kAvg;
  s.r = static_cast<int>(a.kernel_shape[0]), s.s = static_cast<int>(a.kernel_shape[1]);
  s.stride_h = a.strides.empty() ? 1 : static_cast<int>(a.strides[0]);
  s.stride_w = a.strides.empty() ? 1 : static_cast<int>(a.strides[1]);
  s.dil_h = a.dilations.empty() ? 1 : static_cast<int>(a.dilations[0]);
  s.dil_w = a.dilations.empty() ? 1 : static_cast<int>(a.dilations[1]);
  s.pad_t = static_cast<int>(pads[0]), s.pad_l = static_cast<int>(pads[1]);
  s.pad_b = static_cast<int>(pads[2]), s.pad_r = static_cast<int>(pads[3]);
  s.ceil_mode = a.ceil_mode;
  s.count_include_pad = a.count_include_pad;
  return s.p() == y[2] && s.q() == y[3];
}

class PoolKernel : public GpuKernel {
 public:
  PoolKernel(const GpuConfig& c, PoolPlan p)
      : GpuKernel(c, std::string(p.global ? "global " : "") + (p.shape.dtype == gpu::DType::kS8 ? "s8_" : "") +
                         (p.shape.kind == gpu::PoolKind::kMax ? "max" : "avg") + "_pool_nhwc"),
        p_(p) {}
  Status run(ComputeContext& ctx) const override {
    const gpu::PoolShape& s = p_.shape;
    gpu::InNhwc x{ctx.in(0).data, 0, 0};
    gpu::OutNhwc y{ctx.out(0).data, 0, 0};
    if (p_.global)
      INFERA_GPU_OK(ctx.node.label(), gpu::global_pool(s.dtype, s.kind, s.n, s.h * s.w, s.c, x, y, stream(ctx)));
    else
      INFERA_GPU_OK(ctx.node.label(), gpu::pool(s, x, y, stream(ctx)));
    return Status::ok();
  }

 private:
  PoolPlan p_;
};

Support pool_query(const GpuConfig& c, const StepRequest& req) {
  PoolPlan p;
  if (!plan_pool(c, req, p))
    return Support::no("a pool the GPU kernels do not take (rank, Indices output, int8 other than max)");
  if (p.shape.dtype == gpu::DType::kS8)
    return support_all(req, {format_bit(Format::kNhwc)}, {format_bit(Format::kNhwc)});
  const FormatSet act = format_bit(c.act_format(4));
  // A global pool's [N,C,1,1] output has the same bytes in NHWC and plain.
  return support_all(req, {act}, {p.global ? act | format_bit(c.plain_format()) : act});
}

Result<std::unique_ptr<StepKernel>> pool_create(const GpuConfig& c, const StepRequest& req) {
  PoolPlan p;
  if (!plan_pool(c, req, p)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::make_unique<PoolKernel>(c, p));
}

// ---------------------------------------------------------------- BatchNormalization
class BatchNormKernel : public GpuKernel {
 public:
  BatchNormKernel(const GpuConfig& c, int n, int hw, int ch, Activation act)
      : GpuKernel(c, act.is_identity() ? "batchnorm_affine_nhwc"
                                       : std::string("batchnorm_affine_nhwc+") + activation_name(act.kind)),
        n_(n),
        hw_(hw),
        c_(ch),
        act_(act) {}
  Status init(const StepRequest& req, float eps) {
    // scale = g / sqrt(v + eps), shift = b - m * scale, as one [2][C] table shared by the session's plans.
    auto st = device_const(cfg_, req, 1, "bn-affine", layout_of("f32", {2, c_}), 8 * static_cast<size_t>(c_), [&] {
      std::vector<float> t(2 * static_cast<size_t>(c_));
      const float* g = req.inputs[1]->value->data_as<float>();
      const float* b = req.inputs[2]->value->data_as<float>();
      const float* m = req.inputs[3]->value->data_as<float>();
      const float* v = req.inputs[4]->value->data_as<float>();
      for (int i = 0; i < c_; ++i) {
        t[i] = static_cast<float>(g[i] / std::sqrt(static_cast<double>(v[i]) + eps));
        t[c_ + i] = static_cast<float>(b[i] - m[i] * static_cast<double>(t[i]));
      }
      return bytes_of(t);
    });
    if (!st.is_ok()) return st.status();
    table_ = st.take();
    weight_bytes_ = 8 * static_cast<size_t>(c_);
    return Status::ok();
  }
  Status run(ComputeContext& ctx) const override {
    INFERA_GPU_OK(ctx.node.label(), gpu::batchnorm_affine(cfg_.dtype(), n_, hw_, c_, {ctx.in(0).data, 0, 0},
                                                          static_cast<const float*>(table_->data()),
                                                          static_cast<const float*>(table_->data()) + c_,
                                                          {ctx.out(0).data, 0, 0}, act_, stream(ctx)));
    return Status::ok();
  }

 private:
  int n_, hw_, c_;
  Activation act_;     // FusedBatchNorm's, applied in the same pass
  DeviceConst table_;  // [2][C]: scale, shift
};

const BatchNormOp* plan_bn(const StepRequest& req) {
  const auto* op = dynamic_cast<const BatchNormOp*>(req.op);
  if (!op || op->training() || !op->spatial() || req.inputs.size() != 5) return nullptr;
  for (size_t i = 1; i < req.outputs.size(); ++i)
    if (req.has_out(i)) return nullptr;
  if (!req.has_in(0) || req.inputs[0]->value || req.in_dims(0).size() != 4) return nullptr;
  for (size_t i = 1; i < 5; ++i)
    if (!req.has_in(i) || !req.inputs[i]->value || req.inputs[i]->value->numel() != req.in_dims(0)[1]) return nullptr;
  return op;
}

Support bn_query(const GpuConfig& c, const StepRequest& req) {
  if (!plan_bn(req)) return Support::no("a BatchNormalization the GPU does not take (training, non-constant stats)");
  const FormatSet act = format_bit(c.act_format(4));
  return support_all(req, {act}, {act});
}

Result<std::unique_ptr<StepKernel>> bn_create(const GpuConfig& c, const StepRequest& req) {
  const BatchNormOp* op = plan_bn(req);
  if (!op) return std::unique_ptr<StepKernel>();
  const Dims x = req.in_dims(0);
  auto k = std::make_unique<BatchNormKernel>(c, static_cast<int>(x[0]), static_cast<int>(x[2] * x[3]),
                                             static_cast<int>(x[1]), op->activation());
  Status s = k->init(req, op->epsilon());
  if (!s.is_ok()) return s;
  return std::unique_ptr<StepKernel>(std::move(k));
}

// ---------------------------------------------------------------- pointwise
// One fused kernel reads every operand through strides in the output's iteration space, so any
// mix of NHWC and plain operands works: for a 4-D output the space is (n, pixel, channel) when
// it is NHWC, and (n, channel, pixel) when it is plain (NCHW): the kernel's "pixels" are then
// the channels. Broadcasts (per channel, per image and channel as in SE blocks, scalars) are
// strides of 0. Other ranks run flat (same-shape operands and scalars) or as rows [N, C].
struct PwPlan {
  gpu::PwOp op = gpu::PwOp::kAct;
  Activation act;
  int full = 0;    // input slot of the output-sized operand
  int other = -1;  // the second operand's slot (binary ops)
  // A vector along the last axis of a plain output of rank >= 3 that the 4-D space cannot index
  // (the bias after a 4-D MatMul, as in ConvNeXt's [N, H, W, 4C] + [4C]): the output is seen as
  // rows [numel / K, K], the vector as a row bias; every operand then stays plain.
  bool rows = false;
};

bool indexable(const Dims& y, const Dims& v);

// v is [1, ..., 1, K] against y [..., K], K > 1.
bool trailing_vector(const Dims& y, const Dims& v) {
  return !y.empty() && !v.empty() && v.size() <= y.size() && v.back() == y.back() && y.back() > 1 &&
         numel(v) == v.back();
}

bool plan_pointwise(const StepRequest& req, PwPlan& p) {
  if (!req.has_out(0) || req.outputs.size() != 1) return false;
  const Dims y = req.out_dims(0);
  if (const auto* a = dynamic_cast<const ActivationOp*>(req.op)) {
    if (req.inputs.size() != 1 || !req.has_in(0) || req.inputs[0]->value || req.in_dims(0) != y) return false;
    p.act = a->activation();
    return true;
  }
  if (const auto* clip = dynamic_cast<const ClipOp*>(req.op)) {
    if (!req.has_in(0) || req.inputs[0]->value || req.in_dims(0) != y) return false;
    // No bound: the reference's (and ONNX Runtime's) lowest/max float, so that Clip(+Inf) = FLT_MAX.
    p.act = activation_default(ActKind::kClip);
    p.act.alpha = std::numeric_limits<float>::lowest();
    p.act.beta = std::numeric_limits<float>::max();
    if (clip->opset() < 11) {
      p.act.alpha = clip->attr_min(), p.act.beta = clip->attr_max();
      return true;
    }
    for (size_t i = 1; i < 3; ++i) {
      if (!req.has_in(i)) continue;
      const auto& t = req.inputs[i]->value;
      if (!t || t->numel() != 1) return false;
      (i == 1 ? p.act.alpha : p.act.beta) = t->data_as<float>()[0];
    }
    return !(std::isnan(p.act.alpha) || std::isnan(p.act.beta));
  }
  const auto* bin = dynamic_cast<const BinaryOp*>(req.op);
  if (!bin || req.inputs.size() != 2 || !req.has_in(0) || !req.has_in(1)) return false;
  switch (bin->kind()) {
    case BinaryKind::kAdd: p.op = gpu::PwOp::kAdd; break;
    case BinaryKind::kSub: p.op = gpu::PwOp::kSub; break;
    case BinaryKind::kMul: p.op = gpu::PwOp::kMul; break;
    case BinaryKind::kDiv: p.op = gpu::PwOp::kDiv; break;
    case BinaryKind::kMax: p.op = gpu::PwOp::kMax; break;
    case BinaryKind::kMin: p.op = gpu::PwOp::kMin; break;
    default: return false;
  }
  const bool a_full = req.in_dims(0) == y && !req.inputs[0]->value;
  const bool b_full = req.in_dims(1) == y && !req.inputs[1]->value;
  if (!a_full && !b_full) return false;
  p.full = a_full ? 0 : 1;
  p.other = 1 - p.full;
  const Dims v = req.in_dims(p.other);
  p.rows = y.size() >= 3 && trailing_vector(y, v) && !indexable(y, v);
  return true;
}

// The iteration space of an output: kernel dims (n, hw, c) and how a logical element maps to it.
struct PwSpace {
  int n = 1, hw = 1, c = 1;
  bool four = false, nchw = false;  // 4-D; plain 4-D output (kernel hw = channels, c = pixels)
  int64_t C = 1, P = 1;             // 4-D: channels, pixels (H * W)
};

PwSpace space_of(const Dims& y, Format out) {
  PwSpace s;
  if (y.size() == 4) {
    s.four = true;
    s.C = y[1], s.P = y[2] * y[3];
    s.nchw = !is_nhwc(out);
    s.n = static_cast<int>(y[0]);
    s.hw = static_cast<int>(s.nchw ? s.C : s.P);
    s.c = static_cast<int>(s.nchw ? s.P : s.C);
  } else if (y.size() == 2) {
    s.n = static_cast<int>(y[0]), s.c = static_cast<int>(y[1]);
  } else {
    s.c = static_cast<int>(numel(y));
  }
  return s;
}

// The strides of an operand of dims v in format f in the space; false when it cannot be indexed.
bool operand_of(const PwSpace& s, const Dims& y, const Dims& v, Format f, gpu::PwOperand& o) {
  if (numel(v) == 1) {
    o.stride_n = o.stride_hw = o.stride_c = 0;
    return true;
  }
  if (v.size() > y.size()) return false;
  Dims p(y.size() - v.size(), 1);
  p.insert(p.end(), v.begin(), v.end());
  if (!s.four) {
    if (p == y) {  // flat or rows: contiguous
      o.stride_n = y.size() == 2 ? y[1] : 0, o.stride_hw = 0, o.stride_c = 1;
      return true;
    }
    if (y.size() == 2 && p[0] == 1 && p[1] == y[1]) {  // a row bias
      o.stride_n = 0, o.stride_hw = 0, o.stride_c = 1;
      return true;
    }
    return false;
  }
  const bool bn = p[0] == 1 && y[0] != 1, bc = p[1] == 1 && y[1] != 1;
  const bool pix_full = p[2] == y[2] && p[3] == y[3], pix_none = p[2] == 1 && p[3] == 1;
  if ((!bn && p[0] != y[0]) || (!bc && p[1] != y[1]) || (!pix_full && !pix_none)) return false;
  // Logical strides (n, channel, pixel) of the operand in its own format.
  int64_t sn, sc, sp;
  const int64_t C = p[1], P = p[2] * p[3];
  if (pix_none || P == 1) {
    sn = C, sc = 1, sp = 0;  // [N|1, C|1, 1, 1]: the same bytes in both formats
  } else if (is_nhwc(f)) {
    sn = P * C, sc = 1, sp = C;
  } else {
    sn = C * P, sc = P, sp = 1;
  }
  if (bn) sn = 0;
  if (bc) sc = 0;
  if (pix_none) sp = 0;
  o.stride_n = sn;
  o.stride_hw = s.nchw ? sc : sp;
  o.stride_c = s.nchw ? sp : sc;
  return true;
}

class PointwiseKernel : public GpuKernel {
 public:
  PointwiseKernel(const GpuConfig& c, PwPlan p, std::string impl) : GpuKernel(c, std::move(impl)), p_(std::move(p)) {}

  // False when an operand cannot be indexed (the step is declined).
  Result<bool> init(const StepRequest& req) {
    const Dims full = req.out_dims(0);
    if (!req.outputs[0]->shape.fully_known() || numel(full) > (int64_t(1) << 31)) return false;
    // In rows mode the output is [numel / K, K] and the vector operand [1, K].
    const Dims y = p_.rows ? Dims{numel(full) / full.back(), full.back()} : full;
    auto view = [&](const Dims& v) { return p_.rows && numel(v) != numel(full) ? Dims{1, v.back()} : p_.rows ? y : v; };
    space_ = space_of(y, req.out_format(0));
    if (!space_.four && (is_nhwc(req.out_format(0)) || is_nhwc(req.in_format(p_.full)))) return false;
    for (int k = 0; k < (p_.other >= 0 ? 2 : 1); ++k) {
      const int slot = k == 0 ? p_.full : p_.other;
      const ValueInfo& v = *req.inputs[slot];
      gpu::PwOperand& o = ops_[k];
      if (!operand_of(space_, y, view(v.shape.concrete()), req.in_format(slot), o)) return false;
      if (v.value) {  // constants are uploaded once per session, in float32
        const auto* host = static_cast<const uint8_t*>(v.value->data());
        auto b = device_const(cfg_, req, slot, "pw-const", layout_of("f32", v.value->dims()), v.value->nbytes(),
                              [&] { return std::vector<uint8_t>(host, host + v.value->nbytes()); });
        if (!b.is_ok()) return b.status();
        const_ = b.take();
        weight_bytes_ = const_->size();
        o.dtype = gpu::DType::kF32;
      } else {
        o.dtype = dtype_of(req.in_format(slot));
      }
    }
    return true;
  }

  Status run(ComputeContext& ctx) const override {
    gpu::PointwiseDesc d;
    d.n = space_.n, d.hw = space_.hw, d.c = space_.c;
    d.in[0] = ops_[0];
    d.in[0].data = ctx.in(p_.full).data;
    d.num_inputs = 1;
    if (p_.other >= 0) {
      d.in[1] = ops_[1];
      d.in[1].data = const_ ? const_->data() : ctx.in(p_.other).data;
      d.num_inputs = 2;
      d.steps[0].op = p_.op;
      d.steps[0].operand = 1;
      d.steps[0].operand_first = p_.full == 1;  // v = op(a, v) when a is the broadcast one
    } else {
      d.steps[0].op = gpu::PwOp::kAct;
      d.steps[0].act = p_.act;
    }
    d.num_steps = 1;
    d.out_dtype = cfg_.dtype();
    d.out = {ctx.out(0).data, 0, 0};
    INFERA_GPU_OK(ctx.node.label(), gpu::pointwise(d, stream(ctx)));
    return Status::ok();
  }

 private:
  PwPlan p_;
  PwSpace space_;
  gpu::PwOperand ops_[2];
  DeviceConst const_;
};

// Whether an operand of dims v could be read in some format (the planner picks which).
bool indexable(const Dims& y, const Dims& v) {
  gpu::PwOperand o;
  for (Format f : {Format::kNhwc, Format::kPlain})
    if (operand_of(space_of(y, f), y, v, f, o) || operand_of(space_of(y, Format::kPlain), y, v, f, o)) return true;
  return false;
}

Support pointwise_query(const GpuConfig& c, const StepRequest& req) {
  PwPlan p;
  if (!plan_pointwise(req, p)) return Support::no("an elementwise op the GPU kernels do not take");
  const Dims y = req.out_dims(0);
  for (size_t i = 0; i < req.inputs.size() && p.other >= 0 && !p.rows; ++i)
    if (!indexable(y, req.in_dims(i))) return Support::no("a broadcast the GPU pointwise kernel cannot index");
  const int r = req.outputs[0]->shape.rank();
  const FormatSet any =
      p.rows ? format_bit(c.plain_format()) : format_bit(c.act_format(r)) | format_bit(c.plain_format());
  Support s = support_all(req, std::vector<FormatSet>(req.inputs.size(), any), {any});
  s.follows_input = true;
  return s;
}

Result<std::unique_ptr<StepKernel>> pointwise_create(const GpuConfig& c, const StepRequest& req) {
  PwPlan p;
  if (!plan_pointwise(req, p)) return std::unique_ptr<StepKernel>();
  auto k = std::make_unique<PointwiseKernel>(c, p, "pointwise " + req.node->op_type);
  auto ok = k->init(req);
  if (!ok.is_ok()) return ok.status();
  if (!ok.value()) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::move(k));
}

// ---------------------------------------------------------------- Concat (channels, NHWC)
class ConcatKernel : public GpuKernel {
 public:
  ConcatKernel(const GpuConfig& c, int n, int hw, std::vector<int> chans)
      : GpuKernel(c, "concat_copy_nhwc"), n_(n), hw_(hw), chans_(std::move(chans)) {}
  Status run(ComputeContext& ctx) const override {
    int64_t total = 0;
    for (int ch : chans_) total += ch;
    int64_t off = 0;
    for (size_t i = 0; i < chans_.size(); ++i) {
      gpu::OutNhwc y{ctx.out(0).data, total, off};
      INFERA_GPU_OK(ctx.node.label(),
                    gpu::concat_copy(cfg_.dtype(), n_, hw_, chans_[i], {ctx.in(i).data, 0, 0}, y, stream(ctx)));
      off += chans_[i];
    }
    return Status::ok();
  }

 private:
  int n_, hw_;
  std::vector<int> chans_;
};

bool plan_concat(const StepRequest& req, std::vector<int>& chans) {
  const auto* op = dynamic_cast<const ConcatOp*>(req.op);
  if (!op || req.inputs.empty()) return false;
  const Dims y = req.out_dims(0);
  if (y.size() != 4 || (op->axis() != 1 && op->axis() != -3)) return false;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    if (!req.has_in(i) || req.inputs[i]->value) return false;
    const Dims d = req.in_dims(i);
    if (d.size() != 4 || d[0] != y[0] || d[2] != y[2] || d[3] != y[3]) return false;
    chans.push_back(static_cast<int>(d[1]));
  }
  return true;
}

Support concat_query(const GpuConfig& c, const StepRequest& req) {
  std::vector<int> chans;
  if (!plan_concat(req, chans)) return Support::no("a Concat the GPU does not take (not along channels of 4-D)");
  const FormatSet act = format_bit(c.act_format(4));
  Support s = support_all(req, std::vector<FormatSet>(req.inputs.size(), act), {act});
  s.concat_in_place = true;  // NHWC channel slices are what the kernel copies into
  return s;
}

Result<std::unique_ptr<StepKernel>> concat_create(const GpuConfig& c, const StepRequest& req) {
  std::vector<int> chans;
  if (!plan_concat(req, chans)) return std::unique_ptr<StepKernel>();
  const Dims y = req.out_dims(0);
  return std::unique_ptr<StepKernel>(
      std::make_unique<ConcatKernel>(c, static_cast<int>(y[0]), static_cast<int>(y[2] * y[3]), chans));
}

// ---------------------------------------------------------------- Softmax (rows)
class SoftmaxKernel : public GpuKernel {
 public:
  SoftmaxKernel(const GpuConfig& c, int rows, int cols, bool log)
      : GpuKernel(c, log ? "log_softmax_rows" : "softmax_rows"), rows_(rows), cols_(cols), log_(log) {}
  Status run(ComputeContext& ctx) const override {
    INFERA_GPU_OK(ctx.node.label(), gpu::softmax(cfg_.dtype(), rows_, cols_, ctx.in(0).data, cols_, ctx.out(0).data,
                                                 cols_, log_, stream(ctx)));
    return Status::ok();
  }

 private:
  int rows_, cols_;
  bool log_;
};

bool plan_softmax(const StepRequest& req, int& rows, int& cols, bool& log) {
  const auto* op = dynamic_cast<const SoftmaxOp*>(req.op);
  if (!op || op->kind() == SoftmaxKind::kHardmax || !req.has_in(0) || req.inputs[0]->value) return false;
  const Dims x = req.in_dims(0);
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = op->axis() < 0 ? op->axis() + r : op->axis();
  if (axis < 0 || axis >= r || (op->per_axis() && axis != r - 1)) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x[i];
  if (outer > (1 << 30) || inner > (1 << 30)) return false;
  rows = static_cast<int>(outer), cols = static_cast<int>(inner), log = op->kind() == SoftmaxKind::kLogSoftmax;
  return true;
}

Support softmax_query(const GpuConfig& c, const StepRequest& req) {
  int rows, cols;
  bool log;
  if (!plan_softmax(req, rows, cols, log)) return Support::no("a Softmax the GPU does not take (not the last axis)");
  const FormatSet plain = format_bit(c.plain_format());
  return support_all(req, {plain}, {plain});
}

Result<std::unique_ptr<StepKernel>> softmax_create(const GpuConfig& c, const StepRequest& req) {
  int rows, cols;
  bool log;
  if (!plan_softmax(req, rows, cols, log)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::make_unique<SoftmaxKernel>(c, rows, cols, log));
}

// ---------------------------------------------------------------- QuantizeLinear / DequantizeLinear
// Per tensor (constant scale and zero point), float32 <-> int8 / uint8, elementwise in any layout:
// NHWC for 4-D values (the int8 conv's layout), plain otherwise. The float side is the device's
// float storage (fp16 under fp16 precision). Per-axis and blocked ones run elsewhere.
struct QdqPlan {
  bool quantize = true;
  bool uint8 = false;
  float scale = 1.f;
  int zero_point = 0;
  int64_t n = 0;
  int rank = 0;
};

bool plan_qdq(const StepRequest& req, QdqPlan& p) {
  p.quantize = req.node->is_onnx("QuantizeLinear");
  if ((!p.quantize && !req.node->is_onnx("DequantizeLinear")) || !req.has_in(0) || !req.has_in(1) || !req.has_out(0) ||
      req.inputs[0]->value || !req.inputs[1]->value)
    return false;
  const DataType xt = req.inputs[0]->dtype, yt = req.outputs[0]->dtype;
  const DataType q = p.quantize ? yt : xt, f = p.quantize ? xt : yt;
  if ((q != DataType::kInt8 && q != DataType::kUInt8) || f != DataType::kFloat32) return false;
  p.uint8 = q == DataType::kUInt8;
  std::vector<float> sv;
  if (req.inputs[1]->value->numel() != 1 || !read_float_values(*req.inputs[1]->value, sv) || !(sv[0] > 0.f) ||
      !std::isfinite(sv[0]))
    return false;
  p.scale = sv[0];
  if (req.has_in(2)) {
    const ValueInfo* z = req.inputs[2];
    std::vector<int64_t> zv;
    if (!z->value || z->dtype != q || z->value->numel() != 1 || !read_int_values(TensorRef::of(*z->value), zv))
      return false;
    p.zero_point = static_cast<int>(zv[0]);
  }
  if (p.zero_point < (p.uint8 ? 0 : -128) || p.zero_point > (p.uint8 ? 255 : 127)) return false;
  if (p.quantize && req.node->attr_int("saturate", 1) != 1) return false;  // float8 only: never ours
  const Dims x = req.in_dims(0);
  p.n = numel(x);
  p.rank = static_cast<int>(x.size());
  return req.out_dims(0) == x;
}

Support qdq_query(const GpuConfig& c, const StepRequest& req) {
  QdqPlan p;
  if (!plan_qdq(req, p))
    return Support::no("a Quantize/DequantizeLinear the GPU does not take (per axis, non-constant scale, dtype)");
  const FormatSet fl = format_bit(c.act_format(p.rank));
  const FormatSet i8 = format_bit(p.rank == 4 ? Format::kNhwc : Format::kPlain);
  return support_all(req, {p.quantize ? fl : i8}, {p.quantize ? i8 : fl});
}

class QdqKernel : public GpuKernel {
 public:
  QdqKernel(const GpuConfig& c, QdqPlan p)
      : GpuKernel(
            c, std::string(p.quantize ? "s8_quantize_linear" : "s8_dequantize_linear") + (p.uint8 ? " (uint8)" : "")),
        p_(p) {}
  Status run(ComputeContext& ctx) const override {
    gpu::QuantDesc d;
    d.quantize = p_.quantize;
    d.float_dtype = cfg_.dtype();
    d.uint8 = p_.uint8;
    d.n = p_.n;
    d.x = ctx.in(0).data;
    d.y = ctx.out(0).data;
    d.scale = p_.scale;
    d.zero_point = p_.zero_point;
    INFERA_GPU_OK(ctx.node.label(), gpu::quant_linear(d, stream(ctx)));
    return Status::ok();
  }

 private:
  QdqPlan p_;
};

Result<std::unique_ptr<StepKernel>> qdq_create(const GpuConfig& c, const StepRequest& req) {
  QdqPlan p;
  if (!plan_qdq(req, p)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(std::make_unique<QdqKernel>(c, p));
}

// ---------------------------------------------------------------- same bytes, new shape
// Reshape / Flatten / Squeeze / Unsqueeze: the plain bytes do not change; in place when the
// planner lets the output share the input's buffer, else one device copy.
class ReshapeKernel : public GpuKernel {
 public:
  ReshapeKernel(const GpuConfig& c, size_t bytes) : GpuKernel(c, "reshape (copy unless in place)"), bytes_(bytes) {}
  Status run(ComputeContext& ctx) const override {
    if (ctx.in(0).data == ctx.out(0).data || bytes_ == 0) return Status::ok();
    gpuError_t e = gpuMemcpyAsync(ctx.out(0).data, ctx.in(0).data, bytes_, stream(ctx));
    if (e != gpuSuccess) return device_error(ctx.node.label(), gpu::Status{gpuGetErrorString(e)});
    return Status::ok();
  }

 private:
  size_t bytes_;
};

bool plan_reshape(const StepRequest& req) {
  const bool op = req.node->is_onnx("Reshape") || req.node->is_onnx("Flatten") || req.node->is_onnx("Squeeze") ||
                  req.node->is_onnx("Unsqueeze");
  if (!op || !req.has_in(0) || req.inputs[0]->value || !req.has_out(0)) return false;
  for (size_t i = 1; i < req.inputs.size(); ++i)
    if (req.has_in(i) && !req.inputs[i]->value) return false;  // a shape known at plan time
  return numel(req.in_dims(0)) == numel(req.out_dims(0));
}

Support reshape_query(const GpuConfig& c, const StepRequest& req) {
  if (!plan_reshape(req)) return Support::no("a reshape whose shape input is not known at plan time");
  FormatSet in = format_bit(c.plain_format());
  const Dims x = req.in_dims(0);
  if (x.size() == 4 && x[2] * x[3] == 1) in |= format_bit(c.act_format(4));  // [N,C,1,1]: NHWC bytes are plain
  Support s = support_all(req, {in}, {format_bit(c.plain_format())});
  s.in_place.emplace_back(0, 0);
  return s;
}

Result<std::unique_ptr<StepKernel>> reshape_create(const GpuConfig& c, const StepRequest& req) {
  if (!plan_reshape(req)) return std::unique_ptr<StepKernel>();
  return std::unique_ptr<StepKernel>(
      std::make_unique<ReshapeKernel>(c, format_bytes(c.plain_format(), DataType::kFloat32, req.in_dims(0))));
}

}  // namespace

const Family* ops_family(const StepRequest& req) {
  static const Family pool{pool_query, pool_create, true}, bn{bn_query, bn_create},
      pw{pointwise_query, pointwise_create}, cat{concat_query, concat_create}, sm{softmax_query, softmax_create},
      rs{reshape_query, reshape_create}, qdq{qdq_query, qdq_create, true};
  const OpKernel* op = req.op;
  if (dynamic_cast<const PoolOp*>(op) || dynamic_cast<const GlobalPoolOp*>(op)) return &pool;
  if (dynamic_cast<const BatchNormOp*>(op)) return &bn;
  if (dynamic_cast<const ActivationOp*>(op) || dynamic_cast<const ClipOp*>(op) || dynamic_cast<const BinaryOp*>(op))
    return &pw;
  if (dynamic_cast<const ConcatOp*>(op)) {  // along channels of 4-D: one kernel; else gpu_memops.cpp
    std::vector<int> chans;
    return plan_concat(req, chans) ? &cat : nullptr;
  }
  if (dynamic_cast<const SoftmaxOp*>(op)) return &sm;
  if (req.node->is_onnx("QuantizeLinear") || req.node->is_onnx("DequantizeLinear")) return &qdq;
  if (req.node->is_onnx("Reshape") || req.node->is_onnx("Flatten") || req.node->is_onnx("Squeeze") ||
      req.node->is_onnx("Unsqueeze"))
    return &rs;
  return nullptr;
}

}  // namespace infera::gpu_backend
