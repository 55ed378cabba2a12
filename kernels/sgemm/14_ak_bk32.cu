// 14 ak_bk32 — 32-deep k-tiles for rung 13's kernel.
//
// Parent: 13 ak_layout.
// Change: BK = 32 instead of 16. Per thread and tile: 8 + 4 sixteen-byte copies; A rows are 128
//   bytes (8 quads), the quad swizzle unchanged.
// Why: rung 13 pays once per k-tile for a barrier at the top of the tile (every warp waits on the
//   slowest, then on an LDS latency), the copy issue and the ring bookkeeping; 32-deep tiles pay it
//   once per 4,096 FMAs per thread instead of 2,048.
// Limits: 3 x 32 x (256 + 128) floats = 144 KB (one block per SM); 255 registers with a small
//   spill. Needs K % 4 == 0, N % 4 == 0, 16-byte aligned A, B and C (rung 08 takes the rest).
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string sgemm_ak_bk32_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ak::aligned_abc_supports<ak::Bk32ThreeStage>(a, d);
}
void sgemm_ak_bk32_launch(const SgemmArgs& a, cudaStream_t s) {
  ak::sgemm_ak_launch<ak::Bk32ThreeStage>(a, s);
}

}  // namespace kl::sgemm_detail
