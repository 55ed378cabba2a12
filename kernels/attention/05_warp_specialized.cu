// kernels/attention/05_warp_specialized.cu — rung 05 (sm_90a): producer warpgroup + setmaxnreg.
//
// Change from rung 04: a dedicated producer warpgroup (one thread issues every TMA) runs ahead
// through the K/V ring, gated by per-stage "empty" mbarriers that each consumer warp arrives on
// when its wgmmas have read the stage; the two consumer warpgroups never block on each other (no
// __syncthreads in the loop). setmaxnreg moves registers from the producer (40) to the consumers
// (232) so S (BN/2 fp32), O (D/2 fp32) and P (BN/4 regs) stay resident.
// Why: in rung 04 every refill waits for the slowest warpgroup and the issuing thread computes too.
// Measured (H200): pending
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, heaviest-first>
using C64 = hattn::Cfg<64, 2, 128, 3, true, false, false, false>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, false, false, false>;
}  // namespace

std::string attn_warp_specialized_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_warp_specialized_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s, false);
  else hattn::launch<C128>(a, s, false);
}
}  // namespace kl
