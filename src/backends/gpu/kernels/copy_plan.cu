// Host side of the strided copies: the descriptor builders for Transpose, Slice, Concat and Expand,
// and copy_plan, which checks a descriptor (sizes, overlapping outputs, reads before the buffer,
// 64-bit overflow) and reduces it to its simplest equivalent (see copy_plan.h).
#include <utility>

#include "backends/gpu/kernels/copy_plan.h"

namespace infera::gpu {
namespace {

Status check_common(int elem_bytes, int rank, const int64_t* dims, StridedCopy* out) {
  if (!out) return {"copy descriptor: null output descriptor"};
  if (elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8) return {"copy descriptor: elem_bytes must be 2, 4 or 8"};
  if (rank < 0 || rank > kMaxCopyRank) return {"copy descriptor: rank must be 0 to 6"};
  for (int k = 0; k < rank; ++k)
    if (dims[k] < 0) return {"copy descriptor: negative dim"};
  *out = StridedCopy{};
  out->elem_bytes = elem_bytes;
  out->rank = rank;
  return {};
}

bool mul_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
bool add_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

}  // namespace

void dense_strides(int rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; --k) {
    strides[k] = s;
    s *= dims[k] > 0 ? dims[k] : 1;
  }
}

Status transpose_desc(int elem_bytes, int rank, const int64_t* x_dims, const int* perm, const void* x, void* y,
                      StridedCopy* out) {
  if (Status st = check_common(elem_bytes, rank, x_dims, out); !st.ok()) return st;
  int64_t xst[kMaxCopyRank];
  dense_strides(rank, x_dims, xst);
  bool seen[kMaxCopyRank] = {};
  for (int k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= rank || seen[perm[k]]) return {"transpose_desc: perm is not a permutation"};
    seen[perm[k]] = true;
    out->dims[k] = x_dims[perm[k]];
    out->x_strides[k] = xst[perm[k]];
  }
  dense_strides(rank, out->dims, out->y_strides);
  out->x = x, out->y = y;
  return {};
}

Status slice_desc(int elem_bytes, int rank, const int64_t* x_dims, const int64_t* starts, const int64_t* steps,
                  const int64_t* y_dims, const void* x, void* y, StridedCopy* out) {
  if (Status st = check_common(elem_bytes, rank, x_dims, out); !st.ok()) return st;
  int64_t xst[kMaxCopyRank];
  dense_strides(rank, x_dims, xst);
  for (int k = 0; k < rank; ++k) {
    if (y_dims[k] < 0) return {"slice_desc: negative output dim"};
    if (steps[k] == 0) return {"slice_desc: step 0"};
    if (y_dims[k] > 0) {
      int64_t last = 0;
      if (!mul_ok(y_dims[k] - 1, steps[k], &last) || !add_ok(last, starts[k], &last))
        return {"slice_desc: slice too large"};
      if (starts[k] < 0 || starts[k] >= x_dims[k] || last < 0 || last >= x_dims[k])
        return {"slice_desc: slice reads outside the input"};
      out->x_offset += starts[k] * xst[k];
    }
    out->dims[k] = y_dims[k];
    out->x_strides[k] = steps[k] * xst[k];
  }
  dense_strides(rank, y_dims, out->y_strides);
  out->x = x, out->y = y;
  return {};
}

Status concat_desc(int elem_bytes, int rank, const int64_t* x_dims, int axis, int64_t y_axis_dim, int64_t y_axis_offset,
                   const void* x, void* y, StridedCopy* out) {
  if (Status st = check_common(elem_bytes, rank, x_dims, out); !st.ok()) return st;
  if (axis < 0 || axis >= rank) return {"concat_desc: axis out of range"};
  if (y_axis_offset < 0 || y_axis_offset > y_axis_dim - x_dims[axis])
    return {"concat_desc: the input does not fit in the output along the axis"};
  int64_t yd[kMaxCopyRank];
  for (int k = 0; k < rank; ++k) out->dims[k] = yd[k] = x_dims[k];
  yd[axis] = y_axis_dim;
  dense_strides(rank, x_dims, out->x_strides);
  dense_strides(rank, yd, out->y_strides);
  out->y_offset = y_axis_offset * out->y_strides[axis];
  out->x = x, out->y = y;
  return {};
}

Status expand_desc(int elem_bytes, int rank, const int64_t* x_dims, const int64_t* y_dims, const void* x, void* y,
                   StridedCopy* out) {
  if (Status st = check_common(elem_bytes, rank, x_dims, out); !st.ok()) return st;
  dense_strides(rank, x_dims, out->x_strides);
  for (int k = 0; k < rank; ++k) {
    if (x_dims[k] != y_dims[k] && x_dims[k] != 1) return {"expand_desc: input dim neither 1 nor the output's"};
    if (y_dims[k] < 0) return {"expand_desc: negative output dim"};
    if (x_dims[k] != y_dims[k]) out->x_strides[k] = 0;
    out->dims[k] = y_dims[k];
  }
  dense_strides(rank, y_dims, out->y_strides);
  out->x = x, out->y = y;
  return {};
}

Status copy_plan(const StridedCopy& d, CopyPlan* p) {
  if (!p) return {"strided_copy: null plan"};
  if (d.elem_bytes != 2 && d.elem_bytes != 4 && d.elem_bytes != 8)
    return {"strided_copy: elem_bytes must be 2, 4 or 8"};
  if (d.rank < 0 || d.rank > kMaxCopyRank) return {"strided_copy: rank must be 0 to 6"};
  CopyPlan q;
  q.count = 1;
  int r = 0;
  for (int k = 0; k < d.rank; ++k) {
    if (d.dims[k] < 0) return {"strided_copy: negative dim"};
    if (!mul_ok(q.count, d.dims[k], &q.count) || q.count > (int64_t{1} << 48))
      return {"strided_copy: too many elements"};
    if (d.dims[k] == 1) continue;
    q.dims[r] = d.dims[k], q.xs[r] = d.x_strides[k], q.ys[r] = d.y_strides[k];
    ++r;
  }
  if (q.count == 0) {
    *p = q;
    return {};
  }
  if (!d.x || !d.y) return {"strided_copy: null input or output"};
  if (d.x_offset < 0 || d.y_offset < 0) return {"strided_copy: negative offset"};
  q.x = d.x, q.y = d.y;
  q.xo = d.x_offset, q.yo = d.y_offset;
  q.eb = d.elem_bytes;
  const int64_t kBig = int64_t{1} << 60;
  for (int k = 0; k < r; ++k) {
    if (q.ys[k] < 0) return {"strided_copy: negative output stride"};
    if (q.xs[k] > kBig || q.xs[k] < -kBig || q.ys[k] > kBig) return {"strided_copy: stride too large"};
  }
  if (q.xo > kBig || q.yo > kBig) return {"strided_copy: offset too large"};
  if (q.eb == 8) {  // element = 2 words of 4 bytes: every stride and offset in words, a last dim of 2
    for (int k = 0; k < r; ++k) q.xs[k] *= 2, q.ys[k] *= 2;
    q.xo *= 2, q.yo *= 2, q.count *= 2;
    q.dims[r] = 2, q.xs[r] = 1, q.ys[r] = 1;
    ++r;
    q.eb = 4;
  }
  // Outermost output stride first (stable: equal strides keep their order; they overlap and fail below).
  for (int k = 1; k < r; ++k)
    for (int j = k; j > 0 && q.ys[j - 1] < q.ys[j]; --j) {
      std::swap(q.dims[j], q.dims[j - 1]);
      std::swap(q.xs[j], q.xs[j - 1]);
      std::swap(q.ys[j], q.ys[j - 1]);
    }
  // Each output stride must exceed the extent of the dims inside it: then no two indices meet.
  int64_t extent = 0;
  for (int k = r - 1; k >= 0; --k) {
    if (q.ys[k] <= extent) return {"strided_copy: output strides overlap (two indices write one element)"};
    int64_t t = 0;
    if (!mul_ok(q.ys[k], q.dims[k] - 1, &t) || !add_ok(extent, t, &extent)) return {"strided_copy: output too large"};
  }
  if (!add_ok(q.yo, extent, &q.y_hi)) return {"strided_copy: output too large"};
  q.x_lo = q.x_hi = q.xo;
  for (int k = 0; k < r; ++k) {
    int64_t t = 0;
    if (!mul_ok(q.xs[k], q.dims[k] - 1, &t)) return {"strided_copy: input too large"};
    int64_t& bound = t < 0 ? q.x_lo : q.x_hi;
    if (!add_ok(bound, t, &bound)) return {"strided_copy: input too large"};
  }
  if (q.x_lo < 0) return {"strided_copy: a negative stride reads before the input buffer"};
  // Merge neighbours that are contiguous on both sides (broadcast runs too: x strides 0 and 0).
  int m = 0;
  for (int k = 1; k < r; ++k) {
    if (q.xs[m] == q.xs[k] * q.dims[k] && q.ys[m] == q.ys[k] * q.dims[k]) {
      q.dims[m] *= q.dims[k];
      q.xs[m] = q.xs[k], q.ys[m] = q.ys[k];
    } else {
      ++m;
      q.dims[m] = q.dims[k], q.xs[m] = q.xs[k], q.ys[m] = q.ys[k];
    }
  }
  q.rank = r == 0 ? 1 : m + 1;
  if (r == 0) q.dims[0] = 1, q.xs[0] = 0, q.ys[0] = 1;
  const int last = q.rank - 1;
  if (q.rank >= 2 && q.ys[last] == 1 && q.xs[last] != 1 && q.xs[last] != 0)
    for (int k = 0; k < last && q.tile_a < 0; ++k)
      if (q.xs[k] == 1) q.tile_a = k;
  *p = q;
  return {};
}

}  // namespace infera::gpu
