// 08 five_blocks — five resident rows per SM for 8192-wide bf16 rows.
//
// Parent: 07 one_reduction.
// Change: a 16-byte bf16 row of exactly 256 threads (7.2K..8K elements) is launched as a
//   compile-time one-row-per-block group under __launch_bounds__(256, 5), i.e. <= 48 registers
//   (fused_impl.cuh, kBound = true); offered only for that row class.
// Why: resident rows per SM are the bytes in flight: 07 runs this row at 63 registers, 4 blocks of
//   256 threads per SM; at 48 registers (no spills) 5 fit, and the compile-time group makes the
//   per-warp pair merge a fixed 8-step loop.
// Limits: which of the two (fifth block, compile-time group) carries the gain is not separated.
#include "fused_impl.cuh"

namespace kl::softmax_detail {

// The choice: FiveBlocks, rung 07's OneReduction with five_blocks_bound (fused_impl.cuh).
std::string softmax_five_blocks_supports(const SoftmaxArgs& a, const DeviceInfo&) {
  std::string why = fused_supports(a);
  if (!why.empty()) return why;
  if (!fused_bounded_class(a))
    return "only 16-byte bf16 rows of exactly 256 threads (7.2K..8K elements) differ from rung 07";
  return "";
}
void softmax_five_blocks_launch(const SoftmaxArgs& a, cudaStream_t s) {
  launch_fused<FiveBlocks>(a, s);
}

}  // namespace kl::softmax_detail
