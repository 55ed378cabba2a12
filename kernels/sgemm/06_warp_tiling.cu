// 06 warp_tiling — warp tiling.
//
// Parent: 05 vectorized.
// Change: each of the 8 warps owns a 32(M) x 64(N) warp tile (4 x 2 warps over 128x128); lane =
//   tm*8 + tn, a thread's 8 rows are wm0 + {0,16} + tm*4 + 0..3 and its 8 columns
//   wn0 + {0,32} + tn*4 + 0..3. One LDS.128 of B covers 8 distinct float4s = 128 contiguous bytes
//   (no conflict, the 4 tm-lanes broadcast); one LDS.128 of A covers 4 float4s shared by 8 lanes.
// Why: rung 05 put 16 lanes at stride 8 floats (2-way conflicted LDS.128) and gave a warp a
//   16 x 128 strip: twice the distinct shared bytes per FMA of 32x64.
// Limits: one k-tile in shared memory (two barriers per tile, load latency exposed); the transposed
//   A stores stay conflicted. Tile 128x128, BK = 8, 256 threads. Needs M % 128, N % 128, K % 8 == 0,
//   16-byte aligned pointers.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 128, BN = 128, BK = 8;
constexpr int WM = 32, WN = 64;                       // warp tile
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;   // 4 x 2
constexpr int kThreads = kWarpsM * kWarpsN * 32;      // 256
constexpr int TM = 8, TN = 8;                         // per thread: 2x2 groups of 4x4
static_assert(WM == 4 /*tm*/ * TM && WN == 8 /*tn*/ * TN, "4 x 8 lanes of 8x8 cover a warp tile");
static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of A and B each");

__global__ void __launch_bounds__(kThreads)
    sgemm_warp_tiling_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];  // [k][m]: A transposed
  __shared__ __align__(16) float Bs[BK][BN];  // [k][n]
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;
  const int tm = lane / 8, tn = lane % 8;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int a_row = t / 2, a_k = (t % 2) * 4;
  const int b_row = t / 32, b_col = (t % 32) * 4;
  const float* a = A + static_cast<size_t>(bm + a_row) * K + a_k;
  const float* b = B + static_cast<size_t>(b_row) * N + bn + b_col;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 va = *reinterpret_cast<const float4*>(a + k0);
    As[a_k + 0][a_row] = va.x;
    As[a_k + 1][a_row] = va.y;
    As[a_k + 2][a_row] = va.z;
    As[a_k + 3][a_row] = va.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) =
        *reinterpret_cast<const float4*>(b + static_cast<size_t>(k0) * N);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        *reinterpret_cast<float4*>(&ra[g * 4]) =
            *reinterpret_cast<const float4*>(&As[k][wm0 + g * 16 + tm * 4]);
        *reinterpret_cast<float4*>(&rb[g * 4]) =
            *reinterpret_cast<const float4*>(&Bs[k][wn0 + g * 32 + tn * 4]);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + wm0 + (i / 4) * 16 + tm * 4 + i % 4;
#pragma unroll
    for (int g = 0; g < 2; ++g)
      *reinterpret_cast<float4*>(&C[static_cast<size_t>(row) * N + bn + wn0 + g * 32 + tn * 4]) =
          make_float4(acc[i][g * 4], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
  }
}
}  // namespace

std::string sgemm_warp_tiling_supports(const SgemmArgs& a, const DeviceInfo&) {
  return require_tiles(a, BM, BN, BK, true);
}

void sgemm_warp_tiling_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_warp_tiling_kernel<<<grid, kThreads, 0, s>>>(a.A, a.B, a.C, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
