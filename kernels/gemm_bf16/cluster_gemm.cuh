// kernels/gemm_bf16/cluster_gemm.cuh — family-private: the persistent 2x1-cluster kernel with TMA
// multicast of W, of rungs 09 (ThreeStages: 3 stages, one 64 x 256 epilogue pass) and 13
// (FourStages: 4 stages, four 64 x 64 passes). The rung files say what each configuration changes
// (rung 09's header: the multicast, the cluster-wide empty barriers, the expect-tx ordering); this
// is the code they share. The tile, roles and epilogue are those of tma_store_gemm.cuh.
#pragma once

#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace cluster {

constexpr int BM = 128, BN = 256, BK = kBK, THREADS = 384, GROUP = 8, CLUSTER = 2;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB (two 16 KB halves, one from each CTA)
constexpr int B_HALF = B_BYTES / CLUSTER;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
static_assert(BM == 2 * 64 && BN == 4 * 64, "two m64 consumers, four 64-wide store boxes");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp per CTA");
static_assert(B_HALF % 1024 == 0, "W halves stay 1024-aligned for the swizzle atoms");

// Staging per consumer warpgroup (hopper_gemm.cuh: epilogue_boxes).
// Ring: ThreeStages or FourStages (hopper_gemm.cuh).
template <class Ring>
constexpr int c_bytes() { return epilogue_boxes<Ring::kEpiloguePasses>() * kCSub; }
template <class Ring>
constexpr size_t smem_bytes() {
  return 1024 + Ring::kStages * STAGE_BYTES + 2 * c_bytes<Ring>() + 2 * Ring::kStages * 8;
}

template <class Ring>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                        const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int STAGES = Ring::kStages, PASSES = Ring::kEpiloguePasses;
  constexpr int C_BYTES = c_bytes<Ring>();
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][epilogue_boxes boxes][64 rows][128 B]
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
    mbar_ring_init(full, empty, STAGES, CONSUMER_WARPS * CLUSTER);
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
    const int cw = wg - 1, t128 = tid % 128, lane = tid % 32;
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
      consume_k_blocks<STAGES, A_BYTES, B_BYTES>(acc, sA, sB, full, empty, num_k, it, cw, lane,
                                                 release);
      tma_store_epilogue<PASSES>(acc, myC, &tmC, M, N, tm * BM + cw * 64, tn * BN, cw, t128);
    }
    // smem must outlive the last stores' reads of it (the kernel's completion covers their writes)
    if (t128 == 0) tma_store_wait_read<0>();
  }
  __syncwarp();
  cluster_sync();  // the peer may still arrive on our empty barriers until it is done
#endif
}

// How many 2-CTA clusters fit on the device at once (GPCs with an odd SM count leave SMs idle, so
// this can be below #SMs / 2); a persistent grid larger than this would run a second, mostly
// empty wave. Queried once per device (no API call on later launches: graph-capturable).
template <class Ring>
int max_active_clusters() {
  return resident_clusters(reinterpret_cast<const void*>(&cluster_gemm_kernel<Ring>), CLUSTER, THREADS,
                           smem_bytes<Ring>());
}

template <class Ring>
std::string cluster_gemm_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  static_assert(smem_bytes<Ring>() <= 227 * 1024, "fits the sm_90 opt-in limit");
  return tma_gemm_supports(a, d, smem_bytes<Ring>());
}

template <class Ring>
void cluster_gemm_launch(const GemmBf16Args& a, cudaStream_t s) {
  constexpr size_t SMEM = smem_bytes<Ring>();
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN / CLUSTER);  // each CTA loads one half
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&cluster_gemm_kernel<Ring>), SMEM);
  const int units = ceil_div(ceil_div(a.M, BM), CLUSTER) * ceil_div(a.N, BN);
  const int max_clusters = max_active_clusters<Ring>();  // persistent: co-resident
  const int grid = CLUSTER * (units < max_clusters ? units : max_clusters);
  cluster_gemm_kernel<Ring><<<grid, THREADS, SMEM, s>>>(tA, tW, tC, a.M, a.N, a.K);
  KL_CHECK_LAUNCH();
}

}  // namespace cluster
}  // namespace hopper_gemm
}  // namespace kl
