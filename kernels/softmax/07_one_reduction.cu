// 07 one_reduction — one reduction per row.
//
// Parent: 04 rows_per_block (its layouts: rows of <= 4096 elements as 32..128-thread groups packed
//   into 256-thread blocks; wider rows rung 03's block of up to 1024 threads).
// Change: each thread exponentiates against its OWN slice max and the group merges (max, sum) pairs
//   online in a single reduction; the thread then rescales its outputs by exp(m_thread - m_row) /
//   sum (kernel: fused_impl.cuh).
// Why: rungs 03/04 reduce twice per row, and for groups wider than a warp each reduction is two
//   barriers with a shared-memory round trip during which the block issues no loads.
// Limits: one extra exp per thread for the rescale; a 256-thread row runs as a run-time-sized
//   block (G = 0) whose per-warp merge is a run-time loop and is slower than rung 03 (rung 08).
#include "fused_impl.cuh"

namespace kl::softmax_detail {

std::string softmax_one_reduction_supports(const SoftmaxArgs& a, const DeviceInfo&) { return fused_supports(a); }
// The choice: OneReduction (fused_impl.cuh): plain loads and stores, no register bound.
void softmax_one_reduction_launch(const SoftmaxArgs& a, cudaStream_t s) {
  launch_fused<OneReduction>(a, s);
}

}  // namespace kl::softmax_detail
