// libFuzzer target: the bytes are an ONNX model. Loads it from memory (no model dir, so external
// data must be refused), and if it loads, prepares and runs it on small seeded inputs.
// Any crash, leak, UB report or timeout is a bug: bad models must give an error Status.
// Build and run: bash tests/fuzz/build.sh, then bash tests/fuzz/run.sh model 600.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "infera/infera.h"

namespace {

constexpr int64_t kMaxInputElements = 1000000;
// Plans over this are loaded and planned but not run: a legal Resize to [1,10,286720,4] (45 MB,
// 0.2 s in a release build) passed libFuzzer's 10 s timeout under ASan -O1 at nice 19 (was 64 MiB).
constexpr size_t kMaxArenaBytes = size_t(16) << 20;
// And plans of more FLOPs: a 3-D ConvTranspose node test at 22 MFLOP (0.07 s in a release build)
// passed the 10 s timeout in the reference kernel under ASan -O1 and coverage at nice 19.
constexpr double kMaxFlops = 5e6;
const bool kVerbose = std::getenv("INFERA_FUZZ_VERBOSE") != nullptr;  // prints why a model stopped

void note(const char* stage, const std::string& msg) {
  if (kVerbose) std::fprintf(stderr, "fuzz_model: %s: %s\n", stage, msg.c_str());
}

// Fills a tensor with small seeded values; integers stay in [-2, 3] so that index-like inputs
// are mostly valid and the kernels beyond the checks get exercised too.
void fill(infera::Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n = t.numel();
  auto small = [&] { return static_cast<int>(rng() % 6) - 2; };
  switch (t.dtype()) {
    case infera::DataType::kFloat32:
      for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = static_cast<float>(rng() % 2001) / 1000.f - 1.f;
      break;
    case infera::DataType::kFloat64:
      for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = static_cast<double>(rng() % 2001) / 1000. - 1.;
      break;
    case infera::DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = small();
      break;
    case infera::DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.data_as<int32_t>()[i] = small();
      break;
    case infera::DataType::kBool:
    case infera::DataType::kUInt8:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 2);
      break;
    default: {
      auto* p = static_cast<uint8_t*>(t.data());
      for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng() % 3);
    }
  }
}

// Runs once with every symbolic/unknown dim set to `sym`; skips inputs that would be too large.
void run_with(infera::Session& s, int64_t sym, uint32_t seed) {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, infera::Tensor> inputs;
  for (const infera::IoInfo& io : s.inputs()) {
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (const infera::IoDim& d : io.dims) {
      int64_t v = d.value >= 0 ? d.value : sym;
      dims.push_back(v);
      if (v > kMaxInputElements) return;
      n *= v;
      if (n > kMaxInputElements) return;
    }
    if (!infera::dtype_supported(io.dtype)) return;
    auto t = infera::Tensor::make(io.dtype, dims);
    if (!t.is_ok()) return;
    fill(t.value(), seed++);
    shapes[io.name] = dims;
    inputs[io.name] = t.take();
  }
  auto p = s.prepare(shapes);
  if (!p.is_ok()) return note("prepare", p.message());
  // A legal but large plan (a Resize to 73M elements, found by this target) takes seconds under
  // ASan and is no finding: big outputs are the planner's and the limits' business, checked above.
  if (p.value().arena_bytes > kMaxArenaBytes) return note("run", "skipped: arena over 16 MiB");
  if (p.value().flops > kMaxFlops) return note("run", "skipped: over 5 MFLOP");
  auto r = s.run(inputs);
  note("run", r.is_ok() ? "ok" : r.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  infera::SessionOptions opts;
  opts.num_threads = 1;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto s = infera::Session::load_from_memory(bytes, "", opts);
  if (!s.is_ok()) {
    // An error must say something.
    if (s.message().empty()) __builtin_trap();
    note("load", s.message());
    return 0;
  }
  run_with(*s.value(), 1, 1234);
  run_with(*s.value(), 2, 5678);
  return 0;
}
