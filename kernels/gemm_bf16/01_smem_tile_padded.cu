// 01 smem_tile_padded — a 128x128x32 shared-memory tile, rows padded against bank conflicts.
//
// Parent: 00 wmma_global.
// Change: the block (8 warps, 2x4 of 64x32 warp tiles) stages a 128x32 slice of A and of W in
//   shared memory per k-step; every warp loads its WMMA fragments from there. Rows are padded to
//   40 bf16 (80 bytes = 20 words): 8 consecutive rows start at words 0,20,8,28,16,4,24,12 (mod 32),
//   so the 16-byte pieces WMMA reads from 8 rows hit 32 distinct banks (a 64-byte stride would put
//   rows r and r+2 on the same banks).
// Why: each A/W element crosses L2 once per block instead of once per warp pair, and the warp tile
//   reuses each A fragment 2x and each W fragment 4x per slice.
// Limits: the copy is synchronous (global -> registers -> shared, two barriers per k-step), so
//   nothing overlaps loads with math; padding costs 8 bf16 per 32-bf16 row. Any M (rows past M
//   zero-filled), N and K multiples of 8.
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/wmma_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

using namespace wmma_tile;
constexpr int BM = 128, BN = 128, BK = 32;   // block tile 128x128, k-step 32
constexpr int LDS = BK + 8;                  // padded row: 40 bf16 = 80 bytes
constexpr int kThreads = 256;                // 8 warps: 2 (M) x 4 (N), warp tile 64x32
constexpr int WM = 64, WN = 32, FM = WM / 16, FN = WN / 16;
constexpr int kChunks = BM * BK / 8 / kThreads;  // 16-byte chunks per thread per operand
static_assert(BM == 2 * WM && BN == 4 * WN, "2x4 warps cover the tile");
static_assert(BM == BN && kChunks == 2, "A and W tiles copied with the same thread map");
static_assert((16 * LDS * 2) % 32 == 0 && LDS % 8 == 0, "WMMA: 32-byte aligned rows, ldm % 8");

__device__ __forceinline__ uint4 load_chunk(const __nv_bfloat16* P, int rows, int K, int r, int k) {
  if (r < rows && k < K) return *reinterpret_cast<const uint4*>(P + static_cast<size_t>(r) * K + k);
  return make_uint4(0, 0, 0, 0);  // rows past M/N and k past K contribute zero
}

__global__ void __launch_bounds__(kThreads)
    gemm_bf16_smem_tile_padded_kernel(const __nv_bfloat16* __restrict__ A,
                                      const __nv_bfloat16* __restrict__ W,
                                      __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(32) __nv_bfloat16 sA[BM * LDS];  // [128][40]
  __shared__ __align__(32) __nv_bfloat16 sB[BN * LDS];  // [128][40]
  __shared__ __align__(32) float scratch[8][256];       // epilogue
  const int tid = threadIdx.x, warp = tid >> 5;
  const int wm = warp & 1, wn = warp >> 1;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  FragC acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) w::fill_fragment(acc[i][j], 0.f);
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int idx = tid + c * kThreads, r = idx >> 2, kc = (idx & 3) * 8;  // 4 chunks a row
      *reinterpret_cast<uint4*>(sA + r * LDS + kc) = load_chunk(A, M, K, m0 + r, k0 + kc);
      *reinterpret_cast<uint4*>(sB + r * LDS + kc) = load_chunk(W, N, K, n0 + r, k0 + kc);
    }
    __syncthreads();  // tile complete
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      FragA a[FM];
      FragB b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) w::load_matrix_sync(a[i], sA + (wm * WM + 16 * i) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < FN; ++j) w::load_matrix_sync(b[j], sB + (wn * WN + 16 * j) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) w::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone done reading before the next k-step overwrites the tile
  }
  store_bf16<FM, FN>(acc, scratch[warp], C, M, N, m0 + wm * WM, n0 + wn * WN);
}

}  // namespace

std::string gemm_bf16_smem_tile_padded_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (bf16 WMMA)";
  return shape_alignment_supports(a);
}

void gemm_bf16_smem_tile_padded_launch(const GemmBf16Args& a, cudaStream_t s) {
  dim3 grid((a.N + BN - 1) / BN, (a.M + BM - 1) / BM);
  KL_REQUIRE(grid.y <= 65535, "rung 01: M too large for the grid");
  gemm_bf16_smem_tile_padded_kernel<<<grid, kThreads, 0, s>>>(a.A, a.W, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::gemm_bf16_detail
