// kernels/layer/layer_internal.h — what layer.cu and the rungs share: the workspace layout of rung
// 00 (every intermediate tensor of the layer, and the families' scratch) and the argument helpers.
//
// Layout, each piece 256-byte aligned:
//   gemm      the GEMMs' workspace, at offset 0 for every shape: its Stream-K flags stay at the
//             start ([0, streamk_flag_bytes)) whatever the shape, the GEMMs leave them at 0, and
//             nothing else is ever written there (a zeroed workspace serves every shape)
//   att       the attention's workspace, its own region (its split pieces' flags at its start,
//             then partials; the GEMMs' partials and rung 03's prefill partials, which start at
//             the families' workspace offset 0, would otherwise land on the other family's flags);
//             its offset depends on the shape, so the entry point zeroes its flag words
//             (att_flags bytes) on the stream before every launch
//   pos       [T] int32: the default prefill positions (when the caller gives none)
//   h, qkv, q [T, hidden], [T, (Hq + 2 Hkv) D], [B, Hq, S, D]
//   k, v      [B, Hkv, kv_len, D]: the cache rows the attention reads, copied out when they are not
//             contiguous (kv_len < L with B * Hkv > 1); empty otherwise
//   o, o_tok  [B, Hq, S, D] (the attention's output), [T, Hq D] (in token order; empty when S = 1:
//             the two layouts are then the same bytes)
//   r, h2     [T, hidden]: the residual stream after the attention, its RMSNorm
//   g, u, act [T, mlp]: gate, up, swiglu(gate, up)
//   dn        [T, hidden]: the down projection (rungs 00-02)
#pragma once
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kl/attention.h"
#include "kl/gemm_bf16.h"
#include "kl/layer.h"

namespace kl::layer_detail {

struct WorkspaceLayout {
  size_t gemm = 0;                 // bytes of the GEMMs' region at offset 0
  size_t att = 0, att_bytes = 0;   // offset and bytes of the attention's region
  size_t att_flags = 0;            // bytes at the start of `att` zeroed before every launch
  size_t pos = 0, h = 0, qkv = 0, q = 0, k = 0, v = 0, o = 0, o_tok = 0, r = 0, h2 = 0, g = 0, u = 0,
         act = 0, dn = 0;  // byte offsets
  bool copy_kv = false;    // the attention reads copies of the cache rows (k, v)
  bool copy_o = false;     // the attention output is copied to token order (o_tok)
  size_t total = 0;
};

// The families' workspaces for `a`'s shape on device d: the most any of the five GEMMs wants, never
// less than its flag area; the attention's, never less than its flag area (the GEMMs' size needs the
// device: occupancy).
struct FamilyScratch {
  size_t gemm = 0, attention = 0;  // bytes
};
FamilyScratch family_scratch_bytes(const LayerArgs& a, const DeviceInfo& d);
// The layout for `a`'s shape around the families' regions of `s` (pointers are not read; no device
// needed). Sizes of an invalid shape are meaningless but finite: layer_check_args() refuses the
// shape first.
WorkspaceLayout workspace_layout(const LayerArgs& a, const FamilyScratch& s);

// The attention call of `a`'s shape (no pointers, no workspace): B, Hq, Hkv, Sq = S, Skv = kv_len,
// D, causal.
AttentionArgs attention_shape(const LayerArgs& a);

// The GEMM arguments of C [M, N] = A [M, K] W [N, K]^T (the workspace as given; none by default).
inline GemmBf16Args layer_gemm_args(const __nv_bfloat16* A, const __nv_bfloat16* W, __nv_bfloat16* C, long long M,
                                    int N, int K, void* ws = nullptr, size_t ws_bytes = 0) {
  GemmBf16Args g;
  g.A = A;
  g.W = W;
  g.C = C;
  g.M = static_cast<int>(M);
  g.N = N;
  g.K = K;
  g.workspace = ws;
  g.workspace_bytes = ws_bytes;
  return g;
}

// A byte range [lo, hi) of device memory, for the overlap checks.
struct Span {
  uintptr_t lo, hi;
};
inline Span span(const void* p, double bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  return {lo, lo + static_cast<uintptr_t>(bytes)};
}
inline bool overlap(const Span& a, const Span& b) { return a.lo < b.hi && b.lo < a.hi; }

// Tokens B * S.
inline long long layer_tokens(const LayerArgs& a) { return static_cast<long long>(a.B) * a.S; }
// Elements of one qkv row: (Hq + 2 Hkv) D.
inline long long qkv_width(const LayerDims& m) { return (static_cast<long long>(m.Hq) + 2LL * m.Hkv) * m.D; }

// Every field of the arguments and the device, for equality (LayerArgs has padding bytes: compared
// field by field): the key of rung 01's graphs and of the entry point's last checked call.
inline auto layer_key(const LayerArgs& a, int dev) {
  const LayerWeights& w = a.w;
  const LayerDims& m = a.dims;
  return std::make_tuple(dev, static_cast<int>(a.mode), a.x, a.y, w.attn_norm, w.wqkv, w.wo, w.mlp_norm, w.wgate,
                         w.wup, w.wdown, m.hidden, m.Hq, m.Hkv, m.D, m.mlp, m.eps, m.theta, a.k_cache, a.v_cache,
                         a.pos, a.B, a.S, a.L, a.kv_len, a.workspace, a.workspace_bytes);
}
using LayerKey = decltype(layer_key(LayerArgs{}, 0));

// The MLP's first half as one kernel (fused_gemms.cu): act [M, N] = silu(A Wgate^T) *
// (A Wup^T), A [M, K], both weights [N, K], any M >= 1 (the whole-K decode kernel up to 64 rows,
// the persistent tile kernel above); sm_90a. Refusal reasons as the families give.
struct GateUpArgs {
  const __nv_bfloat16* A = nullptr;
  const __nv_bfloat16* w_gate = nullptr;
  const __nv_bfloat16* w_up = nullptr;
  __nv_bfloat16* act = nullptr;
  int M = 0, N = 0, K = 0;
};
std::string gate_up_swiglu_supports(const GateUpArgs& a, const DeviceInfo& d);
void gate_up_swiglu_launch(const GateUpArgs& a, cudaStream_t s);

// The MLP's down projection and the residual add as one kernel (fused_gemms.cu): y [M, N] = r +
// bf16(A W^T), A [M, K], W [N, K], r [M, N] (r == y allowed, no other overlap), by the same two
// kernels as GateUpArgs; sm_90a.
struct DownResidualArgs {
  const __nv_bfloat16* A = nullptr;
  const __nv_bfloat16* w = nullptr;
  const __nv_bfloat16* r = nullptr;
  __nv_bfloat16* y = nullptr;
  int M = 0, N = 0, K = 0;
};
std::string down_residual_supports(const DownResidualArgs& a, const DeviceInfo& d);
void down_residual_launch(const DownResidualArgs& a, cudaStream_t s);

// How a layer launch runs the MLP: gate, up, SwiGLU, down and the residual add as five steps
// (rungs 00, 01); gate, up and SwiGLU as one kernel (rung 02); and the down GEMM adding the
// residual in its epilogue (rung 03).
enum class MlpSteps { separate, fused_gate_up, fused_residual };
// The steps of one layer launch (rung 00's, with the MLP as `mlp` says). Arguments checked by the
// caller.
std::vector<LayerStep> layer_steps(const LayerArgs& a, MlpSteps mlp);
// "" when the fused kernel takes `a`'s gate/up (or down/residual) step (its shape, device and
// pointers), else its reason.
std::string layer_gate_up_supports(const LayerArgs& a, const DeviceInfo& d);
std::string layer_down_residual_supports(const LayerArgs& a, const DeviceInfo& d);

// A graph rung's launch (01_graph.cu): a call that repeats the previous call's arguments for the
// same rung captures `launch` once, later ones replay it; other calls run `launch` eagerly.
using LayerLaunch = void (*)(const LayerArgs& a, cudaStream_t s);
void layer_graph_run(const LayerArgs& a, cudaStream_t s, int rung, LayerLaunch launch);

}  // namespace kl::layer_detail
