// The GPU kernel library's test driver: runs each family's suite once, then walks
// kernels/list.h and prints one line per variant (runs, worst normalized error, PASS/FAIL).
// A variant that no case exercised fails. Exit code 0 only if every variant passed.
//   test_kernels [--seed N] [--verbose] [--only conv|gemm|pool|pointwise|misc|copy|norm|int8]
#include <cstdlib>
#include <cstring>

#include "backends/gpu/kernels/s8_cutlass.h"
#include "test_util.h"

using namespace infera::gpu;
using namespace infera::gpu::test;

// The one place where a variant may be skipped, with its reason (printed, never counted as a pass).
static const char* skip_reason(const KernelInfo& k, const DeviceInfo& dev) {
  if (std::strstr(k.name, "_wgmma_") && !dev.wgmma) return "needs an sm_90 GPU and this build's sm_90a code";
  if (std::strstr(k.name, "_cutlass_") && !s8_cutlass_built()) return "this build has no CUTLASS (.deps/cutlass)";
  if (std::strstr(k.name, "_cutlass_") && !dev.wgmma) return "needs an sm_90 GPU and this build's sm_90a code";
  return nullptr;
}

int main(int argc, char** argv) {
  uint64_t seed = 20261201;
  bool verbose = false;
  const char* only = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--verbose")) {
      verbose = true;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--seed N] [--verbose] [--only conv|gemm|pool|pointwise|misc|copy|norm|int8]\n",
                   argv[0]);
      return 1;
    }
  }
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess || count < 1) {
    std::printf("SKIPPED: no %s device\n", kGpuVendor);
    return 77;
  }
  Ctx ctx;
  ctx.rng = Rng(seed);
  ctx.results.verbose = verbose;
  check_gpu(gpuSetDevice(0), "set device");
  const Status st = query_device(0, &ctx.dev);
  if (!st.ok()) {
    std::fprintf(stderr, "query_device: %s\n", st.error);
    return 2;
  }
  check_gpu(gpuStreamCreate(&ctx.stream), "stream");
  std::printf("device 0: arch %d, %d multiprocessors, %d bytes shared memory per block, wgmma %s; seed %llu\n",
              ctx.dev.arch, ctx.dev.sm_count, ctx.dev.smem_optin, ctx.dev.wgmma ? "yes" : "no",
              static_cast<unsigned long long>(seed));

  struct Suite {
    const char* name;
    void (*run)(Ctx&);
  };
  const Suite suites[] = {{"conv", run_conv_suite},           {"gemm", run_gemm_suite}, {"pool", run_pool_suite},
                          {"pointwise", run_pointwise_suite}, {"misc", run_misc_suite}, {"copy", run_copy_suite},
                          {"norm", run_norm_suite},           {"int8", run_int8_suite}};
  for (const Suite& s : suites) {
    if (only && std::strcmp(only, s.name)) continue;
    std::printf("running %s suite\n", s.name);
    std::fflush(stdout);
    s.run(ctx);
  }

  int failed = 0, passed = 0, skipped = 0;
  std::printf("\n%-50s %6s %10s  result\n", "variant (kernels/list.h)", "runs", "max err");
  for (int i = 0; i < kernel_count(); ++i) {
    const KernelInfo& k = kernel_info(i);
    const bool in_suite =
        !only || (!std::strcmp(only, "conv") && k.family == KernelFamily::kConv) ||
        (!std::strcmp(only, "gemm") && k.family == KernelFamily::kGemm) ||
        (!std::strcmp(only, "pool") && (k.family == KernelFamily::kPool || k.family == KernelFamily::kGlobalPool)) ||
        (!std::strcmp(only, "pointwise") &&
         (k.family == KernelFamily::kPointwise || k.family == KernelFamily::kCast ||
          k.family == KernelFamily::kBatchNorm || k.family == KernelFamily::kConcat)) ||
        (!std::strcmp(only, "misc") && (k.family == KernelFamily::kSoftmax || k.family == KernelFamily::kResize ||
                                        k.family == KernelFamily::kLayout)) ||
        (!std::strcmp(only, "copy") && (k.family == KernelFamily::kCopy || k.family == KernelFamily::kTranspose)) ||
        (!std::strcmp(only, "norm") && (k.family == KernelFamily::kLayerNorm || k.family == KernelFamily::kReduce)) ||
        (!std::strcmp(only, "int8") && (k.family == KernelFamily::kQConv || k.family == KernelFamily::kQuant));
    if (!in_suite) {
      ++skipped;
      continue;
    }
    if (const char* why = skip_reason(k, ctx.dev)) {
      std::printf("%-50s %6s %10s  SKIPPED (%s)\n", k.name, "-", "-", why);
      ++skipped;
      continue;
    }
    const auto it = ctx.results.by_id.find(k.id);
    const VariantResult r = it == ctx.results.by_id.end() ? VariantResult{} : it->second;
    const bool ok = r.runs > 0 && r.failures == 0;
    std::printf("%-50s %6d %10.3g  %s\n", k.name, r.runs, r.max_err,
                ok ? "PASS" : (r.runs == 0 ? "FAIL (no case ran it)" : "FAIL"));
    if (!ok && !r.first_failure.empty()) std::printf("    first failure: %s\n", r.first_failure.c_str());
    ok ? ++passed : ++failed;
  }
  const auto orphan = ctx.results.by_id.find(KernelId::kCount);
  if (orphan != ctx.results.by_id.end() && orphan->second.failures) {
    std::printf("%d case(s) had no candidate at all\n", orphan->second.failures);
    ++failed;
  }
  std::printf("\n%d variants passed, %d failed%s\n", passed, failed,
              skipped ? (", " + std::to_string(skipped) + " skipped or not in the selected suite").c_str() : "");
  check_gpu(gpuStreamDestroy(ctx.stream), "stream destroy");
  return failed ? 1 : 0;
}
