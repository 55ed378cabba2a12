// kernels/layer/layer.cu — THE table of decoder-layer rungs (number, name, the one change), the
// entry point, the argument checks, the workspace layout and size, the counted FLOPs and bytes.
// Rung code lives in NN_*.cu; the GPU fp32 reference in reference_gpu.cu.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "attention/decode_split.cuh"
#include "common/streamk.cuh"
#include "kernels/layer/layer_internal.h"
#include "kl/attention.h"
#include "kl/gemm_bf16.h"
#include "kl/layer.h"

namespace kl {

const std::vector<Rung<LayerArgs>>& layer_rungs() {
  using namespace layer_detail;
  static const std::vector<Rung<LayerArgs>> table = {
      {0, "entry_points",
       "one family entry point per op; plain copies where layouts differ, a residual-add kernel",
       layer_entry_points_supports, layer_entry_points_launch},
      {1, "graph", "a call that repeats the last arguments replays rung 00's launches as one captured CUDA graph",
       layer_graph_supports, layer_graph_launch, 0},
      {2, "fused_gate_up", "the MLP's gate GEMM, up GEMM and SwiGLU as one kernel streaming both weights",
       layer_fused_gate_up_supports, layer_fused_gate_up_launch, 1},
      {3, "fused_residual", "the MLP's down GEMM adds the residual stream in its epilogue and writes y",
       layer_fused_residual_supports, layer_fused_residual_launch, 2},
  };
  return table;
}

int layer_kv_len(const LayerArgs& a) {
  if (a.kv_len > 0) return a.kv_len;
  return a.mode == LayerMode::decode ? a.L : a.S;
}

namespace layer_detail {
namespace {

size_t round256(size_t b) { return (b + 255) / 256 * 256; }

}  // namespace

AttentionArgs attention_shape(const LayerArgs& a) {
  AttentionArgs at;
  at.B = a.B;
  at.Hq = a.dims.Hq;
  at.Hkv = a.dims.Hkv;
  at.Sq = a.S;
  at.Skv = layer_kv_len(a);
  at.D = a.dims.D;
  at.causal = true;
  return at;
}

FamilyScratch family_scratch_bytes(const LayerArgs& a, const DeviceInfo& d) {
  // The last shape's answer is kept per thread: a launch asks for it several times (the checks, the
  // pick, the plan), and the GEMM family's sizing walks its plans each time.
  const LayerDims& m = a.dims;
  const auto key = std::make_tuple(d.id, d.cc(), d.sms, d.smem_optin, d.smem_per_sm, a.B, a.S, layer_kv_len(a),
                                   m.hidden, m.Hq, m.Hkv, m.D, m.mlp);
  thread_local std::optional<std::pair<decltype(key), FamilyScratch>> last;
  if (last && last->first == key) return last->second;
  const long long T = std::max(0LL, layer_tokens(a));
  const int M = static_cast<int>(std::min<long long>(T, INT32_MAX));
  FamilyScratch s;
  s.gemm = streamk_flag_bytes(d.sms);
  s.attention = dec::kFlagBytes;
  if (M > 0 && m.hidden > 0 && m.mlp > 0 && m.D > 0) {
    s.gemm = std::max({s.gemm, gemm_bf16_workspace_bytes(M, static_cast<int>(qkv_width(m)), m.hidden, d),
                       gemm_bf16_workspace_bytes(M, m.hidden, m.Hq * m.D, d),
                       gemm_bf16_workspace_bytes(M, m.mlp, m.hidden, d),
                       gemm_bf16_workspace_bytes(M, m.hidden, m.mlp, d)});
    s.attention = std::max(s.attention, attention_workspace_bytes(attention_shape(a), d));
  }
  last.emplace(key, s);
  return s;
}

WorkspaceLayout workspace_layout(const LayerArgs& a, const FamilyScratch& s) {
  WorkspaceLayout w;
  const LayerDims& m = a.dims;
  const long long T = std::max(0LL, layer_tokens(a));
  const int kv = layer_kv_len(a);
  w.gemm = round256(s.gemm);
  w.att = w.gemm;
  w.att_bytes = round256(s.attention);
  w.att_flags = std::min(dec::kFlagBytes, w.att_bytes);
  w.copy_kv = kv < a.L && static_cast<long long>(a.B) * m.Hkv > 1;
  w.copy_o = a.S > 1;
  const double Td = static_cast<double>(T);
  const size_t bf = 2;
  const size_t tok_hidden = static_cast<size_t>(Td * m.hidden) * bf;
  const size_t tok_mlp = static_cast<size_t>(Td * m.mlp) * bf;
  const size_t q_bytes = static_cast<size_t>(Td * m.Hq * m.D) * bf;
  const size_t kv_bytes = w.copy_kv ? static_cast<size_t>(static_cast<double>(a.B) * m.Hkv * kv * m.D) * bf : 0;
  size_t off = w.att + w.att_bytes;
  auto take = [&](size_t bytes) {
    const size_t at = off;
    off += round256(bytes);
    return at;
  };
  w.pos = take(static_cast<size_t>(T) * 4);
  w.h = take(tok_hidden);
  w.qkv = take(static_cast<size_t>(Td * qkv_width(m)) * bf);
  w.q = take(q_bytes);
  w.k = take(kv_bytes);
  w.v = take(kv_bytes);
  w.o = take(q_bytes);
  w.o_tok = take(w.copy_o ? q_bytes : 0);
  w.r = take(tok_hidden);
  w.h2 = take(tok_hidden);
  w.g = take(tok_mlp);
  w.u = take(tok_mlp);
  w.act = take(tok_mlp);
  w.dn = take(tok_hidden);
  w.total = off;
  return w;
}

}  // namespace layer_detail

size_t layer_workspace_bytes(const LayerArgs& shape_only, const DeviceInfo& d) {
  return layer_detail::workspace_layout(shape_only, layer_detail::family_scratch_bytes(shape_only, d)).total;
}

std::string layer_check_args(const LayerArgs& a, const DeviceInfo& d) {
  std::ostringstream why;
  const LayerDims& m = a.dims;
  if (a.mode != LayerMode::prefill && a.mode != LayerMode::decode) return "unknown mode";
  if (m.hidden < 8 || m.hidden % 8 || m.mlp < 8 || m.mlp % 8)
    return "hidden and mlp must be positive multiples of 8 (the GEMMs' 16-byte rows)";
  if (m.Hq < 1 || m.Hkv < 1 || m.Hq % m.Hkv) return "need Hq, Hkv >= 1 with Hkv dividing Hq";
  if (m.D != 64 && m.D != 128) return "D must be 64 or 128";
  if (!(m.eps >= 0.f) || !std::isfinite(m.eps)) return "eps must be finite and >= 0";
  if (!(m.theta > 0.f) || !std::isfinite(m.theta)) return "theta must be finite and > 0";
  if (a.B < 1 || a.S < 1 || a.L < 1) return "need B, S and L >= 1";
  if (a.mode == LayerMode::decode && a.S != 1) return "decode takes one token per sequence (S = 1)";
  const int kv = layer_kv_len(a);
  if (kv < a.S || kv > a.L) {
    why << "kv_len " << kv << " outside [S, L] = [" << a.S << ", " << a.L << "]";
    return why.str();
  }
  const double T = static_cast<double>(a.B) * a.S;
  const double widest = std::max({static_cast<double>(m.hidden), static_cast<double>(m.mlp),
                                  static_cast<double>(layer_detail::qkv_width(m))});
  if (T > INT32_MAX) return "more than 2^31 - 1 tokens";
  if (T * widest > std::ldexp(1.0, 38)) return "an activation of more than 2^38 elements";
  const double cache = static_cast<double>(a.B) * m.Hkv * a.L * m.D;
  if (cache > std::ldexp(1.0, 40)) return "a cache of more than 2^40 elements";
  if (!a.x || !a.y) return "null x or y";
  const LayerWeights& w = a.w;
  if (!w.attn_norm || !w.wqkv || !w.wo || !w.mlp_norm || !w.wgate || !w.wup || !w.wdown)
    return "null weight pointer";
  if (!a.k_cache || !a.v_cache) return "null k_cache or v_cache";
  if (!aligned(a.k_cache, 16) || !aligned(a.v_cache, 16))
    return "k_cache and v_cache must be 16-byte aligned (their rows are read in 16-byte chunks)";
  if (a.mode == LayerMode::decode && !a.pos) return "decode needs the positions pos[B]";
  if (!a.workspace) return "null workspace (size it with layer_workspace_bytes)";
  if (!aligned(a.workspace, 256)) return "workspace must be 256-byte aligned";
  using layer_detail::Span;
  using layer_detail::overlap;
  using layer_detail::span;
  const Span x = span(a.x, 2 * T * m.hidden), y = span(a.y, 2 * T * m.hidden);
  const Span kc = span(a.k_cache, 2 * cache), vc = span(a.v_cache, 2 * cache);
  const Span ws = span(a.workspace, static_cast<double>(a.workspace_bytes));
  if (a.y != a.x && overlap(x, y)) return "y overlaps x (only y == x, in place, is allowed)";
  for (const Span& s : {x, y})
    if (overlap(s, kc) || overlap(s, vc) || overlap(s, ws)) return "x or y overlaps a cache or the workspace";
  if (overlap(kc, vc) || overlap(kc, ws) || overlap(vc, ws)) return "the caches and the workspace overlap";
  // Last: the size, the one check that asks the device (the GEMMs' plans).
  const size_t need = layer_workspace_bytes(a, d);
  if (a.workspace_bytes < need) {
    why << "needs a workspace of " << need << " bytes (have " << a.workspace_bytes
        << "; size it with layer_workspace_bytes)";
    return why.str();
  }
  return "";
}

// The top rung that takes the arguments: 03 (02 with the down GEMM writing y = r + down: no dn
// tensor, no residual kernel), else 02 (gate, up and SwiGLU as one kernel: one weight stream at
// decode, one GEMM and no [T, mlp] round trips at prefill), else 01 (a decode step is tens of
// microseconds of kernels, and the graph removes the gaps between them), else 00.
const Rung<LayerArgs>* layer_pick(const LayerArgs& a, const DeviceInfo& d) {
  return best_supported(layer_rungs(), a, d);
}

void layer(const LayerArgs& a, cudaStream_t stream) {
  const DeviceInfo& d = device_info();
  // The pick depends on the arguments and the device alone: a call that repeats the previous one's
  // (a decode loop, rung 01's replays) skips the checks, whose host time is that of a decode step.
  thread_local std::optional<std::pair<layer_detail::LayerKey, const Rung<LayerArgs>*>> last;
  const layer_detail::LayerKey key = layer_detail::layer_key(a, d.id);
  if (last && last->first == key) return last->second->launch(a, stream);
  const Rung<LayerArgs>* r = layer_pick(a, d);  // every rung's supports() starts with layer_check_args
  if (!r) {
    const std::string why = layer_check_args(a, d);
    KL_REQUIRE(false, "layer: " << (why.empty() ? "no rung supports the arguments: " + layer_rungs()[0].supports(a, d)
                                                : why));
  }
  r->launch(a, stream);
  last.emplace(key, r);
}

double layer_flops(const LayerArgs& a) {
  const LayerDims& m = a.dims;
  const double T = static_cast<double>(a.B) * a.S;
  const double gemm = 2.0 * T * m.hidden *
                      (static_cast<double>(layer_detail::qkv_width(m)) + static_cast<double>(m.Hq) * m.D + 3.0 * m.mlp);
  // Visible query-key pairs per head: query s sees kv_len - S + s + 1 keys.
  const double kv = layer_kv_len(a), S = a.S;
  const double pairs = S * (kv - S + 1) + 0.5 * S * (S - 1);
  return gemm + 4.0 * a.B * m.Hq * m.D * pairs;
}

double layer_bytes(const LayerArgs& a) {
  const LayerDims& m = a.dims;
  const double T = static_cast<double>(a.B) * a.S;
  const double weights = static_cast<double>(m.hidden) *
                         (static_cast<double>(layer_detail::qkv_width(m)) + static_cast<double>(m.Hq) * m.D +
                          3.0 * m.mlp + 2.0);
  const double cache = 2.0 * a.B * m.Hkv * static_cast<double>(layer_kv_len(a)) * m.D;
  return 2.0 * (weights + cache + 2.0 * T * m.hidden) + 4.0 * T;
}

}  // namespace kl
