// Timing table: cuDNN's candidates (dnn_conv_candidates) against our best kernel (conv_candidates)
// per convolution layer (ResNet-50's by default), per batch and precision (fp16, fp32, TF32; we
// have no TF32 kernel, so TF32 compares cuDNN-TF32 with our fp32). The same protocol as bench_conv:
// each candidate's run captured 10 times into a GPU graph, the graph replayed 5 times, the median
// replay / 10 is the time. Epilogue bias + ReLU (what bench_conv and the network run).
//   bench_vendor SHAPES_FILE BATCHES(e.g. 1,256) OUT_PREFIX [--budget-s S] [--precs f16,f32,tf32]
// Writes OUT_PREFIX.csv (every candidate) and OUT_PREFIX.md (per layer: both winners, the ratio,
// and the sums over the network: ours only, cuDNN only, the faster of the two per layer).
// Stops visibly when the time budget is spent (what was measured is still written).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

#include "backends/gpu/dnn.h"
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

constexpr int kIters = 10, kReplays = 5;
constexpr double kSkipFactor = 4;  // a candidate this much slower than the layer's fastest so far: probe only

// Median ms of one enqueue, or -1 when it failed (to run or to be captured). A candidate whose
// first plain run already takes more than skip_above_ms (> 0) is not timed further: that run's
// time is returned and *probe_only set (cuDNN offers fp32 engines 50x slower than the best, and
// timing those in full spends the whole budget).
double time_enqueue(const std::function<Status(gpuStream_t)>& f, gpuStream_t st, double skip_above_ms,
                    bool* probe_only) {
  *probe_only = false;
  if (!f(st).ok()) return -1;  // warm-up (plans, shared-memory limits) before anything is timed
  if (gpuStreamSynchronize(st) != gpuSuccess) return -1;
  gpuEvent_t a, b;
  check_gpu(gpuEventCreate(&a), "event");
  check_gpu(gpuEventCreate(&b), "event");
  check_gpu(gpuEventRecord(a, st), "record");
  const bool ran = f(st).ok();
  check_gpu(gpuEventRecord(b, st), "record");
  check_gpu(gpuEventSynchronize(b), "sync");
  float probe = 0;
  check_gpu(gpuEventElapsedTime(&probe, a, b), "elapsed");
  auto done = [&](double v) {
    check_gpu(gpuEventDestroy(a), "event");
    check_gpu(gpuEventDestroy(b), "event");
    return v;
  };
  if (!ran) return done(-1);
  if (skip_above_ms > 0 && probe > skip_above_ms) {
    *probe_only = true;
    return done(probe);
  }
  gpuGraph_t graph = nullptr;
  gpuGraphExec_t exec = nullptr;
  if (gpuStreamBeginCapture(st) != gpuSuccess) return done(-1);
  bool ok = true;
  for (int i = 0; i < kIters; ++i) ok = f(st).ok() && ok;
  if (gpuStreamEndCapture(st, &graph) != gpuSuccess || !ok) {
    if (graph) (void)gpuGraphDestroy(graph);
    (void)gpuGetLastError();
    return done(-1);
  }
  if (gpuGraphInstantiate(&exec, graph) != gpuSuccess) {
    (void)gpuGraphDestroy(graph);
    return done(-1);
  }
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
  check_gpu(gpuGraphExecDestroy(exec), "graph");
  check_gpu(gpuGraphDestroy(graph), "graph");
  std::sort(ms.begin(), ms.end());
  return done(ms[ms.size() / 2]);
}

struct Best {
  std::string name;
  double ms = -1;
  void offer(const std::string& n, double t) {
    if (t > 0 && (ms < 0 || t < ms)) ms = t, name = n;
  }
};

struct Row {
  std::string prec, layer;
  int count, batch;
  Best ours, dnn, dnn_slow;  // dnn_slow: cuDNN candidates only probed (all were far slower)
  double build_ms = 0;
  int dnn_cands = 0;
  std::string why;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SHAPES_FILE BATCHES OUT_PREFIX [--budget-s S] [--precs f16,f32,tf32]\n", argv[0]);
    return 1;
  }
  double budget_s = 1e9;
  std::string precs = "f16,f32,tf32";
  for (int i = 4; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--budget-s")) {
      budget_s = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--precs")) {
      precs = argv[i + 1];
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
  const std::string prefix = argv[3];
  FILE* csv = std::fopen((prefix + ".csv").c_str(), "w");
  if (!csv) {
    std::fprintf(stderr, "cannot write %s.csv\n", prefix.c_str());
    return 1;
  }
  std::fprintf(csv, "prec,batch,layer,count,provider,candidate,workspace_bytes,ms,build_ms,timing\n");
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess || count == 0) {
    std::printf("no GPU: SKIPPED\n");
    return 77;
  }
  check_gpu(gpuSetDevice(0), "device");
  DeviceInfo dev;
  if (!query_device(0, &dev).ok()) return 2;
  if (!dnn_version()) {
    std::printf("cuDNN 9 missing at run time: SKIPPED\n");
    return 77;
  }
  gpuStream_t st;
  check_gpu(gpuStreamCreate(&st), "stream");
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  Rng rng(7);
  const size_t chunk_elems = size_t{1} << 22;
  std::vector<Row> rows;
  bool stopped = false;
  // Our fp32 result per (batch, layer), reused for the TF32 rows (we have no TF32 kernel).
  std::map<std::pair<int, std::string>, Best> ours_f32;
  for (const char* pname : {"f16", "f32", "tf32"}) {
    if (precs.find(pname) == std::string::npos) continue;
    const bool tf32 = !std::strcmp(pname, "tf32");
    const DType dtype = !std::strcmp(pname, "f16") ? DType::kF16 : DType::kF32;
    DevBuf chunk = upload(dtype, rng.values(dtype, chunk_elems));
    for (int batch : batches) {
      for (const Layer& l : layers) {
        if (elapsed() > budget_s) {
          std::printf("BUDGET of %.0f s spent: stopped before %s batch %d %s\n", budget_s, pname, batch,
                      l.name.c_str());
          stopped = true;
          break;
        }
        ConvShape s;
        s.dtype = dtype, s.n = batch, s.h = l.h, s.w = l.w, s.c = l.c, s.k = l.k, s.r = l.r, s.s = l.s;
        s.stride_h = s.stride_w = l.stride;
        s.pad_t = s.pad_l = s.pad_b = s.pad_r = l.pad;
        const size_t es = dtype_size(dtype);
        const size_t nx = static_cast<size_t>(batch) * l.h * l.w * l.c,
                     ny = static_cast<size_t>(batch) * s.p() * s.q() * l.k;
        DevBuf dx(nx * es), dy(ny * es);
        for (size_t off = 0; off < nx; off += chunk_elems)
          check_gpu(gpuMemcpyAsync(static_cast<char*>(dx.ptr) + off * es, chunk.ptr,
                                   std::min(chunk_elems, nx - off) * es, st),
                    "copy");
        check_gpu(gpuStreamSynchronize(st), "sync");
        DevBuf dw = upload(dtype, rng.values(dtype, static_cast<size_t>(l.k) * l.r * l.s * l.c, -0.05f, 0.05f));
        DevBuf db = upload(DType::kF32, rng.values(DType::kF32, l.k));
        ConvTensors t;
        t.x = {dx.ptr, 0, 0}, t.w = dw.ptr, t.y = {dy.ptr, 0, 0};
        t.ep.bias = static_cast<const float*>(db.ptr);
        t.ep.act = {infera::ActKind::kRelu, 0, 0};
        Row row;
        row.prec = pname, row.layer = l.name, row.count = l.count, row.batch = batch;
        if (!tf32) {
          for (const Candidate& c : conv_candidates(s, dev)) {
            DevBuf ws(c.workspace_bytes);
            bool probe = false;
            const double ms = time_enqueue([&](gpuStream_t q) { return conv_forward(s, c, t, ws.ptr, ws.bytes, q); },
                                           st, kSkipFactor * row.ours.ms, &probe);
            std::fprintf(csv, "%s,%d,%s,%d,ours,%s,%zu,%.5f,0,%s\n", pname, batch, l.name.c_str(), l.count, c.name,
                         c.workspace_bytes, ms, probe ? "probe" : "graph");
            if (!probe) row.ours.offer(c.name, ms);
          }
          if (dtype == DType::kF32) ours_f32[{batch, l.name}] = row.ours;
        } else {
          row.ours = ours_f32[{batch, l.name}];
          if (!row.ours.name.empty()) row.ours.name += " (fp32)";
        }
        const auto b0 = std::chrono::steady_clock::now();
        const std::vector<VendorCandidate> cands = dnn_conv_candidates(s, t.ep, tf32, 0, {}, &row.why);
        row.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
        row.dnn_cands = static_cast<int>(cands.size());
        for (const VendorCandidate& c : cands) {
          DevBuf ws(c.workspace_bytes);
          const double fastest =
              row.dnn.ms > 0 && (row.ours.ms <= 0 || row.dnn.ms < row.ours.ms) ? row.dnn.ms : row.ours.ms;
          bool probe = false;
          const double ms = time_enqueue([&](gpuStream_t q) { return dnn_conv_run(c, t, ws.ptr, ws.bytes, q); }, st,
                                         kSkipFactor * fastest, &probe);
          std::fprintf(csv, "%s,%d,%s,%d,cudnn,%s,%zu,%.5f,%.1f,%s\n", pname, batch, l.name.c_str(), l.count,
                       c.name.c_str(), c.workspace_bytes, ms, row.build_ms, probe ? "probe" : "graph");
          if (!probe)
            row.dnn.offer(c.name, ms);
          else
            row.dnn_slow.offer(c.name, ms);
        }
        std::fflush(csv);
        std::printf("%-5s %4d %-20s ours %-44s %8.4f  cudnn %-40s %8.4f  (%d cands, build %.0f ms)%s%s\n", pname, batch,
                    l.name.c_str(), row.ours.name.c_str(), row.ours.ms, row.dnn.name.c_str(), row.dnn.ms, row.dnn_cands,
                    row.build_ms, row.why.empty() ? "" : "  ", row.why.c_str());
        std::fflush(stdout);
        rows.push_back(row);
      }
      if (stopped) break;
    }
    if (stopped) break;
  }
  std::fclose(csv);
  check_gpu(gpuStreamDestroy(st), "stream");

  // The table: per precision and batch, one line per layer and the network sums (count-weighted).
  std::ofstream md(prefix + ".md");
  md << "# cuDNN vs our kernels per convolution layer\n\n"
     << "cuDNN " << dnn_version() << "; epilogue bias + ReLU; ms per conv (graph of " << kIters << ", median of "
     << kReplays << " replays); ratio = ours / cuDNN (> 1: cuDNN faster). Sums weight each "
     << "shape by its count in the network.\n";
  for (size_t i = 0; i < rows.size();) {
    const std::string prec = rows[i].prec;
    const int batch = rows[i].batch;
    md << "\n## " << prec << ", batch " << batch
       << "\n\n| layer | count | ours (best) | ms | cuDNN (best) | ms | ratio | cuDNN build ms "
          "|\n|---|---|---|---|---|---|---|---|\n";
    double sum_ours = 0, sum_dnn = 0, sum_best = 0;
    int dnn_wins = 0;
    bool complete = true;
    for (; i < rows.size() && rows[i].prec == prec && rows[i].batch == batch; ++i) {
      Row r = rows[i];
      if (r.dnn.ms <= 0 && r.dnn_slow.ms > 0) r.dnn = r.dnn_slow, r.dnn.name += " (probe)";
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %d | %s | %.4f | %s | %.4f | %.2f | %.0f |\n", r.layer.c_str(), r.count,
                    r.ours.name.c_str(), r.ours.ms, r.dnn.ms > 0 ? r.dnn.name.c_str() : r.why.c_str(), r.dnn.ms,
                    r.dnn.ms > 0 && r.ours.ms > 0 ? r.ours.ms / r.dnn.ms : 0.0, r.build_ms);
      md << line;
      if (r.count == 0) continue;
      if (r.ours.ms <= 0 || r.dnn.ms <= 0) complete = false;
      sum_ours += r.count * std::max(0.0, r.ours.ms);
      sum_dnn += r.count * std::max(0.0, r.dnn.ms);
      const double best = r.dnn.ms > 0 && (r.ours.ms <= 0 || r.dnn.ms < r.ours.ms) ? r.dnn.ms : r.ours.ms;
      if (r.dnn.ms > 0 && best == r.dnn.ms) dnn_wins += r.count;
      sum_best += r.count * std::max(0.0, best);
    }
    char tot[512];
    std::snprintf(tot, sizeof tot,
                  "\nSum over the network: ours %.3f ms, cuDNN %.3f ms (ours / cuDNN %.2f), faster of the two per "
                  "layer %.3f ms (%.2fx ours alone); cuDNN wins %d of the convolutions%s.\n",
                  sum_ours, sum_dnn, sum_dnn > 0 ? sum_ours / sum_dnn : 0.0, sum_best,
                  sum_best > 0 ? sum_ours / sum_best : 0.0, dnn_wins,
                  complete ? "" : " (INCOMPLETE: a provider had no time for some layer)");
    md << tot;
    std::printf("%s batch %d:%s", prec.c_str(), batch, tot);
  }
  if (stopped) md << "\nStopped early: the time budget was spent.\n";
  return 0;
}
