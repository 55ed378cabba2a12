// include/kl/rope.h — rotary position embedding (Llama rotate-half RoPE): arguments, rung table,
// entry point, CPU reference.
//
// Input: the fused QKV projection's output, one bf16 row per token:
//   qkv [T, (Hq + 2 Hkv) * D] = Hq query heads, then Hkv key heads, then Hkv value heads, each D wide,
// positions pos [T] (int32, per token), theta (Llama-3: 500000), D in {64, 128}. T = B * S: token
// t = b * S + s is token s of sequence b. For a query or key head x of token t and a pair index
// i in [0, D/2):
//   inv_freq_i = theta^(-2i/D),  angle = pos[t] * inv_freq_i,
//   y[i]       = x[i] cos(angle) - x[i + D/2] sin(angle)
//   y[i + D/2] = x[i + D/2] cos(angle) + x[i] sin(angle)
// bf16 storage, fp32 math. Two output layouts (RopeLayout):
//   tokens     q_out [T, Hq, D], k_out [T, Hkv, D] (the input's token-major order); v is not read.
//   attention  the attention's layouts (kl/attention.h): q_out [B, Hq, S, D], and K and V written
//              into the caches k_cache, v_cache [B, Hkv, L, D] at row pos[t] of sequence b:
//              k_cache[b, h, pos[t], :] = rope(k of token t, head h), v_cache[b, h, pos[t], :] = v.
//              Prefill: B sequences of S tokens (S <= L); decode: S = 1, one token per sequence at
//              its own position pos[b]. A token whose position is outside [0, L) writes no cache row
//              (its q is still written); two tokens of one sequence must not share a position. The
//              other cache rows are left as they are.
// Angle accuracy: the frequencies are computed in double on the host and passed as a two-float
// (hi + lo) number of turns per position; a kernel forms the angle's fractional turn exactly enough
// that its error is below 2^-21 radians for every |pos| <= 2^24 (docs/rope.md), so the output error
// is one bf16 rounding plus ~1e-6 |x|, at position 0 as at position 2^24. Positions beyond 2^24
// are rounded to a float first.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kl/device.h"
#include "kl/registry.h"

namespace kl {

enum class RopeLayout { tokens, attention };

struct RopeArgs {
  const void* qkv = nullptr;  // [T, (Hq + 2 Hkv) * D] bf16, T = B * S
  const int* pos = nullptr;   // [T] int32 position of each token
  int B = 0, S = 0;           // sequences and tokens per sequence (tokens layout: any B * S = T)
  int Hq = 0, Hkv = 0, D = 0;
  float theta = 500000.f;
  RopeLayout layout = RopeLayout::tokens;
  void* q_out = nullptr;    // tokens: [T, Hq, D]; attention: [B, Hq, S, D]
  void* k_out = nullptr;    // tokens: [T, Hkv, D]; unused in the attention layout
  void* k_cache = nullptr;  // attention: [B, Hkv, L, D]; unused in the tokens layout
  void* v_cache = nullptr;  // attention: [B, Hkv, L, D]; unused in the tokens layout
  int L = 0;                // cache rows per (sequence, KV head); attention layout only
};

// Every rung, in ladder order. The table is written once, in rope.cu.
const std::vector<Rung<RopeArgs>>& rope_rungs();

// The entry point: the highest-numbered supported rung for the arguments. Every valid shape, either
// layout and any alignment is computed (rung 00 takes everything); bad arguments throw
// kl::BadArgument before any launch.
void rope(const RopeArgs& args, cudaStream_t stream);
const Rung<RopeArgs>* rope_pick(const RopeArgs& args, const DeviceInfo& d);

// Checks shared by every rung's supports(): "" or what is wrong with the arguments themselves.
std::string rope_check_args(const RopeArgs& a);

// CPU double reference for tokens [t0, t1) on the (already bf16-rounded) inputs, as floats: qkv as
// above, q [T, Hq, D] and k [T, Hkv, D] written in the tokens layout (whole-tensor pointers).
// inv_freq and the angle in double, from the float theta the kernels get.
void rope_reference(const float* qkv, const int* pos, long long t0, long long t1, int Hq, int Hkv,
                    int D, float theta, double* q, double* k);

// Minimum DRAM bytes of one launch: read the q and k heads (and v in the attention layout) and the
// positions, write the same heads. FLOPs: 6 per rotated pair (4 multiplies, 2 adds); the angle and
// its sine and cosine are not counted.
double rope_bytes(const RopeArgs& a);
double rope_flops(const RopeArgs& a);

// The rungs' own functions (defined one per file NN_*.cu; only rope.cu lists them).
namespace rope_detail {
#define KL_ROPE_RUNG(name)                                                    \
  std::string rope_##name##_supports(const RopeArgs& a, const DeviceInfo& d); \
  void rope_##name##_launch(const RopeArgs& a, cudaStream_t s);
KL_ROPE_RUNG(naive)
KL_ROPE_RUNG(vec128)
KL_ROPE_RUNG(kv_cache)
KL_ROPE_RUNG(pdl)
#undef KL_ROPE_RUNG
}  // namespace rope_detail

}  // namespace kl
