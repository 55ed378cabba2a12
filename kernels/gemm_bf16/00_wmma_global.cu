// 00 wmma_global — WMMA fragments loaded straight from global memory.
//
// Parent: none (the baseline of the ladder).
// Change: each warp owns a 32x32 block of C (2x2 WMMA 16x16x16 fragments) and, for every 16-wide
//   k slice, loads its A and W fragments directly from global memory with wmma::load_matrix_sync
//   (A row-major, ld K; W as a column-major B, ld K). No shared memory for operands.
// Why: the naive tensor-core GEMM, the reference point for every later rung.
// Limits: no reuse beyond the warp (a 64x64 block of 4 warps reads every A and W row twice per
//   k slice from L1/L2); M, N, K multiples of 16 (whole fragments, no predication), 32-byte
//   aligned pointers.
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/wmma_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

using namespace wmma_tile;
constexpr int kWarpTile = 32;                 // 32x32 of C per warp = 2x2 fragments
constexpr int kBlock = 64;                    // 64x64 of C per block = 2x2 warps
constexpr int kThreads = 128;
static_assert(kBlock == 2 * kWarpTile && kThreads == 4 * 32, "2x2 warps of 2x2 fragments");

__global__ void __launch_bounds__(kThreads)
    gemm_bf16_wmma_global_kernel(const __nv_bfloat16* __restrict__ A,
                                 const __nv_bfloat16* __restrict__ W,
                                 __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(32) float scratch[4][256];  // epilogue only: one 16x16 fp32 per warp
  const int warp = threadIdx.x >> 5;
  const int row0 = blockIdx.y * kBlock + (warp & 1) * kWarpTile;
  const int col0 = blockIdx.x * kBlock + (warp >> 1) * kWarpTile;
  FragC acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) w::fill_fragment(acc[i][j], 0.f);
  // Fragments wholly past M or N are skipped (M, N multiples of 16: no partial fragments).
  const bool vi[2] = {row0 < M, row0 + 16 < M}, vj[2] = {col0 < N, col0 + 16 < N};
  for (int k = 0; k < K; k += 16) {
    FragA a[2];
    FragB b[2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
      if (vi[i]) w::load_matrix_sync(a[i], A + static_cast<size_t>(row0 + 16 * i) * K + k, K);
#pragma unroll
    for (int j = 0; j < 2; ++j)
      if (vj[j]) w::load_matrix_sync(b[j], W + static_cast<size_t>(col0 + 16 * j) * K + k, K);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        if (vi[i] && vj[j]) w::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }
  store_bf16<2, 2>(acc, scratch[warp], C, M, N, row0, col0);
}

}  // namespace

std::string gemm_bf16_wmma_global_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (bf16 WMMA)";
  std::string why = shape_alignment_supports(a);
  if (!why.empty()) return why;
  if (a.M % 16 || a.N % 16 || a.K % 16)
    return "WMMA from global needs M, N, K multiples of 16 (whole fragments, no predication)";
  if (!aligned(a.A, 32) || !aligned(a.W, 32)) return "WMMA loads need 32-byte aligned A and W";
  if ((a.M + kBlock - 1) / kBlock > 65535) return "M too large: more than 65535 row blocks (grid.y)";
  return "";
}

void gemm_bf16_wmma_global_launch(const GemmBf16Args& a, cudaStream_t s) {
  dim3 grid((a.N + kBlock - 1) / kBlock, (a.M + kBlock - 1) / kBlock);
  gemm_bf16_wmma_global_kernel<<<grid, kThreads, 0, s>>>(a.A, a.W, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::gemm_bf16_detail
