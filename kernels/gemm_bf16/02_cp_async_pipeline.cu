// 02 cp_async_pipeline — a multi-stage cp.async pipeline.
//
// Parent: 01 smem_tile_padded.
// Change: the tile copy becomes cp.async (global -> shared without a register hop, L1 bypassed)
//   into a 3-stage ring of padded tiles; one barrier per k-step instead of two. Rows past M/N and
//   chunks past K are zero-filled by cp.async's src-size 0. Same 128x128x32 tile, 8 warps, padding.
// Why: k-steps i+1 and i+2 are in flight while the tensor cores work on k-step i.
// Limits: still WMMA (one fragment load per 16x16 fragment); 3 x 20 KB = 60 KB of dynamic shared
//   memory (opt-in above 48 KB), the epilogue scratch reuses the ring after the loop. Any M, N and
//   K multiples of 8.
#include <string>

#include "common/mma.cuh"
#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/wmma_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

using namespace wmma_tile;
constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3;
constexpr int LDS = BK + 8;                                  // padded row: 40 bf16 = 80 bytes
constexpr int kThreads = 256;                                // 8 warps 2x4, warp tile 64x32
constexpr int WM = 64, WN = 32, FM = WM / 16, FN = WN / 16;
constexpr int kTileElems = BM * LDS;                         // one operand tile
constexpr int kStageBytes = 2 * kTileElems * 2;              // A + W: 20480 bytes
constexpr int kSmem = STAGES * kStageBytes;                  // 61440 bytes
constexpr int kChunks = BM * BK / 8 / kThreads;
static_assert(BM == BN && kChunks == 2, "A and W tiles copied with the same thread map");
static_assert(8 * 256 * 4 <= kSmem, "epilogue scratch fits in the ring");
static_assert(kStageBytes % 128 == 0, "stages stay 128-byte aligned");

__device__ __forceinline__ void load_stage(__nv_bfloat16* sA, __nv_bfloat16* sB,
                                           const __nv_bfloat16* A, const __nv_bfloat16* W, int M,
                                           int N, int K, int m0, int n0, int k0, int tid) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int idx = tid + c * kThreads, r = idx >> 2, kc = (idx & 3) * 8;
    const int gk = k0 + kc;
    const bool pa = m0 + r < M && gk < K, pb = n0 + r < N && gk < K;
    cp_async_16(sA + r * LDS + kc, pa ? A + static_cast<size_t>(m0 + r) * K + gk : A, pa);
    cp_async_16(sB + r * LDS + kc, pb ? W + static_cast<size_t>(n0 + r) * K + gk : W, pb);
  }
}

__global__ void __launch_bounds__(kThreads)
    gemm_bf16_cp_async_pipeline_kernel(const __nv_bfloat16* __restrict__ A,
                                       const __nv_bfloat16* __restrict__ W,
                                       __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) char smem[];
  auto stA = [&](int s) { return reinterpret_cast<__nv_bfloat16*>(smem + s * kStageBytes); };
  auto stB = [&](int s) { return stA(s) + kTileElems; };
  const int tid = threadIdx.x, warp = tid >> 5;
  const int wm = warp & 1, wn = warp >> 1;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int nk = (K + BK - 1) / BK;
  FragC acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) w::fill_fragment(acc[i][j], 0.f);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {  // prologue: STAGES-1 k-steps in flight
    if (s < nk) load_stage(stA(s), stB(s), A, W, M, N, K, m0, n0, s * BK, tid);
    cp_async_commit();
  }
  for (int i = 0; i < nk; ++i) {
    cp_async_wait<STAGES - 2>();  // k-step i landed (for this thread) ...
    __syncthreads();              // ... for all; and slot (i-1)%STAGES is no longer read
    const int nxt = i + STAGES - 1;
    if (nxt < nk) load_stage(stA(nxt % STAGES), stB(nxt % STAGES), A, W, M, N, K, m0, n0, nxt * BK, tid);
    cp_async_commit();  // always: keeps "group i" == "k-step i"
    const __nv_bfloat16* sA = stA(i % STAGES);
    const __nv_bfloat16* sB = stB(i % STAGES);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      FragA a[FM];
      FragB b[FN];
#pragma unroll
      for (int f = 0; f < FM; ++f) w::load_matrix_sync(a[f], sA + (wm * WM + 16 * f) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < FN; ++j) w::load_matrix_sync(b[j], sB + (wn * WN + 16 * j) * LDS + kk, LDS);
#pragma unroll
      for (int f = 0; f < FM; ++f)
#pragma unroll
        for (int j = 0; j < FN; ++j) w::mma_sync(acc[f][j], a[f], b[j], acc[f][j]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // ring idle: reuse it as epilogue scratch
  float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
  store_bf16<FM, FN>(acc, scratch, C, M, N, m0 + wm * WM, n0 + wn * WN);
}

}  // namespace

std::string gemm_bf16_cp_async_pipeline_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (bf16 WMMA, cp.async)";
  if (kSmem > d.smem_optin) return "needs 60 KB of shared memory per block";
  return shape_alignment_supports(a);
}

void gemm_bf16_cp_async_pipeline_launch(const GemmBf16Args& a, cudaStream_t s) {
  // Sets the >48 KB opt-in once (cached per device; no API call on later launches / in capture).
  KL_REQUIRE(occupancy(reinterpret_cast<const void*>(&gemm_bf16_cp_async_pipeline_kernel), kThreads, kSmem, device_info()) > 0,
             "rung 02: 60 KB tile does not fit this device");
  dim3 grid((a.N + BN - 1) / BN, (a.M + BM - 1) / BM);
  KL_REQUIRE(grid.y <= 65535, "rung 02: M too large for the grid");
  gemm_bf16_cp_async_pipeline_kernel<<<grid, kThreads, kSmem, s>>>(a.A, a.W, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::gemm_bf16_detail
