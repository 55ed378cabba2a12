// 12 four_stages — rung 08 with a 4-deep load ring; the epilogue stages a quarter of a
// warpgroup's output at a time so the fourth 48 KB stage fits.
//
// Parent: 08 tma_store_epilogue.
// Change: ThreeStages -> FourStages (hopper_gemm.cuh). 4 x 48 KB leaves 32 KB for C staging, so each consumer warpgroup owns two
//   64x64 swizzled boxes and writes its 64x256 block in four 64x64 passes, the boxes used in turn:
//   a pass waits (wait_group.read 1) only for the store of two passes back, and one pass's stmatrix
//   overlaps the previous pass's TMA read. A CTA exits once its last stores have read smem.
// Why: a 48 KB stage takes longer to arrive from L2 than a k-block of math; with 3 stages (2 held
//   by the consumers) one load is in flight and any L2 hiccup starves the tensor cores.
// Limits: 1024 + 4 x 48 KB + 2 x 16 KB + barriers = 230,464 B <= 232,448 (227 KB opt-in); wave
//   quantization stays (rung 14). Proxy rule as 08, box reuse after wait_group.read + bar.sync.
//   Code: tma_store_gemm.cuh (shared with 08), which also launches programmatic-dependent: the next
//   GEMM's launch and prologue run under this one's tail.
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_four_stages_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::tma_store_gemm_supports<FourStages>(a, d);
}
void gemm_bf16_four_stages_launch(const GemmBf16Args& a, cudaStream_t s) { tma_store::tma_store_gemm_launch<FourStages>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
