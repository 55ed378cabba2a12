// 13 short_items — (sm_90a) 64-row items, one consumer warpgroup per CTA, two CTAs per SM.
//
// Parent: 12 double_q.
// Change: a CTA has one consumer warpgroup (BM = 64) and is small enough to run twice on an SM:
//   2 stages of 64-key tiles at D = 128 (97 KB of shared memory), of 128-key tiles at D = 64
//   (81 KB), setmaxnreg 40/216 and `__launch_bounds__(256, 2)`; the persistent grid is two CTAs per SM.
// Why: on short KV ranges (B = 16, S = 512: 4 to 8 key tiles per item) an item's first S, last P V
//   and O store are a large share of its time. Two independent CTAs per SM interleave them: one
//   item's tail runs under the other CTA's mainloop.
// Limits: half the rows per K/V tile load, so each K/V byte is read from L2 twice as often; at
//   D = 128 the 64-key tile doubles the per-tile fixed costs. Long D = 128 ranges keep 08 / 06.
// Code: `consumer_warpgroups = 1`, `kv_tile`, `stages`, `ctas_per_sm = 2` (hopper_fa_config.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 13
#endif
#ifndef KL_ATTENTION_13_CONFIG
#define KL_ATTENTION_13_CONFIG
#include "attention/12_double_q.cu"  // rung 12: the parent configuration

namespace kl {
namespace hattn {
// Rung 12's pieces at a size that fits twice on an SM: one consumer warpgroup, so no turns to take.
template <int D>
struct ShortItems : DoubleQ<D> {
  static constexpr int consumer_warpgroups = 1;
  static constexpr int kv_tile = D == 128 ? 64 : 128;
  static constexpr int stages = 2;
  static constexpr int ctas_per_sm = 2;
  using WarpgroupTurns = NoTurns;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 13
namespace kl {
std::string attention_short_items_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::ShortItems>(a, d);
}

void attention_short_items_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::ShortItems>(a, s);
}
}  // namespace kl
#endif
