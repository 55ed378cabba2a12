// Rung 12 — lean copy issue: interior tiles issue their cp.async copies without predicates.
//
// Change from 10 (same tile, ring and mapping; rung 11 is the small-shape branch of 10): in rung 10 every one of the 18 copies per
// thread and tile carries its own in-range test and source select (row inside M, k inside K,
// column inside N), about 150 instructions per tile next to 2048 FFMA + 96 LDS (~6% of the issue
// slots). A tile whose rows all lie inside M and whose k-range lies inside K (a uniform test
// per tile: every tile of 4096^3) now takes a branch with plain copies at constant offsets from
// one pointer; edge tiles keep rung 10's zero-filling path.
// Tile 256x128, BK = 16, 3-stage ring, 8 warps of 64x64, 16x8 per thread, 72 KB shared memory.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned B and C (rung 08 takes the rest).
// Measured (H200, 2026-11-29, request run R2a 13:28 UTC): 41.6 TFLOP/s at 4096^3, 42.0 at
// 8192^3, 41.0 at 4096x11008x4096, 41.7 at 4096x4096x11008: +0.4 to +0.8 (1-2%) over rung 10,
// less than the ~4% of issue slots it saves, and still 9% below 09: the per-copy predicates
// were not what made rung 10 slow.
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using Cf12 = ring::Cfg</*BM=*/256, /*WM=*/64, /*BK=*/16, /*S=*/3>;
}

std::string supports_12(const SgemmArgs& a, const DeviceInfo& d) { return ring::supports<Cf12>(a, d); }
void launch_12(const SgemmArgs& a, cudaStream_t s) { ring::launch<Cf12, 1, /*kLean=*/true>(a, 1, s); }

}  // namespace kl::sgemm_detail
