// 14 tma_store_o — (sm_90a) an item's O leaves through shared memory and a TMA store.
//
// Parent: 12 double_q.
// Change: each consumer warpgroup writes its 64 rows of O / l into a staging tile (Q's swizzled
//   layout, 16 KB per warpgroup at D = 128) and one of its threads stores them with a TMA store per
//   64-column panel, without waiting for it; the next item's store waits until that one has read
//   the tile.
// Why: the register epilogue issues 32 global stores per thread at D = 128, each warp instruction
//   16 bytes of each of 8 rows (half of every 32-byte sector), between an item's last P V and the
//   next item's first S. On short KV ranges (1 to 8 key tiles per item) that end comes every few
//   tiles; the same number of shared-memory stores wait on nothing beyond the SM, and the bulk
//   store writes whole lines while the warpgroup goes on.
// Limits: 32 KB more shared memory at D = 128 (Q 64 KB + K/V 128 KB + O 32 KB), no room left for
//   a third K/V stage; two named-barrier waits per item and warpgroup.
// Code: `using Epilogue = TmaStoreEpilogue` (hopper_fa_epilogue.cuh).
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 14
#endif
#ifndef KL_ATTENTION_14_CONFIG
#define KL_ATTENTION_14_CONFIG
#include "attention/12_double_q.cu"  // rung 12: the parent configuration

namespace kl {
namespace hattn {
// Rung 12's configuration with O staged in shared memory and stored by TMA.
template <int D>
struct TmaStoreO : DoubleQ<D> {
  using Epilogue = TmaStoreEpilogue;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 14
namespace kl {
std::string attention_tma_store_o_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::TmaStoreO>(a, d);
}

void attention_tma_store_o_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::TmaStoreO>(a, s);
}
}  // namespace kl
#endif
