// kernels/attention/10_wide_kv_tile.cu — rung 10 (sm_90a): 128 x 176 tiles (D = 128).
//
// Change from rung 08: D = 128 uses KV tiles of 176 keys instead of 128 (wgmma m64n176k16 for
// S = QK^T, 11 k-steps of P V), 2 stages (Q 32 KB + 2 x 2 x 44 KB = 208 KB), setmaxnreg 24/240 so
// S (88) + O (64) + P (44) fit in the consumer registers. D = 64 keeps rung 08's 128-key tiles.
// Why: per KV tile each warpgroup pays a fixed cost (barrier waits, the row-max shuffles, the O
// rescale of 64 registers, the wgmma issue/wait round trip); 176 keys spread it over 37% more
// work. (FA3 uses 128 x 176 for non-causal D = 128 on H100.) Causal shapes mask more per
// diagonal tile, so the pick may keep rung 08 there.
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl, on 08 with 32 MB groups):
// S=4096 D=128 553 / 594 TFLOP/s causal / non-causal (08: 556 / 588), S=8192 566 / 572. Does not
// pay: 240 registers per consumer thread and a ragged last tile (4096 = 23.3 x 176) eat the
// amortized per-tile costs. Kept as a measured step (FA3's non-causal tile).
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 541.3 [1845] /
// 573.2 [1774] TFLOP/s causal / non-causal, S=8192 554.3 [1648] / 578.9 [1641], D=64 S=4096
// non-causal 371.6 [1980].
// Since 9dd5fcb: lazy rescale only at D = 128 (docs/attention.md log items 10-11: the stale-max
// fallback does not fit next to the 176-key tile's 240 registers; ptxas spilled), both changes at
// D = 64 (08's config). Full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096 D=128 548.1
// [1830] / 561.2 [1687] TFLOP/s causal / non-causal, S=8192 535.4 [1515] / 573.4 [1614], D=64
// S=4096 non-causal 413.1 [1980]: now behind 08 at D = 128, so no longer the causal pick.
// Since df97d2b (uniform-datapath descriptors, docs/attention.md log item 13: 1002 -> 904 SASS
// instructions per KV tile at D = 128; same-call A/B -2.4% / -2.8% time at S=4096 non-causal /
// causal): full run of df97d2b (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 542.2 [1943] / 597.3
// [1680] TFLOP/s causal / non-causal, S=8192 558.5 [1560] / 595.6 [1647], D=64 S=4096 non-causal
// 458.9 [1980]. The registers freed let the stale-max path compile at BN = 176
// (-DKL_STALE_BN=176: 8 bytes spilled once per item; -9 to -12% time in the A/B), still behind 08 /
// 06, so it stays off.
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
