// 07 persistent — one CTA per SM loops over output tiles in an L2-friendly grouped order; the
// epilogue of one tile overlaps the producer's loads for the next.
//
// Parent: 06 warp_specialized.
// Change: the grid. grid = min(#tiles, #SMs); CTA b takes tiles b, b + grid, ... in grouped order
//   (8 M-tiles down a column of N-tiles, then right). Producer and consumers keep one running
//   k-block counter across tiles, so the ring never drains; the last slot of a tile is released
//   after wgmma_wait<0>, before the epilogue.
// Why: 06 paid barrier init, tensor-map prefetch and a pipeline fill/drain per tile, and its
//   hardware raster re-read W from DRAM per M-tile row; the tiles in flight now share A and W in L2.
// Limits: same tile, stages, registers and barrier rules as 06; the epilogue's 4-byte st.global
//   stalls the consumers (rung 08); wave quantization stays (e.g. 4096^2 = 3.88 waves; rung 14).
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 256, BK = kBK, STAGES = 4, THREADS = 384, GROUP = 8;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
static_assert(BM == 2 * 64 && BN <= 256, "two m64 consumers, n256 wgmma");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp");
static_assert(GROUP >= 1, "grouped raster height");

__global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_persistent_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                                __nv_bfloat16* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
  const int tiles = tiles_m * tiles_n;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    mbar_ring_init(full, empty, STAGES, CONSUMER_WARPS);
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // running k-block counter across this CTA's tiles: slot = it % STAGES
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < num_k; ++kb, ++it) {
          const int s = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[s], (r & 1) ^ 1);
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
          tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, tm * BM);
          tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, tn * BN);
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1, lane = tid % 32;
    float acc[BN / 2];
    int it = 0;  // must advance exactly like the producer's
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      // The k-loop, releasing each slot one k-block late and the tile's last slot at the end.
      consume_k_blocks<STAGES, A_BYTES, B_BYTES>(acc, sA, sB, full, empty, num_k, it, cw, lane,
                                                 [](uint64_t* bar) { mbar_arrive(bar); });
      // Epilogue overlaps the producer's loads of the next tile into the freed slots.
      store_acc_bounded<BN>(acc, C, M, N, tm * BM + cw * 64, tn * BN, tid % 128);
    }
  }
#endif
}

}  // namespace

std::string gemm_bf16_persistent_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_gemm_supports(a, d, SMEM);
}

void gemm_bf16_persistent_launch(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_persistent_kernel), SMEM);
  const int tiles = ceil_div(a.M, BM) * ceil_div(a.N, BN);
  const int grid = tiles < device_info().sms ? tiles : device_info().sms;
  gemm_bf16_persistent_kernel<<<grid, THREADS, SMEM, s>>>(tA, tW, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
