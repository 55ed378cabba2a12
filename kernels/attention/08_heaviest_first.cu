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
// Code: `using Scheduler = HeaviestFirstScheduler` (hopper_fa_scheduler.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 8
#endif
#ifndef KL_ATTENTION_08_CONFIG
#define KL_ATTENTION_08_CONFIG
#include "attention/07_pingpong.cu"  // rung 07: the parent configuration

namespace kl {
namespace hattn {
// Rung 07's configuration plus the persistent, heaviest-first item loop.
template <int D>
struct HeaviestFirst : Pingpong<D> {
  using Scheduler = HeaviestFirstScheduler;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 8
namespace kl {
std::string attention_heaviest_first_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::HeaviestFirst>(a, d);
}

void attention_heaviest_first_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::HeaviestFirst>(a, s);
}
}  // namespace kl
#endif
