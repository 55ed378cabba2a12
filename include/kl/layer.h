// include/kl/layer.h — one Llama decoder layer built from the families' entry points: arguments,
// rung table, entry point, workspace size, counted FLOPs and bytes.
//
//   h   = rmsnorm(x) * attn_norm                       x, y: [T, hidden], T = B * S tokens
//   qkv = h Wqkv^T                                     [T, (Hq + 2 Hkv) D]
//   q, K, V = rope(qkv)                                q [B, Hq, S, D]; K, V into the caches at pos[t]
//   o   = attention(q, cache rows [0, kv_len))         causal, the diagonal aligned to the end
//   r   = x + o Wo^T                                   the residual stream
//   y   = r + swiglu(h2 Wgate^T, h2 Wup^T) Wdown^T,    h2 = rmsnorm(r) * mlp_norm
//
// bf16 storage for every tensor, fp32 math inside each op (the families' contracts). Two modes:
//   prefill  B sequences of S tokens; token s of sequence b at position pos[b * S + s], by default
//            (pos = nullptr) kv_len - S + s. The attention reads cache rows [0, kv_len) (kv_len = 0
//            means S: a fresh sequence), query s seeing rows j <= s + kv_len - S.
//   decode   S = 1: one new token per sequence at pos[b] (required); the attention reads cache rows
//            [0, kv_len) (kv_len = 0 means L), all of them.
// The caches k_cache, v_cache [B, Hkv, L, D] are read and written: row pos[t] of sequence b gets the
// token's rotated k and its v (rope's attention layout), every other row is read as the earlier K/V.
// The attention's mask follows the row order, not the positions: the tokens of a call must sit at
// kv_len - S .. kv_len - 1 (what the default positions are); the sequences of one call share kv_len.
// Weights in the nn.Linear layout (out x in). Gate and up are two matrices (two GEMMs, the swiglu
// family's two inputs); one [2 mlp, hidden] allocation serves as wgate = base, wup = base + mlp * hidden.
// y may be x itself (the residual stream updated in place; x is last read before y is written) but
// must not overlap it otherwise.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kl/device.h"
#include <functional>
#include <string>
#include <vector>

#include "kl/registry.h"

namespace kl {

enum class LayerMode { prefill, decode };

// Llama-3-8B by default.
struct LayerDims {
  int hidden = 4096;
  int Hq = 32, Hkv = 8, D = 128;  // query heads, KV heads (Hkv divides Hq), head size (64 or 128)
  int mlp = 14336;                // intermediate size of the MLP
  float eps = 1e-5f;              // both RMSNorms
  float theta = 500000.f;         // RoPE base
};

struct LayerWeights {
  const __nv_bfloat16* attn_norm = nullptr;  // [hidden]
  const __nv_bfloat16* wqkv = nullptr;       // [(Hq + 2 Hkv) D, hidden]: q heads, k heads, v heads
  const __nv_bfloat16* wo = nullptr;         // [hidden, Hq D]
  const __nv_bfloat16* mlp_norm = nullptr;   // [hidden]
  const __nv_bfloat16* wgate = nullptr;      // [mlp, hidden]
  const __nv_bfloat16* wup = nullptr;        // [mlp, hidden]
  const __nv_bfloat16* wdown = nullptr;      // [hidden, mlp]
};

struct LayerArgs {
  LayerMode mode = LayerMode::prefill;
  const __nv_bfloat16* x = nullptr;  // [B * S, hidden]
  __nv_bfloat16* y = nullptr;        // [B * S, hidden]
  LayerWeights w;
  LayerDims dims;
  __nv_bfloat16* k_cache = nullptr;  // [B, Hkv, L, D]
  __nv_bfloat16* v_cache = nullptr;  // [B, Hkv, L, D]
  const int* pos = nullptr;          // [B * S] positions; prefill may pass nullptr (see above)
  int B = 0, S = 1, L = 0;           // sequences, tokens per sequence (decode: 1), cache rows
  int kv_len = 0;                    // cache rows the attention reads; 0: prefill S, decode L
  // Every intermediate tensor and the families' workspaces. Caller-owned, 256-byte aligned, sized by
  // layer_workspace_bytes(); zero it once before its first use (the GEMMs' flags live at its start:
  // nothing else ever writes there, whatever the shape, and the kernels leave them ready; the
  // attention's flags, in a region of their own, are cleared by every launch), then reuse it for
  // any shape. Two launches in flight must not share it.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Every rung, in ladder order. The table is written once, in layer.cu.
const std::vector<Rung<LayerArgs>>& layer_rungs();

// The entry point: the best supported rung. Everything is checked before the first launch (null
// pointers, dimensions a family cannot take, kv_len outside [S, L], a too-small workspace,
// overlapping tensors): a refusal throws kl::BadArgument and launches nothing (a call that repeats
// the previous call's arguments on the same thread and device reuses that call's pick unchecked:
// the checks depend on the arguments alone). Never synchronizes.
// A decode call that repeats the previous call's arguments captures the layer as a CUDA graph once
// (rungs 01 to 03: host work and the driver's memory for the graph, once per argument set); otherwise
// nothing is allocated. A call can be captured in the caller's own CUDA graph (make one call first: the
// families' one-time set-up).
void layer(const LayerArgs& args, cudaStream_t stream);
const Rung<LayerArgs>* layer_pick(const LayerArgs& args, const DeviceInfo& d);

// "" or what is wrong with the arguments themselves (dimensions, kv_len, pointers, overlaps, and last
// the workspace size, the one check that queries the device), before any family is asked.
std::string layer_check_args(const LayerArgs& a, const DeviceInfo& d);
// The attention's key count: a.kv_len, or its default (prefill S, decode L).
int layer_kv_len(const LayerArgs& a);

// Workspace bytes for the shape (mode, B, S, L, kv_len, dims) on device d; pointers are not read. Needs
// the device (the GEMM family sizes its scratch from occupancy queries).
size_t layer_workspace_bytes(const LayerArgs& shape_only, const DeviceInfo& d);

// Counted FLOPs: the five GEMMs (2 per multiply-add) and the attention (4 D per visible query-key
// pair and query head). Minimum DRAM bytes: every weight once, x read and y written once, the
// positions, and the caches' rows [0, kv_len) once (the earlier rows read, the new rows written).
double layer_flops(const LayerArgs& a);
double layer_bytes(const LayerArgs& a);

// The rungs' own functions (defined one per file NN_*.cu; only layer.cu lists them).
namespace layer_detail {
#define KL_LAYER_RUNG(name)                                                       \
  std::string layer_##name##_supports(const LayerArgs& a, const DeviceInfo& d); \
  void layer_##name##_launch(const LayerArgs& a, cudaStream_t s);
KL_LAYER_RUNG(entry_points)
KL_LAYER_RUNG(graph)
KL_LAYER_RUNG(fused_gate_up)
KL_LAYER_RUNG(fused_residual)
#undef KL_LAYER_RUNG

// How many calls of a graph rung (01 graph, 02 fused_gate_up, 03 fused_residual) were a replay of a captured graph,
// in this process.
long long layer_graph_replays();

// One step of a layer launch: a name ("gemm qkv", "attention", ...) and its launches on a stream.
struct LayerStep {
  std::string name;
  std::function<void(cudaStream_t)> run;
};
// Rung 00's launch as its steps, in order (what layer_entry_points_launch runs); the bench times
// them one by one inside the sequence for the layer's per-step breakdown. Arguments as for the
// launch (checked by the caller).
std::vector<LayerStep> layer_entry_points_steps(const LayerArgs& a);
// Rung 02's launch as its steps (rung 00's with gate, up and SwiGLU as one kernel).
std::vector<LayerStep> layer_fused_gate_up_steps(const LayerArgs& a);
// Rung 03's launch as its steps (rung 02's with the down GEMM adding the residual).
std::vector<LayerStep> layer_fused_residual_steps(const LayerArgs& a);
}  // namespace layer_detail

}  // namespace kl
