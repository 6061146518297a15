// cuDNN as a candidate provider for convolutions: the fused graph conv -> + bias -> + z -> act,
// built through cuDNN's backend (graph) C API, engine configs from heuristics mode A. The backend
// times the candidates next to ours (conv_candidates) and keeps the fastest.
//
// Conventions are the kernel library's (kernels.h): x NHWC [N,H,W,C] (may sit in a wider buffer:
// ConvShape::x_pixel_stride / x_c_offset), w OHWI [K,R,S,C/groups] in the conv's dtype, y NHWC,
// bias [K] fp32, z (residual) output-shaped in the output dtype, y = act(conv(x) + bias + z).
// fp16 storage computes in fp32; fp32 runs in full fp32 unless tf32 is asked (then cuDNN may use
// TF32 tensor cores). Engines that down-convert inputs or reduce in fp16 are never offered; for fp32
// without TF32, neither are tensor-core (TF32) nor FFT engines; for fp32 with any tensor a channel
// slice, no runtime-compiled engine (one gave wrong results there: see notes_ok in dnn.cpp).
//
// Without CUDA (the HIP build) or when cuDNN cannot start on the device, there are no candidates.
// Thread safety: every function may be called from several threads at once. Plans are built once
// per distinct (device, shape, epilogue, tf32, layout) and cached for the life of the process;
// runs take a cuDNN handle from a per-device pool, so concurrent runs never share a handle.
#pragma once

#include <string>
#include <vector>

#include "backends/gpu/kernels.h"
#include "backends/gpu/vendor_candidate.h"

namespace infera::gpu {

// Where y sits in its buffer (cuDNN plans are built for fixed strides): 0 = tight, offset 0.
// The residual's placement is Epilogue::residual's pixel_stride / c_offset.
struct DnnConvLayout {
  int64_t y_pixel_stride = 0;
  int64_t y_c_offset = 0;
};

// cuDNN's version (e.g. 91900) when the library is compiled in and loads, else 0.
int dnn_version();

// Activations the cuDNN graph fuses: identity, Relu, LeakyRelu, Clip, Sigmoid, Tanh, Elu, Gelu (erf),
// GeluTanh, Swish (any alpha: SiLU at 1), Softplus. Any other: no candidates (run ours, or the conv
// with identity and the activation separately).
bool dnn_fuses(const Activation& a);

// The engine configs worth timing for this conv (heuristics mode A, the first few that cuDNN can
// build; mode B, then the fallback list, only when A has none), each with its workspace. ep says
// which epilogue parts are present (bias != nullptr, residual.data != nullptr and residual's
// placement, act); its pointers are not kept. Empty when cuDNN has none (or is absent); *why, if
// given, then says why. The first call for a new graph costs 2-650 ms (H200, cuDNN 9.19: the
// runtime-compiled engines compile here); later calls for the same graph return the cached list.
// only != "": just the engine of that name (a perf db's winner), or none when the heuristics do
// not list it; the full list when it is cached already.
std::vector<VendorCandidate> dnn_conv_candidates(const ConvShape& s, const Epilogue& ep, bool tf32, int device,
                                                 const DnnConvLayout& layout = {}, std::string* why = nullptr,
                                                 const std::string& only = "");

// Enqueues candidate c on stream (a stream of the candidate's device). t must match what c was
// built for: x / y / residual placement, bias and residual present or not, the same activation,
// and every pointer aligned as declared (16 bytes at a 16-byte-multiple channel offset). Only
// enqueues (no allocation, no sync), so it can be captured into a GPU graph.
Status dnn_conv_run(const VendorCandidate& c, const ConvTensors& t, void* workspace, size_t workspace_bytes,
                    gpuStream_t stream);

}  // namespace infera::gpu
