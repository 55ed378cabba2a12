// 13 cluster_multicast_4stage — rung 09's 2x1 cluster W multicast on top of rung 12's 4-deep ring.
//
// Parent: 12 four_stages.
// Change: clusters with TMA multicast (the change 09 made on top of 08): each CTA loads half the
//   256-row W box and multicasts it to both; empty[s] counts 8 consumer warps x 2 CTAs; barrier init
//   is cluster-visible before any remote traffic; a final cluster barrier keeps smem alive for the
//   peer's arrivals.
// Why: with wgmma_wait<1> the consumers hold two stages, so 09's 3-stage ring left one load in
//   flight behind a two-CTA release chain; with 4 stages two loads are in flight.
// Limits: as rung 12, 230,464 B of shared memory; the pair must stay in lock-step. Code:
//   cluster_gemm.cuh (rung 09's kernel) with FourStages (4 stages, four epilogue passes).
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_cluster_multicast_4stage_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::cluster_gemm_supports<FourStages>(a, d);
}
void gemm_bf16_cluster_multicast_4stage_launch(const GemmBf16Args& a, cudaStream_t s) { cluster::cluster_gemm_launch<FourStages, cluster::PairAlongM>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
