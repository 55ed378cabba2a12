// 07 prefetch_swizzle — register-prefetch double buffering, conflict-free swizzle, two blocks/SM.
//
// Parent: 06 warp_tiling.
// Change: three things that only pay together: (1) shared memory holds two k-tiles; tile kt+1's
//   float4s of A and B are in flight to registers while the warps compute on tile kt, one barrier
//   per tile (the register hop also does A's transpose, which cp.async cannot); (2) A^T stores put
//   m at m ^ (16 * (k / 4)), so the a_k = 4 half lands in banks 16..31 (conflict-free; fragment
//   reads XOR the same constant for all lanes); (3) __launch_bounds__(256, 2): two blocks per SM.
// Why: DRAM/L2 latency hides behind 512 FMAs per thread, and one block's barrier bubble is
//   covered by the other block's FMAs.
// Limits: registers capped at 128; 1.0 shared byte per FMA (8x8 per thread). Tile 128x128, BK = 8,
//   2 x 8 KB shared memory. Needs M % 128, N % 128, K % 8 == 0, 16-byte aligned pointers.
#include "sgemm_internal.h"

namespace kl::sgemm_detail {

namespace {
constexpr int BM = 128, BN = 128, BK = 8;
constexpr int WM = 32, WN = 64;
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;  // 4 x 2
constexpr int kThreads = kWarpsM * kWarpsN * 32;     // 256
constexpr int TM = 8, TN = 8;
static_assert(WM == 4 * TM && WN == 8 * TN, "4 x 8 lanes of 8x8 cover a warp tile");
static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of A and B each");
static_assert(BK == 8 && WM % 32 == 0, "swizzle: XOR 16 on m for k >= 4 stays inside a warp tile");

// The A^T swizzle: column m of As row k is stored at m ^ swz(k).
__device__ __forceinline__ int swz(int k) { return (k >> 2) << 4; }

__global__ void __launch_bounds__(kThreads, 2)
    sgemm_prefetch_swizzle_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int N, int K) {
  __shared__ __align__(16) float As[2][BK][BM];  // [stage][k][m ^ swz(k)]
  __shared__ __align__(16) float Bs[2][BK][BN];  // [stage][k][n]
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int wm0 = (warp / kWarpsN) * WM, wn0 = (warp % kWarpsN) * WN;
  const int tm = lane / 8, tn = lane % 8;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int a_row = t / 2, a_k = (t % 2) * 4;
  const int b_row = t / 32, b_col = (t % 32) * 4;
  // Advancing pointers (one add per tile) keep the 64-bit address math out of the register budget.
  const float* a = A + static_cast<size_t>(bm + a_row) * K + a_k;
  const float* b = B + static_cast<size_t>(b_row) * N + bn + b_col;
  const size_t b_step = static_cast<size_t>(BK) * N;
  const int a_col = a_row ^ swz(a_k);  // a_k..a_k+3 share k >> 2, so one swizzle for all four

  auto store_tile = [&](int st, const float4& va, const float4& vb) {
    As[st][a_k + 0][a_col] = va.x;
    As[st][a_k + 1][a_col] = va.y;
    As[st][a_k + 2][a_col] = va.z;
    As[st][a_k + 3][a_col] = va.w;
    *reinterpret_cast<float4*>(&Bs[st][b_row][b_col]) = vb;
  };

  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  const int nk = K / BK;
  float4 pa = *reinterpret_cast<const float4*>(a);
  float4 pb = *reinterpret_cast<const float4*>(b);
  store_tile(0, pa, pb);
  __syncthreads();
  for (int kt = 0; kt < nk; ++kt) {
    const int st = kt & 1;
    if (kt + 1 < nk) {  // issue the next tile's loads now; they land during the FMAs below
      a += BK;
      b += b_step;
      pa = *reinterpret_cast<const float4*>(a);
      pb = *reinterpret_cast<const float4*>(b);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        *reinterpret_cast<float4*>(&ra[g * 4]) =
            *reinterpret_cast<const float4*>(&As[st][k][(wm0 + g * 16 + tm * 4) ^ swz(k)]);
        *reinterpret_cast<float4*>(&rb[g * 4]) =
            *reinterpret_cast<const float4*>(&Bs[st][k][wn0 + g * 32 + tn * 4]);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    // The other stage was last read in iteration kt-1, which every thread finished before the
    // barrier that ended it: safe to overwrite without a second barrier.
    if (kt + 1 < nk) store_tile(st ^ 1, pa, pb);
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

std::string sgemm_prefetch_swizzle_supports(const SgemmArgs& a, const DeviceInfo&) {
  return require_tiles(a, BM, BN, BK, true);
}

void sgemm_prefetch_swizzle_launch(const SgemmArgs& a, cudaStream_t s) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_prefetch_swizzle_kernel<<<grid, kThreads, 0, s>>>(a.A, a.B, a.C, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::sgemm_detail
