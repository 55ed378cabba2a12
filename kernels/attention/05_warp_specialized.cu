// kernels/attention/05_warp_specialized.cu — rung 05 (sm_90a): producer warpgroup + setmaxnreg.
//
// Change from rung 04: a dedicated producer warpgroup (one thread issues every TMA) runs ahead
// through the K/V ring, gated by per-stage "empty" mbarriers that each consumer warp arrives on
// when its wgmmas have read the stage; the two consumer warpgroups never block on each other (no
// __syncthreads in the loop). setmaxnreg moves registers from the producer (40) to the consumers
// (232) so S (BN/2 fp32), O (D/2 fp32) and P (BN/4 regs) stay resident.
// Why: in rung 04 every refill waits for the slowest warpgroup and the issuing thread computes too.
// Round 2: K and V slots released separately (K when S retired, V after P V; see hopper_fa.cuh).
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl): S=4096 D=128 455 / 589
// TFLOP/s causal / non-causal, S=8192 555 / 580, D=64 S=4096 non-causal 395 (round 1: 468 / 565).
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 456.8 [1971] /
// 544.2 [1920] TFLOP/s causal / non-causal, S=8192 502.0 [1890] / 539.2 [1797], D=64 S=4096
// non-causal 397.3 [1980].
// Since 9dd5fcb (lazy rescale, docs/attention.md log item 10; no stale-max path without the
// overlapped loop): full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096 D=128 465.4 [1968] /
// 559.7 [1931] TFLOP/s causal / non-causal, S=8192 514.8 [1890] / 546.3 [1749], D=64 384.3.
// Since df97d2b (Q's wgmma descriptors on the uniform datapath, docs/attention.md log item 13; not
// A/B'd on this rung): full run of df97d2b (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 471.1 [1980] /
// 567.9 [1965] TFLOP/s causal / non-causal, S=8192 520.4 [1898] / 554.6 [1772], D=64 S=4096
// non-causal 383.2 [1980].
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, false, false, false, 5>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, false, false, false, 5>;
}  // namespace

std::string attn_warp_specialized_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_warp_specialized_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
