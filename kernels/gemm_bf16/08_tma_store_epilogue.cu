// Rung 08 — tma_store_epilogue: the epilogue goes through shared memory (stmatrix, 128B swizzle)
// and leaves by TMA store, asynchronously; consumers start the next tile at once.
//
// Change from rung 07: the epilogue. Rung 07 stored each accumulator pair with a 4-byte st.global
// (8 rows x 16 B per warp instruction: 64 store instructions per thread per tile, partial
// sectors, the consumer warps stalled on the LSU while the tensor cores idle). Here each consumer
// warpgroup converts its 64x256 fp32 block to bf16 and writes it with 16 stmatrix.x4 into a
// swizzled 32 KB smem tile (four 64x64 boxes, 128-byte swizzle: conflict-free), fences the
// generic->async proxy, syncs its 128 threads on a named barrier, and one thread issues four TMA
// stores (bulk_group). TMA clips rows/cols past M/N, so ragged tiles need no predicates. The
// store of tile i completes while the warpgroup runs tile i+1's mainloop; the smem tile is only
// reused after cp.async.bulk.wait_group.read 0 (+ the named barrier) at the next epilogue.
// Budget: the 64 KB C staging forces 3 stages instead of 4: 3 x 48 KB + 64 KB = 208 KB smem.
// Proxy rule relied on: st.shared/stmatrix (generic proxy) -> fence.proxy.async.shared::cta in
// every writing thread -> bar.sync among the writers -> TMA store (async proxy) reads the tile.
// Measured (H200, 2026-11-29, round 1 (results/h200/dev/round1/gemm_bf16.jsonl)): 777 TF at 4096^3 (07: 720; cuBLAS 801), 613 at
// 2048^3, 772 at 4096x11008x4096; gemm2 request 1: 778 / 614 / 771, 802 at 4096x4096x11008,
// 792 at 8192^3. Limit: 3 stages with 2 held by the consumers = 1 load in flight (rung 12).
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 256, BK = kBK, STAGES = 3, THREADS = 384, GROUP = 8;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_SUB = 64 * 64 * 2;    // one 64x64 bf16 store box, 8 KB, 128B-swizzled
constexpr int C_BYTES = 4 * C_SUB;    // 64 x 256 per consumer warpgroup
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8;
static_assert(BM == 2 * 64 && BN == 4 * 64, "two m64 consumers, four 64-wide store boxes");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp");
static_assert(GROUP >= 1, "grouped raster height");
static_assert(SMEM <= 227 * 1024, "fits the sm_90 opt-in limit");

__global__ void __launch_bounds__(THREADS, 1)
    k08(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
        const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][4 boxes][64 rows][128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
  const int tiles = tiles_m * tiles_n;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    tma_prefetch_desc(&tmC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CONSUMER_WARPS);
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;
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
    const int cw = wg - 1, t128 = tid % 128, warp = t128 / 32, lane = tid % 32;
    uint8_t* myC = sC + cw * C_BYTES;
    float acc[BN / 2];
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      grouped_tile<GROUP>(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      for (int kb = 0; kb < num_k; ++kb, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const uint64_t da = make_smem_desc_sw128(sA + s * A_BYTES + cw * 64 * 128);
        const uint64_t db = make_smem_desc_sw128(sB + s * B_BYTES);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
          wgmma_ss_m64n256k16(acc, da + 2 * kk, db + 2 * kk, 1);
        wgmma_commit();
        wgmma_wait<1>();
        if (kb > 0 && lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
      }
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(&empty[(it - 1) % STAGES]);

      // ---- epilogue: previous tile's store must have finished reading myC.
      if (t128 == 0) tma_store_wait_read<0>();
      named_barrier_sync(1 + cw, 128);
      // stmatrix.x4 #j2 covers n8 chunks j = 2*j2, 2*j2+1 of this warp's 16 rows. Lane l gives the
      // row address of matrix l/8: matrix m = rows 8*(m&1).., chunk j + (m>>1).
      const int m = lane / 8;
      const int row = warp * 16 + (m & 1) * 8 + (lane % 8);  // 0..63 within the warpgroup block
#pragma unroll
      for (int j2 = 0; j2 < BN / 16; ++j2) {
        const int j = 2 * j2;
        const int col = 8 * (j + (m >> 1));        // 0..255
        const int box = col / 64, chunk = (col % 64) / 8;
        uint8_t* p = myC + box * C_SUB + row * 128 + ((chunk ^ (row & 7)) << 4);  // 128B swizzle
        stmatrix_x4(p, pack_bf16x2_hp(acc[4 * j + 0], acc[4 * j + 1]),
                    pack_bf16x2_hp(acc[4 * j + 2], acc[4 * j + 3]),
                    pack_bf16x2_hp(acc[4 * j + 4], acc[4 * j + 5]),
                    pack_bf16x2_hp(acc[4 * j + 6], acc[4 * j + 7]));
      }
      fence_proxy_async_smem();  // make the generic smem writes visible to the TMA (async proxy)
      named_barrier_sync(1 + cw, 128);
      if (t128 == 0) {
        const int r0 = tm * BM + cw * 64;
        if (r0 < M) {
#pragma unroll
          for (int b = 0; b < 4; ++b)
            if (tn * BN + b * 64 < N) tma_store_2d(&tmC, myC + b * C_SUB, tn * BN + b * 64, r0);
        }
        tma_store_commit();
      }
    }
    if (t128 == 0) tma_store_wait<0>();  // smem must outlive the last store's reads
  }
#endif
}

}  // namespace

std::string supports_08(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_gemm_supports(a, d, SMEM);
}

void launch_08(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&k08), SMEM);
  const int tiles = ceil_div(a.M, BM) * ceil_div(a.N, BN);
  const int grid = tiles < device_info().sms ? tiles : device_info().sms;
  k08<<<grid, THREADS, SMEM, s>>>(tA, tW, tC, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
