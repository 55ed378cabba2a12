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
  return ak::aligned_abc_supports<32>(a, d);
}
void sgemm_ak_bk32_launch(const SgemmArgs& a, cudaStream_t s) {
  ak::sgemm_ak_launch<32>(a, s);
}

namespace {
// One experiment row: the ak kernel with (k-tile depth, stages, k-step unroll) = (BK, S, KQU).
template <int BK, int S, int KQU, int BM = 256>
Rung<SgemmArgs> ak_row(int number, const char* name, const char* change) {
  return {number, name, change,
          [](const SgemmArgs& a, const DeviceInfo& d) {
            return ak::aligned_abc_supports<BK, S, BM>(a, d);
          },
          [](const SgemmArgs& a, cudaStream_t s) { ak::sgemm_ak_launch<BK, S, KQU, BM>(a, s); }};
}
}  // namespace

void append_ak_experiments(std::vector<Rung<SgemmArgs>>& t) {
  t.insert(t.end(), {
      ak_row<32, 3, 1>(90, "x14_kq1", "experiment: rung 14, k-step loop not unrolled"),
      ak_row<32, 3, 2>(91, "x14_kq2", "experiment: rung 14, k-step loop unrolled by 2"),
      ak_row<32, 2, 8>(92, "x14_s2", "experiment: rung 14 with a 2-stage ring"),
      ak_row<64, 2, 2>(93, "x_bk64_s2_kq2", "experiment: 64-deep k-tiles, 2 stages, unroll 2"),
      ak_row<64, 2, 4>(94, "x_bk64_s2_kq4", "experiment: rung 15 unrolled by 4"),
      // (95 = 64-deep, 2 stages, unroll 8 became rung 15.)
      ak_row<64, 2, 16>(96, "x_bk64_s2_kq16", "experiment: rung 15 fully unrolled"),
      ak_row<32, 2, 4>(97, "x14_s2_kq4", "experiment: rung 14, 2 stages, unroll 4"),
      // 128x128 tiles of 4 warps (the same 64x64 warp tiles and 16x8 micro-tiles), two blocks per
      // SM: still 8 warps per SM, but two independent barriers and rings.
      ak_row<32, 3, 8, 128>(101, "x_m128_bk32_s3", "experiment: 128x128 tiles, 2 blocks/SM, BK 32, 3 stages"),
      ak_row<32, 2, 8, 128>(102, "x_m128_bk32_s2", "experiment: 128x128 tiles, 2 blocks/SM, BK 32, 2 stages"),
      ak_row<16, 4, 4, 128>(103, "x_m128_bk16_s4", "experiment: 128x128 tiles, 2 blocks/SM, BK 16, 4 stages"),
      ak_row<32, 3, 4, 128>(104, "x_m128_bk32_s3_kq4", "experiment: 128x128 tiles, 2 blocks/SM, BK 32, 3 stages, unroll 4"),
  });
}

}  // namespace kl::sgemm_detail
