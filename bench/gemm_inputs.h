// bench/gemm_inputs.h — the bf16 GEMM's device inputs for one shape, as bench_gemm_bf16 times them:
// A and W filled uniform in [-1, 1] (W from a second seed), each replicated `copies` times so that
// launch i can read copy i % copies (rotation past the L2), plus the zeroed Stream-K workspace.
// Used by bench_gemm_bf16.
#pragma once
#include <algorithm>
#include <cstdint>

#include "bench/harness.h"
#include "kl/gemm_bf16.h"

namespace kl::bench {

struct GemmInputs {
  int M, N, K, copies;
  size_t nA, nW;
  DeviceBuffer dA, dW, dWs;

  GemmInputs(int M_, int N_, int K_, int copies_, uint64_t seed, const DeviceInfo& dev, cudaStream_t stream)
      : M(M_), N(N_), K(K_), copies(copies_), nA(size_t(M_) * K_), nW(size_t(N_) * K_),
        dA(2 * nA * copies_), dW(2 * nW * copies_),
        dWs(std::max<size_t>(gemm_bf16_workspace_bytes(M_, N_, K_, dev), 256)) {
    // Zeroed once when allocated; never cleared between launches (rung 04's epoch flags).
    KL_CHECK(cudaMemsetAsync(dWs.ptr, 0, dWs.bytes, stream));
    fill_uniform(dA.ptr, nA, DType::bf16, seed, -1.f, 1.f, stream);
    fill_uniform(dW.ptr, nW, DType::bf16, seed ^ 0x9e3779b97f4a7c15ULL, -1.f, 1.f, stream);
    KL_CHECK(cudaStreamSynchronize(stream));
    replicate(dA.ptr, 2 * nA, copies);
    replicate(dW.ptr, 2 * nW, copies);
  }

  // Launch i's arguments: copy i % copies of A and W, output C.
  GemmBf16Args args(int i, __nv_bfloat16* C) const {
    GemmBf16Args a;
    a.A = dA.as<__nv_bfloat16>() + (i % copies) * nA;
    a.W = dW.as<__nv_bfloat16>() + (i % copies) * nW;
    a.C = C;
    a.M = M;
    a.N = N;
    a.K = K;
    a.workspace = dWs.ptr;
    a.workspace_bytes = dWs.bytes;
    return a;
  }
};

}  // namespace kl::bench
