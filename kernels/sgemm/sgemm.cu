// kernels/sgemm/sgemm.cu — the sgemm rung table (written once, here) and the entry point.
#include <sstream>

#include "kl/sgemm.h"
#include "sgemm_internal.h"

namespace kl {

using namespace sgemm_detail;

const std::vector<Rung<SgemmArgs>>& sgemm_rungs() {
  static const std::vector<Rung<SgemmArgs>> table = [] {
    std::vector<Rung<SgemmArgs>> t = {
      {0, "naive", "one thread per C element, lanes walk M (uncoalesced A and C)",
       sgemm_naive_supports, sgemm_naive_launch},
      {1, "coalesced", "lanes walk N: B loads and C stores coalesced, A broadcast",
       sgemm_coalesced_supports, sgemm_coalesced_launch, /*parent=*/0},
      {2, "smem_tiling", "32x32 tiles of A and B staged through shared memory",
       sgemm_smem_tiling_supports, sgemm_smem_tiling_launch, /*parent=*/1},
      {3, "regblock_1d", "64x64 tile, 8 outputs per thread along M (1D register blocking)",
       sgemm_regblock_1d_supports, sgemm_regblock_1d_launch, /*parent=*/2},
      {4, "regblock_2d", "128x128 tile, 8x8 outputs per thread (2D register blocking)",
       sgemm_regblock_2d_supports, sgemm_regblock_2d_launch, /*parent=*/3},
      {5, "vectorized", "float4 global loads, A transposed in shared memory, LDS.128 fragments",
       sgemm_vectorized_supports, sgemm_vectorized_launch, /*parent=*/4},
      {6, "warp_tiling", "32x64 warp tiles, strided 4-wide fragments: broadcast, no bank conflicts",
       sgemm_warp_tiling_supports, sgemm_warp_tiling_launch, /*parent=*/5},
      {7, "prefetch_swizzle",
       "register-prefetch double buffering, XOR swizzle on the A^T stores, 2 blocks/SM",
       sgemm_prefetch_swizzle_supports, sgemm_prefetch_swizzle_launch, /*parent=*/6},
      {8, "tile256x128",
       "256x128 tile, 16x8 micro-tiles (0.75 B/FMA), fragment double buffering, any M,N,K",
       sgemm_tile256x128_supports, sgemm_tile256x128_launch, /*parent=*/7},
      {9, "bk16_cpasync",
       "16-deep k-tiles (half the barriers and per-tile overhead), B by cp.async",
       sgemm_bk16_cpasync_supports, sgemm_bk16_cpasync_launch, /*parent=*/8},
      {10, "cpasync_ring",
       "A by 4-byte cp.async straight into A^T (no register hop), 3-stage ring, 1 barrier/tile",
       sgemm_cpasync_ring_supports, sgemm_cpasync_ring_launch, /*parent=*/9},
      {11, "small_splitk",
       "small shapes: 128x128 tiles at 2 blocks/SM, split-K by 2 when tiles <= SMs",
       sgemm_small_splitk_supports, sgemm_small_splitk_launch, /*parent=*/10},
      {12, "lean_copies",
       "rung 10 with interior tiles issuing their copies without per-copy predicates and selects",
       sgemm_lean_copies_supports, sgemm_lean_copies_launch, /*parent=*/10},
      {13, "ak_layout",
       "A kept k-contiguous in smem: 16-byte cp.async for A too, A fragments read 4 k at a time",
       sgemm_ak_layout_supports, sgemm_ak_layout_launch, /*parent=*/12},
      {14, "ak_bk32", "32-deep k-tiles for rung 13's kernel (one barrier per 4,096 FMAs per thread)",
       sgemm_ak_bk32_supports, sgemm_ak_bk32_launch, /*parent=*/13},
      {15, "bk64_two_stage",
       "2 stages of 64-deep k-tiles instead of 3 of 32 (one barrier per 8,192 FMAs per thread), "
       "k-steps unrolled by 8",
       sgemm_bk64_two_stage_supports, sgemm_bk64_two_stage_launch, /*parent=*/14},
      {16, "any_shape",
       "rung 11's 128x128 ring for any N, K and alignment: B by 4-byte cp.async, C by floats",
       sgemm_any_shape_supports, sgemm_any_shape_launch, /*parent=*/11},
      {17, "ak_any_shape",
       "rung 14's block (A k-contiguous, 64x64 warp tiles) on rung 16's 128x128 tiles, 2 blocks/SM "
       "and 4-byte copies",
       sgemm_ak_any_shape_supports, sgemm_ak_any_shape_launch, /*parent=*/16},
    };
    return t;
  }();
  return table;
}

std::string sgemm_check_args(const SgemmArgs& a) {
  std::ostringstream s;
  if (a.M <= 0 || a.N <= 0 || a.K <= 0) {
    s << "M, N, K must be > 0 (got " << a.M << "x" << a.N << "x" << a.K << ")";
    return s.str();
  }
  if (!a.A || !a.B || !a.C) return "A, B and C must be non-null";
  if (!aligned(a.A, 4) || !aligned(a.B, 4) || !aligned(a.C, 4))
    return "A, B and C must be 4-byte aligned (float arrays)";
  // Tile-count arithmetic (M + BM - 1, k-tile offsets) stays inside int.
  constexpr int kMaxDim = 0x7fffffff - 512;
  if (a.M > kMaxDim || a.N > kMaxDim || a.K > kMaxDim) {
    s << "M, N, K must be at most 2^31 - 513 (got " << a.M << "x" << a.N << "x" << a.K << ")";
    return s.str();
  }
  return "";
}

const Rung<SgemmArgs>* sgemm_pick(const SgemmArgs& a, const DeviceInfo& d) {
  const auto& t = sgemm_rungs();
  auto usable = [&](int n) -> const Rung<SgemmArgs>* {
    const Rung<SgemmArgs>* r = find_rung(t, std::to_string(n));
    return r && r->supports(a, d).empty() ? r : nullptr;
  };
  // The 256x128 rungs leave SMs idle when the grid is well under one wave (1024^3 is 32 tiles on
  // 132 SMs): when they would leave half the SMs or more idle, the small-shape path (11: 128x128
  // tiles, 2 blocks/SM, split-K by 2 when even those do not fill the SMs; 16 for shapes 11 does not
  // take). 2048^3 (128 tiles, 97% of one wave) stays on 09, which is faster there than 128x128.
  const long long tiles256 = ceil_div(a.M, 256) * ceil_div(a.N, 128);
  const long long tiles128 = ceil_div(a.M, 128) * ceil_div(a.N, 128);
  if (2 * tiles256 <= d.sms)
    for (int n : {11, 16})
      if (const auto* r = usable(n)) return r;
  // Large shapes. With two waves of 256x128 tiles or more, rung 15 (2 stages of 64-deep k-tiles)
  // leads on the four large shapes, then 14, both ahead of 09; at 2048^3 (one wave) 09 leads.
  if (tiles256 >= 2LL * d.sms)  // two waves or more of 256x128 tiles
    for (int n : {15, 14})
      if (const auto* r = usable(n)) return r;
  // Between: the 128x128 ring (2 blocks/SM) where it fills its last wave enough better to make up
  // for its lower rate per SM at full waves; the factors are the rates at 4096^3 (sgemm.jsonl) of
  // rung 11 over 09 (the rung it replaces here) and of 16 over 08. 16 counts only where 11
  // refuses, and then 09-12 refuse too: the choice is 16 or 08. 4097x1023x515: 136 tiles of
  // 256x128 on 132 SMs, 264 of 128x128 on 264 slots.
  auto fill = [](long long tiles, long long slots) {  // busy share of the last wave's slots
    return double(tiles) / double(ceil_div(tiles, slots) * slots);
  };
  const double fill128 = fill(tiles128, 2LL * d.sms), fill256 = fill(tiles256, d.sms);
  if (0.91 * fill128 > fill256)
    if (const auto* r = usable(11)) return r;
  if (0.83 * fill128 > fill256)
    if (const auto* r = usable(16)) return r;
  // Then the lean ring (12: A may be misaligned), else 08 (any shape and alignment).
  for (int n : {9, 12, 8})
    if (const auto* r = usable(n)) return r;
  return best_supported(t, a, d);
}

void sgemm(const SgemmArgs& a, cudaStream_t stream) {
  std::string why = sgemm_check_args(a);
  KL_REQUIRE(why.empty(), "sgemm: " << why);
  const Rung<SgemmArgs>* r = sgemm_pick(a, device_info());
  KL_REQUIRE(r, "sgemm: no rung supports " << a.M << "x" << a.N << "x" << a.K);
  r->launch(a, stream);
}

}  // namespace kl
