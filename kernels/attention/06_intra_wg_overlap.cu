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
// Code: `using Mainloop = OverlappedMainloop` (hopper_fa_mainloop.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 6
#endif
#ifndef KL_ATTENTION_06_CONFIG
#define KL_ATTENTION_06_CONFIG
#include "attention/05_warp_specialized.cu"  // rung 05: the parent configuration

namespace kl {
namespace hattn {
// Rung 05's configuration plus the overlapped loop.
template <int D>
struct IntraWgOverlap : WarpSpecialized<D> {
  using Mainloop = OverlappedMainloop;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 6
namespace kl {
std::string attention_intra_wg_overlap_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::IntraWgOverlap>(a, d);
}

void attention_intra_wg_overlap_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::IntraWgOverlap>(a, s);
}
}  // namespace kl
#endif
