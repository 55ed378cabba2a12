// 05 warp_specialized — (sm_90a) producer warpgroup + setmaxnreg.
//
// Parent: 04 wgmma_tma.
// Change: a dedicated producer warpgroup (one thread issues every TMA) runs ahead through the K/V
//   ring, gated by per-stage "empty" mbarriers each consumer warp arrives on when its wgmmas have
//   read the stage (K and V slots released separately: K when S retired, V after P V); the two
//   consumer warpgroups never block on each other. setmaxnreg moves registers from the producer
//   (40) to the consumers (232) so S, O and P stay resident.
// Why: in rung 04 every refill waits for the slowest warpgroup and the issuing thread computes too.
// Limits: the tensor cores idle during each softmax (rung 06).
// Code: `using Producer = ProducerWarpgroup` (hopper_fa_mainloop.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 5
#endif
#ifndef KL_ATTENTION_05_CONFIG
#define KL_ATTENTION_05_CONFIG
#include "attention/04_wgmma_tma.cu"  // rung 04: the parent configuration

namespace kl {
namespace hattn {
// Rung 04's configuration plus the producer warpgroup (which runs 3 stages ahead at D = 64).
template <int D>
struct WarpSpecialized : WgmmaTma<D> {
  using Producer = ProducerWarpgroup;
  static constexpr int stages = D == 64 ? 3 : 2;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 5
namespace kl {
std::string attention_warp_specialized_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::WarpSpecialized>(a, d);
}

void attention_warp_specialized_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::WarpSpecialized>(a, s);
}
}  // namespace kl
#endif
