// Internal: a StridedCopy reduced to its simplest equivalent, shared by the general gather/scatter
// kernel (copy_strided.cu) and the tiled transpose (transpose_tiled.cu): size-1 dims dropped,
// 8-byte elements split into pairs of 32-bit words, dims ordered by output stride (outermost
// first) and neighbours that are contiguous on both sides merged. A Transpose of [N,C,H,W] to
// [N,H,W,C] becomes [N][HW][C] with x strides (C*HW, 1, HW); a Concat input becomes 2-D.
#pragma once

#include <cstdint>

#include "backends/gpu/kernels.h"

namespace infera::gpu {

inline constexpr int kCopyPlanRank = kMaxCopyRank + 1;  // + the word pair of an 8-byte element

struct CopyPlan {
  int eb = 2;    // element bytes after the split: 2 or 4
  int rank = 1;  // >= 1; dims[rank - 1] has the smallest output stride
  int64_t dims[kCopyPlanRank] = {};
  int64_t xs[kCopyPlanRank] = {};
  int64_t ys[kCopyPlanRank] = {};
  int64_t xo = 0, yo = 0;
  int64_t count = 0;           // elements (0: nothing to do)
  int64_t x_lo = 0, x_hi = 0;  // lowest and highest input element index read
  int64_t y_hi = 0;            // highest output element index written
  const void* x = nullptr;
  void* y = nullptr;
  // The dim that is contiguous in x when the last dim (contiguous in y) is not: a transpose the
  // tiled kernels can run (tile over dims tile_a and rank - 1); -1 when there is none.
  int tile_a = -1;
};

Status copy_plan(const StridedCopy& d, CopyPlan* p);

// The tiled transposes (transpose_tiled.cu): whether the 64x64 two-element variant may run the
// plan (fp16, even sizes and strides, 4-byte aligned), and the launch of one of them.
bool transpose_pairs_ok(const CopyPlan& p);
Status transpose_tiled(const CopyPlan& p, KernelId id, gpuStream_t stream);

}  // namespace infera::gpu
