// 21 wide_pair_along_n — rung 13's 128 x 256 tiles and 4-deep ring, the pair along N instead of M.
//
// Parent: 13 cluster_multicast_4stage.
// Change: the 2-CTA cluster computes tiles (m, 2p) and (m, 2p + 1), which read the same A rows:
//   each CTA loads half of the 128-row A box and multicasts it (PairAlongN, rung 20's axis), and
//   loads its own 256-row W box. L2 -> SM traffic per CTA and k-block: 40 KB (rung 12: 48, rung
//   13: 32).
// Why: a pair along M needs an even M-tile count to fill its clusters; at M = 4097 (33 row tiles
//   of 128) rung 13's last pair has a spare CTA and its grid is capped by co-resident clusters, so
//   some tiles run in a second round. Along N (1016 = 4 tiles of 256) every pair is whole and the
//   132 tiles are one wave of 66 clusters, the tiling cuBLAS runs at this shape.
// Limits: more L2 traffic than rung 13's pair (it shares the 16 KB operand, not the 32 KB one); the
//   pair is in lock-step and the cluster launch and barriers are a fixed cost (rung 13's); an odd
//   N-tile count leaves a spare CTA per row of pairs.
// Code: cluster_gemm.cuh with FourStages and PairAlongN.
#include "gemm_bf16/cluster_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_wide_pair_along_n_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return cluster::cluster_gemm_supports<FourStages>(a, d);
}
void gemm_bf16_wide_pair_along_n_launch(const GemmBf16Args& a, cudaStream_t s) {
  cluster::cluster_gemm_launch<FourStages, cluster::PairAlongN>(a, s);
}

}  // namespace hopper_gemm
}  // namespace kl
