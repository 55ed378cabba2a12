// 04 regblock_2d — 2D register blocking.
//
// Parent: 03 regblock_1d.
// Change: each thread computes an 8x8 block of C (TM x TN) from 8 A and 8 B values held in
//   registers (an outer product). Tile 128x128, BK = 8, 256 threads.
// Why: 64 FMAs per 16 shared loads per k, where rung 03 needed 9 LDS per 8 FMAs.
// Limits: the shared-memory reads are scalar and the B fragment reads are 4-way bank-conflicted
//   (16 lanes at stride 8 floats); rung 05 fixes both. Needs M % 128, N % 128, K % 8 == 0.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(kThreads == 256, "16 x 16 threads");
static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0, "whole loads per thread");
constexpr int kLoadsA = BM * BK / kThreads;  // 4
constexpr int kLoadsB = BK * BN / kThreads;  // 4

__global__ void __launch_bounds__(kThreads)
    sgemm_regblock_2d_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int N, int K) {
  __shared__ float As[BM][BK];  // [m][k]
  __shared__ float Bs[BK][BN];  // [k][n]
  const int t = threadIdx.x;
  const int tr = t / (BN / TN), tc = t % (BN / TN);  // thread's 8x8 block: rows tr*8, cols tc*8
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const float* a = A + static_cast<size_t>(bm) * K;
  const float* b = B + bn;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l) {
      const int idx = t + l * kThreads;
      As[idx / BK][idx % BK] = a[static_cast<size_t>(idx / BK) * K + k0 + idx % BK];
    }
#pragma unroll
    for (int l = 0; l < kLoadsB; ++l) {
      const int idx = t + l * kThreads;
      Bs[idx / BN][idx % BN] = b[static_cast<size_t>(k0 + idx / BN) * N + idx % BN];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) ra[i] = As[tr * TM + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) rb[j] = Bs[k][tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      C[static_cast<size_t>(bm + tr * TM + i) * N + bn + tc * TN + j] = acc[i][j];
}
}  // namespace

std::string sgemm_regblock_2d_supports(const SgemmArgs& a, const DeviceInfo&) {
  return require_tiles(a, BM, BN, BK, false);
}

void sgemm_regblock_2d_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_regblock_2d_kernel<<<grid, kThreads, 0, s>>>(a.A, a.B, a.C, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
