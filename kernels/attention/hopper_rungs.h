// kernels/attention/hopper_rungs.h — supports()/launch() of the sm_90a rungs (04_*.cu .. 10_*.cu,
// 12_*.cu .. 15_*.cu); hopper_rungs.cu puts them in the table. Also the split-KV scratch size of the
// decode rung.
#pragma once
#include <string>

#include "kl/attention.h"

namespace kl {
#define KL_ATTN_HOPPER_RUNG(fn)                                              \
  std::string fn##_supports(const AttentionArgs& a, const DeviceInfo& d); \
  void fn##_launch(const AttentionArgs& a, cudaStream_t s);
KL_ATTN_HOPPER_RUNG(attention_wgmma_tma)
KL_ATTN_HOPPER_RUNG(attention_warp_specialized)
KL_ATTN_HOPPER_RUNG(attention_intra_wg_overlap)
KL_ATTN_HOPPER_RUNG(attention_pingpong)
KL_ATTN_HOPPER_RUNG(attention_heaviest_first)
KL_ATTN_HOPPER_RUNG(attention_decode_split_kv)
KL_ATTN_HOPPER_RUNG(attention_wide_kv_tile)
KL_ATTN_HOPPER_RUNG(attention_double_q)
KL_ATTN_HOPPER_RUNG(attention_short_items)
KL_ATTN_HOPPER_RUNG(attention_tma_store_o)
KL_ATTN_HOPPER_RUNG(attention_short_tma_store)
#undef KL_ATTN_HOPPER_RUNG
// Workspace rung 09's split plan needs for `a` (0 when it would not split or is not decode).
size_t attention_decode_split_kv_workspace_bytes(const AttentionArgs& a, const DeviceInfo& d);

// Workspace the decode rung (09) can use for `a` (its partial O and log-sum-exp, fp32): the
// family's attention_workspace_bytes() returns at least this. Less workspace = fewer splits.
size_t attention_hopper_workspace_bytes(const AttentionArgs& shape_only, const DeviceInfo& d);
}  // namespace kl
