// kernels/attention/08_heaviest_first.cu — rung 08 (sm_90a): causal row tiles, longest first.
//
// Change from rung 07: with causal masking the row tile m costs ~ (m + 1) KV tiles; the grid is
// ordered so that the first CTAs the hardware dispatches for each head (low blockIdx.x) take the
// heaviest tiles and the light ones fill in behind (longest-processing-time-first), instead of the
// heavy tiles arriving last and leaving a tail of few busy SMs. Non-causal shapes are unchanged.
// Not (yet) a persistent kernel: the hardware block scheduler still does the placement.
// Measured (H200): pending
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, heaviest-first>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, true>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, true, true>;
}  // namespace

std::string attn_heaviest_first_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_heaviest_first_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s, false);
  else hattn::launch<C128>(a, s, false);
}
}  // namespace kl
