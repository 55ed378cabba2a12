// kernels/rope/rope_impl.cuh — device code shared by the RoPE rungs (family-private).
//
// RopeParams:     the kernels' one parameter block (pointers, sizes, the frequency table).
// rope_sincos():  sin and cos of the angle of (position, pair i), from rope_angle.h's turn.
// rotate8():      8 pairs of one head: x[i..i+8) and x[i+D/2..i+D/2+8) as two 16-byte vectors in,
//                 the rotated vectors out.
// tokens_row(), attention_row(): where an output head row goes in each layout.
// pair_block():   thread u of a grid of one thread per 8 pairs of each head: token, head, first pair.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/vec.cuh"
#include "kernels/rope/rope_angle.h"
#include "kl/rope.h"

namespace kl::rope_detail {

constexpr int kThreads = 256;  // threads per block for every rung
using bf16 = __nv_bfloat16;
using E = Elem<DType::bf16>;

struct RopeParams {
  const bf16* qkv;
  const int* pos;
  bf16* q_out;
  bf16* k_out;    // tokens layout
  bf16* k_cache;  // attention layout
  bf16* v_cache;
  int S, Hq, Hkv, D, L;
  int row;  // (Hq + 2 Hkv) * D: elements per qkv row
  RopeFreqs f;
};

// The parameter block of `a` (the frequency table is cached per thread for the last (theta, D)).
RopeParams rope_params(const RopeArgs& a);

// Rung 02's launch, programmatic-dependent when `pdl` (rung 03).
void rope_kv_cache_run(const RopeArgs& a, cudaStream_t s, bool pdl);
// Tokens T = B * S.
inline long long rope_tokens(const RopeArgs& a) { return static_cast<long long>(a.B) * a.S; }
// "" when every tensor of `a`'s layout is 16-byte aligned (the vector rungs' condition).
std::string rope_vector_alignment(const RopeArgs& a);

__device__ __forceinline__ void rope_sincos(int pos, float2 f, float* s, float* c) {
  sincospif(2.f * rope_turn(pos, f), s, c);
}

// Pairs [i0, i0 + 8) of one head at position `pos`: a = x[i0..i0+8), b = x[D/2+i0..D/2+i0+8).
__device__ __forceinline__ void rotate8(const RopeParams& p, int pos, int i0, uint4& a, uint4& b) {
  float xa[8], xb[8], ya[8], yb[8];
  E::unpack(a, xa);
  E::unpack(b, xb);
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    float s, c;
    rope_sincos(pos, p.f.turns[i0 + k], &s, &c);
    ya[k] = xa[k] * c - xb[k] * s;
    yb[k] = xb[k] * c + xa[k] * s;
  }
  a = E::pack(ya);
  b = E::pack(yb);
}

// Heads are numbered as in a qkv row: q heads [0, Hq), k heads [Hq, Hq + Hkv), v heads after.
// Tokens layout: q_out [T, Hq, D] or k_out [T, Hkv, D] (a v head has no output row there).
__device__ __forceinline__ bf16* tokens_row(const RopeParams& p, long long t, int head) {
  return head < p.Hq ? p.q_out + (t * p.Hq + head) * p.D : p.k_out + (t * p.Hkv + (head - p.Hq)) * p.D;
}

// Attention layout: q_out [B, Hq, S, D]; k_cache, v_cache [B, Hkv, L, D] at row `pos`; nullptr for
// a k or v head whose position is outside [0, L) (no cache row).
__device__ __forceinline__ bf16* attention_row(const RopeParams& p, long long t, int head, int pos) {
  const long long b = t / p.S;
  if (head < p.Hq) return p.q_out + ((b * p.Hq + head) * p.S + (t - b * p.S)) * p.D;
  if (pos < 0 || pos >= p.L) return nullptr;
  const bool is_k = head < p.Hq + p.Hkv;
  const int h = head - p.Hq - (is_k ? 0 : p.Hkv);
  return (is_k ? p.k_cache : p.v_cache) + ((b * p.Hkv + h) * p.L + pos) * p.D;
}

struct PairBlock {
  long long t;  // token
  int head;     // head (numbered as above)
  int i0;       // first of its 8 pairs
};
// Thread u of a grid of D/16 threads per head and `heads` heads per token. Index: unsigned where
// every thread index of the grid fits in 32 bits (a 32-bit division), else unsigned long long.
template <class Index>
__device__ __forceinline__ PairBlock pair_block(Index u, int heads, int D) {
  const int per_head = D / 16;
  const Index per_token = static_cast<Index>(heads) * per_head;
  const Index t = u / per_token;
  const int r = static_cast<int>(u - t * per_token);
  const int head = r / per_head;
  return {static_cast<long long>(t), head, (r - head * per_head) * 8};
}

}  // namespace kl::rope_detail
