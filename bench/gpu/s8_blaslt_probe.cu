// Probe: how fast cuBLASLt's int8 GEMM (IMMA, int8 out) runs ResNet-50's 1x1 stride-1 convolutions
// as NHWC GEMMs, with the requantize of infera's QConv folded into cuBLASLt's epilogue:
//   y[m][n] = sat8(rint(act(alpha[n] * acc[m][n] + bias_f[n] + beta * z[m][n])))
// (alpha = per-channel weight scale * x scale / y scale, bias_f = bias * alpha, beta = z scale / y
// scale; symmetric int8, zero points 0). Column-major view: D[k_out x M] = op(A)^T B with
// A = the weights [k_out][c] (TRANSA = T), B = the NHWC input [M][c] (N), D / C = the NHWC output.
// Prints per shape the best heuristic algorithm's time and the bytes' rate, and a sample of rows
// checked against a float reference (|diff| > 1 counts as wrong, == 1 as a rounding-tie difference).
// Usage: s8_blaslt_probe SHAPES_FILE BATCHES(csv) [reps]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Shape {
  std::string name;
  int count, c, k, h, w, r, s, stride;
};

struct Variant {
  const char* name;
  bool alpha_vec, residual, bias, relu;
};

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SHAPES BATCHES [reps]\n", argv[0]);
    return 1;
  }
  std::vector<Shape> shapes;
  std::ifstream f(argv[1]);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Shape s;
    int pad;
    is >> s.name >> s.count >> s.c >> s.k >> s.h >> s.w >> s.r >> s.s >> s.stride >> pad;
    if (s.r == 1 && s.s == 1 && s.stride == 1 && s.count > 0) shapes.push_back(s);
  }
  std::vector<int> batches;
  for (std::stringstream bs(argv[2]); bs.good();) {
    std::string t;
    std::getline(bs, t, ',');
    batches.push_back(std::atoi(t.c_str()));
  }
  const int reps = argc > 3 ? std::atoi(argv[3]) : 20;
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
  std::printf("cublasLt %zu\n", cublasLtGetVersion());
  const Variant variants[] = {
      {"raw(alpha=1)", false, false, false, false},
      {"vec+bias+relu", true, false, true, true},
      {"vec+res+bias+relu", true, true, true, true},
  };
  size_t ws_bytes = 64 << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::mt19937 rng(7);
  std::printf("%-18s %5s %8s %5s %5s %-18s %9s %8s %7s %6s %s\n", "layer", "batch", "M", "C", "K", "variant", "ms",
              "GB/s", "wrong", "ties", "algo");
  double tot[3][2] = {};
  for (int b : batches) {
    for (const Shape& s : shapes) {
      const int64_t M = int64_t(b) * s.h * s.w, C = s.c, K = s.k;
      std::vector<int8_t> hx(M * C), hw(K * C), hz(M * K);
      std::uniform_int_distribution<int> d8(-127, 127);
      for (auto& v : hx) v = int8_t(d8(rng) / 2);
      for (auto& v : hw) v = int8_t(d8(rng));
      for (auto& v : hz) v = int8_t(d8(rng));
      std::vector<float> halpha(K), hbias(K);
      for (int n = 0; n < K; ++n) {
        halpha[n] = (0.5f + (rng() % 1000) / 1000.f) / (64.f * 16.f * std::sqrt(float(C)));
        hbias[n] = ((int(rng() % 2001) - 1000) / 1000.f) * 20.f;
      }
      const float beta = 0.37f;
      int8_t *x, *w, *z, *y;
      float *alpha, *bias;
      CK(cudaMalloc(&x, M * C));
      CK(cudaMalloc(&w, K * C));
      CK(cudaMalloc(&z, M * K));
      CK(cudaMalloc(&y, M * K));
      CK(cudaMalloc(&alpha, K * 4));
      CK(cudaMalloc(&bias, K * 4));
      CK(cudaMemcpy(x, hx.data(), M * C, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(w, hw.data(), K * C, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(z, hz.data(), M * K, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(alpha, halpha.data(), K * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(bias, hbias.data(), K * 4, cudaMemcpyHostToDevice));
      for (int vi = 0; vi < 3; ++vi) {
        const Variant& v = variants[vi];
        cublasLtMatmulDesc_t desc;
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32F);
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
        cublasLtPointerMode_t pm = !v.alpha_vec ? CUBLASLT_POINTER_MODE_HOST
                                   : v.residual ? CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST
                                                : CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
        cublasLtEpilogue_t ep = v.bias ? (v.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                       : (v.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep);
        if (v.bias) {
          cudaDataType_t bt = CUDA_R_32F;
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        }
        cublasLtMatrixLayout_t la, lb, lc;
        cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, C, K, C);
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, C, M, C);
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_8I, K, M, K);
        cublasLtMatmulPreference_t pref;
        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                             sizeof ws_bytes);
        cublasLtMatmulHeuristicResult_t res[8] = {};
        int nres = 0;
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 8, res, &nres);
        const float one = 1.f, zero = 0.f;
        const void* pa = v.alpha_vec ? static_cast<const void*>(alpha) : &one;
        const void* pb = v.residual ? &beta : &zero;
        const int8_t* cptr = v.residual ? z : y;
        double best = 1e30;
        int best_i = -1;
        for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < nres; ++i) {
          if (res[i].workspaceSize > ws_bytes) continue;
          auto run = [&] {
            return cublasLtMatmul(lt, desc, pa, w, la, x, lb, pb, cptr, lc, y, lc, &res[i].algo, ws, ws_bytes, 0);
          };
          if (run() != CUBLAS_STATUS_SUCCESS) continue;
          for (int r = 0; r < 3; ++r) (void)run();
          CK(cudaEventRecord(e0));
          for (int r = 0; r < reps; ++r) (void)run();
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (ms / reps < best) best = ms / reps, best_i = i;
        }
        if (best_i < 0) {
          std::printf("%-18s %5d %8lld %5lld %5lld %-18s unsupported (heuristic status %d, %d results)\n",
                      s.name.c_str(), b, (long long)M, (long long)C, (long long)K, v.name, int(st), nres);
        } else {
          // Correctness on 512 sampled rows (the best algorithm's output).
          CK(cudaMemset(y, 0, M * K));
          (void)cublasLtMatmul(lt, desc, pa, w, la, x, lb, pb, cptr, lc, y, lc, &res[best_i].algo, ws, ws_bytes, 0);
          CK(cudaDeviceSynchronize());
          std::vector<int8_t> hy(M * K);
          CK(cudaMemcpy(hy.data(), y, M * K, cudaMemcpyDeviceToHost));
          long wrong = 0, ties = 0;
          for (int t = 0; t < 512; ++t) {
            const int64_t m = rng() % M;
            for (int n = 0; n < K; ++n) {
              int acc = 0;
              for (int c = 0; c < C; ++c) acc += int(hx[m * C + c]) * int(hw[n * C + c]);
              float val = v.alpha_vec ? halpha[n] * float(acc) : float(acc);
              if (v.bias) val += hbias[n];
              if (v.residual) val += beta * float(hz[m * K + n]);
              if (v.relu) val = std::max(val, 0.f);
              const int ref = int(std::max(-128.f, std::min(127.f, std::nearbyint(val))));
              const int d = std::abs(ref - int(hy[m * K + n]));
              wrong += d > 1, ties += d == 1;
            }
          }
          const double bytes = double(M * C + K * C + M * K + (v.residual ? M * K : 0));
          int algo_id = -1, tile = -1, stages = -1;
          size_t wr;
          cublasLtMatmulAlgoConfigGetAttribute(&res[best_i].algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id,
                                               &wr);
          cublasLtMatmulAlgoConfigGetAttribute(&res[best_i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                               &wr);
          cublasLtMatmulAlgoConfigGetAttribute(&res[best_i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                               sizeof stages, &wr);
          std::printf("%-18s %5d %8lld %5lld %5lld %-18s %9.4f %8.1f %7ld %6ld a%d t%d s%d (%d of %d) ws %zu\n",
                      s.name.c_str(), b, (long long)M, (long long)C, (long long)K, v.name, best, bytes / best / 1e6,
                      wrong, ties, algo_id, tile, stages, best_i, nres, res[best_i].workspaceSize);
          tot[vi][b == batches.front() ? 0 : 1] += best * s.count;
        }
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(desc);
      }
      cudaFree(x), cudaFree(w), cudaFree(z), cudaFree(y), cudaFree(alpha), cudaFree(bias);
    }
  }
  for (int vi = 0; vi < 3; ++vi)
    std::printf("sum x count, %s: batch %d %.3f ms, batch %d %.3f ms\n", variants[vi].name, batches.front(), tot[vi][0],
                batches.back(), tot[vi][1]);
  return 0;
}
