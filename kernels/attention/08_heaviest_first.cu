// kernels/attention/08_heaviest_first.cu — rung 08 (sm_90a): persistent CTAs, heaviest items first.
//
// Change from rung 07: one CTA per SM loops over work items (a 128-row tile of one (b, kv head))
// taken from a global tile counter (the producer thread grabs the next item and publishes it to
// the consumers in shared memory with the Q load). Items are ordered longest-processing-time
// first: heads in groups whose K/V fit in ~32 MB of L2, and inside a group the causal row tiles
// from the last (longest, m_tiles KV tiles) to the first (one KV tile), heads fastest. The K/V ring
// continues across items, so the producer loads the next item's Q/K/V while the consumers finish
// the current one (its last P V and the O store).
// Why: with causal masking the row tile m costs ~(m + 1) KV tiles; a grid in block order leaves
// the heavy tiles of the last heads for the end (a tail of few busy SMs), and every CTA pays its
// own pipeline fill and drain. Non-causal shapes only get the fill/drain overlap.
// (Round 1 version: the same kernel without persistence, blockIdx.x reversed per head: 382/453
// TFLOP/s at S=4096 causal/non-causal vs 390/452 for rung 07 — it did not pay.)
// Measured (H200, round 2 request 1, results/h200/dev/batch/attn2/prefill.jsonl, with 32 MB head groups):
// S=4096 D=128 556 / 588 TFLOP/s causal / non-causal (07: 523 / 649), S=8192 565 / 565, D=64
// non-causal 365. The causal gain is the LPT order and the overlapped item boundaries; the
// non-causal loss we attribute to L2 (16 heads' K/V streamed at once vs ~4 for the block-ordered
// grid), hence 8 MB groups since. Final run of 14647d0 (results/h200/dev/final-14647d0/attention.jsonl; the card
// throttled, NVML MHz in brackets): S=4096 D=128 520.4 [1965] / 536.3 [1800] TFLOP/s causal /
// non-causal (07: 496.8 [1968] / 585.6 [1860]); S=8192 503.4 / 541.1 (07 522.4 / 605.6, 1690-1780);
// D=64 S=4096 347.2 / 370.0 (07 313.5 / 390.0, 1980). The non-causal loss stayed with 8 MB groups
// and with the grid's own order (docs/attention.md, part 2, log item 7): not the L2 order.
// Full run of 8d4cb50 (results/h200/dev/final-8d4cb50/attention.jsonl; after 3f441c8's one-descriptor-per-operand
// change, docs/attention.md log item 9; NVML MHz in brackets): S=4096 D=128 527.4 [1882] /
// 556.1 [1770] TFLOP/s causal / non-causal, S=8192 511.8 [1631] / 542.8 [1707], D=64 S=4096
// non-causal 371.1 [1980].
// Since 9dd5fcb (lazy rescale and the stale-max softmax, docs/attention.md log items 10-11; same-call
// A/B -8.4% time at S=4096 causal): full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl) S=4096 D=128
// 594.8 [1875] / 605.6 [1680] TFLOP/s causal / non-causal (causal: 1.11x cuDNN in this run, 1.17x
// in the A/B's same call), S=8192 547.1 [1533] / 625.5 [1650], D=64 S=4096 non-causal 413.8. The
// entry point's causal long pick since (was rung 10).
// Since df97d2b (the work item, the ring position and Q's consumer index through redux.sync, so
// the ring-stage arithmetic and every wgmma descriptor run on the uniform datapath: docs/attention.md
// log item 13, 1274 -> 1187 SASS instructions per KV tile at D = 128, no R2UR; same-call A/B -6.1% /
// -5.6% time at S=4096 non-causal / causal, -9 to -12% at D = 64): full run of df97d2b
// (results/h200/dev/final-df97d2b/attention.jsonl) S=4096 D=128 621.2 [1980] / 654.9 [1809] TFLOP/s causal /
// non-causal (causal 1.17x cuDNN in this run, 1.24x in the A/B's same call), S=8192 574.7 [1635] /
// 676.6 [1651] (causal is bimodal here: the auto row, = 08, ran 644.1 [1626]), D=64 S=4096
// non-causal 459.6 [1980]. The entry point's pick for every causal shape since (D = 64 with Skv >
// 4096 went to 06 before).
#include "attention/hopper_fa.cuh"
#include "attention/hopper_rungs.h"

namespace kl {
namespace {
// Cfg<D, consumer WGs, BN, stages, warp-specialized, overlap, ping-pong, persistent, rung>
using C64 = hattn::Cfg<64, 2, 128, 3, true, true, true, true, 8>;
using C128 = hattn::Cfg<128, 2, 128, 2, true, true, true, true, 8>;
}  // namespace

std::string attn_heaviest_first_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return hattn::common_supports(a, d, a.D == 64 ? C64::kSmemBytes : C128::kSmemBytes);
}

void attn_heaviest_first_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) hattn::launch<C64>(a, s);
  else hattn::launch<C128>(a, s);
}
}  // namespace kl
