// kernels/gemm_bf16/cluster_gemm.cuh — family-private: the persistent 2-CTA-cluster kernel with TMA
// multicast of the operand the pair shares, of rungs 09 (ThreeStages, pairs along M sharing W), 13
// (FourStages, along M), 20 (NarrowTiles, pairs along N sharing A) and 21 (FourStages, along N).
// The rung files say what each configuration changes (rung 09's header: the multicast, the
// cluster-wide empty barriers, the expect-tx ordering); this is the code they share. The tile,
// roles, epilogue and PDL are those of tma_store_gemm.cuh.
#pragma once

#include "common/pdl.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace cluster {

constexpr int BM = 128, BK = kBK, THREADS = 384, GROUP = 8, CLUSTER = 2;
constexpr int CONSUMER_WARPS = 8;
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
template <class Ring>
constexpr int b_bytes() { return Ring::kBN * BK * 2; }  // 32 KB (BN = 256), 8 KB (64)
template <class Ring>
constexpr int stage_bytes() { return A_BYTES + b_bytes<Ring>(); }
static_assert(BM == 2 * 64, "two m64 consumers");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp per CTA");

// Which two tiles a cluster's CTAs (rank 0, 1) compute, and so which operand box they share: each
// CTA loads half of the shared box and multicasts it to both.
struct PairAlongM {  // rungs 09, 13: tiles (2p + rank, n) need the same W rows
  static constexpr bool kShareA = false;
};
struct PairAlongN {  // rungs 20, 21: tiles (m, 2p + rank) need the same A rows
  static constexpr bool kShareA = true;
};
// Work units (tile pairs) of an M x N tile grid.
template <class Pair>
__host__ __device__ inline int pair_units(int tiles_m, int tiles_n) {
  return Pair::kShareA ? tiles_m * ceil_div(tiles_n, CLUSTER) : ceil_div(tiles_m, CLUSTER) * tiles_n;
}
// Bytes of the shared box each CTA loads (a multiple of 1 KB: the halves stay swizzle-atom aligned).
template <class Ring, class Pair>
constexpr int half_bytes() { return (Pair::kShareA ? A_BYTES : b_bytes<Ring>()) / CLUSTER; }

// Staging per consumer warpgroup (hopper_gemm.cuh: epilogue_boxes).
// Ring: ThreeStages, FourStages or NarrowTiles (hopper_gemm.cuh).
template <class Ring>
constexpr int c_bytes() { return epilogue_boxes<Ring::kEpiloguePasses, Ring::kBN>() * kCSub; }
template <class Ring>
constexpr size_t smem_bytes() {
  return 1024 + Ring::kStages * stage_bytes<Ring>() + 2 * c_bytes<Ring>() + 2 * Ring::kStages * 8;
}

// A work unit is one cluster's pair of tiles, in grouped order over the pair grid; rank picks the
// CTA's tile of the pair. With an odd tile count along the pair's axis the last pair's rank 1 gets
// the tile past the edge: it loads (its half of the shared box is the peer's too) but stores nothing.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <class Pair>
__device__ __forceinline__ void pair_tile(int u, int tiles_m, int tiles_n, int rank, int& tm, int& tn) {
  if constexpr (Pair::kShareA) {
    int pn;
    grouped_tile<GROUP>(u, tiles_m, ceil_div(tiles_n, CLUSTER), tm, pn);
    tn = pn * CLUSTER + rank;
  } else {
    int pm;
    grouped_tile<GROUP>(u, ceil_div(tiles_m, CLUSTER), tiles_n, pm, tn);
    tm = pm * CLUSTER + rank;
  }
}
#endif

template <class Ring, class Pair>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                        const __grid_constant__ CUtensorMap tmC, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int STAGES = Ring::kStages, PASSES = Ring::kEpiloguePasses, BN = Ring::kBN;
  constexpr int B_BYTES = b_bytes<Ring>(), STAGE_BYTES = stage_bytes<Ring>();
  constexpr int C_BYTES = c_bytes<Ring>(), HALF = half_bytes<Ring, Pair>();
  static_assert(HALF % 1024 == 0, "shared-box halves stay 1024-aligned for the swizzle atoms");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][epilogue_boxes boxes][64 rows][128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
  const int units = pair_units<Pair>(tiles_m, tiles_n);
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
  // PDL as tma_store_gemm.cuh: the next grid may launch as CTAs leave; no global access before
  // the previous grid has completed.
  pdl_trigger();
  pdl_wait();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;
      for (int u = cluster_id; u < units; u += clusters) {
        int tm, tn;
        pair_tile<Pair>(u, tiles_m, tiles_n, rank, tm, tn);
        for (int kb = 0; kb < num_k; ++kb, ++it) {
          const int s = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[s], (r & 1) ^ 1);  // both CTAs' consumers released slot s
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // own box + both halves of the shared one
          // Box starts are clamped into the tensor: the spare tile of a last pair, or a half wholly
          // past M or N, loads real rows whose products are never stored, so no box starts out of
          // bounds.
          if constexpr (Pair::kShareA) {
            tma_load_2d_multicast(sA + s * A_BYTES + rank * HALF, &tmA, &full[s], kb * BK,
                                  min(tm * BM + rank * (BM / CLUSTER), M - 1), uint16_t((1 << CLUSTER) - 1));
            tma_load_2d(sB + s * B_BYTES, &tmW, &full[s], kb * BK, min(tn, tiles_n - 1) * BN);
          } else {
            tma_load_2d(sA + s * A_BYTES, &tmA, &full[s], kb * BK, min(tm, tiles_m - 1) * BM);
            tma_load_2d_multicast(sB + s * B_BYTES + rank * HALF, &tmW, &full[s], kb * BK,
                                  min(tn * BN + rank * (BN / CLUSTER), N - 1), uint16_t((1 << CLUSTER) - 1));
          }
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
      int tm, tn;
      pair_tile<Pair>(u, tiles_m, tiles_n, rank, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      consume_k_blocks<STAGES, A_BYTES, B_BYTES, BN>(acc, sA, sB, full, empty, num_k, it, cw, lane, release);
      // A spare tile (row or column past M or N) stores no box (tma_store_epilogue's bounds).
      tma_store_epilogue<PASSES, BN>(acc, myC, &tmC, M, N, tm * BM + cw * 64, tn * BN, cw, t128);
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
template <class Ring, class Pair>
int max_active_clusters() {
  return resident_clusters(reinterpret_cast<const void*>(&cluster_gemm_kernel<Ring, Pair>), CLUSTER, THREADS,
                           smem_bytes<Ring>());
}

template <class Ring>
std::string cluster_gemm_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  static_assert(smem_bytes<Ring>() <= 227 * 1024, "fits the sm_90 opt-in limit");
  return tma_gemm_supports(a, d, smem_bytes<Ring>());
}

template <class Ring, class Pair>
void cluster_gemm_launch(const GemmBf16Args& a, cudaStream_t s) {
  constexpr size_t SMEM = smem_bytes<Ring>();
  constexpr int BN = Ring::kBN;
  // Each CTA loads half of the shared box: 64 of A's 128 rows, or BN / 2 of W's rows.
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, Pair::kShareA ? BM / CLUSTER : BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, Pair::kShareA ? BN : BN / CLUSTER);
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  auto* kernel = &cluster_gemm_kernel<Ring, Pair>;
  opt_in_smem(reinterpret_cast<const void*>(kernel), SMEM);
  const int tiles_m = ceil_div(a.M, BM), tiles_n = ceil_div(a.N, BN);
  const int units = pair_units<Pair>(tiles_m, tiles_n);
  const int max_clusters = max_active_clusters<Ring, Pair>();  // persistent: co-resident
  const int grid = CLUSTER * (units < max_clusters ? units : max_clusters);
  pdl_launch(kernel, dim3(grid), dim3(THREADS), SMEM, s, pdl_stream(s), tA, tW, tC, a.M, a.N, a.K);
}

}  // namespace cluster
}  // namespace hopper_gemm
}  // namespace kl
