// kernels/common/softmax_online.cuh — online-softmax row state for attention kernels (mma.sync and
// wgmma rungs alike), in exp2 form.
//
// Convention: scores s are kept raw (Q.K in fp32); `sl2` = scale * log2(e) is folded into the
// exponent so each probability is ONE ffma + ex2: p = exp2(s * sl2 - m * sl2). A row's running
// state is its max m (raw units, -inf before any unmasked key) and its sum l of p (partial per
// thread is fine: every thread of a row applies the same rescale factor, reduce at the end).
// A row that has seen only masked keys keeps m = -inf; online_row_offset() then returns 0 so the
// exponent of a masked (-inf) score stays -inf and p = 0 instead of NaN (-inf - -inf).
//
// The log-sum-exp of a finished row in base 2 is lse2 = m * sl2 + log2(l); split-KV partials are
// merged by weights exp2(lse2_i - max lse2) (attention_combine in kernels/attention).
#pragma once
#include <cuda_runtime.h>

namespace kl {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float neg_inf_f() { return -__int_as_float(0x7f800000); }

// m_new * sl2, or 0 when the row has seen no unmasked key yet (keeps exp2 arguments -inf, not NaN).
__device__ __forceinline__ float online_row_offset(float m_new, float sl2) {
  return m_new == neg_inf_f() ? 0.f : m_new * sl2;
}
// Factor that rescales the running sum and output when the max moves from m_old to m_new
// (offset = online_row_offset(m_new, sl2)). m_old = -inf gives exp2(-inf) = 0.
__device__ __forceinline__ float online_rescale(float m_old, float offset, float sl2) {
  return exp2f(fmaf(m_old, sl2, -offset));
}
// One probability: exp2(s * sl2 - offset); s = -inf (masked) gives 0.
__device__ __forceinline__ float online_prob(float s, float offset, float sl2) {
  return exp2f(fmaf(s, sl2, -offset));
}

// Stale-max fast path (attention rungs 02/03 and the Hopper rungs): after a row's first tile, an
// unmasked tile may skip its row max and take P = exp2(s * sl2 - m * sl2) with the max m as it
// stands, if no P grew past this bound; each thread checks its row sums against it (P >= 0, so
// every P is below its row sum) and the warp votes. 2^16 keeps P V and l far inside fp32 (and bf16)
// range; a tile that fails is recomputed and goes through the max-based online softmax.
constexpr float kStaleSumMax = 65536.f;

// The 4 lanes of an mma.sync quad (lane % 4 = 0..3) share rows of the C fragment: reduce over them.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Base-2 log-sum-exp of a finished row: -inf when the row saw nothing (l == 0).
__device__ __forceinline__ float row_lse2(float m, float l, float sl2) {
  return l > 0.f ? fmaf(m, sl2, log2f(l)) : neg_inf_f();
}

}  // namespace kl
