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
// Code: cluster_gemm.cuh, instantiated with STAGES = 3 and one 64 x 256 epilogue pass.
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string supports_09(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::supports<3, 1>(a, d);
}
void launch_09(const GemmBf16Args& a, cudaStream_t s) { cluster::launch<3, 1>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
