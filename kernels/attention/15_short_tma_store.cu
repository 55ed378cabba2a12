// 15 short_tma_store — (sm_90a, D = 64) rung 13's two small CTAs per SM, O stored by TMA.
//
// Parent: 13 short_items.
// Change: rung 14's epilogue on rung 13's CTA: the consumer warpgroup writes its 64 rows of O / l
//   into an 8 KB staging tile and one thread stores it with a TMA store that nobody waits for
//   until the next item's epilogue.
// Why: rung 13 leads every D = 64 class, and an item there is 64 rows over few key tiles on the
//   batched short shapes, so its per-thread O stores (16 per thread, half of each 32-byte sector)
//   sit between one item's last P V and the next item's first S as often as in rung 12, where
//   rung 14's TMA store paid.
// Limits: D = 64 only. At D = 128 two CTAs with a 16 KB staging tile need about 230 KB of shared
//   memory per SM (Q 2 x 16 KB + K/V 4 x 16 KB + O 16 KB, barriers and alignment slack each, plus
//   the 2 KB per CTA the SM reserves), more than its 228 KB.
// Code: `using Epilogue = TmaStoreEpilogue` (hopper_fa_epilogue.cuh) on ShortItems<64>.
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 15
#endif
#ifndef KL_ATTENTION_15_CONFIG
#define KL_ATTENTION_15_CONFIG
#include "attention/13_short_items.cu"  // rung 13: the parent configuration

namespace kl {
namespace hattn {
// Rung 13's configuration with O staged in shared memory and stored by TMA (head dim 64 only).
template <int D>
struct ShortTmaStore : ShortItems<D> {
  static_assert(D == 64, "two CTAs with an O staging tile fit an SM at D = 64 only");
  using Epilogue = TmaStoreEpilogue;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 15
namespace kl {
std::string attention_short_tma_store_supports(const AttentionArgs& a, const DeviceInfo& d) {
  if (a.D == 128)  // before the device checks: the reason holds on any card
    return "D = 64 only: at D = 128 two CTAs per SM with an O staging tile need more than 228 KB of "
           "shared memory";
  return hattn::hopper_kernel_supports(a, d, hattn::Cfg<hattn::ShortTmaStore<64>>::kSmemBytes);
}

void attention_short_tma_store_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::launch<hattn::ShortTmaStore<64>>(a, s);
}
}  // namespace kl
#endif
