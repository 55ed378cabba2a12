// Rung 09 — cluster_multicast: CTA pairs (cluster 2x1 along M) share the W tile: each CTA loads
// half of it and TMA-multicasts the half into both CTAs' shared memory.
//
// Change from rung 08: clusters. Two CTAs computing vertically adjacent 128x256 tiles need the same
// 256x64 W block per k-block. Rung 08 fetched it twice from L2; here rank r loads W rows
// 128r..128r+127 of the block once, with .multicast::cluster to both CTAs (mask 0b11), plus its
// own A box. Per CTA per k-block: L2->SM traffic drops from 48 KB to 32 KB (-33%); each CTA's
// full barrier still expects 48 KB (its A + both W halves). Because the producer of either CTA
// writes into both CTAs' slots, a slot is free only when the consumers of BOTH CTAs have released
// it: empty[s] counts 16 arrivals (8 consumer warps x 2 CTAs) and every consumer warp arrives on
// the empty barrier of both CTAs (mapa + mbarrier.arrive, default .release.cta: see below). Barrier init is made
// cluster-visible with fence.mbarrier_init + a cluster barrier; a final cluster barrier keeps each
// CTA (its smem and barriers) alive until its peer is done arriving on it.
// Scheduling: a persistent cluster takes tile PAIRS (2 M-tiles x 1 N-tile) in grouped order; both
// CTAs walk the same pair sequence, so their rings stay in lock-step. With an odd number of
// M-tiles the last pair's rank-1 CTA still loads (the last real A tile: it must keep feeding its
// peer the W half) and stores nothing.
// Expect-tx ordering: the peer's multicast bytes may land before this CTA's producer has posted
// expect_tx for the phase; the tx count goes transiently negative, which mbarriers allow (the
// phase cannot complete before the local producer's arrival).
// Measured (H200, 2026-11-29, round 1 (results/h200/dev/round1/gemm_bf16.jsonl)): 450 TF at 4096^3 (08: 777), 398 at 2048^3,
// 0.207 ms at M=1 4096x11008 (08: 0.109): ncu showed 45% of stalls on MEMBAR: the consumer
// release used mbarrier.arrive.release.cluster, which ptxas precedes with MEMBAR.ALL.GPU. Fixed
// with mbar_arrive_remote (default .release.cta, as CUTLASS); re-measured in gemm2 request 2.
#include <map>
#include <mutex>

#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 256, BK = kBK, STAGES = 3, THREADS = 384, GROUP = 8, CLUSTER = 2;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB (two 16 KB halves, one from each CTA)
constexpr int B_HALF = B_BYTES / CLUSTER;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_SUB = 64 * 64 * 2;    // one 64x64 bf16 store box, 8 KB, 128B-swizzled
constexpr int C_BYTES = 4 * C_SUB;    // 64 x 256 per consumer warpgroup
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8;
static_assert(BM == 2 * 64 && BN == 4 * 64, "two m64 consumers, four 64-wide store boxes");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp per CTA");
static_assert(B_HALF % 1024 == 0, "W halves stay 1024-aligned for the swizzle atoms");
static_assert(GROUP >= 1, "grouped raster height");
static_assert(SMEM <= 227 * 1024, "fits the sm_90 opt-in limit");

__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
    k09(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
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
  const int pairs_m = ceil_div(tiles_m, CLUSTER);
  const int units = pairs_m * tiles_n;  // work unit: a pair of vertically adjacent tiles
  const int rank = (int)cluster_ctarank();
  const int cluster_id = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
  const int num_k = ceil_div(K, BK);

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    tma_prefetch_desc(&tmC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CONSUMER_WARPS * CLUSTER);
    }
    fence_barrier_init();
  }
  cluster_sync();  // both CTAs' barriers initialised before any multicast or remote arrive

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;
      for (int u = cluster_id; u < units; u += clusters) {
        int pm, tn;
        grouped_tile<GROUP>(u, pairs_m, tiles_n, pm, tn);
        const int tm = pm * CLUSTER + rank;
        for (int kb = 0; kb < num_k; ++kb, ++it) {
          const int s = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[s], (r & 1) ^ 1);  // both CTAs' consumers released slot s
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // own A + both W halves
          // Box starts are clamped into the tensor: a pair's spare CTA (tm == tiles_m) or a W
          // half wholly past N loads real rows whose products are never stored, so no box
          // starts out of bounds.
          tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, min(tm, tiles_m - 1) * BM);
          tma_load_2d_multicast(sB + s * B_BYTES + rank * B_HALF, &tmW, &full[s], kb * BK,
                                min(tn * BN + rank * (BN / CLUSTER), N - 1),
                                uint16_t((1 << CLUSTER) - 1));
        }
      }
    }
    __syncwarp();
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1, t128 = tid % 128, warp = t128 / 32, lane = tid % 32;
    uint8_t* myC = sC + cw * C_BYTES;
    // A slot is refilled by the producers of both CTAs: tell both.
    auto release = [](uint64_t* bar) {
#pragma unroll
      for (int c = 0; c < CLUSTER; ++c) mbar_arrive_remote(bar, c);
    };
    float acc[BN / 2];
    int it = 0;
    for (int u = cluster_id; u < units; u += clusters) {
      int pm, tn;
      grouped_tile<GROUP>(u, pairs_m, tiles_n, pm, tn);
      const int tm = pm * CLUSTER + rank;
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
        if (kb > 0 && lane == 0) release(&empty[(it - 1) % STAGES]);
      }
      wgmma_wait<0>();
      if (lane == 0) release(&empty[(it - 1) % STAGES]);

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
  __syncwarp();
  cluster_sync();  // the peer may still arrive on our empty barriers until it is done
#endif
}

// How many 2-CTA clusters fit on the device at once (GPCs with an odd SM count leave SMs idle, so
// this can be below #SMs / 2); a persistent grid larger than this would run a second, mostly
// empty wave. Queried once per device (no API call on later launches: graph-capturable).
int max_active_clusters() {
  static std::mutex mu;
  static std::map<int, int> cache;
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(dev);
  if (it != cache.end()) return it->second;
  opt_in_smem(reinterpret_cast<const void*>(&k09), SMEM);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(CLUSTER * (device_info().sms / CLUSTER), 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = SMEM;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = CLUSTER, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, k09, &cfg) != cudaSuccess || n < 1) {
    cudaGetLastError();  // clear; fall back to the SM count
    n = device_info().sms / CLUSTER;
  }
  cache.emplace(dev, n);
  return n;
}

}  // namespace

std::string supports_09(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_gemm_supports(a, d, SMEM);
}

void launch_09(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN / CLUSTER);  // each CTA loads one half
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&k09), SMEM);
  const int units = ceil_div(ceil_div(a.M, BM), CLUSTER) * ceil_div(a.N, BN);
  const int max_clusters = max_active_clusters();  // persistent: every cluster co-resident
  const int grid = CLUSTER * (units < max_clusters ? units : max_clusters);
  k09<<<grid, THREADS, SMEM, s>>>(tA, tW, tC, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
