// Rung 13 — cluster_multicast_4stage: rung 09's 2x1 cluster W multicast, on top of rung 12's
// 4-deep ring (epilogue staged in 64x128 halves).
//
// Change from rung 12: clusters with TMA multicast (the change rung 09 made on top of rung 08).
// Why 09 lost 40% to 08 (round 1: 450 vs 777 TF at 4096^3, and 2x slower even at M = 1 where both
// are bound by the k-loop): with wgmma_wait<1> the consumers hold TWO stages (the one in the tensor
// core and the one just issued), so a 3-stage ring leaves ONE load in flight, and in a cluster that
// load can only start after BOTH CTAs' consumers released the slot (a remote mbarrier arrive) and
// both producers issued their halves: the refill latency chain outgrows one k-block of math
// (~0.6 us) and the tensor cores wait every k-block. With 4 stages two loads are in flight, which
// is what rung 12 measures for the single-CTA case; this rung re-applies the multicast on top.
// Everything else is rung 09: each CTA loads half the 256-row W box and multicasts it to both,
// empty[s] counts 8 consumer warps x 2 CTAs, barrier init is cluster-visible before any remote
// traffic, a final cluster barrier keeps smem alive for the peer's arrivals.
// Budget: as rung 12, 230,464 B of shared memory.
// Measured (H200, 2026-11-29, gemm2 request 1, still with 09's membar bug): 455 TF at 4096^3
// (12: 793): the depth was not the problem. With mbar_arrive_remote: request 2.
#include <map>
#include <mutex>

#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int BM = 128, BN = 256, BK = kBK, STAGES = 4, THREADS = 384, GROUP = 8, CLUSTER = 2;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB (two 16 KB halves, one from each CTA)
constexpr int B_HALF = B_BYTES / CLUSTER;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_SUB = 64 * 64 * 2;    // one 64x64 bf16 store box, 8 KB, 128B-swizzled
constexpr int C_BYTES = 2 * C_SUB;    // 64 x 128 (half the warpgroup's block) at a time
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8;
static_assert(BM == 2 * 64 && BN == 4 * 64, "two m64 consumers, four 64-wide store boxes");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp per CTA");
static_assert(B_HALF % 1024 == 0, "W halves stay 1024-aligned for the swizzle atoms");
static_assert(GROUP >= 1, "grouped raster height");
static_assert(SMEM <= 227 * 1024, "fits the sm_90 opt-in limit");

__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
    k13(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
        const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][2 boxes][64 rows][128 B]
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

      // ---- epilogue in two halves of 64 x 128 (boxes 2h, 2h+1 of the 256-wide block).
      // stmatrix.x4 #j2 covers n8 chunks j = 2*j2, 2*j2+1 of this warp's 16 rows. Lane l gives the
      // row address of matrix l/8: matrix m = rows 8*(m&1).., chunk j + (m>>1).
      const int m = lane / 8;
      const int row = warp * 16 + (m & 1) * 8 + (lane % 8);  // 0..63 within the warpgroup block
      const int r0 = tm * BM + cw * 64;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // The previous stores (last tile's second half, or this tile's first) must have finished
        // READING myC before it is overwritten.
        if (t128 == 0) tma_store_wait_read<0>();
        named_barrier_sync(1 + cw, 128);
#pragma unroll
        for (int j2 = h * (BN / 32); j2 < (h + 1) * (BN / 32); ++j2) {
          const int j = 2 * j2;
          const int col = 8 * (j + (m >> 1)) - h * 128;  // 0..127 within the half
          const int box = col / 64, chunk = (col % 64) / 8;
          uint8_t* p = myC + box * C_SUB + row * 128 + ((chunk ^ (row & 7)) << 4);  // 128B swizzle
          stmatrix_x4(p, pack_bf16x2_hp(acc[4 * j + 0], acc[4 * j + 1]),
                      pack_bf16x2_hp(acc[4 * j + 2], acc[4 * j + 3]),
                      pack_bf16x2_hp(acc[4 * j + 4], acc[4 * j + 5]),
                      pack_bf16x2_hp(acc[4 * j + 6], acc[4 * j + 7]));
        }
        fence_proxy_async_smem();  // generic smem writes -> visible to the TMA (async proxy)
        named_barrier_sync(1 + cw, 128);
        if (t128 == 0) {
          if (r0 < M) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
              const int c0 = tn * BN + h * 128 + b * 64;
              if (c0 < N) tma_store_2d(&tmC, myC + b * C_SUB, c0, r0);
            }
          }
          tma_store_commit();
        }
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
int max_active_clusters13() {
  static std::mutex mu;
  static std::map<int, int> cache;
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(dev);
  if (it != cache.end()) return it->second;
  opt_in_smem(reinterpret_cast<const void*>(&k13), SMEM);
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
  if (cudaOccupancyMaxActiveClusters(&n, k13, &cfg) != cudaSuccess || n < 1) {
    cudaGetLastError();  // clear; fall back to the SM count
    n = device_info().sms / CLUSTER;
  }
  cache.emplace(dev, n);
  return n;
}

}  // namespace

std::string supports_13(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_gemm_supports(a, d, SMEM);
}

void launch_13(const GemmBf16Args& a, cudaStream_t s) {
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN / CLUSTER);  // each CTA loads one half
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&k13), SMEM);
  const int units = ceil_div(ceil_div(a.M, BM), CLUSTER) * ceil_div(a.N, BN);
  const int max_clusters = max_active_clusters13();  // persistent: every cluster co-resident
  const int grid = CLUSTER * (units < max_clusters ? units : max_clusters);
  k13<<<grid, THREADS, SMEM, s>>>(tA, tW, tC, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace hopper_gemm
}  // namespace kl
