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
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, false, false, false, 5>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, false, false, false, 5>;
}  // namespace

std::string attn_warp_specialized_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_warp_specialized_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
