// kernels/attention/06_intra_wg_overlap.cu — rung 06 (sm_90a): softmax overlapped with wgmma.
//
// Change from rung 05: inside each consumer warpgroup, S(t+1) = Q K_{t+1}^T is issued before
// O += P(t) V(t), and the softmax of S(t+1) runs (wgmma_wait<1>) while P(t) V(t) is still on the
// tensor cores; O is rescaled after that wgmma retires. P(t) registers are kept live until then.
// Why: in rung 05 the tensor cores idle during each softmax (exp2, max, sum: the MUFU/FMA share
// of the loop); this hides most of it behind the P V product.
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl): S=4096 D=128 508 / 654
// TFLOP/s causal / non-causal, S=8192 596 / 629, D=64 S=4096 non-causal 389. Round 1 it lost to
// 05 (347 / 403): one shared K/V "empty" barrier per stage, released after P(t)V(t), which the
// overlapped loop holds into iteration t+1 -> with 2 stages the producer had no tile of lookahead
// and every K tile's TMA latency was exposed. Fixed by the separate k_empty / v_empty barriers.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 513.7 [1965] /
// 608.1 [1848] TFLOP/s causal / non-causal, S=8192 546.4 [1828] / 594.9 [1758], D=64 S=4096
// non-causal 405.8 [1980].
// Since 9dd5fcb (lazy rescale and the stale-max softmax, docs/attention.md log items 10-11; same-call
// A/B of the stale-max change -9.2% time at S=4096 non-causal): full run of 9dd5fcb
// (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096 D=128 552.6 [1965] / 680.7 [1905] TFLOP/s causal /
// non-causal (1.00x cuDNN in this run, 1.047x in the A/B's same call), S=8192 604.1 [1821] / 658.1
// [1659], D=64 S=4096 non-causal 460.0 [1980]. The entry point's non-causal long pick since.
// Since df97d2b (Q's wgmma descriptors on the uniform datapath, docs/attention.md log item 13:
// 1193 -> 1136 SASS instructions per KV tile at D = 128; same-call A/B -2.4% time at S=4096
// non-causal, -3.4% causal): full run of df97d2b (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 578.6
// [1980] / 689.6 [1932] TFLOP/s causal / non-causal (non-causal 1.015x cuDNN in this run, 1.072x in
// the A/B's same call), S=8192 611.0 [1757] / 665.6 [1664], D=64 S=4096 non-causal 460.9 [1980].
// Still the entry point's non-causal long pick.
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, false, false, 6>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, false, false, 6>;
}  // namespace

std::string attn_intra_wg_overlap_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_intra_wg_overlap_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
