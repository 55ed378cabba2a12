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
//   gain; at D = 128 only the lazy rescale fits (the stale-max softmax spills at BN = 176, so
//   KL_STALE_BN stays off). Behind 08 / 06; kept as FA3's tile.
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, true, 10>;
using C128 = hattn::Cfg<128, 2, 176, 2, true, true, true, true, 10>;
}  // namespace

std::string attn_wide_kv_tile_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_wide_kv_tile_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
