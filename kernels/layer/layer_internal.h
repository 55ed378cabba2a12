// kernels/layer/layer_internal.h — what layer.cu and the rungs share: the workspace layout of rung
// 00 (every intermediate tensor of the layer, and the families' scratch) and the argument helpers.
//
// Layout, each piece 256-byte aligned:
//   scratch   the GEMMs' and the attention's workspace, at offset 0 for every shape. Both families
//             keep their flags at the start of their workspace and leave them at 0 after a launch;
//             the region is never smaller than either flag area, so no other tensor of any shape is
//             ever written where a flag lies (a zeroed workspace serves every shape). The families
//             run one after the other on the stream, so they share it.
//   pos       [T] int32: the default prefill positions (when the caller gives none)
//   h, qkv, q [T, hidden], [T, (Hq + 2 Hkv) D], [B, Hq, S, D]
//   k, v      [B, Hkv, kv_len, D]: the cache rows the attention reads, copied out when they are not
//             contiguous (kv_len < L with B * Hkv > 1); empty otherwise
//   o, o_tok  [B, Hq, S, D] (the attention's output), [T, Hq D] (in token order; empty when S = 1:
//             the two layouts are then the same bytes)
//   r, h2     [T, hidden]: the residual stream after the attention, its RMSNorm
//   g, u, act [T, mlp]: gate, up, swiglu(gate, up)
//   dn        [T, hidden]: the down projection
#pragma once
#include <cstddef>

#include "kl/attention.h"
#include "kl/layer.h"

namespace kl::layer_detail {

struct WorkspaceLayout {
  size_t scratch = 0;  // bytes of the families' region at offset 0
  size_t pos = 0, h = 0, qkv = 0, q = 0, k = 0, v = 0, o = 0, o_tok = 0, r = 0, h2 = 0, g = 0, u = 0,
         act = 0, dn = 0;  // byte offsets
  bool copy_kv = false;    // the attention reads copies of the cache rows (k, v)
  bool copy_o = false;     // the attention output is copied to token order (o_tok)
  size_t total = 0;
};

// The families' scratch for `a`'s shape on device d: the most any of the five GEMMs or the attention
// wants, never less than either family's flag area (the GEMMs' size needs the device: occupancy).
size_t family_scratch_bytes(const LayerArgs& a, const DeviceInfo& d);
// The layout for `a`'s shape around a scratch region of `scratch_bytes` (pointers are not read; no
// device needed). Sizes of an invalid shape are meaningless but finite: layer_check_args() refuses
// the shape first.
WorkspaceLayout workspace_layout(const LayerArgs& a, size_t scratch_bytes);

// The attention call of `a`'s shape (no pointers, no workspace): B, Hq, Hkv, Sq = S, Skv = kv_len,
// D, causal.
AttentionArgs attention_shape(const LayerArgs& a);

// Tokens B * S.
inline long long layer_tokens(const LayerArgs& a) { return static_cast<long long>(a.B) * a.S; }
// Elements of one qkv row: (Hq + 2 Hkv) D.
inline long long qkv_width(const LayerDims& m) { return (static_cast<long long>(m.Hq) + 2LL * m.Hkv) * m.D; }

}  // namespace kl::layer_detail
