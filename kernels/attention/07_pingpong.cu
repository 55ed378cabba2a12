// 07 pingpong — (sm_90a) the two consumer warpgroups ping-pong.
//
// Parent: 06 intra_wg_overlap.
// Change: the consumer warpgroups take turns issuing their wgmma batches, handing a token through
//   two named barriers (bar.sync on its own, bar.arrive on the other's), so one warpgroup's softmax
//   runs while the other's Q K^T and P V occupy the tensor cores.
// Why: at D = 128 the softmax (MUFU exp2, FMNMX/FADD) is a large share of the issue slots per tile.
// Limits: 06 already hides most of the softmax under its own P V; the hand-off costs a bar.sync
//   per batch and serializes the two warpgroups' issue, so it pays only on some shapes. Kept:
//   rung 08 builds on it.
// Code: `using WarpgroupTurns = PingpongTurns` (hopper_fa_mainloop.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 7
#endif
#ifndef KL_ATTENTION_07_CONFIG
#define KL_ATTENTION_07_CONFIG
#include "attention/06_intra_wg_overlap.cu"  // rung 06: the parent configuration

namespace kl {
namespace hattn {
// Rung 06's configuration plus the ping-pong of the two consumer warpgroups.
template <int D>
struct Pingpong : IntraWgOverlap<D> {
  using WarpgroupTurns = PingpongTurns;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 7
namespace kl {
std::string attention_pingpong_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::Pingpong>(a, d);
}

void attention_pingpong_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::Pingpong>(a, s);
}
}  // namespace kl
#endif
