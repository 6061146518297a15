// Micro-benchmark of the memory-bound kernels behind ConvNeXt's and ShuffleNet's plumbing: the
// strided copies (every candidate copy_candidates offers), LayerNorm and the reductions, next to
// a device-to-device memcpy of the same bytes and the library's boundary layout kernels, all in
// the same run. Each op is captured 20 times into a GPU graph, the graph replayed 7 times; the
// time is the median replay / 20. GB/s counts each byte read and each byte written once.
//   bench_memops [OUT_CSV]
// CSV columns: case,variant,mbytes,us,gbps,pct_of_memcpy
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "test_util.h"

using namespace infera::gpu;
using namespace infera::gpu::test;

namespace {

constexpr int kIters = 20, kReplays = 7;
using Op = std::function<Status(gpuStream_t)>;

// Median ms per op, or -1 when it failed.
double time_op(const Op& op, gpuStream_t st) {
  for (int i = 0; i < 2; ++i)
    if (!op(st).ok()) return -1;
  check_gpu(gpuStreamSynchronize(st), "warmup");
  gpuGraph_t graph;
  gpuGraphExec_t exec;
  check_gpu(gpuStreamBeginCapture(st), "capture");
  for (int i = 0; i < kIters; ++i) (void)op(st);
  check_gpu(gpuStreamEndCapture(st, &graph), "end capture");
  check_gpu(gpuGraphInstantiate(&exec, graph), "instantiate");
  gpuEvent_t a, b;
  check_gpu(gpuEventCreate(&a), "event");
  check_gpu(gpuEventCreate(&b), "event");
  check_gpu(gpuGraphLaunch(exec, st), "launch");
  std::vector<double> ms;
  for (int r = 0; r < kReplays; ++r) {
    check_gpu(gpuEventRecord(a, st), "record");
    check_gpu(gpuGraphLaunch(exec, st), "launch");
    check_gpu(gpuEventRecord(b, st), "record");
    check_gpu(gpuEventSynchronize(b), "sync");
    float e = 0;
    check_gpu(gpuEventElapsedTime(&e, a, b), "elapsed");
    ms.push_back(e / kIters);
  }
  check_gpu(gpuEventDestroy(a), "event");
  check_gpu(gpuEventDestroy(b), "event");
  check_gpu(gpuGraphExecDestroy(exec), "graph");
  check_gpu(gpuGraphDestroy(graph), "graph");
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Bench {
  gpuStream_t st;
  FILE* csv;
  DevBuf src, dst;  // big enough for every case
  std::map<size_t, double> memcpy_gbps;

  double memcpy_rate(size_t moved) {  // GB/s of a D2D memcpy moving the same bytes (read + write)
    auto it = memcpy_gbps.find(moved);
    if (it != memcpy_gbps.end()) return it->second;
    const double ms = time_op(
        [&](gpuStream_t s) -> Status {
          GPU_TRY(gpuMemcpyAsync(dst.ptr, src.ptr, moved / 2, s));
          return {};
        },
        st);
    return memcpy_gbps[moved] = moved / (ms * 1e6);
  }
  void row(const std::string& what, const std::string& variant, size_t moved, const Op& op) {
    const double ms = time_op(op, st);
    const double gbps = ms > 0 ? moved / (ms * 1e6) : 0, ref = memcpy_rate(moved);
    std::printf("%-46s %-28s %9.2f %9.2f %8.0f %6.0f%%\n", what.c_str(), variant.c_str(), moved / 1e6, ms * 1e3, gbps,
                100.0 * gbps / ref);
    std::fprintf(csv, "%s,%s,%.3f,%.3f,%.1f,%.1f\n", what.c_str(), variant.c_str(), moved / 1e6, ms * 1e3, gbps,
                 100.0 * gbps / ref);
    std::fflush(stdout);
  }
  // Every candidate of a copy, then the memcpy reference. Bytes moved: the output once and the
  // input once (x_elems, default as many as the output: an Expand reads fewer).
  void copy(const std::string& what, StridedCopy d, int64_t x_elems = -1) {
    d.x = src.ptr, d.y = dst.ptr;
    int64_t n = 1;
    for (int k = 0; k < d.rank; ++k) n *= d.dims[k];
    const size_t moved = static_cast<size_t>(n + (x_elems < 0 ? n : x_elems)) * d.elem_bytes;
    for (const Candidate& c : copy_candidates(d))
      row(what, c.name, moved, [=](gpuStream_t s) { return strided_copy(d, c, s); });
    row(what, "memcpy (same bytes)", moved, [&](gpuStream_t s) -> Status {
      GPU_TRY(gpuMemcpyAsync(dst.ptr, src.ptr, moved / 2, s));
      return {};
    });
  }
};

std::string dims_str(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(v);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess || count < 1) {
    std::printf("SKIPPED: no %s device\n", kGpuVendor);
    return 77;
  }
  Bench b;
  b.csv = std::fopen(argc > 1 ? argv[1] : "/dev/null", "w");
  if (!b.csv) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::fprintf(b.csv, "case,variant,mbytes,us,gbps,pct_of_memcpy\n");
  check_gpu(gpuSetDevice(0), "device");
  check_gpu(gpuStreamCreate(&b.st), "stream");
  const size_t kBytes = size_t{320} << 20;  // the largest case: 256 x 96 x 56 x 56 fp32 = 308 MB
  b.src = DevBuf(kBytes);
  b.dst = DevBuf(kBytes);
  check_gpu(gpuMemsetAsync(b.src.ptr, 0x3c, kBytes, b.st), "fill");  // finite fp16 / fp32 values
  check_gpu(gpuMemsetAsync(b.dst.ptr, 0, kBytes, b.st), "fill");
  check_gpu(gpuStreamSynchronize(b.st), "fill");
  std::printf("%-46s %-28s %9s %9s %8s %7s\n", "case", "variant", "MB moved", "us", "GB/s", "memcpy");

  for (int eb : {2, 4}) {
    const char* t = eb == 2 ? "f16" : "f32";
    for (int64_t n : {int64_t{1}, int64_t{32}, int64_t{256}}) {
      if (eb == 4 && n == 1) continue;
      StridedCopy d;
      const int64_t nchw[4] = {n, 96, 56, 56}, nhwc[4] = {n, 56, 56, 96};
      const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
      (void)transpose_desc(eb, 4, nchw, to_nhwc, nullptr, nullptr, &d);
      b.copy(std::string(t) + " NCHW->NHWC " + dims_str({n, 96, 56, 56}), d);
      const DType dt = eb == 2 ? DType::kF16 : DType::kF32;
      const size_t moved = static_cast<size_t>(n) * 96 * 56 * 56 * eb * 2;
      b.row(std::string(t) + " NCHW->NHWC " + dims_str({n, 96, 56, 56}), "nchw_to_nhwc (layout.cu)", moved,
            [&](gpuStream_t s) {
              return nchw_to_nhwc(dt, dt, static_cast<int>(n), 96, 56, 56, b.src.ptr, {b.dst.ptr, 0, 0}, 0, s);
            });
      (void)transpose_desc(eb, 4, nhwc, to_nchw, nullptr, nullptr, &d);
      b.copy(std::string(t) + " NHWC->NCHW " + dims_str({n, 56, 56, 96}), d);
      b.row(std::string(t) + " NHWC->NCHW " + dims_str({n, 56, 56, 96}), "nhwc_to_nchw (layout.cu)", moved,
            [&](gpuStream_t s) {
              return nhwc_to_nchw(dt, dt, static_cast<int>(n), 96, 56, 56, {b.src.ptr, 0, 0}, b.dst.ptr, s);
            });
    }
  }
  for (int64_t n : {int64_t{32}, int64_t{256}}) {
    StridedCopy d;
    const int64_t x1[4] = {n, 768, 7, 7};
    const int p1[4] = {0, 2, 3, 1};
    (void)transpose_desc(2, 4, x1, p1, nullptr, nullptr, &d);
    b.copy("f16 NCHW->NHWC " + dims_str({n, 768, 7, 7}), d);
    // ShuffleNetV2 channel shuffle (116 channels, 28x28), plain and on NHWC data.
    const int64_t x2[5] = {n, 2, 58, 28, 28};
    const int p2[5] = {0, 2, 1, 3, 4};
    (void)transpose_desc(2, 5, x2, p2, nullptr, nullptr, &d);
    b.copy("f16 shuffle NCHW " + dims_str({n, 2, 58, 28, 28}), d);
    const int64_t x3[4] = {n, 784, 2, 58};
    const int p3[4] = {0, 1, 3, 2};
    (void)transpose_desc(2, 4, x3, p3, nullptr, nullptr, &d);
    b.copy("f16 shuffle NHWC " + dims_str({n, 784, 2, 58}), d);
    // Split (half the channels) and one Concat input, plain NCHW.
    const int64_t x4[4] = {n, 116, 28, 28}, st4[4] = {0, 58, 0, 0}, sp4[4] = {1, 1, 1, 1}, y4[4] = {n, 58, 28, 28};
    (void)slice_desc(2, 4, x4, st4, sp4, y4, nullptr, nullptr, &d);
    b.copy("f16 split channels " + dims_str({n, 116, 28, 28}), d);
    (void)concat_desc(2, 4, y4, 1, 116, 58, nullptr, nullptr, &d);
    b.copy("f16 concat input " + dims_str({n, 58, 28, 28}), d);
    const int64_t x5[4] = {n, 96, 1, 1}, y5[4] = {n, 96, 56, 56};
    (void)expand_desc(2, 4, x5, y5, nullptr, nullptr, &d);
    b.copy("f16 expand " + dims_str({n, 96, 1, 1}) + "->56x56", d, n * 96);
    const int64_t x6[1] = {n * 96 * 56 * 56};
    const int p6[1] = {0};
    (void)transpose_desc(2, 1, x6, p6, nullptr, nullptr, &d);
    b.copy("f16 contiguous " + dims_str({n * 96 * 56 * 56}), d);
  }
  for (DType t : {DType::kF16, DType::kF32}) {
    const char* tn = t == DType::kF16 ? "f16" : "f32";
    const size_t es = dtype_size(t);
    const std::vector<std::pair<int64_t, int>> ln_shapes = {
        {32 * 3136, 96}, {256 * 3136, 96}, {256 * 49, 768}, {4096, 4096}, {512, 20000}};
    for (auto [rows, cols] : ln_shapes) {
      LayerNormDesc d;
      d.dtype = t, d.rows = rows, d.cols = cols, d.x = b.src.ptr, d.y = b.dst.ptr;
      d.gamma = static_cast<const float*>(b.src.ptr), d.beta = static_cast<const float*>(b.src.ptr);
      b.row(std::string(tn) + " layernorm " + std::to_string(rows) + "x" + std::to_string(cols),
            kernel_info(layernorm_variant(d)).name, static_cast<size_t>(rows) * cols * es * 2,
            [=](gpuStream_t s) { return layernorm(d, s); });
    }
    const std::vector<std::tuple<int64_t, int64_t, int64_t>> red_shapes = {
        {32 * 96, 3136, 1}, {256 * 96, 49, 1}, {32, 3136, 96}, {256, 49, 768}};
    for (auto [outer, red, inner] : red_shapes) {
      ReduceDesc d;
      d.dtype = t, d.op = ReduceOp::kMean, d.outer = outer, d.reduce = red, d.inner = inner;
      d.x = b.src.ptr, d.y = b.dst.ptr;
      b.row(std::string(tn) + " reduce mean " + dims_str({outer, red, inner}), kernel_info(reduce_variant(d)).name,
            static_cast<size_t>(outer * red * inner + outer * inner) * es, [=](gpuStream_t s) { return reduce(d, s); });
    }
  }
  std::fclose(b.csv);
  check_gpu(gpuStreamDestroy(b.st), "stream");
  return 0;
}
