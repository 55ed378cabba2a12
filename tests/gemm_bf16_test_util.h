// tests/gemm_bf16_test_util.h — the bf16 GEMM test problem shared by the GPU tests of that family:
// random bf16 A [M, K] and W [N, K] on the host and the device, an optional workspace, a poisoned C,
// and a check of EVERY entry against a double product (cached per shape and seed, since several
// rungs check the same problem) with the shared element bound and relative-L2 gate.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kl/check.h"
#include "kl/device.h"
#include "kl/dtype.h"
#include "kl/gemm_bf16.h"
#include "tests/gpu_test.h"

namespace kl::test {

struct GemmProblem {
  int M, N, K;
  uint64_t seed;
  std::vector<uint16_t> A, W;  // bf16 bits
  uint16_t *dA = nullptr, *dW = nullptr, *dC = nullptr;
  void* ws = nullptr;  // with_workspace: max(ws_at_least, gemm_bf16_workspace_bytes), zeroed ONCE
  size_t ws_bytes = 0;
  GemmProblem(int m, int n, int k, uint64_t sd, bool with_workspace = false, size_t ws_at_least = 0)
      : M(m), N(n), K(k), seed(sd) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    A.resize(size_t(M) * K);
    W.resize(size_t(N) * K);
    for (auto& x : A) x = float_to_bf16_bits(u(rng));
    for (auto& x : W) x = float_to_bf16_bits(u(rng));
    KL_CHECK(cudaMalloc(&dA, A.size() * 2));
    KL_CHECK(cudaMalloc(&dW, W.size() * 2));
    KL_CHECK(cudaMalloc(&dC, size_t(M) * N * 2));
    KL_CHECK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
    KL_CHECK(cudaMemcpy(dW, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
    if (with_workspace) {
      ws_bytes = std::max(ws_at_least, gemm_bf16_workspace_bytes(M, N, K, device_info()));
      if (ws_bytes) {
        KL_CHECK(cudaMalloc(&ws, ws_bytes));
        KL_CHECK(cudaMemset(ws, 0, ws_bytes));  // once, at allocation; never between launches
      }
    }
  }
  GemmProblem(const GemmProblem&) = delete;
  GemmProblem& operator=(const GemmProblem&) = delete;
  ~GemmProblem() {
    cudaFree(dA);
    cudaFree(dW);
    cudaFree(dC);
    if (ws) cudaFree(ws);
  }
  GemmBf16Args args() const {
    GemmBf16Args a;
    a.A = reinterpret_cast<const __nv_bfloat16*>(dA);
    a.W = reinterpret_cast<const __nv_bfloat16*>(dW);
    a.C = reinterpret_cast<__nv_bfloat16*>(dC);
    a.M = M, a.N = N, a.K = K;
    a.workspace = ws;
    a.workspace_bytes = ws_bytes;
    return a;
  }
  void poison() { KL_CHECK(cudaMemset(dC, 0xFF, size_t(M) * N * 2)); }  // bf16 0xFFFF = NaN
  std::vector<uint16_t> result() const {
    std::vector<uint16_t> c(size_t(M) * N);
    KL_CHECK(cudaMemcpy(c.data(), dC, c.size() * 2, cudaMemcpyDeviceToHost));
    return c;
  }
  // The double product, cached per (shape, seed).
  const std::vector<double>& reference() const {
    static std::map<std::tuple<int, int, int, uint64_t>, std::vector<double>> cache;
    auto key = std::make_tuple(M, N, K, seed);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    std::vector<float> af(A.size()), wf(W.size());
    for (size_t i = 0; i < A.size(); ++i) af[i] = bf16_bits_to_float(A[i]);
    for (size_t i = 0; i < W.size(); ++i) wf[i] = bf16_bits_to_float(W[i]);
    std::vector<double> ref(size_t(M) * N);
    for (int r = 0; r < M; ++r)
      for (int n = 0; n < N; ++n) {
        double acc = 0;
        const float* a = &af[size_t(r) * K];
        const float* w = &wf[size_t(n) * K];
        for (int k = 0; k < K; ++k) acc += double(a[k]) * double(w[k]);
        ref[size_t(r) * N + n] = acc;
      }
    return cache.emplace(key, std::move(ref)).first->second;
  }
  // The element bound: one bf16 rounding of the output (1e-2 |ref| allows two) plus fp32
  // accumulation slack growing with sqrt(K); with the relative-L2 gate of bf16 outputs.
  static bench::Tolerance tolerance_for(int K) {
    return bench::Tolerance{2e-3 * std::sqrt(double(K)) + 1e-3, 1e-2, kBf16RelL2};
  }
  bench::Tolerance tolerance() const { return tolerance_for(K); }
  // Every entry against the double product (kl::test::check_close: element bound and relative-L2
  // gate): "" or the verdict, with the rows / columns the bad entries hit (and the 128 x 256 tile
  // rows / columns of the Hopper rungs) and the first few of them.
  std::string check(const std::vector<uint16_t>& c) const {
    const std::vector<double>& refs = reference();
    const bench::Tolerance tol = tolerance();
    std::vector<float> got(c.size());
    for (size_t i = 0; i < c.size(); ++i) got[i] = bf16_bits_to_float(c[i]);
    const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    const ::testing::AssertionResult ok = check_close(got, refs, tol, shape, [this](size_t i) {
      return "C[" + std::to_string(i / N) + "][" + std::to_string(i % N) + "]";
    });
    if (ok) return "";
    long long bad = 0;
    std::ostringstream s;
    int min_r = M, max_r = -1, min_c = N, max_c = -1;
    for (int r = 0; r < M; ++r)
      for (int n = 0; n < N; ++n) {
        const size_t i = size_t(r) * N + n;
        if (!outside(got[i], refs[i], tol)) continue;
        if (bad < 6) s << "  C[" << r << "][" << n << "] = " << got[i] << ", expected " << refs[i] << "\n";
        ++bad;
        min_r = std::min(min_r, r), max_r = std::max(max_r, r);
        min_c = std::min(min_c, n), max_c = std::max(max_c, n);
      }
    std::ostringstream h;
    h << ok.message() << "\n";
    if (bad)
      h << "bad entries in rows " << min_r << ".." << max_r << " (128-row tiles " << min_r / 128
        << ".." << max_r / 128 << "), cols " << min_c << ".." << max_c << " (256-col tiles "
        << min_c / 256 << ".." << max_c / 256 << ")\n"
        << s.str();
    return h.str();
  }
};

}  // namespace kl::test
