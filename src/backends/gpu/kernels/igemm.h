// Internal: the parameters and host launcher of the fp16 implicit-GEMM kernel, shared by the
// convolution and GEMM dispatch. GEMM view: M = output pixels (N*P*Q), N = output channels per z,
// K = R*S*C; z indexes groups (grouped conv) or batch entries (batched GEMM), each with its own
// element offsets into x, w, y, bias and residual.
#pragma once

#include <cstdint>

#include "backends/gpu/kernels.h"
#include "backends/gpu/kernels/activation_device.h"

namespace infera::gpu {

// T: uint16_t (fp16 bits) or float.
template <class T>
struct IgemmParamsT {
  const T* x = nullptr;   // input, c_offset applied
  const T* wt = nullptr;  // weights [kn rows of w_rs][kgemm]
  const float* bias = nullptr;
  const T* res = nullptr;
  T* y = nullptr;
  float* ws = nullptr;             // split-K partials [splits][z][m][kn_pad]
  int n = 1, h = 1, w = 1, c = 1;  // c: channels gathered per z (C / groups)
  int p = 1, q = 1, r = 1, s = 1;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int m = 1, kn = 1, kgemm = 1, kt = 1;  // kt: k-tiles of 32
  int64_t x_ps = 0, w_rs = 0, y_ps = 0, res_ps = 0;
  int64_t x_z = 0, w_z = 0, y_z = 0, bias_z = 0, res_z = 0;
  int z = 1;
  int splits = 1, kt_per_split = 1, kn_pad = 8;
  int n_tiles = 1;  // set by the launcher
  int vec_out = 0, vec_res = 0, vec_bias = 0;
  ActParams act;
};
using IgemmParams = IgemmParamsT<uint16_t>;
using IgemmParamsF32 = IgemmParamsT<float>;

// Gather modes of the A (activation) tile.
enum IgemmMode : int {
  kIgemmVec1x1 = 0,  // 1x1, stride 1, no pad: pixel m is input pixel m (plain GEMM); 16-byte loads
  kIgemmVec = 1,     // any R, S, stride, pad, dilation; C % 8 == 0: 16-byte loads
  kIgemmScalar = 2,  // anything: element gathers (C not a multiple of 8, odd strides)
};

struct IgemmConfig {
  KernelId id;
  int bm, bn, threads;
  bool split;
  bool scalar;         // has a scalar-mode instantiation
  bool wgmma = false;  // Hopper warpgroup kernel (k-tile 64, sm_90a code)
};
// The configurations, by KernelId of the conv list entries (the GEMM entries map onto them).
const IgemmConfig* igemm_config(KernelId id);
inline constexpr int kIgemmSmemPad = 8;  // fp32 pitch pad of the epilogue staging tile
size_t igemm_smem_bytes(const IgemmConfig& c);

// Checks vectorization preconditions and fills mode, vec_out, vec_res; then launches (and the
// split-K epilogue pass when p.splits > 1; workspace then holds splits*z*m*kn_pad floats).
IgemmMode igemm_pick_mode(const IgemmParams& p);
Status igemm_f16_run(const IgemmConfig& cfg, IgemmParams p, void* workspace, size_t workspace_bytes,
                     gpuStream_t stream);
size_t igemm_workspace_bytes(const IgemmParams& p, int splits);
// A split count that fills the device: 1 when the tile grid already does.
int igemm_pick_splits(const IgemmConfig& cfg, const IgemmParams& p, const DeviceInfo& dev);

// The Hopper wgmma variants (f16_conv_nhwc_implicit_gemm_wgmma_sm90.cu).
const IgemmConfig* igemm_wgmma_config(KernelId id);
bool igemm_wgmma_built();
size_t igemm_wgmma_smem_bytes(
    const IgemmConfig& c);  // this program carries sm_90a code for them (and runs on such a device)
Status igemm_wgmma_run(const IgemmConfig& cfg, IgemmParams p, gpuStream_t stream);

// fp32 SIMT implicit GEMM (f32_conv_nhwc_implicit_gemm_simt.cu): variants ..._128x128, ..._64x64.
bool simt_f32_is_variant(KernelId id);
Status simt_f32_run(KernelId id, IgemmParamsF32 p, gpuStream_t stream);

// Direct convolutions over the same view (conv_nhwc_depthwise.cu, conv_nhwc_grouped_direct.cu).
Status depthwise_f16_run(const IgemmParams& p, gpuStream_t stream);
Status depthwise_f32_run(const IgemmParamsF32& p, gpuStream_t stream);
Status grouped_direct_f16_run(const IgemmParams& p, gpuStream_t stream);
Status grouped_direct_f32_run(const IgemmParamsF32& p, gpuStream_t stream);

}  // namespace infera::gpu
