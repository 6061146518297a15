// Host API of the GPU kernel library (CUDA and HIP from the same sources). Plain structs in,
// a Status out; every function only enqueues work on the given stream: nothing allocates device
// memory or synchronizes, so a whole plan can be captured into a GPU graph. Workspace, where a
// variant needs one, is passed in (conv_candidates / gemm_candidates say how many bytes).
//
// Conventions: activations are NHWC; fp16 storage with fp32 accumulation, or fp32 (no TF32).
// A tensor may live inside a wider buffer (pixel_stride > C, c_offset > 0): that is how Concat
// is done in place, by producers writing straight into their channel slice of the output.
// Bias vectors are fp32. Epilogue order: y = act(conv + bias + residual).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/gpu/status.h"
#include "backends/gpu/vendor.h"
#include "ops/activation.h"

namespace infera::gpu {

enum class DType : uint8_t { kF32 = 0, kF16 = 1, kS8 = 2 };  // kS8: int8 (or uint8) storage
inline size_t dtype_size(DType t) { return t == DType::kF16 ? 2 : t == DType::kS8 ? 1 : 4; }

enum class KernelFamily : uint8_t {
  kConv,
  kGemm,
  kPool,
  kGlobalPool,
  kPointwise,
  kCast,
  kBatchNorm,
  kConcat,
  kSoftmax,
  kResize,
  kLayout,
  kCopy,
  kTranspose,
  kLayerNorm,
  kReduce,
  kQConv,  // int8 convolution with the fused requantization (com.infera.QConv)
  kQuant,  // QuantizeLinear / DequantizeLinear
};

enum class KernelId : uint16_t {
#define INFERA_GPU_KERNEL(name, family, dtype, what) name,
#include "backends/gpu/kernels/list.h"
#undef INFERA_GPU_KERNEL
  kCount
};

struct KernelInfo {
  KernelId id;
  const char* name;
  KernelFamily family;
  DType dtype;
  const char* what;
};
int kernel_count();
const KernelInfo& kernel_info(KernelId id);
const KernelInfo& kernel_info(int index);

// What the dispatch needs to know about the device (filled once per device).
struct DeviceInfo {
  int device = 0;
  int arch = 0;        // CUDA: major*10+minor; HIP: gcnArch-like major*10+minor
  int sm_count = 1;    // multiprocessors / compute units
  int smem_optin = 0;  // largest dynamic shared memory a block may get, bytes
  bool wgmma = false;  // Hopper warpgroup MMA kernels usable (sm_90 device, sm_90a code present)
};
Status query_device(int device, DeviceInfo* out);

// An NHWC tensor inside a buffer: element (n, h, w, c) is at
// data[((n * H + h) * W + w) * pixel_stride + c_offset + c]; pixel_stride 0 means C (tight).
struct InNhwc {
  const void* data = nullptr;
  int64_t pixel_stride = 0;
  int64_t c_offset = 0;
};
struct OutNhwc {
  void* data = nullptr;
  int64_t pixel_stride = 0;
  int64_t c_offset = 0;
};

// A kernel variant that can run a given shape, with the workspace it needs. Candidates come in
// heuristic order (the first is a sane default); the backend may time each once and keep the best.
struct Candidate {
  KernelId id = KernelId::kCount;
  const char* name = "";
  size_t workspace_bytes = 0;
  int splits = 1;  // split-K factor (split-K variants)
};

// ---- convolution
struct ConvShape {
  DType dtype = DType::kF16;
  int n = 1, h = 1, w = 1, c = 1;  // input
  int k = 1;                       // output channels
  int r = 1, s = 1;                // kernel height, width
  int stride_h = 1, stride_w = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int dil_h = 1, dil_w = 1;
  int groups = 1;
  // Where the input sits in its buffer (0: tight, at offset 0), assuming a 16-byte aligned base:
  // decides which variants may load 16 bytes at a time. conv_forward's x must agree.
  int64_t x_pixel_stride = 0, x_c_offset = 0;
  int p() const { return (h + pad_t + pad_b - dil_h * (r - 1) - 1) / stride_h + 1; }
  int q() const { return (w + pad_l + pad_r - dil_w * (s - 1) - 1) / stride_w + 1; }
};
struct Epilogue {
  const float* bias = nullptr;  // [K] or nullptr
  InNhwc residual;              // output-shaped, output dtype; data nullptr: none
  Activation act;
};
struct ConvTensors {
  InNhwc x;
  const void* w = nullptr;  // [K][R][S][C / groups] (OHWI), the conv's dtype
  OutNhwc y;
  Epilogue ep;
};
Status conv_check(const ConvShape& s);  // nullptr error when the shape is valid
std::vector<Candidate> conv_candidates(const ConvShape& s, const DeviceInfo& dev);
Status conv_forward(const ConvShape& s, const Candidate& c, const ConvTensors& t, void* workspace,
                    size_t workspace_bytes, gpuStream_t stream);

// ---- int8 convolution (com.infera.QConv, ops/quant_conv.h): int8 NHWC x, int8 OHWI weights
// (zero point 0), int32 accumulation on the integer matrix units, and the requantization of the
// reference (ops/quant_conv.h's QRequant, float32) fused in the epilogue, bit for bit:
//   a = sum x * w - x_zero_point * wsum[k] + bias[k]                (= sum (x - x_zp) * w + bias)
//   u = float(a) * sy[k] [u = fma(float(z - z_zero_point), zs, u)]; u = act(u)
//   y = saturate(rint(u + y_zero_point))                            (int8 or uint8)
// sy[k] = float(scale[k] * inv_y), scale[k] = double(x_scale) * double(w_scale[k]), inv_y = 1.0 /
// double(y_scale); zs = float(z_scale * inv_y).
// Limits (qconv_check says which): x int8 (not uint8), C even, no groups, x_zero_point != 0 only
// without padding (the loaders pad with 0), activation identity / Relu / LeakyRelu / Clip.
struct QConvShape {
  int n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1;
  int stride_h = 1, stride_w = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int dil_h = 1, dil_w = 1;
  int64_t x_pixel_stride = 0, x_c_offset = 0;  // as ConvShape: decides the 16-byte loads
  // Where y and the residual will live (QConvTensors::y / z; 0: dense, offset 0): the CUTLASS
  // candidates' TMA stores and loads need 16-byte rows, so they are offered only where these allow.
  int64_t y_pixel_stride = 0, y_c_offset = 0, z_pixel_stride = 0;
  int x_zero_point = 0;
  bool has_residual = false;
  bool z_uint8 = false, y_uint8 = false;
  Activation act;
  int p() const { return (h + pad_t + pad_b - dil_h * (r - 1) - 1) / stride_h + 1; }
  int q() const { return (w + pad_l + pad_r - dil_w * (s - 1) - 1) / stride_w + 1; }
};
struct QConvTensors {
  InNhwc x;                       // int8
  const int8_t* w = nullptr;      // [K][R][S][C]
  OutNhwc y;                      // int8 / uint8
  const int32_t* bias = nullptr;  // [K] or nullptr
  const double* scale = nullptr;  // [K]
  const int32_t* wsum = nullptr;  // [K] sums of each filter; needed when x_zero_point != 0
  InNhwc z;                       // residual, output-shaped, int8 / uint8
  double z_scale = 1.0;
  int z_zero_point = 0;
  double inv_y = 1.0;
  int y_zero_point = 0;
  // A bound on |sum (x - x_zp) w + bias| over every output element (the host's, from the weights
  // and bias: max over k of max|x - x_zp| * sum |w[k]| + |bias[k]|); -1: unknown. With sy_max, the
  // largest sy[k] (qconv_sy_max; < 0: unknown), it tells the epilogue that a is exact in int32 and
  // that no value can overflow a float (so no Inf or NaN): then every element takes the short float
  // path (s8_igemm.h), else the reference's form element by element.
  int64_t acc_bound = -1;
  float sy_max = -1.f;
  // Split-K candidates (Candidate::splits > 1): the int32 partials, Candidate::workspace_bytes,
  // 16-byte aligned (int32 sums in any order are exact: the result equals the unsplit kernel's).
  void* ws = nullptr;
  size_t ws_bytes = 0;
  // The CUTLASS candidates' per-channel epilogue row on the device, [K] int32, 16-byte aligned: the
  // bits of sy[k] = float(scale[k] * inv_y) (qconv_epilogue_rows). A constant of a plan, made with the
  // weights; the other kernels do not read it.
  const int32_t* epi_rows = nullptr;
};
// The row above on the host, for scale [k] and inv_y (the device's float of the same double product).
std::vector<int32_t> qconv_epilogue_rows(const double* scale, int k, double inv_y);
// The bound above for int8 weights [k][per_k] (any layout of one filter's elements), int32 bias [k]
// or null, and the input's zero point.
int64_t qconv_acc_bound(const int8_t* w, int k, int64_t per_k, const int32_t* bias, int x_zero_point);
// max over k of float(scale[k] * inv_y) (+Inf when one is not finite): QConvTensors::sy_max.
float qconv_sy_max(const double* scale, int k, double inv_y);
Status qconv_check(const QConvShape& s);
std::vector<Candidate> qconv_candidates(const QConvShape& s, const DeviceInfo& dev);
Status qconv_forward(const QConvShape& s, const Candidate& c, const QConvTensors& t, gpuStream_t stream);

// ---- QuantizeLinear / DequantizeLinear, per tensor, on n dense elements (any layout: NHWC in,
// NHWC out). Quantize: y = saturate(nearbyint(x / scale) + zero_point) in float (NaN -> 0), as
// the reference; dequantize: y = float(x - zero_point) * scale. The float side is fp32 or fp16.
struct QuantDesc {
  bool quantize = true;
  DType float_dtype = DType::kF32;
  bool uint8 = false;
  int64_t n = 0;
  const void* x = nullptr;
  void* y = nullptr;
  float scale = 1.f;
  int zero_point = 0;
};
KernelId quant_variant(const QuantDesc& d);
Status quant_linear(const QuantDesc& d, gpuStream_t stream);

// ---- GEMM / batched MatMul: C[b] = act(op(A[b]) op(B[b]) + bias + residual[b])
// A is [M][K] (a[m * lda + k]) or, trans_a, stored [K][M] (a[k * lda + m]); B is [K][N]
// (b[k * ldb + n]) or, trans_b, stored [N][K] (b[n * ldb + k]); C is [M][N] (c[m * ldc + n]).
// Batch strides in elements; 0 broadcasts A or B over the batch.
struct GemmShape {
  DType dtype = DType::kF16;
  int batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: tight
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};
struct GemmTensors {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const float* bias = nullptr;     // [N] or nullptr
  const void* residual = nullptr;  // like C (ldr, stride_r) or nullptr
  int64_t ldr = 0, stride_r = 0;
  Activation act;
};
Status gemm_check(const GemmShape& s);
std::vector<Candidate> gemm_candidates(const GemmShape& s, const DeviceInfo& dev);
Status gemm(const GemmShape& s, const Candidate& c, const GemmTensors& t, void* workspace, size_t workspace_bytes,
            gpuStream_t stream);

// ---- pooling
enum class PoolKind : uint8_t { kMax, kAvg };
struct PoolShape {
  DType dtype = DType::kF16;
  PoolKind kind = PoolKind::kMax;
  int n = 1, h = 1, w = 1, c = 1;
  int r = 1, s = 1;
  int stride_h = 1, stride_w = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int dil_h = 1, dil_w = 1;
  bool ceil_mode = false;
  bool count_include_pad = false;  // avg: pads count toward the divisor (the part beyond them never does)
  bool uint8 = false;              // kS8 storage: uint8 rather than int8 (max only)
  int p() const;                   // ONNX output size, ceil mode with PyTorch's last-window rule
  int q() const;
};
Status pool(const PoolShape& s, InNhwc x, OutNhwc y, gpuStream_t stream);
// Global max / average over H*W: y is [N,1,1,C].
Status global_pool(DType dtype, PoolKind kind, int n, int hw, int c, InNhwc x, OutNhwc y, gpuStream_t stream);

// ---- fused pointwise chain: v = in[0]; then each step: v = op(v, in[operand]) (operand_first:
// op(in[operand], v)) or v = act(v); out = v. Operand element (n, hw, c) is at
// data[offset + n * stride_n + hw * stride_hw + c * stride_c]: full NHWC, per-channel [C],
// per-image-channel [N,1,1,C] (SE blocks), per-pixel or scalar broadcasts are strides of 0.
inline constexpr int kMaxPwInputs = 4;
inline constexpr int kMaxPwSteps = 8;
enum class PwOp : uint8_t { kAdd, kSub, kMul, kDiv, kMax, kMin, kAct };
struct PwOperand {
  const void* data = nullptr;
  DType dtype = DType::kF16;
  int64_t offset = 0, stride_n = 0, stride_hw = 0, stride_c = 0;
};
PwOperand pw_full(const void* data, DType t, int hw, int c, int64_t pixel_stride = 0, int64_t c_offset = 0);
PwOperand pw_per_channel(const void* data, DType t);               // [C]
PwOperand pw_per_image_channel(const void* data, DType t, int c);  // [N,1,1,C]
PwOperand pw_scalar(const void* data, DType t);                    // one element
struct PwStep {
  PwOp op = PwOp::kAct;
  int operand = 0;
  bool operand_first = false;
  Activation act;
};
struct PointwiseDesc {
  int n = 1, hw = 1, c = 1;
  PwOperand in[kMaxPwInputs];
  int num_inputs = 1;
  PwStep steps[kMaxPwSteps];
  int num_steps = 0;
  DType out_dtype = DType::kF16;
  OutNhwc out;
};
Status pointwise(const PointwiseDesc& d, gpuStream_t stream);
// Conveniences over pointwise:
Status cast(DType from, DType to, int64_t count, const void* x, void* y, gpuStream_t stream);
// y = act(x * scale[c] + shift[c]) (scale, shift fp32: the unfolded BatchNorm, precomputed).
Status batchnorm_affine(DType dtype, int n, int hw, int c, InNhwc x, const float* scale, const float* shift, OutNhwc y,
                        const Activation& act, gpuStream_t stream);
// Copies x (C channels) into channels [y.c_offset, y.c_offset + C) of a wider buffer.
Status concat_copy(DType dtype, int n, int hw, int c, InNhwc x, OutNhwc y, gpuStream_t stream);

// ---- softmax / log-softmax over the last axis of a [rows][cols] matrix (row strides ldx, ldy)
Status softmax(DType dtype, int rows, int cols, const void* x, int64_t ldx, void* y, int64_t ldy, bool log_softmax,
               gpuStream_t stream);

// ---- resize (ONNX Resize, 2-D spatial, NHWC)
enum class ResizeMode : uint8_t { kNearest, kLinear };
enum class ResizeCoord : uint8_t { kAsymmetric, kHalfPixel, kAlignCorners, kPytorchHalfPixel };
enum class ResizeNearest : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeShape {
  DType dtype = DType::kF16;
  int n = 1, h = 1, w = 1, c = 1;
  int out_h = 1, out_w = 1;
  float scale_h = 1.f, scale_w = 1.f;  // ONNX scales (out / in when sizes were given)
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
};
Status resize(const ResizeShape& s, InNhwc x, OutNhwc y, gpuStream_t stream);

// ---- layout transforms at the model boundary, fused with the cast. nchw_to_nhwc also zero-fills
// channels [c, c_padded) of each output pixel when c_padded > c (a stem conv then takes the
// vectorized path with its weights padded the same way).
Status nchw_to_nhwc(DType from, DType to, int n, int c, int h, int w, const void* x, OutNhwc y, int c_padded,
                    gpuStream_t stream);
Status nhwc_to_nchw(DType from, DType to, int n, int c, int h, int w, InNhwc x, void* y, gpuStream_t stream);
// (kS8 -> kS8 is a byte copy of int8 or uint8 values.)
// Copies the c channels of each of `pixels` NHWC int8 pixels into a dense buffer of cp >= c
// channels per pixel, zeroing channels [c, cp) (an odd-C input of the int8 conv).
Status nhwc_pad_channels_s8(int64_t pixels, int c, InNhwc x, int cp, void* y, gpuStream_t stream);
// The 2x2 space-to-depth that turns a stride-2 convolution of few channels (c <= 4: an RGB stem)
// into a stride-1 one with 16-byte vector gathers: y is [n][ho][wo][16] dense (16-byte aligned),
// y[img][i][j][(dy * 2 + dx) * c + ci] = x[img][2i + dy - pad_t][2j + dx - pad_l][ci], 0 outside
// the image and in channels [4c, 16). Elements of elem_bytes (1: int8, 2: fp16).
inline constexpr int kSpaceToDepth2Channels = 16;
Status nhwc_space_to_depth2(size_t elem_bytes, int n, int h, int w, int c, InNhwc x, int pad_t, int pad_l, int ho,
                            int wo, void* y, gpuStream_t stream);

// ---- strided copy of plain (row-major) tensors: every index (i_0, ..., i_{rank-1}) < dims copies
// x[x_offset + sum_k i_k * x_strides[k]] to y[y_offset + sum_k i_k * y_strides[k]] (offsets and
// strides in elements). x strides may be negative (Slice with negative steps) or 0 (Expand); y
// strides must be non-negative and nest (sorted by size, each at least the extent of the smaller
// ones), so that no two indices write the same element. The *_desc builders below fill it for
// Transpose, Slice / Split, Concat (a copy into the output's slice) and Expand. Bits are copied:
// elem_bytes 2 (fp16), 4 (fp32, int32) or 8 (int64). 0 elements enqueue nothing.
inline constexpr int kMaxCopyRank = 6;
struct StridedCopy {
  int elem_bytes = 2;
  int rank = 0;  // 0: one element
  int64_t dims[kMaxCopyRank] = {};
  const void* x = nullptr;
  int64_t x_offset = 0;
  int64_t x_strides[kMaxCopyRank] = {};
  void* y = nullptr;
  int64_t y_offset = 0;
  int64_t y_strides[kMaxCopyRank] = {};
};
// Row-major strides of dims (strides[rank - 1] = 1).
void dense_strides(int rank, const int64_t* dims, int64_t* strides);
// y = Transpose(x, perm), y dense: y's dim k is x_dims[perm[k]].
Status transpose_desc(int elem_bytes, int rank, const int64_t* x_dims, const int* perm, const void* x, void* y,
                      StridedCopy* out);
// y[i] = x[starts + i * steps] per dim, y dense of y_dims; starts and steps as ONNX Slice resolves
// them (steps nonzero, every index read inside x_dims: checked). Split is slices with step 1.
Status slice_desc(int elem_bytes, int rank, const int64_t* x_dims, const int64_t* starts, const int64_t* steps,
                  const int64_t* y_dims, const void* x, void* y, StridedCopy* out);
// Copies x (dense, x_dims) into y, a dense tensor of x_dims except y_axis_dim on axis, at
// [y_axis_offset, y_axis_offset + x_dims[axis]) along axis: one input of a Concat.
Status concat_desc(int elem_bytes, int rank, const int64_t* x_dims, int axis, int64_t y_axis_dim, int64_t y_axis_offset,
                   const void* x, void* y, StridedCopy* out);
// y = Expand(x) to y_dims: x_dims has y's rank (right-aligned by the caller), 1 on broadcast dims.
Status expand_desc(int elem_bytes, int rank, const int64_t* x_dims, const int64_t* y_dims, const void* x, void* y,
                   StridedCopy* out);
// The variants that can run d, the default first (the tiled transpose where x's contiguous dim
// is not y's; the general gather/scatter always). Tests and benchmarks run each.
std::vector<Candidate> copy_candidates(const StridedCopy& d);
Status strided_copy(const StridedCopy& d, gpuStream_t stream);  // the default candidate
Status strided_copy(const StridedCopy& d, const Candidate& c, gpuStream_t stream);

// ---- LayerNormalization over the last axis of a [rows][cols] matrix (ONNX, stash_type 1):
// y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance, fp32 statistics. Row strides
// ldx, ldy (0: cols); y may be x (same stride). gamma, beta: fp32 [cols] or nullptr (1, 0);
// mean, inv_std: fp32 [rows] outputs or nullptr. x is read once when cols <= 8192.
struct LayerNormDesc {
  DType dtype = DType::kF16;
  int64_t rows = 1;
  int cols = 1;
  const void* x = nullptr;
  int64_t ldx = 0;
  void* y = nullptr;
  int64_t ldy = 0;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float eps = 1e-5f;
  float* mean = nullptr;
  float* inv_std = nullptr;
};
KernelId layernorm_variant(const LayerNormDesc& d);  // what layernorm runs for d
Status layernorm(const LayerNormDesc& d, gpuStream_t stream);

// ---- reductions of a dense [outer][reduce][inner] tensor over the middle axis:
// y[o * inner + i] = op over r of x[(o * reduce + r) * inner + i]. inner 1 is a reduction over
// the trailing contiguous elements (ReduceX over the last axes), outer 1 over the leading ones.
// fp32 accumulation, y in x's dtype; max / min propagate NaN.
enum class ReduceOp : uint8_t { kSum, kMean, kMax, kMin };
struct ReduceDesc {
  DType dtype = DType::kF16;
  ReduceOp op = ReduceOp::kSum;
  int64_t outer = 1, reduce = 1, inner = 1;
  const void* x = nullptr;
  void* y = nullptr;
};
KernelId reduce_variant(const ReduceDesc& d);  // what reduce runs for d
Status reduce(const ReduceDesc& d, gpuStream_t stream);

}  // namespace infera::gpu
