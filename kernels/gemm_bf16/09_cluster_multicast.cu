// 09 cluster_multicast — CTA pairs (cluster 2x1 along M) share the W tile: each CTA loads half of
// it and TMA-multicasts the half into both CTAs' shared memory.
//
// Parent: 08 tma_store_epilogue.
// Change: clusters. Rank r loads W rows 128r..128r+127 of the 256x64 block with .multicast::cluster
//   to both CTAs, plus its own A box; each full barrier still expects 48 KB. empty[s] counts 16
//   arrivals (8 consumer warps x 2 CTAs; mapa + mbarrier.arrive with the default .release.cta —
//   .release.cluster makes ptxas emit a MEMBAR.ALL.GPU per arrive). A persistent cluster takes tile
//   pairs in grouped order; with an odd M-tile count the last pair's rank 1 loads but stores nothing.
// Why: two vertically adjacent tiles need the same W block; L2->SM traffic per CTA per k-block
//   drops from 48 KB to 32 KB.
// Limits: a slot is free only when both CTAs released it, and with 3 stages that refill chain
//   outgrows a k-block of math (rung 13). A peer's multicast bytes may land before the local
//   expect_tx (transiently negative tx count, allowed). Code: cluster_gemm.cuh with ThreeStages.
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_cluster_multicast_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::cluster_gemm_supports<ThreeStages>(a, d);
}
void gemm_bf16_cluster_multicast_launch(const GemmBf16Args& a, cudaStream_t s) { cluster::cluster_gemm_launch<ThreeStages, cluster::PairAlongM>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
