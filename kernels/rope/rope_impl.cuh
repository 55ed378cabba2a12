// kernels/rope/rope_impl.cuh — device code shared by the RoPE rungs (family-private).
//
// RopeParams:     the kernels' one parameter block (pointers, sizes, the frequency table).
// rope_sincos():  sin and cos of the angle of (position, pair i), from rope_angle.h's turn.
// rotate8():      8 pairs of one head: x[i..i+8) and x[i+D/2..i+D/2+8) as two 16-byte vectors in,
//                 the rotated vectors out.
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

}  // namespace kl::rope_detail
