// kernels/gemm_bf16/hopper_rungs.cu — appends the Hopper rungs (05-09, 11-16, 18-21), the decode rung
// (10) and the sm_90+ TMA rung (17) to the gemm_bf16 table (gemm_bf16.cu calls this once while
// building the table). Each rung's number, name and one change are written here and nowhere else;
// the kernels live in NN_*.cu.
// Which rung runs for which shape is the entry point's pick (gemm_bf16.cu), not the highest number.
#include "kl/gemm_bf16.h"
#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/hopper_gemm.cuh"

void kl::gemm_bf16_append_hopper_rungs(std::vector<kl::Rung<kl::GemmBf16Args>>& t) {
  using namespace kl::hopper_gemm;
  t.push_back({5, "tma_wgmma",
               "wgmma from 128B-swizzled smem tiles filled by TMA on mbarriers (128x128x64, 4 stages)",
               gemm_bf16_tma_wgmma_supports, gemm_bf16_tma_wgmma_launch, /*parent=*/3});
  t.push_back({6, "warp_specialized",
               "producer warp + full/empty mbarrier ring, 2 consumer warpgroups, setmaxnreg, 128x256",
               gemm_bf16_warp_specialized_supports, gemm_bf16_warp_specialized_launch, /*parent=*/5});
  t.push_back({7, "persistent",
               "persistent grid (1 CTA/SM), grouped L2-friendly tile order, epilogue overlaps next loads",
               gemm_bf16_persistent_supports, gemm_bf16_persistent_launch, /*parent=*/6});
  t.push_back({8, "tma_store_epilogue",
               "async epilogue: stmatrix to swizzled smem + TMA store (3 stages to fit)",
               gemm_bf16_tma_store_epilogue_supports, gemm_bf16_tma_store_epilogue_launch, /*parent=*/7});
  t.push_back({9, "cluster_multicast",
               "2x1 clusters: each CTA loads half the W tile and TMA-multicasts it to both",
               gemm_bf16_cluster_multicast_supports, gemm_bf16_cluster_multicast_launch, /*parent=*/8});
  t.push_back({10, "decode_stream",
               "M <= 64 branch: stream W rows (16-byte no-allocate loads) into mma.sync, K split over warps",
               gemm_bf16_decode_stream_supports, gemm_bf16_decode_stream_launch, /*parent=*/3});
  t.push_back({11, "decode_tma_splitk",
               "M <= 64: TMA ring (104 or 208 KB), K split over a cluster, DSMEM reduction, PDL",
               gemm_bf16_decode_tma_splitk_supports, gemm_bf16_decode_tma_splitk_launch, /*parent=*/10});
  t.push_back({12, "four_stages",
               "rung 08 with a 4-deep ring (192 KB); epilogue staged in 64x64 quarters, two boxes in turn, to fit",
               gemm_bf16_four_stages_supports, gemm_bf16_four_stages_launch, /*parent=*/8});
  t.push_back({13, "cluster_multicast_4stage",
               "rung 12 + 2x1 clusters: each CTA loads half the W tile and TMA-multicasts it to both",
               gemm_bf16_cluster_multicast_4stage_supports, gemm_bf16_cluster_multicast_4stage_launch, /*parent=*/12});
  t.push_back({14, "stream_k_tail",
               "rung 12 + DP/Stream-K hybrid: the last partial wave + one wave split in k-block "
               "ranges over all SMs, deterministic epoch fixup through the workspace",
               gemm_bf16_stream_k_tail_supports, gemm_bf16_stream_k_tail_launch, /*parent=*/12});
  t.push_back({15, "decode_no_split",
               "M <= 64: activations as the wgmma A operand, W strips (one CTA per SM: 32 rows at N = 4096) "
               "as B over the whole K (no split, no reduction), four producer lanes",
               gemm_bf16_decode_no_split_supports, gemm_bf16_decode_no_split_launch, /*parent=*/11});
  t.push_back({16, "small_tiles",
               "rung 15's whole-K stream over 64-row tiles of any M: 64 x (32-128) tiles, one CTA per SM "
               "where they fit (small prefill shapes)",
               gemm_bf16_small_tiles_supports, gemm_bf16_small_tiles_launch, /*parent=*/15});
  t.push_back({17, "tma_mma_sync",
               "rung 03's tiles fed by TMA: a producer warp fills 128B-swizzled stages on full/empty "
               "mbarriers, no block barrier in the k-loop (sm_90 and sm_120)",
               kl::gemm_bf16_detail::gemm_bf16_tma_mma_sync_supports,
               kl::gemm_bf16_detail::gemm_bf16_tma_mma_sync_launch, /*parent=*/3});
  t.push_back({18, "pingpong",
               "rung 12 with ping-pong consumers: each warpgroup owns whole 128x128 tiles, the two "
               "mainloops take turns (ordered named barriers) so one's epilogue runs under the other's math",
               gemm_bf16_pingpong_supports, gemm_bf16_pingpong_launch, /*parent=*/12});
  t.push_back({19, "narrow_tiles",
               "rung 12's kernel over 128x64 tiles (m64n64 per consumer, 8 stages of 24 KB, one store "
               "pass): four times the tiles for small GEMMs",
               gemm_bf16_narrow_tiles_supports, gemm_bf16_narrow_tiles_launch, /*parent=*/12});
  t.push_back({20, "pair_along_n",
               "rung 19 in 2-CTA clusters along N: each CTA loads half the A tile and TMA-multicasts "
               "it to both (24 -> 16 KB of L2 traffic per CTA per k-block)",
               gemm_bf16_pair_along_n_supports, gemm_bf16_pair_along_n_launch, /*parent=*/19});
  t.push_back({21, "wide_pair_along_n",
               "rung 13's 128x256 tiles with the 2-CTA cluster along N: each CTA multicasts half the A "
               "tile, so the pairs stay whole when M's tile count is odd",
               gemm_bf16_wide_pair_along_n_supports, gemm_bf16_wide_pair_along_n_launch, /*parent=*/13});
}
