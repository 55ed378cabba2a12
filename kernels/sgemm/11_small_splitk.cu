// Rung 11 — the small-shape path: 128x128 tiles at 2 blocks/SM, and split-K by 2 when the tiles
// alone cannot fill the SMs.
//
// Change from 10: the tile. A 256x128 tile gives 1024^3 only 32 blocks for 132 SMs (rung 10 runs
// it at a quarter of the machine). The same cp.async ring kernel with a 128x128 tile (8 warps of
// 32x64, 8x8 per thread, <= 128 registers so 2 blocks fit per SM) has 4x the blocks; when even
// those are fewer than the SMs (tiles <= SMs) and K has at least 2 x 16 k-tiles, blockIdx.y
// splits K in two halves that add into the zeroed C with float4 atomics (2 slices: the sum is
// bitwise deterministic). 1024^3 -> 64 tiles x 2 slices = 128 blocks.
// Cost: 1 B of shared memory per FMA (8x8) against 0.75 (16x8), and with a split, a memset of C
// and 2 x M x N x 4 bytes of atomic traffic.
// Shared memory: 3 stages x 16 x (128 + 128) floats = 48 KB (dynamic), 96 KB for 2 blocks.
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned B and C (rung 08 takes the rest).
// Measured (H200, 2026-11-29, request run R2a 13:28 UTC; same-run cuBLAS in brackets):
// 1024^3 33.7 TFLOP/s (34.7; the old entry point took rung 07 at 14.4), 1000^3 32.4 (33.0; was
// 10.3 with rung 09): 97-98% of cuBLAS. On one-wave-or-more shapes it is a 128x128 kernel at 2
// blocks/SM and no better than rung 07: 2048^3 40.5 (09: 45.0), 4096^3 41.6, 8192^3 42.1, so the
// entry point takes it only when a 256x128 grid would leave half the SMs idle.
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using Cf11 = ring::Cfg</*BM=*/128, /*WM=*/32, /*BK=*/16, /*S=*/3>;
}

// 2 slices when the 128x128 tiles are at most one per SM and each slice keeps >= 16 k-tiles.
int splits_11(const SgemmArgs& a, const DeviceInfo& d) {
  const long long tiles = ceil_div(a.M, Cf11::BM) * ceil_div(a.N, ring::BN);
  const long long kt = ceil_div(a.K, Cf11::BK);
  return tiles <= d.sms && kt >= 32 ? 2 : 1;
}

std::string supports_11(const SgemmArgs& a, const DeviceInfo& d) { return ring::supports<Cf11>(a, d); }
void launch_11(const SgemmArgs& a, cudaStream_t s) {
  ring::launch<Cf11, 2>(a, splits_11(a, device_info()), s);
}

}  // namespace kl::sgemm_detail
