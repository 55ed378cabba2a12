// 17 ak_any_shape — rung 16's 128x128 tiles, two blocks per SM and 4-byte copies, with rung 14's
// block: A k-contiguous in shared memory, 64x64 warp tiles of 16x8 outputs per thread.
//
// Parent: 16 any_shape.
// Change: the block's product. Four warps of 64x64 (16x8 per thread, 6 LDS.128 per 128 FMAs: 0.75
//   shared bytes per FMA) over 32-deep k-tiles in a 3-stage ring (96 KB), A rows kept k-contiguous
//   and quad-swizzled as in rungs 13-15, where rung 16 runs eight warps of 32x64 (8x8 per thread,
//   1 byte per FMA) over 16-deep tiles with A transposed. Copies stay 4-byte cp.async, each
//   predicated on its own row and column, so any M, N, K and alignment (ak.cuh, Floats4).
// Why: at 4097x1023x515 (264 tiles of 128x128 for 264 block slots) rung 16 runs well behind
//   cuBLAS, whose kernel for this shape is a 128x128 tile of four 64x64 warps, two blocks per SM.
// Limits: 64 four-byte copies per thread and tile (1 per 64 FMAs, rung 16's share); no split-K, so
//   a grid of fewer tiles than block slots leaves them idle (rung 16 splits there). In no pick
//   list until its rows are measured against rung 16's.
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string sgemm_ak_any_shape_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ak::any_shape_supports<ak::AnyShapeTwoBlocks>(a, d);
}
void sgemm_ak_any_shape_launch(const SgemmArgs& a, cudaStream_t s) {
  ak::sgemm_ak_launch<ak::AnyShapeTwoBlocks>(a, s);
}

}  // namespace kl::sgemm_detail
