// 10 wide_kv_tile — (sm_90a) 128 x 176 tiles (D = 128).
//
// Parent: 08 heaviest_first.
// Change: D = 128 uses KV tiles of 176 keys instead of 128 (wgmma m64n176k16 for S, 11 k-steps of
//   P V), 2 stages (Q 32 KB + 2 x 2 x 44 KB = 208 KB), setmaxnreg 24/240 so S (88) + O (64) + P (44)
//   fit in the consumer registers. D = 64 keeps rung 08's 128-key tiles and configuration.
// Why: each warpgroup pays a fixed cost per KV tile (barrier waits, row-max shuffles, the O
//   rescale, the wgmma issue/wait round trip); 176 keys spread it over 37% more work (FA3's
//   non-causal D = 128 tile on H100).
// Limits: 240 registers per consumer thread and a ragged last tile (4096 = 23.3 x 176) eat the
//   gain; at D = 128 only the lazy rescale fits (the stale-max softmax's fallback spills at
//   BN = 176, so the kernel takes it at BN <= 128 only). Behind 08 / 06; kept as FA3's tile.
#ifndef KL_ATTENTION_RUNG_FILE  // this file is the translation unit (hopper_fa.cuh)
#define KL_ATTENTION_RUNG_FILE 10
#endif
#ifndef KL_ATTENTION_10_CONFIG
#define KL_ATTENTION_10_CONFIG
#include "attention/08_heaviest_first.cu"  // rung 08: the parent configuration

namespace kl {
namespace hattn {
// Rung 08's configuration with 176-key tiles at D = 128.
template <int D>
struct WideKvTile : HeaviestFirst<D> {
  static constexpr int kv_tile = D == 128 ? 176 : 128;
};
}  // namespace hattn
}  // namespace kl
#endif

#if KL_ATTENTION_RUNG_FILE == 10
namespace kl {
std::string attention_wide_kv_tile_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::rung_supports<hattn::WideKvTile>(a, d);
}

void attention_wide_kv_tile_launch(const AttentionArgs& a, cudaStream_t s) {
  hattn::rung_launch<hattn::WideKvTile>(a, s);
}
}  // namespace kl
#endif
