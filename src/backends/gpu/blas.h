// cuBLASLt as a candidate provider for GEMM / batched MatMul: C[b] = act(op(A[b]) op(B[b]) + bias + R[b])
// with kernels.h's GemmShape conventions (row-major, trans_a / trans_b, leading dimensions, batch
// strides in elements, stride 0 broadcasting A or B). The row-major problem runs as the column-major
// C^T = op(B)^T op(A)^T, so bias [N] is cuBLASLt's per-row bias of D.
//
// Epilogue: bias [N] fp32, the residual R (C's dtype) through cuBLASLt's C operand (beta = 1), and
// of the activations Relu and GeluTanh (cuBLASLt's GELU is the tanh form); anything else: no
// candidates, so call with identity and apply the activation separately. For fp16 cuBLASLt wants
// the bias in fp16: the run converts it into the head of the workspace (one small kernel), which
// workspace_bytes includes.
// fp16 storage computes in fp32; fp32 is CUBLAS_COMPUTE_32F (no TF32) unless tf32 asks for
// CUBLAS_COMPUTE_32F_FAST_TF32.
//
// Without CUDA (the HIP build) or when cuBLASLt cannot start, there are no candidates. Thread safety:
// every function may be called from several threads at once (one cuBLASLt handle per device: the
// library is thread-safe and takes the stream per call; descriptors used by runs are never changed).
#pragma once

#include <string>
#include <vector>

#include "backends/gpu/kernels.h"
#include "backends/gpu/vendor_candidate.h"

namespace infera::gpu {

// Whether the GEMM adds a residual R, and where it is (0: like C's ldc / stride_c).
struct BlasResidual {
  bool present = false;
  int64_t ldr = 0, stride_r = 0;
};

// cuBLASLt's version (e.g. 130100) when compiled in, else 0.
int blas_version();

// Activations cuBLASLt fuses: identity, Relu, GeluTanh.
bool blas_fuses(const Activation& a);

// cuBLASLt's heuristic algorithms for this GEMM (the first few it offers), each with its workspace.
// Empty when there are none (or cuBLASLt is absent); *why, if given, then says why.
std::vector<VendorCandidate> blas_gemm_candidates(const GemmShape& s, bool bias, Activation act, bool tf32, int device,
                                                  const BlasResidual& residual = {}, std::string* why = nullptr);

// Enqueues candidate c on stream. t must match what c was built for (bias present or not,
// residual present with the same ldr / stride_r, the same activation), every pointer 16-byte
// aligned, the workspace 16-byte aligned and at least c.workspace_bytes. Only enqueues (no
// allocation, no sync), so it can be captured into a GPU graph.
Status blas_gemm_run(const VendorCandidate& c, const GemmTensors& t, void* workspace, size_t workspace_bytes,
                     gpuStream_t stream);

}  // namespace infera::gpu
