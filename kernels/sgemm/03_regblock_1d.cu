// 03 regblock_1d — 1D register blocking.
//
// Parent: 02 smem_tiling.
// Change: each thread computes TM = 8 outputs of one column: per k it reads one B value from shared
//   memory and reuses it for 8 FMAs against 8 A values that are warp broadcasts. Tile 64x64,
//   BK = 8, 512 threads.
// Why: shared-memory traffic drops from ~1 LDS per FMA to (1 + 8 broadcast)/8.
// Limits: still 9 LDS per 8 FMAs. Needs M % 64, N % 64, K % 8 == 0 (no tail handling).
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = BM * BN / TM;  // 512: one thread per (8 rows x 1 column)
static_assert(BM * BK == kThreads, "one A element per thread per tile");
static_assert(BK * BN == kThreads, "one B element per thread per tile");
static_assert(BM % TM == 0, "row groups tile BM");

__global__ void __launch_bounds__(kThreads)
    sgemm_regblock_1d_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int N, int K) {
  __shared__ float As[BM][BK];  // [m][k]
  __shared__ float Bs[BK][BN];  // [k][n]
  const int t = threadIdx.x;
  const int col = t % BN;        // lanes of a warp: 32 consecutive columns
  const int rg = t / BN;         // row group: rows rg*8 .. rg*8+7 (same for the whole warp)
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const float* a = A + static_cast<size_t>(bm) * K;
  const float* b = B + bn;
  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    As[t / BK][t % BK] = a[static_cast<size_t>(t / BK) * K + k0 + t % BK];
    Bs[t / BN][t % BN] = b[static_cast<size_t>(k0 + t / BN) * N + t % BN];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float bv = Bs[k][col];  // one LDS, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[rg * TM + i][k], bv, acc[i]);  // broadcast
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) C[static_cast<size_t>(bm + rg * TM + i) * N + bn + col] = acc[i];
}
}  // namespace

std::string sgemm_regblock_1d_supports(const SgemmArgs& a, const DeviceInfo&) {
  return require_tiles(a, BM, BN, BK, false);
}

void sgemm_regblock_1d_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_regblock_1d_kernel<<<grid, kThreads, 0, s>>>(a.A, a.B, a.C, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
