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
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, false, 7>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, true, false, 7>;
}  // namespace

std::string attn_pingpong_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_pingpong_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
