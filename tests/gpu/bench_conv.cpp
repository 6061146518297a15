// Micro-benchmark of the fp16 convolution candidates on a list of layer shapes (ResNet-50's by
// default): for each shape and batch, every candidate that conv_candidates offers is captured
// 20 times into a GPU graph (so launch gaps stay out, as in a captured plan) and the graph is
// replayed; the median replay / 20 is the time. Epilogue: bias + ReLU (what the network runs);
// --dtype s8 times the int8 candidates (qconv_candidates) with the requantize + ReLU epilogue.
//   bench_conv SHAPES_FILE BATCHES(e.g. 1,256) OUT_CSV [--dtype f16|f32|s8] [--only LAYER]
//              [--candidate NAME]   (with --candidate: 3 plain launches, no timing: for ncu)
//              [--exclude A,B,...]  (variants left out, e.g. those that failed the tests)
// CSV columns: name,count,batch,candidate,splits,ms,tflops
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using namespace infera::gpu;
using namespace infera::gpu::test;

namespace {

struct Layer {
  std::string name;
  int count, c, k, h, w, r, s, stride, pad;
};

std::vector<Layer> read_shapes(const char* path) {
  std::ifstream in(path);
  std::vector<Layer> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Layer l;
    if (is >> l.name >> l.count >> l.c >> l.k >> l.h >> l.w >> l.r >> l.s >> l.stride >> l.pad) out.push_back(l);
  }
  return out;
}

constexpr int kIters = 20, kReplays = 7;

// Median ms per conv of candidate c, or a negative value when it failed.
template <class F>
double time_launch(F&& launch, gpuStream_t st) {
  // Warm up (also raises shared-memory limits before capture).
  for (int i = 0; i < 2; ++i)
    if (!launch(st).ok()) return -1;
  check_gpu(gpuStreamSynchronize(st), "warmup");
  gpuGraph_t graph;
  gpuGraphExec_t exec;
  check_gpu(gpuStreamBeginCapture(st), "capture");
  for (int i = 0; i < kIters; ++i) (void)launch(st);
  check_gpu(gpuStreamEndCapture(st, &graph), "end capture");
  check_gpu(gpuGraphInstantiate(&exec, graph), "instantiate");
  gpuEvent_t a, b;
  check_gpu(gpuEventCreate(&a), "event");
  check_gpu(gpuEventCreate(&b), "event");
  check_gpu(gpuGraphLaunch(exec, st), "launch");  // warm replay
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
double time_candidate(const ConvShape& s, const Candidate& c, const ConvTensors& t, void* ws, gpuStream_t st) {
  return time_launch([&](gpuStream_t q) { return conv_forward(s, c, t, ws, c.workspace_bytes, q); }, st);
}

// The int8 path of one layer: the s8 candidates, bias + ReLU, requantized; best ms or -1.
double bench_s8(const Layer& l, int batch, const DeviceInfo& dev, gpuStream_t st, FILE* csv, double flops,
                std::string& best_name) {
  QConvShape s;
  s.n = batch, s.h = l.h, s.w = l.w, s.c = l.c, s.k = l.k, s.r = l.r, s.s = l.s;
  s.stride_h = s.stride_w = l.stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = l.pad;
  s.act = {infera::ActKind::kRelu, 0, 0};
  const Status chk = qconv_check(s);
  if (!chk.ok()) {
    best_name = std::string("declined: ") + chk.error;
    return -1;
  }
  const size_t nx = static_cast<size_t>(batch) * l.h * l.w * l.c, ny = static_cast<size_t>(batch) * s.p() * s.q() * l.k;
  // Data like a network's (the kernels ran faster on zeros than in the network, see gpu_conv.cpp): x
  // like a quantized activation after Relu (half 0, half in [0, 127]), weights in [-64, 64], scales
  // that spread y over int8's range.
  const size_t kred = static_cast<size_t>(l.r) * l.s * l.c;
  std::vector<int8_t> x(nx), w(static_cast<size_t>(l.k) * kred);
  uint32_t r = 0x9e3779b9u;
  auto next = [&r] { return (r = r * 1664525u + 1013904223u) >> 8; };  // an LCG's high 24 bits
  for (int8_t& v : x) v = static_cast<int8_t>(next() & 1 ? next() & 0x7f : 0);
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(next() % 129) - 64);
  std::vector<int32_t> bias(l.k, 5);
  std::vector<double> scale(l.k, 3.0 / (std::sqrt(static_cast<double>(kred)) * 1920.0));
  const std::vector<int32_t> rows = qconv_epilogue_rows(scale.data(), l.k, 10.0);
  DevBuf dx(nx + 16), dy(ny + 16), dw(w.size() + 16), db(bias.size() * 4), ds(scale.size() * 8), drows(rows.size() * 4);
  check_gpu(gpuMemcpyHtoD(dx.ptr, x.data(), nx), "upload");
  check_gpu(gpuMemcpyHtoD(dw.ptr, w.data(), w.size()), "upload");
  check_gpu(gpuMemcpyHtoD(db.ptr, bias.data(), bias.size() * 4), "upload");
  check_gpu(gpuMemcpyHtoD(ds.ptr, scale.data(), scale.size() * 8), "upload");
  check_gpu(gpuMemcpyHtoD(drows.ptr, rows.data(), rows.size() * 4), "upload");
  check_gpu(gpuDeviceSynchronize(), "sync");
  QConvTensors t;
  t.x = {dx.ptr, 0, 0};
  t.w = static_cast<const int8_t*>(dw.ptr);
  t.y = {dy.ptr, 0, 0};
  t.bias = static_cast<const int32_t*>(db.ptr);
  t.scale = static_cast<const double*>(ds.ptr);
  t.inv_y = 10.0;
  t.epi_rows = static_cast<const int32_t*>(drows.ptr);
  t.acc_bound = qconv_acc_bound(w.data(), l.k, static_cast<int64_t>(kred), bias.data(), 0);
  t.sy_max = qconv_sy_max(scale.data(), l.k, 10.0);
  double best = -1;
  for (const Candidate& c : qconv_candidates(s, dev)) {
    DevBuf ws(c.workspace_bytes);
    t.ws = ws.ptr, t.ws_bytes = ws.bytes;
    const double ms = time_launch([&](gpuStream_t q) { return qconv_forward(s, c, t, q); }, st);
    std::fprintf(csv, "%s,%d,%d,%s,%d,%.5f,%.2f\n", l.name.c_str(), l.count, batch, c.name, c.splits, ms,
                 ms > 0 ? flops / ms / 1e9 : 0.0);
    if (ms > 0 && (best < 0 || ms < best)) best = ms, best_name = c.name;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SHAPES_FILE BATCHES OUT_CSV [--dtype f16|f32|s8]\n", argv[0]);
    return 1;
  }
  DType dtype = DType::kF16;
  const char* only = nullptr;
  const char* candidate = nullptr;
  std::string exclude;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dtype")) {
      dtype = !std::strcmp(argv[i + 1], "f32")  ? DType::kF32
              : !std::strcmp(argv[i + 1], "s8") ? DType::kS8
                                                : DType::kF16;
    } else if (!std::strcmp(argv[i], "--only")) {
      only = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--candidate")) {
      candidate = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--exclude")) {
      exclude = std::string(",") + argv[i + 1] + ",";
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 1;
    }
  }
  const std::vector<Layer> layers = read_shapes(argv[1]);
  if (layers.empty()) {
    std::fprintf(stderr, "no shapes in %s\n", argv[1]);
    return 1;
  }
  std::vector<int> batches;
  for (const char* p = argv[2]; *p;) {
    batches.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  FILE* csv = std::fopen(argv[3], "w");
  if (!csv) {
    std::fprintf(stderr, "cannot write %s\n", argv[3]);
    return 1;
  }
  std::fprintf(csv, "name,count,batch,candidate,splits,ms,tflops\n");
  check_gpu(gpuSetDevice(0), "device");
  DeviceInfo dev;
  if (!query_device(0, &dev).ok()) return 2;
  gpuStream_t st;
  check_gpu(gpuStreamCreate(&st), "stream");
  Rng rng(7);
  const size_t chunk_elems = size_t{1} << 22;
  DevBuf chunk = upload(dtype == DType::kS8 ? DType::kF16 : dtype, rng.values(DType::kF16, chunk_elems));
  std::printf("%-20s %5s %-48s %9s %8s\n", "layer", "batch", "best candidate", "ms", "TFLOP/s");
  for (int batch : batches) {
    double total_ms = 0;
    for (const Layer& l : layers) {
      if (only && l.name != only) continue;
      ConvShape s;
      s.dtype = dtype, s.n = batch, s.h = l.h, s.w = l.w, s.c = l.c, s.k = l.k, s.r = l.r, s.s = l.s;
      s.stride_h = s.stride_w = l.stride;
      s.pad_t = s.pad_l = s.pad_b = s.pad_r = l.pad;
      const int P = s.p(), Q = s.q();
      const double flops = 2.0 * batch * P * Q * l.k * l.c * l.r * l.s;
      if (dtype == DType::kS8) {
        std::string name;
        const double best = bench_s8(l, batch, dev, st, csv, flops, name);
        std::printf("%-20s %5d %-48s %9.4f %8.1f\n", l.name.c_str(), batch, name.c_str(), best,
                    best > 0 ? flops / best / 1e9 : 0.0);
        std::fflush(stdout);
        if (best > 0) total_ms += best * l.count;
        continue;
      }
      const size_t nx = static_cast<size_t>(batch) * l.h * l.w * l.c, ny = static_cast<size_t>(batch) * P * Q * l.k;
      // Random data: one random chunk, copied over the whole input (timing needs no more entropy).
      DevBuf dx(nx * dtype_size(dtype)), dy(ny * dtype_size(dtype));
      for (size_t off = 0; off < nx; off += chunk_elems) {
        const size_t n = std::min(chunk_elems, nx - off);
        check_gpu(
            gpuMemcpyAsync(static_cast<char*>(dx.ptr) + off * dtype_size(dtype), chunk.ptr, n * dtype_size(dtype), st),
            "copy");
      }
      check_gpu(gpuStreamSynchronize(st), "sync");
      DevBuf dw = upload(dtype, rng.values(dtype, static_cast<size_t>(l.k) * l.r * l.s * l.c, -0.05f, 0.05f));
      DevBuf db = upload(DType::kF32, rng.values(DType::kF32, l.k));
      ConvTensors t;
      t.x = {dx.ptr, 0, 0};
      t.w = dw.ptr;
      t.y = {dy.ptr, 0, 0};
      t.ep.bias = static_cast<const float*>(db.ptr);
      t.ep.act = {infera::ActKind::kRelu, 0, 0};
      double best = -1;
      std::string best_name;
      for (const Candidate& c : conv_candidates(s, dev)) {
        if (candidate && std::strcmp(candidate, c.name)) continue;
        if (exclude.find(std::string(",") + c.name + ",") != std::string::npos) continue;
        DevBuf ws(c.workspace_bytes);
        if (candidate) {  // profiling run: plain launches
          for (int i = 0; i < 3; ++i) {
            const Status cs = conv_forward(s, c, t, ws.ptr, c.workspace_bytes, st);
            if (!cs.ok()) std::fprintf(stderr, "%s: %s\n", c.name, cs.error);
          }
          check_gpu(gpuStreamSynchronize(st), "profile");
          continue;
        }
        const double ms = time_candidate(s, c, t, ws.ptr, st);
        std::fprintf(csv, "%s,%d,%d,%s,%d,%.5f,%.2f\n", l.name.c_str(), l.count, batch, c.name, c.splits, ms,
                     ms > 0 ? flops / ms / 1e9 : 0.0);
        if (ms > 0 && (best < 0 || ms < best)) best = ms, best_name = c.name;
      }
      std::printf("%-20s %5d %-48s %9.4f %8.1f\n", l.name.c_str(), batch, best_name.c_str(), best,
                  best > 0 ? flops / best / 1e9 : 0.0);
      std::fflush(stdout);
      if (best > 0) total_ms += best * l.count;
    }
    std::printf("batch %d: sum over ResNet-50's 53 convolutions (best candidate each) = %.3f ms\n", batch, total_ms);
  }
  std::fclose(csv);
  check_gpu(gpuStreamDestroy(st), "stream");
  return 0;
}
