// 05 tma_wgmma — wgmma from 128-byte-swizzled shared tiles filled by TMA on mbarriers.
//
// Parent: 03 mma_sync_swizzle (one CTA per tile; rung 04's Stream-K grid is not carried over).
// Change: the tensor-core path. Each warpgroup issues wgmma.mma_async m64n128k16 reading A and W
//   from shared memory via matrix descriptors; one thread brings each 128x64 box by TMA, which
//   completes on an mbarrier with a byte count and writes the swizzle the descriptor expects.
//   Tile 128x128x64, 4-stage ring, 2 warpgroups (warpgroup g owns rows 64g..64g+63).
// Why: mma.sync cannot reach the dense bf16 peak on Hopper; wgmma is the full-rate path, and TMA
//   removes ldmatrix, bank conflicts and address arithmetic from the main loop.
// Limits: every thread both waits for data and computes, and a __syncthreads per k-block frees the
//   slot (rung 06 removes it). Tensor maps are encoded on the host per launch (no caching: a
//   changed pointer never meets a stale map) and passed as __grid_constant__ parameters. Ragged
//   shapes: TMA zero-fills boxes past M, N, K; the epilogue is bounded.
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = kBK, STAGES = 4, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB: 128 rows x 128 B
constexpr int B_BYTES = BN * BK * 2;  // 16 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr size_t SMEM = 1024 /*alignment slack*/ + STAGES * STAGE_BYTES + STAGES * 8;
static_assert(BM == 2 * 64, "two warpgroups of m64");
static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "stage tiles stay 1024-aligned");

__global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_tma_wgmma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                               __nv_bfloat16* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;                       // [STAGES][128 rows][128 B], swizzled
  uint8_t* sB = smem + STAGES * A_BYTES;    // [STAGES][128 rows][128 B], swizzled
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);

  const int tid = threadIdx.x, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);  // one arrive (the issuing thread)
    fence_barrier_init();
  }
  __syncthreads();

  auto issue = [&](int kb) {  // thread 0 only: both boxes of k-block kb into slot kb % STAGES
    const int s = kb % STAGES;
    mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // OOB-filled bytes count too
    tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, m0);
    tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, n0);
  };
  if (tid == 0)
    for (int kb = 0; kb < STAGES && kb < num_k; ++kb) issue(kb);

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;

  for (int kb = 0; kb < num_k; ++kb) {
    const int s = kb % STAGES;
    mbar_wait(&full[s], (kb / STAGES) & 1);  // phase flips once per trip round the ring
    const uint64_t da = make_smem_desc_sw128(sA + s * A_BYTES + wg * 64 * 128);  // rows 64wg..
    const uint64_t db = make_smem_desc_sw128(sB + s * B_BYTES);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // +32 B per k16 step inside the swizzle atom = +2
      wgmma_ss_m64n128k16(acc, da + 2 * kk, db + 2 * kk, 1);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // both warpgroups have finished reading slot s: it may be refilled
    if (tid == 0 && kb + STAGES < num_k) issue(kb + STAGES);
  }

  store_acc_bounded<BN>(acc, C, M, N, m0 + wg * 64, n0, tid % 128);
#endif
}

}  // namespace

std::string gemm_bf16_tma_wgmma_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = gemm_bf16_check_args(a);  // valid dims first: the tile count below needs them
  if (why.empty() && ceil_div(a.M, BM) > 65535)
    why = "M too large: more than 65535 row tiles (grid.y)";
  return why.empty() ? tma_gemm_supports(a, d, SMEM) : why;
}

void gemm_bf16_tma_wgmma_launch(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_tma_wgmma_kernel), SMEM);
  dim3 grid(ceil_div(a.N, BN), ceil_div(a.M, BM));
  gemm_bf16_tma_wgmma_kernel<<<grid, THREADS, SMEM, s>>>(tA, tW, a.C, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
