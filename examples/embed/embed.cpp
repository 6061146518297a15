// The smallest program that embeds infera: load a model, run it from 4 threads, print the top-5
// classes of each run. Built by tests/install against an installed infera, through
// find_package(infera) and through pkg-config.   usage: embed MODEL.onnx
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include <infera/infera.h>

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: embed MODEL.onnx\n"), 2;
  auto session = infera::Session::load(argv[1]);
  if (!session.is_ok()) return std::fprintf(stderr, "embed: %s\n", session.message().c_str()), 1;
  const infera::IoInfo& in = session.value()->inputs()[0];
  std::vector<int64_t> dims;
  for (const infera::IoDim& d : in.dims) dims.push_back(d.value > 0 ? d.value : 1);  // free dims: 1
  infera::Tensor x = infera::Tensor::make(in.dtype, dims).take();
  std::mt19937 rng(0);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<std::vector<int>> top(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto y = session.value()->run({{in.name, x}});
      if (!y.is_ok()) return;
      const float* p = y.value()[0].data_as<float>();
      std::vector<int> idx(y.value()[0].numel());
      std::iota(idx.begin(), idx.end(), 0);
      std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int a, int b) { return p[a] > p[b]; });
      top[t].assign(idx.begin(), idx.begin() + 5);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    if (top[t].size() != 5) return std::fprintf(stderr, "embed: run %d failed\n", t), 1;
    std::printf("thread %d top-5: %d %d %d %d %d\n", t, top[t][0], top[t][1], top[t][2], top[t][3], top[t][4]);
  }
  return 0;
}
