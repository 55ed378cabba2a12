// 12 lean_copies — interior tiles issue their cp.async copies without predicates.
//
// Parent: 10 cpasync_ring (11 is the small-shape branch of 10).
// Change: a tile whose rows all lie inside M and whose k-range lies inside K (a uniform test per
//   tile) takes a branch with plain copies at constant offsets from one pointer; edge tiles keep
//   rung 10's zero-filling path.
// Why: in rung 10 each of the 18 copies per thread and tile carries its own in-range test and
//   source select, about 150 instructions per tile next to 2048 FFMA + 96 LDS.
// Limits: the per-copy predicates were not what made rung 10 slow: the 16 four-byte A copies
//   remain (rung 13). Tile 256x128, BK = 16, 3-stage ring, 72 KB. Needs K % 4 == 0, N % 4 == 0,
//   16-byte aligned B and C (rung 08 takes the rest).
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using LeanCopiesTile = ring::Cfg</*BM=*/256, /*WM=*/64, /*BK=*/16, /*S=*/3>;
}

std::string sgemm_lean_copies_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ring::aligned_bc_supports<LeanCopiesTile>(a, d);
}
void sgemm_lean_copies_launch(const SgemmArgs& a, cudaStream_t s) {
  ring::sgemm_ring_launch<LeanCopiesTile, 1, /*kLean=*/true>(a, 1, s);
}

}  // namespace kl::sgemm_detail
