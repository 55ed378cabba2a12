// Rung 10 — both operands by cp.async into a 3-stage shared-memory ring, one barrier per k-tile.
//
// Change from 09: A no longer passes through registers. Each thread copies its A elements one
// float at a time with cp.async (4-byte, .ca), straight into the transposed, swizzled As[k][m]
// layout: the copy itself is the transpose (ring.cuh has the mapping and the bank arithmetic), so
// no LDG -> register -> 16 STS hop and no 16 prefetch registers. With both operands
// asynchronous the ring grows to 3 stages: tile kt+2 is issued at the top of tile kt, and the one
// barrier per tile only waits for tile kt+1, issued a whole tile (2048 FMAs per thread) earlier.
// Per thread and tile: 2048 FFMA, 96 LDS.128 (fragments), 16 + 2 LDGSTS, 1 barrier.
// Tile 256x128, BK = 16, 8 warps of 64x64, 16x8 per thread, 1 block/SM (as 08/09).
// Shared memory: 3 stages x 16 x (256 + 128) floats = 72 KB (dynamic).
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned B and C (rung 08 takes the rest).
// Measured (H200, 2026-11-29, round-2 request run R2a, 13:28 UTC; same-run cuBLAS in brackets):
// 40.9 TFLOP/s at 4096^3 (51.4), 41.2 at 8192^3 (51.3), 40.2 at 4096x11008x4096 (50.2), 41.3 at
// 4096x4096x11008 (50.9): 5 TFLOP/s (11%) BELOW rung 09 on every large shape. It does not pay:
// the 16 four-byte copies per thread and tile cost more than the register hop they replace (see
// docs/sgemm.md). Kept as the measured step that rungs 11 and 12 build on.
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using Cf10 = ring::Cfg</*BM=*/256, /*WM=*/64, /*BK=*/16, /*S=*/3>;
}

std::string supports_10(const SgemmArgs& a, const DeviceInfo& d) { return ring::supports<Cf10>(a, d); }
void launch_10(const SgemmArgs& a, cudaStream_t s) { ring::launch<Cf10, 1>(a, 1, s); }

}  // namespace kl::sgemm_detail
