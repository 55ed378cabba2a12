// kernels/attention/hopper_rungs.cu — the sm_90a attention rungs (part 2), appended to the table in
// attention.cu: 04-10 here, and 12-15 by attention_append_late_hopper_rungs (after the portable
// rung 11, so the table stays in ladder order). Each rung's number, name and one change are written
// here and nowhere else. The kernels of 04-08, 10 and 12-15 are one template (hopper_fa.cuh): rung
// 04 takes its defaults, and each later rung file writes its configuration as its parent's plus one change,
// the named piece it picks (Producer, Mainloop, WarpgroupTurns, Scheduler: hopper_fa_mainloop.cuh,
// hopper_fa_scheduler.cuh, Epilogue: hopper_fa_epilogue.cuh), or in rung 10 the KV tile size, in
// rung 13 the CTA's size and residency.
#include <algorithm>

#include "attention/hopper_rungs.h"

namespace kl {

void attention_append_hopper_rungs(std::vector<Rung<AttentionArgs>>& t) {
  t.push_back({4, "wgmma_tma",
               "wgmma for QK^T (smem) and PV (P from registers), TMA + mbarriers for Q/K/V",
               attention_wgmma_tma_supports, attention_wgmma_tma_launch, /*parent=*/2});
  t.push_back({5, "warp_specialized",
               "producer warpgroup streams K/V through an empty/full mbarrier ring; setmaxnreg",
               attention_warp_specialized_supports, attention_warp_specialized_launch, /*parent=*/4});
  t.push_back({6, "intra_wg_overlap",
               "softmax of tile t+1 overlaps the P V wgmma of tile t inside each warpgroup",
               attention_intra_wg_overlap_supports, attention_intra_wg_overlap_launch, /*parent=*/5});
  t.push_back({7, "pingpong",
               "the two consumer warpgroups alternate wgmma issue (named barriers): one's softmax "
               "overlaps the other's products",
               attention_pingpong_supports, attention_pingpong_launch, /*parent=*/6});
  t.push_back({8, "heaviest_first",
               "persistent CTAs take items from a tile counter, causal row tiles longest first",
               attention_heaviest_first_supports, attention_heaviest_first_launch, /*parent=*/7});
  t.push_back({9, "decode_split_kv",
               "decode: K/V by TMA into a 6-deep mbarrier ring (producer warp), GQA heads packed "
               "in an m16 tile, split KV merged in-kernel by the piece that sees all flags raised",
               attention_decode_split_kv_supports, attention_decode_split_kv_launch, /*parent=*/3});
  t.push_back({10, "wide_kv_tile", "D = 128: 128 x 176 tiles (wgmma n176), setmaxnreg 24/240",
               attention_wide_kv_tile_supports, attention_wide_kv_tile_launch, /*parent=*/8});
}

void attention_append_late_hopper_rungs(std::vector<Rung<AttentionArgs>>& t) {
  t.push_back({12, "double_q",
               "two Q tiles used in turn: the next item's Q loads while the current item runs",
               attention_double_q_supports, attention_double_q_launch, /*parent=*/8});
  t.push_back({13, "short_items",
               "64-row items, one consumer warpgroup per CTA, two CTAs per SM (64-key tiles at "
               "D = 128, setmaxnreg 40/216)",
               attention_short_items_supports, attention_short_items_launch, /*parent=*/12});
  t.push_back({14, "tma_store_o",
               "O staged in shared memory per consumer warpgroup and stored by TMA, not waited for",
               attention_tma_store_o_supports, attention_tma_store_o_launch, /*parent=*/12});
  t.push_back({15, "short_tma_store",
               "D = 64: rung 13's two CTAs per SM with rung 14's O staged in shared memory and "
               "stored by TMA",
               attention_short_tma_store_supports, attention_short_tma_store_launch, /*parent=*/13});
}

size_t attention_hopper_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d) {
  // Only the decode rung (09) uses a workspace: flags + partials of its split plan.
  return attention_decode_split_kv_workspace_bytes(a, d);
}

}  // namespace kl
