// kernels/attention/07_pingpong.cu — rung 07 (sm_90a): the two consumer warpgroups ping-pong.
//
// Change from rung 06: the two consumer warpgroups take turns issuing their wgmma batches, handing
// a token through two named barriers (bar.sync on its own, bar.arrive on the other's), so that
// one warpgroup's softmax runs while the other's Q K^T and P V occupy the tensor cores. Rung 06
// overlaps a warpgroup's softmax only with its own P V; here the exp2/max/sum work of each
// warpgroup is hidden behind the other's two products as well.
// Why: at D = 128 the softmax (MUFU exp2 and FMNMX/FADD) is a large share of the issue slots per
// tile; with both warpgroups in lock-step the tensor cores idle during it.
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl): S=4096 D=128 523 / 649
// TFLOP/s causal / non-causal, S=8192 564 / 608, D=64 S=4096 non-causal 400 (round 1: 390 / 452).
// Pays only at S=4096 causal (+3% over 06) and D=64: with the intra-warpgroup overlap fixed, 06
// already hides most of the softmax under its own P V; the token hand-off costs a bar.sync per
// batch and serializes the two warpgroups' issue. Kept: rung 08 builds on it.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 489.3 [1965] /
// 589.2 [1845] TFLOP/s causal / non-causal, S=8192 506.1 [1693] / 602.1 [1708], D=64 S=4096
// non-causal 392.4 [1980].
// Since 9dd5fcb (lazy rescale and the stale-max softmax, docs/attention.md log items 10-11; same-call
// A/B -8.1% time at S=4096 non-causal): full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096
// D=128 551.4 [1965] / 639.8 [1883] TFLOP/s causal / non-causal, S=8192 577.8 [1638] / 655.9
// [1638], D=64 S=4096 non-causal 450.5 [1980]. With the shorter softmax the ping-pong's lead over
// 06 shrank (S=4096 causal: ~3% before, 0-1% in the stale-max A/B) and 06 is ahead non-causal.
// Since df97d2b (Q's wgmma descriptors on the uniform datapath, docs/attention.md log item 13:
// 1177 -> 1146 SASS instructions per KV tile at D = 128; same-call A/B -2.0% time at S=4096
// non-causal): full run of df97d2b (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 565.3 [1980] / 650.3
// [1860] TFLOP/s causal / non-causal, S=8192 604.1 [1695] / 668.8 [1649], D=64 S=4096 non-causal
// 452.1 [1980].
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, false, 7>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, true, false, 7>;
}  // namespace

std::string attn_pingpong_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_pingpong_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
