// 10 cpasync_ring — both operands by cp.async into a 3-stage shared-memory ring.
//
// Parent: 09 bk16_cpasync.
// Change: each thread copies its A elements one float at a time with 4-byte cp.async (.ca) straight
//   into the transposed, swizzled As[k][m] layout (the copy is the transpose; ring.cuh), so no
//   register hop and no prefetch registers; the ring grows to 3 stages, tile kt+2 issued at the top
//   of tile kt, one barrier per tile. Per thread and tile: 2048 FFMA, 96 LDS.128, 16 + 2 LDGSTS.
// Why: with both operands asynchronous the barrier waits only for a tile issued a whole tile
//   earlier.
// Limits: it does not pay: the 16 four-byte copies per thread and tile cost more than the register
//   hop they replace (docs/sgemm.md); rungs 11 and 12 build on it. 3 stages x 16 x (256 + 128)
//   floats = 72 KB (dynamic). Needs K % 4 == 0, N % 4 == 0, 16-byte aligned B and C.
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using CpasyncRingTile = ring::Cfg</*BM=*/256, /*WM=*/64, /*BK=*/16, /*S=*/3>;
}

std::string sgemm_cpasync_ring_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ring::aligned_bc_supports<CpasyncRingTile>(a, d);
}
void sgemm_cpasync_ring_launch(const SgemmArgs& a, cudaStream_t s) {
  ring::sgemm_ring_launch<CpasyncRingTile, 1>(a, 1, s);
}

}  // namespace kl::sgemm_detail
