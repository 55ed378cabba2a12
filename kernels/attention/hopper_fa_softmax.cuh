// kernels/attention/hopper_fa_softmax.cuh — the online softmax of the sm_90a attention kernel
// (hopper_fa.cuh): the per-row state one consumer thread carries through an item's KV tiles and
// the steps that turn an S tile into P in place.
//
// Layout (the wgmma m64nBN accumulator): a thread holds rows h = 0 (lane/4) and h = 1 (lane/4 + 8)
// of its warp's 16; element s[4j + 2h + e] is column 8j + 2(lane%4) + e.
#pragma once
#include <cuda_runtime.h>

#include <cmath>

#include "common/softmax_online.cuh"

namespace kl {
namespace hattn {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));  // ex2(-inf) = +0
  return y;
}

// Lazy-rescale threshold (log2 units): P stays <= 2^8 between max updates.
constexpr float kRescaleLog2 = 8.f;

// The softmax steps for BN-key tiles and a D-column O accumulator. The state is the caller's (the
// kernel keeps it in plain local arrays, where ptxas allocates it as the steps expect): per row h,
// m[h] the running max (raw score units, starts at -inf), l[h] the per-thread partial row sum
// (starts at 0, quad-reduced once by finalize), alpha[h] how much O and l shrank at the last step.
template <int BN, int D>
struct OnlineSoftmax {

  // One S tile, in place (S becomes P in fp32): mask (when do_mask), row max, lazy max update,
  // exp2, row sums.
  static __device__ __forceinline__ void step(float (&s)[BN / 2], float (&m)[2], float (&l)[2],
                                              float (&alpha)[2], bool do_mask, int kv0,
                                              const int (&lim)[2], int Skv, float sl, int lane) {
    if (do_mask) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = kv0 + 8 * j + 2 * (lane & 3) + (e & 1);
          // keys past the end (TMA zero-filled) and, with causal, keys after the row's diagonal
          if (col > lim[e >> 1] || col >= Skv) s[4 * j + e] = -INFINITY;
        }
    }
    // Row max and row sum as 4 independent partial chains per row (j % 2, e & 1): a single chain
    // of BN/4 dependent FMNMX / FADD is ~4 cycles each of pure latency on the softmax's critical
    // path (ncu attributes a large share of the consumer stalls to fixed-latency dependencies).
    float mx4[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < 4; ++k) mx4[h][k] = m[h];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        mx4[e >> 1][2 * (j & 1) + (e & 1)] =
            fmaxf(mx4[e >> 1][2 * (j & 1) + (e & 1)], s[4 * j + e]);
    float mx[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      mx[h] = fmaxf(fmaxf(mx4[h][0], mx4[h][1]), fmaxf(mx4[h][2], mx4[h][3]));
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // the 4 lanes of a quad share a row
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    }
    float base[2], sum4[2][4] = {};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Lazy rescale (FlashAttention-4's trick): the running max moves only when the tile's max
      // exceeds it by more than 2^kRescaleLog2 in exp2 units. Otherwise the stale max stays the
      // reference, P is up to 2^8 (exact in fp32 sums, bf16 keeps its relative precision), alpha
      // is exactly 1 and rescale_o skips the D/2 multiplies. O / l at the end is the same quotient.
      // m = -inf: the difference is +inf (grow, alpha = exp2(-inf) = 0) or NaN when the tile is
      // masked too (no grow: max stays -inf, base 0, P = 0).
      const float ms_run = m[h] * sl;
      const bool grow = mx[h] * sl - ms_run > kRescaleLog2;
      if (grow) m[h] = mx[h];
      // A row with every key masked so far keeps max -inf: use 0 so exp2 gives 0, not NaN.
      base[h] = (m[h] == -INFINITY) ? 0.f : m[h] * sl;
      alpha[h] = grow ? fast_exp2(ms_run - base[h]) : 1.f;
    }
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float p = fast_exp2(fmaf(s[4 * j + e], sl, -base[e >> 1]));
        s[4 * j + e] = p;
        sum4[e >> 1][2 * (j & 1) + (e & 1)] += p;
      }
    float sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) sum[h] = (sum4[h][0] + sum4[h][1]) + (sum4[h][2] + sum4[h][3]);
    l[0] = l[0] * alpha[0] + sum[0];
    l[1] = l[1] * alpha[1] + sum[1];
  }

  // Stale-max fast path (tiles without a mask, after the item's first tile): P = exp2(s*sl - m*sl)
  // with the running max as it stands, no row max at all (the 64 FMNMX + 4 SHFL of a 128-key tile
  // per thread), if every row sum of the warp stays <= kStaleSumMax (common/softmax_online.cuh).
  // True (warp-uniform): s holds P, l has the sums, O needs no rescale. False: s is garbage (some P
  // may be inf; m = -inf also lands here: x = +inf) and the caller recomputes S and runs step(),
  // whose lazy rule then moves the max (a P > 2^11 means the tile's max exceeds m by more than
  // kRescaleLog2).
  static __device__ __forceinline__ bool stale_step(float (&s)[BN / 2], const float (&m)[2],
                                                    float (&l)[2], float sl) {
    const float base[2] = {m[0] * sl, m[1] * sl};
    float sum4[2][4] = {};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = fast_exp2(fmaf(s[4 * j + e], sl, -base[e >> 1]));
        s[4 * j + e] = p;
        sum4[e >> 1][2 * (j & 1) + (e & 1)] += p;
      }
    float sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) sum[h] = (sum4[h][0] + sum4[h][1]) + (sum4[h][2] + sum4[h][3]);
    if (!__all_sync(0xffffffffu, sum[0] <= kStaleSumMax && sum[1] <= kStaleSumMax))
      return false;  // NaN: false
    l[0] += sum[0];
    l[1] += sum[1];
    return true;
  }

  // O *= alpha per row, skipped (warp-uniformly) when no row of the warp moved its max: with the
  // lazy rescale that is most KV tiles after the first, and these D/2 multiplies sit between the
  // retirement of P V and the next wgmma issue.
  static __device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&alpha)[2]) {
    if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[4 * j + e] *= alpha[e >> 1];
  }

  // The item's full row sums: the 4 lanes of a quad share a row.
  static __device__ __forceinline__ void finalize(float (&l)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
  }
};

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace hattn
}  // namespace kl
