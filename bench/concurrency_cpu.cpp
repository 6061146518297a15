// Throughput of concurrent runs on the CPU (public API only, so it also builds against older
// infera releases): T threads, each running batch-1 inferences for D seconds, either each on
// its own Session ("sessions") or all on one shared Session ("shared"). 1 OpenMP thread per run.
// Prints one line: "<mode> <threads> threads: <runs> runs in <s> s = <img/s> img/s".
// Built and run by bench/bench_concurrency_cpu.sh.   usage: concurrency_cpu MODEL MODE THREADS SECONDS
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "infera/infera.h"

int main(int argc, char** argv) {
  if (argc != 5) return std::fprintf(stderr, "usage: concurrency_cpu MODEL sessions|shared THREADS SECONDS\n"), 2;
  const std::string mode = argv[2];
  const int threads = std::atoi(argv[3]);
  const double seconds = std::atof(argv[4]);
  if ((mode != "sessions" && mode != "shared") || threads < 1 || seconds <= 0) return 2;
  infera::SessionOptions o;
  o.num_threads = 1;
  std::vector<std::unique_ptr<infera::Session>> sessions;
  for (int i = 0; i < (mode == "shared" ? 1 : threads); ++i) {
    auto s = infera::Session::load(argv[1], o);
    if (!s.is_ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    sessions.push_back(s.take());
  }
  const infera::IoInfo& in = sessions[0]->inputs()[0];
  std::vector<int64_t> dims;
  for (const auto& d : in.dims) dims.push_back(d.value > 0 ? d.value : 1);
  infera::Tensor x = infera::Tensor::make(infera::DataType::kFloat32, dims).take();
  std::mt19937 rng(0);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (auto& s : sessions)  // warm: plans made, run contexts pooled
    for (int i = 0; i < 2; ++i)
      if (!s->run({{in.name, x}}).is_ok()) return 1;
  std::atomic<long> runs{0};
  std::atomic<bool> failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      infera::Session& s = *sessions[mode == "shared" ? 0 : t];
      while (std::chrono::steady_clock::now() < end) {
        if (!s.run({{in.name, x}}).is_ok()) failed = true;
        ++runs;
      }
    });
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed) return std::fprintf(stderr, "a run failed\n"), 1;
  std::printf("%s %d threads: %ld runs in %.1f s = %.2f img/s\n", mode.c_str(), threads, runs.load(), secs,
              runs.load() / secs);
  return 0;
}
