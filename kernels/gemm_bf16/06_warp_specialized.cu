// 06 warp_specialized — a producer warp feeds a full/empty mbarrier ring, two consumer warpgroups
// only run wgmma; setmaxnreg moves registers to the consumers; 128x256 tiles.
//
// Parent: 05 tma_wgmma.
// Change: roles. Warpgroup 0 is the producer (one thread issues TMA as soon as a slot's `empty`
//   barrier says both consumers are done), warpgroups 1-2 wait on `full`, issue four m64n256k16
//   wgmmas, keep one batch in flight (wait_group 1) and release the previous slot.
//   setmaxnreg.dec 40 / .inc 232 (128*40 + 256*232 = 64512 <= 65536); the tile grows to 128x256.
// Why: in 05 loads were issued only after the slowest warpgroup finished; here no block-wide
//   barrier is in the main loop, and sharing the W tile halves smem traffic per FLOP.
// Limits: 4 x 48 KB = 192 KB smem; one CTA per tile (prologue and pipeline fill per tile, rung 07).
//   Barriers: full[s] count 1 + TMA bytes; empty[s] count 8 (lane 0 of each consumer warp after
//   wgmma_wait). Trip r of slot s: consumers wait full parity r&1, the producer empty (r&1)^1.
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 256, BK = kBK, STAGES = 4, THREADS = 384;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB (TMA box 64 x 256: 256 is the box-size limit)
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
static_assert(BM == 2 * 64 && BN <= 256, "two m64 consumers, n256 wgmma");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp");
static_assert(128 * 40 + 256 * 232 <= 65536, "setmaxnreg budget");

__global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_warp_specialized_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                                      __nv_bfloat16* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    mbar_ring_init(full, empty, STAGES, CONSUMER_WARPS);
  }
  __syncthreads();  // the last block-wide barrier: roles split below

  if (wg == 0) {
    // ---------------- producer warpgroup
    setmaxnreg_dec<40>();
    if (tid == 0) {
      for (int kb = 0; kb < num_k; ++kb) {
        const int s = kb % STAGES, r = kb / STAGES;
        mbar_wait(&empty[s], (r & 1) ^ 1);  // slot free (first trip: immediately)
        mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
        tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, m0);
        tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, n0);
      }
    }
  } else {
    // ---------------- consumer warpgroups 1, 2: rows 64(wg-1) .. +63 of the tile, all 256 cols
    setmaxnreg_inc<232>();
    const int cw = wg - 1, lane = tid % 32;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    for (int kb = 0; kb < num_k; ++kb) {
      const int s = kb % STAGES;
      mbar_wait(&full[s], (kb / STAGES) & 1);
      const uint64_t da = make_smem_desc_sw128(sA + s * A_BYTES + cw * 64 * 128);
      const uint64_t db = make_smem_desc_sw128(sB + s * B_BYTES);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) wgmma_ss_m64n256k16(acc, da + 2 * kk, db + 2 * kk, 1);
      wgmma_commit();
      wgmma_wait<1>();  // batch kb-1 has finished reading its slot
      if (kb > 0 && lane == 0) mbar_arrive(&empty[(kb - 1) % STAGES]);
    }
    wgmma_wait<0>();
    store_acc_bounded<BN>(acc, C, M, N, m0 + cw * 64, n0, tid % 128);
  }
#endif
}

}  // namespace

std::string gemm_bf16_warp_specialized_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = gemm_bf16_check_args(a);  // valid dims first: the tile count below needs them
  if (why.empty() && ceil_div(a.M, BM) > 65535)
    why = "M too large: more than 65535 row tiles (grid.y)";
  return why.empty() ? tma_gemm_supports(a, d, SMEM) : why;
}

void gemm_bf16_warp_specialized_launch(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_warp_specialized_kernel), SMEM);
  dim3 grid(ceil_div(a.N, BN), ceil_div(a.M, BM));
  gemm_bf16_warp_specialized_kernel<<<grid, THREADS, SMEM, s>>>(tA, tW, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
