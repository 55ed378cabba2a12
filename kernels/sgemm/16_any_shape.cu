// 16 any_shape — rung 11's 128x128 ring for any N, K and alignment.
//
// Parent: 11 small_splitk.
// Change: B is copied by 4-byte cp.async, lane l taking columns l + 32e of its row, each copy
//   predicated on its own column, and C is stored one float at a time unless N % 4 == 0 and C is
//   16-byte aligned (ring.cuh, kAnyB). Tile, ring, 2 blocks/SM and split-K are rung 11's.
// Why: rungs 09-15 need N % 4 == 0 and K % 4 == 0 (16-byte copies of B's rows) and aligned B, C;
//   without this rung, rung 08's 256x128 tile with scalar loads takes every other shape. At
//   4097x1023x515 that tile makes 136 blocks for 132 SMs (a second wave of 4 blocks); rung 11's
//   tile at 2 blocks/SM fills one wave.
// Limits: 8 four-byte B copies per thread and tile where rung 11 has 2 sixteen-byte ones, and the
//   128x128 tile's 1 shared byte per FMA: on shapes whose 256x128 grid fills its waves, rung 08
//   stays the entry point's pick (sgemm.cu).
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using AnyShapeTile = ring::Cfg</*BM=*/128, /*WM=*/32, /*BK=*/16, /*S=*/3>;
}

std::string sgemm_any_shape_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ring::any_shape_supports<AnyShapeTile>(a, d);
}
void sgemm_any_shape_launch(const SgemmArgs& a, cudaStream_t s) {
  ring::sgemm_ring_launch<AnyShapeTile, 2, /*kLean=*/false, /*kAnyB=*/true>(
      a, small_splitk_slices(a, device_info()), s);
}

}  // namespace kl::sgemm_detail
