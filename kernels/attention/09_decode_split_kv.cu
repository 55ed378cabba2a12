// kernels/attention/09_decode_split_kv.cu — rung 09 (sm_90a): decode, split-KV, GQA packed.
//
// Change from rung 08: for short query blocks (G * Sq <= 64 packed rows: decode, Sq = 1, with the
// G = Hq/Hkv query heads of a KV head stacked in M), one 64-row consumer warpgroup per CTA and the
// KV sequence split across CTAs (one wave: ~one CTA per SM, >= 4 tiles each); each split writes its
// normalized partial O and log2-sum-exp to the workspace and a combine kernel merges them. K/V are
// read once per KV head (not once per query head) through a 4-deep TMA ring.
// Why: a decode step is a pure stream of K and V; with one CTA per (b, kv head) there are far
// fewer CTAs than SMs. Target: >= 90% of the copy bandwidth, K and V bytes counted once.
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/decode.jsonl), ms (rung 03 / copy):
// B=1 Hkv=8 Skv=32768 0.0465 (0.0468 / 0.0351); Skv=131072 0.1463 (0.1380 / 0.1283) = 88% of the
// copy. Does not beat rung 03 (one latency-bound warpgroup per SM per 64-key tile; 16 splits x 8
// heads = 128 CTAs leave 4 SMs idle): the entry point uses rung 03 for decode.
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
// One consumer warpgroup (64 packed rows = G query heads x Sq), 64-key tiles, 4-deep ring.
using C64 = hattn::Cfg<64, 1, 64, 4, true, true, false, false, 9>;
using C128 = hattn::Cfg<128, 1, 64, 4, true, true, false, false, 9>;
}  // namespace

std::string attn_decode_split_kv_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why =
      hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
  if (!why.empty()) return why;
  // One 64-row warpgroup per CTA: the packed rows of a KV head must fit one tile.
  if ((long long)(a.Hq / a.Hkv) * a.Sq > 64) return "decode rung: needs (Hq/Hkv)*Sq <= 64 packed rows";
  return "";
}

void attn_decode_split_kv_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s, true);
  else hattn::launch<C128>(a, s, true);
}
}  // namespace kl
