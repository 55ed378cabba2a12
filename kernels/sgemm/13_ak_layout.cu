// 13 ak_layout — A kept k-contiguous in shared memory: 16-byte cp.async for both operands, A
// fragments read along k.
//
// Parent: 12 lean_copies.
// Change: A stays as it is in memory, rows of BK = 16 k: 4 sixteen-byte cp.async per thread and
//   tile instead of 16 four-byte ones. A thread works through a k-tile 4 k at a time: B fragments
//   for 4 k (8 LDS.128), then per row one LDS.128 of A and 32 FMAs. A swizzle: quad q of row m at
//   q ^ ((m >> 2) & 3), so a warp's 4 distinct rows land in 4 distinct 4-bank groups. One barrier
//   per tile, at its top (the A reads of a tile run to its end).
// Why: rungs 10-12 transpose A with 16 four-byte copies per thread and tile; cuBLAS's kernel for
//   this problem (same 256x128 tile and 4x2 warps) loads A 16 bytes at a time.
// Limits: the per-tile barrier and copy issue every 2,048 FMAs per thread (rung 14). 3-stage ring
//   (72 KB). Needs K % 4 == 0, N % 4 == 0, 16-byte aligned A, B and C (rung 08 takes the rest).
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string sgemm_ak_layout_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ak::aligned_abc_supports<ak::Bk16ThreeStage>(a, d);
}
void sgemm_ak_layout_launch(const SgemmArgs& a, cudaStream_t s) {
  ak::sgemm_ak_launch<ak::Bk16ThreeStage>(a, s);
}

}  // namespace kl::sgemm_detail
