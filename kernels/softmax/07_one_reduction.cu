// Rung 07 — one reduction per row: rungs 03/04's row in registers (same layouts: rows of <= 4096
// elements as 32..128-thread groups packed into 256-thread blocks, wider rows a block of up to
// 1024 threads), but each thread exponentiates against its OWN slice max and the group merges
// (max, sum) pairs online in a single reduction; the thread then rescales its outputs by
// exp(m_thread - m_row) / sum (kernel: fused_impl.cuh).
//
// Why: rungs 03/04 reduce twice per row — the max, then the sum of exp(x - max) — and for groups
// wider than a warp each reduction is two __syncthreads() with a shared-memory round trip, during
// which the block issues no loads. On the DRAM shapes the block owns a row for only a few
// microseconds, so those barriers are a visible share of it (rung 03 sits at 95% of the copy
// rate on 16384 x 8192 bf16, rung 04 at 98.6% on 4096-wide rows, whose 128-thread groups have
// cheaper barriers). Here one butterfly of pairs and one barrier; exp stays once per element
// (plus one per thread for the rescale).
// Measured (H200, round-2 batch 2026-11-29, results/h200/dev/batch/rowops/softmax.jsonl, 20 launches):
//   65536x4096 bf16 0.2555 ms = 4203 GB/s (99.5% of bench_peak's 4224 GB/s; the same-run
//   cudaMemcpy 0.2569 ms) vs rung 04 0.2607 (-2.0%); 4096x16384 f32 0.1342 ms = 4001 GB/s vs rung
//   03 0.1360 (-1.3%); but 16384x8192 bf16 0.1416 ms vs rung 03 0.1337 (+6%; that 256-thread row
//   runs as a run-time-sized block, G = 0, whose per-warp pair merge is a run-time loop of 7
//   dependent merges; cause not isolated. Rung 08 recovers it: 0.1332).
#include "fused_impl.cuh"

namespace kl::softmax_detail {

std::string supports_07(const SoftmaxArgs& a, const DeviceInfo&) { return fused_supports(a); }
void launch_07(const SoftmaxArgs& a, cudaStream_t s) { launch_fused<Ld::normal, St::normal, false>(a, s); }

}  // namespace kl::softmax_detail
