// 08 heaviest_first — (sm_90a) persistent CTAs, heaviest work items first.
//
// Parent: 07 pingpong.
// Change: one CTA per SM loops over work items (a 128-row tile of one (b, kv head)) from a global
//   counter (the producer grabs the next item and publishes it with the Q load). Items go
//   longest-processing-time first: heads in groups whose K/V fit in L2, inside a group the causal
//   row tiles from the last (longest) to the first. The K/V ring runs across items, so the next
//   item's loads overlap the current one's last P V and O store. The item, ring position and Q's
//   consumer index go through redux.sync, so every wgmma descriptor is on the uniform datapath.
// Why: causal row tile m costs ~(m + 1) KV tiles; block order leaves the heavy tiles of the last
//   heads for a tail of few busy SMs, and every CTA pays its own pipeline fill and drain.
// Limits: non-causal shapes get only the fill/drain overlap. The entry point's causal pick.
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, true, 8>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, true, true, 8>;
}  // namespace

std::string attn_heaviest_first_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_heaviest_first_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
