// 20 pair_along_n — rung 19's 128 x 64 tiles in 2-CTA clusters along N: the two CTAs compute side
// by side tiles, which read the same A rows, and each loads half of the A box and multicasts it.
//
// Parent: 19 narrow_tiles.
// Change: clusters (rung 09's mechanism on the other operand): rank r loads A rows 64r..64r+63 of
//   the 128 x 64 box with .multicast::cluster to both CTAs, plus its own 64 x 64 W box; each full
//   barrier still expects 24 KB; empty[s] counts 8 consumer warps x 2 CTAs.
// Why: at 128 x 64 the A box is two thirds of a stage. A one-wave GEMM (1024^3: 128 CTAs, 16
//   k-blocks each) moves every stage from L2 to all SMs at once; sharing A cuts that traffic per
//   CTA per k-block from 24 KB to 16 KB.
// Limits: the pair is in lock-step (a slot is free when both CTAs released it), and a cluster
//   launch and its two cluster barriers are a fixed cost that a one-wave GEMM of a few microseconds
//   does not earn back: slower than 19 on the one-wave shapes, so in no pick list (docs/gemm_bf16.md).
//   With an odd N-tile count the last pair's rank 1 loads but stores nothing; the grid is capped by
//   co-resident clusters. Code: cluster_gemm.cuh with NarrowTiles and PairAlongN.
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_pair_along_n_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::cluster_gemm_supports<NarrowTiles>(a, d);
}
void gemm_bf16_pair_along_n_launch(const GemmBf16Args& a, cudaStream_t s) {
  cluster::cluster_gemm_launch<NarrowTiles, cluster::PairAlongN>(a, s);
}

}  // namespace hopper_gemm
}  // namespace kl
