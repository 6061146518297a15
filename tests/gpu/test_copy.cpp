// Strided copies and tiled transposes against a host reference, bit for bit: Transpose (any perm,
// rank 1 to 6), Slice with positive and negative steps, Split, Concat into an output slice, Expand,
// hand-made strides (flipped transposes, strided outputs), 2-, 4- and 8-byte elements, misaligned
// pointers, every candidate copy_candidates offers. The whole output buffer is compared, so a
// write outside the copied elements fails too. Bad descriptors must be refused.
#include <algorithm>
#include <numeric>

#include "test_util.h"

namespace infera::gpu::test {
namespace {

struct Buf {
  std::vector<uint8_t> bytes;
  int eb;
};

Buf random_bits(Rng& rng, int eb, size_t n) {
  Buf b{std::vector<uint8_t>(n * eb + 8), eb};
  for (size_t i = 0; i < n * eb; i += 8) {
    const uint64_t r = rng.gen();
    std::memcpy(&b.bytes[i], &r, 8);
  }
  b.bytes.resize(n * eb);
  return b;
}

// Reference: every index of d's box, with the buffers' element 0 at x / y (pointer offsets added
// by the caller through x_shift / y_shift elements).
std::vector<uint8_t> reference(const StridedCopy& d, const Buf& x, size_t x_shift, size_t y_elems, size_t y_shift) {
  const int eb = d.elem_bytes;
  std::vector<uint8_t> y((y_elems + y_shift) * eb, 0xff);
  int64_t count = 1;
  for (int k = 0; k < d.rank; ++k) count *= d.dims[k];
  std::vector<int64_t> idx(kMaxCopyRank, 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t xi = d.x_offset, yi = d.y_offset;
    for (int k = 0; k < d.rank; ++k) xi += idx[k] * d.x_strides[k], yi += idx[k] * d.y_strides[k];
    std::memcpy(&y[(yi + y_shift) * eb], &x.bytes[(xi + x_shift) * eb], eb);
    for (int k = d.rank - 1; k >= 0; --k) {
      if (++idx[k] < d.dims[k]) break;
      idx[k] = 0;
    }
  }
  return y;
}

std::string shape_str(int rank, const int64_t* dims) {
  std::string s = "[";
  for (int k = 0; k < rank; ++k) {
    if (k) s += ',';
    s += std::to_string(dims[k]);
  }
  s += ']';
  return s;
}

// Runs every candidate (and the default entry point) on d, whose pointers are filled here:
// x from xh (shifted by x_shift elements to break alignment), y a poisoned buffer of y_elems.
void run_desc(Ctx& ctx, StridedCopy d, const Buf& xh, size_t x_shift, size_t y_elems, size_t y_shift,
              const std::string& what) {
  const int eb = d.elem_bytes;
  DevBuf dx(xh.bytes.size() + 16);
  check_gpu(gpuMemcpyHtoD(dx.ptr, xh.bytes.data(), xh.bytes.size()), "upload");
  check_gpu(gpuDeviceSynchronize(), "upload sync");
  d.x = static_cast<const char*>(dx.ptr) + x_shift * eb;
  const size_t ybytes = (y_elems + y_shift) * eb;
  DevBuf dy(ybytes + 16);
  d.y = static_cast<char*>(dy.ptr) + y_shift * eb;
  const std::vector<uint8_t> ref = reference(d, xh, x_shift, y_elems, y_shift);
  std::vector<Candidate> cands = copy_candidates(d);
  if (cands.empty()) {
    ctx.results.record(eb == 2 ? KernelId::f16_copy_strided : KernelId::f32_copy_strided, what, Compare{INFINITY},
                       DType::kF32, false, "no candidate");
    return;
  }
  const DType t = eb == 2 ? DType::kF16 : DType::kF32;
  for (size_t ci = 0; ci <= cands.size(); ++ci) {
    const bool dflt = ci == cands.size();  // last round: the default entry point
    check_gpu(gpuMemsetAsync(dy.ptr, 0xff, ybytes, ctx.stream), "memset");
    const Status st = dflt ? strided_copy(d, ctx.stream) : strided_copy(d, cands[ci], ctx.stream);
    check_gpu(gpuStreamSynchronize(ctx.stream), "copy sync");
    std::vector<uint8_t> out(ybytes);
    check_gpu(gpuMemcpyDtoH(out.data(), dy.ptr, ybytes), "download");
    Compare c;
    size_t bad = 0;
    for (size_t i = 0; i < y_elems + y_shift; ++i)
      if (std::memcmp(&out[i * eb], &ref[i * eb], eb)) {
        if (!bad) c.bad_index = i;
        ++bad;
      }
    c.err = bad ? 1.0 : 0.0;
    c.worst = static_cast<double>(bad);
    const Candidate& cand = dflt ? cands[0] : cands[ci];
    ctx.results.record(cand.id, what + (dflt ? " (default)" : ""), st.ok() ? c : Compare{INFINITY}, t, false, st.error);
  }
}

int64_t numel(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= dims[k];
  return n;
}

void transpose_case(Ctx& ctx, int eb, std::vector<int64_t> dims, std::vector<int> perm, size_t shift = 0) {
  const int rank = static_cast<int>(dims.size());
  StridedCopy d;
  const Status st = transpose_desc(eb, rank, dims.data(), perm.data(), nullptr, nullptr, &d);
  std::string what = "transpose b" + std::to_string(eb * 8) + " " + shape_str(rank, dims.data()) + " perm";
  for (int p : perm) {
    what += ' ';
    what += std::to_string(p);
  }
  if (shift) what += " misaligned";
  if (!st.ok()) {
    ctx.results.record(KernelId::f32_copy_strided, what, Compare{INFINITY}, DType::kF32, false, st.error);
    return;
  }
  const size_t n = static_cast<size_t>(numel(rank, dims.data()));
  run_desc(ctx, d, random_bits(ctx.rng, eb, n + shift), shift, n, shift, what);
}

void slice_case(Ctx& ctx, int eb, std::vector<int64_t> xd, std::vector<int64_t> starts, std::vector<int64_t> steps,
                std::vector<int64_t> yd, const char* label = "slice") {
  const int rank = static_cast<int>(xd.size());
  StridedCopy d;
  std::string what = std::string(label) + " b" + std::to_string(eb * 8) + " " + shape_str(rank, xd.data()) + "->" +
                     shape_str(rank, yd.data()) + " steps " + shape_str(rank, steps.data());
  const Status st = slice_desc(eb, rank, xd.data(), starts.data(), steps.data(), yd.data(), nullptr, nullptr, &d);
  if (!st.ok()) {
    ctx.results.record(KernelId::f32_copy_strided, what, Compare{INFINITY}, DType::kF32, false, st.error);
    return;
  }
  const size_t nx = static_cast<size_t>(numel(rank, xd.data())), ny = static_cast<size_t>(numel(rank, yd.data()));
  run_desc(ctx, d, random_bits(ctx.rng, eb, nx), 0, ny, 0, what);
}

void concat_case(Ctx& ctx, int eb, std::vector<int64_t> xd, int axis, int64_t y_axis, int64_t off, size_t shift = 0) {
  const int rank = static_cast<int>(xd.size());
  StridedCopy d;
  std::string what = "concat b" + std::to_string(eb * 8) + " " + shape_str(rank, xd.data()) + " axis " +
                     std::to_string(axis) + " at " + std::to_string(off) + "/" + std::to_string(y_axis);
  if (shift) what += " misaligned";
  const Status st = concat_desc(eb, rank, xd.data(), axis, y_axis, off, nullptr, nullptr, &d);
  if (!st.ok()) {
    ctx.results.record(KernelId::f32_copy_strided, what, Compare{INFINITY}, DType::kF32, false, st.error);
    return;
  }
  std::vector<int64_t> yd = xd;
  yd[axis] = y_axis;
  const size_t nx = static_cast<size_t>(numel(rank, xd.data())), ny = static_cast<size_t>(numel(rank, yd.data()));
  run_desc(ctx, d, random_bits(ctx.rng, eb, nx + shift), shift, ny, shift, what);
}

void expand_case(Ctx& ctx, int eb, std::vector<int64_t> xd, std::vector<int64_t> yd) {
  const int rank = static_cast<int>(xd.size());
  StridedCopy d;
  const std::string what =
      "expand b" + std::to_string(eb * 8) + " " + shape_str(rank, xd.data()) + "->" + shape_str(rank, yd.data());
  const Status st = expand_desc(eb, rank, xd.data(), yd.data(), nullptr, nullptr, &d);
  if (!st.ok()) {
    ctx.results.record(KernelId::f32_copy_strided, what, Compare{INFINITY}, DType::kF32, false, st.error);
    return;
  }
  const size_t nx = static_cast<size_t>(numel(rank, xd.data())), ny = static_cast<size_t>(numel(rank, yd.data()));
  run_desc(ctx, d, random_bits(ctx.rng, eb, nx), 0, ny, 0, what);
}

std::vector<int64_t> random_dims(Rng& rng, int rank, int64_t max_total) {
  std::vector<int64_t> dims(rank);
  for (;;) {
    for (auto& v : dims) v = rng.coin(0.15) ? 1 : rng.coin(0.3) ? rng.range(17, 70) : rng.range(2, 9);
    if (numel(rank, dims.data()) <= max_total) return dims;
  }
}

// Descriptors that must be refused (each one line of error), and one that must be a no-op.
void refusal_cases(Ctx& ctx) {
  static uint8_t dummy[64];
  auto expect_error = [&](const char* what, const Status& st) {
    if (st.ok())
      ctx.results.record(KernelId::f32_copy_strided, std::string("refuses ") + what, Compare{INFINITY}, DType::kF32,
                         false, "accepted a bad descriptor");
  };
  StridedCopy d;
  d.elem_bytes = 4, d.rank = 2, d.dims[0] = 4, d.dims[1] = 4, d.x = dummy, d.y = dummy + 32;
  d.x_strides[0] = 4, d.x_strides[1] = 1, d.y_strides[0] = 1, d.y_strides[1] = 1;  // y rows overlap
  expect_error("overlapping output strides", strided_copy(d, ctx.stream));
  d.y_strides[0] = 4, d.x_strides[1] = -1;  // reads before x
  expect_error("a read before the buffer", strided_copy(d, ctx.stream));
  d.x_strides[1] = 1, d.y_strides[1] = -1, d.y_offset = 3;
  expect_error("a negative output stride", strided_copy(d, ctx.stream));
  StridedCopy e = d;
  e.elem_bytes = 3;
  expect_error("elem_bytes 3", strided_copy(e, ctx.stream));
  e = d;
  e.rank = 7;
  expect_error("rank 7", strided_copy(e, ctx.stream));
  e = d;
  e.y = nullptr, e.y_strides[1] = 1, e.y_offset = 0;
  expect_error("a null output", strided_copy(e, ctx.stream));
  int64_t dims[3] = {2, 3, 4}, starts[3] = {0, 0, 0}, steps[3] = {1, 1, 1}, yd[3] = {2, 3, 5};
  int perm[3] = {0, 0, 1};
  expect_error("a perm that repeats a dim", transpose_desc(2, 3, dims, perm, dummy, dummy, &e));
  expect_error("a slice past the end", slice_desc(2, 3, dims, starts, steps, yd, dummy, dummy, &e));
  steps[2] = 0, yd[2] = 4;
  expect_error("a slice step of 0", slice_desc(2, 3, dims, starts, steps, yd, dummy, dummy, &e));
  expect_error("a concat slice past the output", concat_desc(2, 3, dims, 1, 4, 2, dummy, dummy, &e));
  int64_t xd[3] = {2, 2, 4};
  expect_error("an expand of 2 to 3", expand_desc(2, 3, xd, dims, dummy, dummy, &e));
  StridedCopy z = d;
  z.dims[0] = 0, z.y_strides[1] = 1, z.y_offset = 0;
  if (!strided_copy(z, ctx.stream).ok())
    ctx.results.record(KernelId::f32_copy_strided, "0 elements", Compare{INFINITY}, DType::kF32, false,
                       "refused an empty copy");
  check_gpu(gpuStreamSynchronize(ctx.stream), "refusals sync");
}

}  // namespace

void run_copy_suite(Ctx& ctx) {
  Rng& rng = ctx.rng;
  refusal_cases(ctx);
  for (int eb : {2, 4, 8}) {
    // The models' permutes: ConvNeXt NCHW <-> NHWC, ShuffleNet's channel shuffle (plain and on
    // NHWC data), a MatMul operand transpose; then odd sizes around the tile edges.
    transpose_case(ctx, eb, {1, 96, 56, 56}, {0, 2, 3, 1});
    transpose_case(ctx, eb, {2, 28, 28, 192}, {0, 3, 1, 2});
    transpose_case(ctx, eb, {3, 768, 7, 7}, {0, 2, 3, 1});
    transpose_case(ctx, eb, {3, 2, 58, 7, 7}, {0, 2, 1, 3, 4});
    transpose_case(ctx, eb, {3, 49, 2, 58}, {0, 1, 3, 2});
    transpose_case(ctx, eb, {2, 3, 37, 45}, {0, 1, 3, 2});
    transpose_case(ctx, eb, {5, 33, 47}, {0, 2, 1});
    transpose_case(ctx, eb, {2, 34, 66}, {0, 2, 1});
    transpose_case(ctx, eb, {2, 34, 66}, {0, 2, 1}, 1);
    transpose_case(ctx, eb, {130, 64}, {1, 0});
    transpose_case(ctx, eb, {1, 1, 1}, {2, 0, 1});
    transpose_case(ctx, eb, {7, 1, 17, 1, 19, 3}, {4, 2, 5, 0, 3, 1});
    transpose_case(ctx, eb, {17}, {0});
    transpose_case(ctx, eb, {}, {});
    for (int i = 0; i < 24; ++i) {
      const int rank = rng.range(1, 6);
      std::vector<int> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng.gen);
      transpose_case(ctx, eb, random_dims(rng, rank, 200000), perm, rng.coin(0.25) ? 1 : 0);
    }
    // Split of ShuffleNet's channels (plain NCHW), and random slices with negative steps.
    slice_case(ctx, eb, {3, 116, 7, 7}, {0, 0, 0, 0}, {1, 1, 1, 1}, {3, 58, 7, 7}, "split");
    slice_case(ctx, eb, {3, 116, 7, 7}, {0, 58, 0, 0}, {1, 1, 1, 1}, {3, 58, 7, 7}, "split");
    slice_case(ctx, eb, {2, 13, 9}, {1, 12, 8}, {1, -1, -2}, {1, 13, 5});
    for (int i = 0; i < 20; ++i) {
      const int rank = rng.range(1, 6);
      const std::vector<int64_t> xd = random_dims(rng, rank, 100000);
      std::vector<int64_t> starts(rank), steps(rank), yd(rank);
      for (int k = 0; k < rank; ++k) {
        steps[k] = rng.coin(0.6) ? 1 : rng.coin() ? -rng.range(1, 3) : rng.range(2, 3);
        starts[k] = rng.range(0, static_cast<int>(xd[k]) - 1);
        const int64_t room = steps[k] > 0 ? (xd[k] - 1 - starts[k]) / steps[k] : starts[k] / -steps[k];
        yd[k] = rng.range(1, static_cast<int>(room) + 1);
      }
      slice_case(ctx, eb, xd, starts, steps, yd);
    }
    // Concat inputs written into their slice of the output (the rest must stay untouched).
    concat_case(ctx, eb, {3, 58, 7, 7}, 1, 116, 58);
    concat_case(ctx, eb, {2, 5, 7, 13}, 3, 29, 11, 1);
    for (int i = 0; i < 16; ++i) {
      const int rank = rng.range(1, 6);
      const std::vector<int64_t> xd = random_dims(rng, rank, 100000);
      const int axis = rng.range(0, rank - 1);
      const int64_t y_axis = xd[axis] + rng.range(0, 9);
      concat_case(ctx, eb, xd, axis, y_axis, rng.range(0, static_cast<int>(y_axis - xd[axis])), rng.coin(0.25) ? 1 : 0);
    }
    // Expand: per-channel layer scale to NCHW, inner broadcast, scalars, random.
    expand_case(ctx, eb, {1, 96, 1, 1}, {2, 96, 14, 14});
    expand_case(ctx, eb, {3, 1}, {3, 40});
    expand_case(ctx, eb, {1, 1, 1}, {2, 3, 5});
    for (int i = 0; i < 12; ++i) {
      const int rank = rng.range(1, 6);
      const std::vector<int64_t> yd = random_dims(rng, rank, 100000);
      std::vector<int64_t> xd = yd;
      for (auto& v : xd)
        if (rng.coin(0.4)) v = 1;
      expand_case(ctx, eb, xd, yd);
    }
    // Hand-made strides: a flipped transpose (negative stride on the tiled dim) and a strided,
    // gapped output.
    {
      StridedCopy d;
      d.elem_bytes = eb, d.rank = 2, d.dims[0] = 40, d.dims[1] = 50;
      d.x_strides[0] = 1, d.x_strides[1] = -40, d.x_offset = 40 * 49;
      d.y_strides[0] = 50, d.y_strides[1] = 1;
      run_desc(ctx, d, random_bits(rng, eb, 2000), 0, 2000, 0, "flipped transpose b" + std::to_string(eb * 8));
      d.rank = 3, d.dims[0] = 3, d.dims[1] = 5, d.dims[2] = 7;
      d.x_strides[0] = 35, d.x_strides[1] = 7, d.x_strides[2] = 1, d.x_offset = 0;
      d.y_strides[0] = 100, d.y_strides[1] = 16, d.y_strides[2] = 2, d.y_offset = 3;
      run_desc(ctx, d, random_bits(rng, eb, 105), 0, 300, 0, "gapped output b" + std::to_string(eb * 8));
    }
  }
}

}  // namespace infera::gpu::test
