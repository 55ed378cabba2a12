// 21 wide_pair_along_n — rung 13's clusters turned across: pairs of 128 x 256 tiles side by side
// along N share A by multicast instead of pairs along M sharing W.
//
// Parent: 13 cluster_multicast_4stage.
// Change: the pair's axis (PairAlongN): rank r loads A rows 64r..64r+63 of the 128 x 64 box and
//   multicasts them, and its own 256 x 64 W box; a stage is still 48 KB.
// Why: a shape whose 128 x 256 tiles fill exactly one wave (4097 x 1016: 33 x 4 = 132) has an
//   even tile count along N and an odd one along M, so rung 13's pairs along M need 136 CTAs
//   (two waves) where pairs along N need 132.
// Limits: A is a third of the stage, so the L2 traffic per CTA per k-block drops from 48 KB to
//   40 KB (rung 13: 32 KB); the pair is in lock-step. Code: cluster_gemm.cuh with FourStages and
//   PairAlongN.
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
