// 11 small_splitk — the small-shape path: 128x128 tiles at 2 blocks/SM, and split-K by 2 when the
// tiles alone cannot fill the SMs.
//
// Parent: 10 cpasync_ring.
// Change: the tile. The same cp.async ring kernel with a 128x128 tile (8 warps of 32x64, 8x8 per
//   thread, <= 128 registers so 2 blocks fit per SM); when tiles <= SMs and K has at least 2 x 16
//   k-tiles, blockIdx.y splits K in two halves that add into the zeroed C with float4 atomics (2
//   slices: bitwise deterministic). 1024^3 -> 64 tiles x 2 slices = 128 blocks.
// Why: a 256x128 tile gives 1024^3 only 32 blocks for 132 SMs.
// Limits: 1 B of shared memory per FMA (8x8) against 0.75 (16x8); with a split, a memset of C and
//   2 x M x N x 4 bytes of atomics. On full waves no better than rung 07, so the entry point takes
//   it where a 256x128 grid leaves half the SMs idle or fills its last wave much worse (sgemm.cu).
//   48 KB shared per block.
#include "ring.cuh"

namespace kl::sgemm_detail {

namespace {
using SmallSplitkTile = ring::Cfg</*BM=*/128, /*WM=*/32, /*BK=*/16, /*S=*/3>;
}

int small_splitk_slices(const SgemmArgs& a, const DeviceInfo& d) {
  const long long tiles = ceil_div(a.M, SmallSplitkTile::BM) * ceil_div(a.N, ring::BN);
  const long long kt = ceil_div(a.K, SmallSplitkTile::BK);
  return tiles <= d.sms && kt >= 32 ? 2 : 1;
}

std::string sgemm_small_splitk_supports(const SgemmArgs& a, const DeviceInfo& d) {
  return ring::aligned_bc_supports<SmallSplitkTile>(a, d);
}
void sgemm_small_splitk_launch(const SgemmArgs& a, cudaStream_t s) {
  ring::sgemm_ring_launch<SmallSplitkTile, 2>(a, small_splitk_slices(a, device_info()), s);
}

}  // namespace kl::sgemm_detail
