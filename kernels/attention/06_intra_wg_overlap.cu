// 06 intra_wg_overlap — (sm_90a) softmax overlapped with wgmma inside a warpgroup.
//
// Parent: 05 warp_specialized.
// Change: S(t+1) = Q K_{t+1}^T is issued before O += P(t) V(t), and the softmax of S(t+1) runs
//   (wgmma_wait<1>) while P(t) V(t) is still on the tensor cores; O is rescaled after that wgmma
//   retires, P(t) registers live until then. Separate k_empty / v_empty barriers keep a tile of
//   lookahead for the producer (one shared barrier per stage would be held into iteration t+1).
// Why: in rung 05 the tensor cores idle during each softmax (exp2, max, sum).
// Limits: the two warpgroups run in lock-step, so each one's softmax still competes with its own
//   P V only (rung 07). The entry point's non-causal long pick.
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, false, false, 6>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, false, false, 6>;
}  // namespace

std::string attn_intra_wg_overlap_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_intra_wg_overlap_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
