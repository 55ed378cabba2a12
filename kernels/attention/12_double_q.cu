// 12 double_q — (sm_90a) two Q tiles in shared memory, used by alternate items.
//
// Parent: 08 heaviest_first.
// Change: the persistent loop keeps two Q tiles (each with its q_full / q_empty barrier and item
//   slot): the producer loads the next item's Q into the other tile while the consumers still run
//   the current item, waiting only for the item before it to release its tile.
// Why: with one Q tile the next item's Q load could start only once every consumer had issued the
//   current item's last S, so each item began with a Q load in flight behind the last P V and the
//   O store. Short KV ranges (B = 16 at S = 512: 4 key tiles per item) pay that once per few tiles.
// Limits: 32 KB more shared memory at D = 128 (Q 2 x 32 KB + K/V 128 KB); long KV ranges already
//   hid the Q load under their many tiles. The O store is still per thread, from registers.
// Code: `using Scheduler = DoubleQScheduler` (hopper_fa_scheduler.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 12
#endif
#ifndef KL_ATTENTION_12_CONFIG
#define KL_ATTENTION_12_CONFIG
#include "attention/08_heaviest_first.cu"  // rung 08: the parent configuration

namespace kl {
namespace hattn {
// Rung 08's configuration with two Q tiles used in turn.
template <int D>
struct DoubleQ : HeaviestFirst<D> {
  using Scheduler = DoubleQScheduler;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 12
namespace kl {
std::string attention_double_q_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::DoubleQ>(a, d);
}

void attention_double_q_launch(const AttentionArgs& a, cudaStream_t s) { hattn::rung_launch<hattn::DoubleQ>(a, s); }
}  // namespace kl
#endif
