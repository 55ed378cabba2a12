// 00 entry_points — the layer as a sequence of the families' entry points.
//
// Parent: none (the baseline of the ladder).
// Change: rmsnorm, gemm_bf16 (qkv), rope (attention layout: q to [B, Hq, S, D], K and V into the
//   caches), attention, gemm_bf16 (o), add_rmsnorm (r = o Wo^T + x, h2 = rmsnorm(r)), gemm_bf16
//   (gate, up), swiglu, gemm_bf16 (down), each through its entry point, with plain copy kernels
//   where layouts differ (the cache rows [0, kv_len) to contiguous K/V when the attention cannot
//   read them in place; the attention output from [B, Hq, S, D] to token order) and a residual-add
//   kernel for y = r + down (no family fuses it), launched programmatic-dependent as the row-op
//   families' top rungs are. Every intermediate is a bf16 tensor in the workspace.
// Why: the reference point: each op at its family's best rung, nothing fused across ops.
// Limits: 11 to 16 kernels in a row, and a memset of the attention's flag words; every
//   intermediate makes a round trip through memory; the copies and the residual add move bytes no
//   op needs; a decode step pays each launch's latency.
#include <cuda_bf16.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/pdl.cuh"
#include "kernels/layer/layer_internal.h"
#include "kl/attention.h"
#include "kl/check.h"
#include "kl/gemm_bf16.h"
#include "kl/rmsnorm.h"
#include "kl/rope.h"
#include "kl/swiglu.h"

namespace kl::layer_detail {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;

unsigned blocks_for(long long n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// pos[t] = first + t mod S: the default prefill positions.
__global__ void __launch_bounds__(kThreads) layer_entry_points_positions_kernel(int* pos, long long T, int S, int first) {
  const long long t = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (t < T) pos[t] = first + static_cast<int>(t % S);
}

// dst [rows, kv, D] = src [rows, L, D] rows [0, kv): one 16-byte chunk per thread.
__global__ void __launch_bounds__(kThreads)
    layer_entry_points_cache_rows_kernel(const bf16* src, bf16* dst, long long chunks, int kv, int L, int D) {
  const long long c = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= chunks) return;
  const int per_row = D / 8;
  const long long row = c / per_row;  // (rows, kv) row of dst
  const int part = static_cast<int>(c - row * per_row);
  const long long head = row / kv, j = row - head * kv;
  const uint4* s = reinterpret_cast<const uint4*>(src + (head * L + j) * D) + part;
  reinterpret_cast<uint4*>(dst + row * D)[part] = *s;
}

// dst [B * S, Hq * D] = src [B, Hq, S, D]: one 16-byte chunk per thread, in dst order.
__global__ void __launch_bounds__(kThreads)
    layer_entry_points_heads_to_tokens_kernel(const bf16* src, bf16* dst, long long chunks, int S, int Hq, int D) {
  const long long c = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= chunks) return;
  const int per_head = D / 8, per_token = Hq * per_head;
  const long long t = c / per_token;
  const int rem = static_cast<int>(c - t * per_token), h = rem / per_head, part = rem - h * per_head;
  const long long b = t / S, s = t - b * S;
  const uint4* from = reinterpret_cast<const uint4*>(src + ((b * Hq + h) * S + s) * D) + part;
  reinterpret_cast<uint4*>(dst)[c] = *from;
}

// y = a + b elementwise (fp32 add, one rounding): one element per thread, any alignment. Launched
// programmatic-dependent on a created stream: resident while the down GEMM drains, it reads after.
__global__ void __launch_bounds__(kThreads)
    layer_entry_points_residual_kernel(const bf16* a, const bf16* b, bf16* y, long long n) {
  pdl_trigger();
  pdl_wait();
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

// Every family call of one layer launch, built from the arguments and the workspace layout.
struct Plan {
  WorkspaceLayout lay;
  int* pos_fill = nullptr;  // the default positions to write, or nullptr (the caller's)
  bf16* k_rows = nullptr;   // the copies of the cache rows [0, kv) (copy_kv), or nullptr
  bf16* v_rows = nullptr;
  bf16* o_tok = nullptr;    // the attention output in token order (copy_o), or nullptr
  int kv = 0;
  RmsnormArgs norm1;
  GemmBf16Args qkv, oproj, gate, up, down;
  RopeArgs rope;
  AttentionArgs att;
  AddRmsnormArgs norm2;
  SwigluArgs act;
  GateUpArgs gate_up;  // gate, up and act as one kernel (rung 02's MLP)
  DownResidualArgs down_res;  // down and the residual add as one kernel (rung 03's), writing y
};

Plan make_plan(const LayerArgs& a, const DeviceInfo& d) {
  Plan p;
  const LayerDims& m = a.dims;
  p.lay = workspace_layout(a, family_scratch_bytes(a, d));
  p.kv = layer_kv_len(a);
  char* ws = static_cast<char*>(a.workspace);
  auto at = [&](size_t off) { return reinterpret_cast<bf16*>(ws + off); };
  const long long T = layer_tokens(a);
  const int width = static_cast<int>(qkv_width(m)), hq_d = m.Hq * m.D;
  const size_t gemm_ws = p.lay.gemm;

  p.norm1.x = a.x;
  p.norm1.w = a.w.attn_norm;
  p.norm1.y = at(p.lay.h);
  p.norm1.rows = static_cast<int>(T);
  p.norm1.cols = m.hidden;
  p.norm1.eps = m.eps;
  p.norm1.dtype = DType::bf16;

  p.qkv = layer_gemm_args(at(p.lay.h), a.w.wqkv, at(p.lay.qkv), T, width, m.hidden, ws, gemm_ws);

  const int* pos = a.pos;
  if (!pos) {
    p.pos_fill = reinterpret_cast<int*>(ws + p.lay.pos);
    pos = p.pos_fill;
  }
  p.rope.qkv = at(p.lay.qkv);
  p.rope.pos = pos;
  p.rope.B = a.B;
  p.rope.S = a.S;
  p.rope.Hq = m.Hq;
  p.rope.Hkv = m.Hkv;
  p.rope.D = m.D;
  p.rope.theta = m.theta;
  p.rope.layout = RopeLayout::attention;
  p.rope.q_out = at(p.lay.q);
  p.rope.k_cache = a.k_cache;
  p.rope.v_cache = a.v_cache;
  p.rope.L = a.L;

  if (p.lay.copy_kv) {
    p.k_rows = at(p.lay.k);
    p.v_rows = at(p.lay.v);
  }
  p.att = attention_shape(a);
  p.att.Q = at(p.lay.q);
  p.att.K = p.lay.copy_kv ? p.k_rows : a.k_cache;
  p.att.V = p.lay.copy_kv ? p.v_rows : a.v_cache;
  p.att.O = at(p.lay.o);
  p.att.workspace = ws + p.lay.att;
  p.att.workspace_bytes = p.lay.att_bytes;

  if (p.lay.copy_o) p.o_tok = at(p.lay.o_tok);
  p.oproj =
      layer_gemm_args(p.lay.copy_o ? p.o_tok : at(p.lay.o), a.w.wo, at(p.lay.r), T, m.hidden, hq_d, ws, gemm_ws);

  p.norm2.r = at(p.lay.r);  // holds o Wo^T; becomes r = x + o Wo^T
  p.norm2.x = a.x;
  p.norm2.w = a.w.mlp_norm;
  p.norm2.y = at(p.lay.h2);
  p.norm2.rows = static_cast<int>(T);
  p.norm2.cols = m.hidden;
  p.norm2.eps = m.eps;
  p.norm2.dtype = DType::bf16;

  p.gate = layer_gemm_args(at(p.lay.h2), a.w.wgate, at(p.lay.g), T, m.mlp, m.hidden, ws, gemm_ws);
  p.up = layer_gemm_args(at(p.lay.h2), a.w.wup, at(p.lay.u), T, m.mlp, m.hidden, ws, gemm_ws);
  p.act.g = at(p.lay.g);
  p.act.u = at(p.lay.u);
  p.act.y = at(p.lay.act);
  p.act.rows = static_cast<int>(T);
  p.act.cols = m.mlp;
  p.act.dtype = DType::bf16;
  p.gate_up.A = at(p.lay.h2);
  p.gate_up.w_gate = a.w.wgate;
  p.gate_up.w_up = a.w.wup;
  p.gate_up.act = at(p.lay.act);
  p.gate_up.M = static_cast<int>(T);
  p.gate_up.N = m.mlp;
  p.gate_up.K = m.hidden;
  p.down = layer_gemm_args(at(p.lay.act), a.w.wdown, at(p.lay.dn), T, m.hidden, m.mlp, ws, gemm_ws);
  p.down_res.A = at(p.lay.act);
  p.down_res.w = a.w.wdown;
  p.down_res.r = at(p.lay.r);
  p.down_res.y = a.y;
  p.down_res.M = static_cast<int>(T);
  p.down_res.N = m.hidden;
  p.down_res.K = m.mlp;
  return p;
}

// "" when the family's pick takes `args`, else "<what>: <the family's reason>".
template <class Args>
std::string family_refusal(const char* what, const Rung<Args>* picked, const std::vector<Rung<Args>>& table,
                           const Args& args, const DeviceInfo& d) {
  if (picked) return "";
  return std::string(what) + ": no rung takes it (rung 00: " + table[0].supports(args, d) + ")";
}

}  // namespace

std::string layer_entry_points_supports(const LayerArgs& a, const DeviceInfo& d) {
  std::string why = layer_check_args(a, d);
  if (!why.empty()) return why;
  const Plan p = make_plan(a, d);
  const std::string rope_why = rope_check_args(p.rope);
  if (!rope_why.empty()) return "rope: " + rope_why;
  for (const std::string& s :
       {family_refusal("rmsnorm", rmsnorm_pick(p.norm1, d), rmsnorm_rungs(), p.norm1, d),
        family_refusal("gemm_bf16 (qkv)", gemm_bf16_pick(p.qkv, d), gemm_bf16_rungs(), p.qkv, d),
        family_refusal("rope", rope_pick(p.rope, d), rope_rungs(), p.rope, d),
        family_refusal("attention", attention_pick(p.att, d), attention_rungs(), p.att, d),
        family_refusal("gemm_bf16 (o)", gemm_bf16_pick(p.oproj, d), gemm_bf16_rungs(), p.oproj, d),
        family_refusal("add_rmsnorm", add_rmsnorm_pick(p.norm2, d), add_rmsnorm_rungs(), p.norm2, d),
        family_refusal("gemm_bf16 (gate)", gemm_bf16_pick(p.gate, d), gemm_bf16_rungs(), p.gate, d),
        family_refusal("gemm_bf16 (up)", gemm_bf16_pick(p.up, d), gemm_bf16_rungs(), p.up, d),
        family_refusal("swiglu", swiglu_pick(p.act, d), swiglu_rungs(), p.act, d),
        family_refusal("gemm_bf16 (down)", gemm_bf16_pick(p.down, d), gemm_bf16_rungs(), p.down, d)})
    if (!s.empty()) return s;
  return "";
}

std::string layer_gate_up_supports(const LayerArgs& a, const DeviceInfo& d) {
  return gate_up_swiglu_supports(make_plan(a, d).gate_up, d);
}

std::string layer_down_residual_supports(const LayerArgs& a, const DeviceInfo& d) {
  return down_residual_supports(make_plan(a, d).down_res, d);
}

std::vector<LayerStep> layer_steps(const LayerArgs& a, MlpSteps mlp) {
  const auto p = std::make_shared<const Plan>(make_plan(a, device_info()));
  const LayerDims m = a.dims;
  const long long T = layer_tokens(a);
  const int B = a.B, S = a.S, L = a.L;
  std::vector<LayerStep> steps;
  // The attention's flag words: its region's offset follows the shape, so whatever an earlier call
  // of another shape left there is cleared (a flag counts when it equals the launch's epoch). The
  // default positions go with it.
  void* flags = static_cast<char*>(a.workspace) + p->lay.att;
  steps.push_back({"setup", [p, flags, T, S](cudaStream_t s) {
                     KL_CHECK(cudaMemsetAsync(flags, 0, p->lay.att_flags, s));
                     if (p->pos_fill) {
                       layer_entry_points_positions_kernel<<<blocks_for(T), kThreads, 0, s>>>(p->pos_fill, T, S,
                                                                                              p->kv - S);
                       KL_CHECK_LAUNCH();
                     }
                   }});
  steps.push_back({"rmsnorm", [p](cudaStream_t s) { rmsnorm(p->norm1, s); }});
  steps.push_back({"gemm qkv", [p](cudaStream_t s) { gemm_bf16(p->qkv, s); }});
  steps.push_back({"rope", [p](cudaStream_t s) { rope(p->rope, s); }});
  if (p->lay.copy_kv) {
    const long long chunks = static_cast<long long>(B) * m.Hkv * p->kv * (m.D / 8);
    const bf16 *kc = a.k_cache, *vc = a.v_cache;
    steps.push_back({"copy kv rows", [p, chunks, kc, vc, L, m](cudaStream_t s) {
                       for (const auto& kv : {std::make_pair(kc, p->k_rows), std::make_pair(vc, p->v_rows)}) {
                         layer_entry_points_cache_rows_kernel<<<blocks_for(chunks), kThreads, 0, s>>>(
                             kv.first, kv.second, chunks, p->kv, L, m.D);
                         KL_CHECK_LAUNCH();
                       }
                     }});
  }
  steps.push_back({"attention", [p](cudaStream_t s) { attention(p->att, s); }});
  if (p->lay.copy_o) {
    const long long chunks = T * m.Hq * (m.D / 8);
    steps.push_back({"copy o", [p, chunks, S, m](cudaStream_t s) {
                       layer_entry_points_heads_to_tokens_kernel<<<blocks_for(chunks), kThreads, 0, s>>>(
                           p->att.O, p->o_tok, chunks, S, m.Hq, m.D);
                       KL_CHECK_LAUNCH();
                     }});
  }
  steps.push_back({"gemm o", [p](cudaStream_t s) { gemm_bf16(p->oproj, s); }});
  steps.push_back({"add_rmsnorm", [p](cudaStream_t s) { add_rmsnorm(p->norm2, s); }});
  if (mlp != MlpSteps::separate) {
    steps.push_back({"gate_up_swiglu", [p](cudaStream_t s) { gate_up_swiglu_launch(p->gate_up, s); }});
  } else {
    steps.push_back({"gemm gate", [p](cudaStream_t s) { gemm_bf16(p->gate, s); }});
    steps.push_back({"gemm up", [p](cudaStream_t s) { gemm_bf16(p->up, s); }});
    steps.push_back({"swiglu", [p](cudaStream_t s) { swiglu(p->act, s); }});
  }
  if (mlp == MlpSteps::fused_residual) {
    steps.push_back({"down_residual", [p](cudaStream_t s) { down_residual_launch(p->down_res, s); }});
    return steps;
  }
  steps.push_back({"gemm down", [p](cudaStream_t s) { gemm_bf16(p->down, s); }});
  const long long n = T * m.hidden;
  bf16* y = a.y;
  steps.push_back({"residual", [p, y, n](cudaStream_t s) {
                     pdl_launch(layer_entry_points_residual_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s,
                                pdl_stream(s), static_cast<const bf16*>(p->norm2.r),
                                static_cast<const bf16*>(p->down.C), y, n);
                   }});
  return steps;
}

std::vector<LayerStep> layer_entry_points_steps(const LayerArgs& a) { return layer_steps(a, MlpSteps::separate); }

void layer_entry_points_launch(const LayerArgs& a, cudaStream_t s) {
  for (const LayerStep& step : layer_entry_points_steps(a)) step.run(s);
}

}  // namespace kl::layer_detail
