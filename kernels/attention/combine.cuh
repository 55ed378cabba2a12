// kernels/attention/combine.cuh — merge split-KV partials: O = sum_s w_s O_s / sum_s w_s with
// w_s = exp2(lse2_s - max_s lse2_s). Partials are laid out [tile][split][rows][D] (fp32, each
// normalized by its own softmax sum) and lse2 as [tile][split][rows]; a Map says where row `r` of
// tile `tl` goes in O (or nullptr for a padding row). Splits are summed in index order, so the
// result is the same bits on every run. A piece that saw no key has lse2 = -inf and weight 0.
#pragma once
#include <cuda_bf16.h>

#include "kl/check.h"
#include "common/pdl.cuh"
#include "common/softmax_online.cuh"

namespace kl {
namespace flash {

// The combine kernel waits for the split kernel's completion and memory (pdl_wait, common/pdl.cuh)
// before it reads a partial, so it is launched programmatic-dependent: a split kernel that triggers
// early (pdl_trigger) lets it queue behind its last blocks, hiding the second launch's latency, a
// visible share of a few-microsecond step. The launcher only sets the attribute on cc >= 9.0.

// One warp per (tile, row); lane holds D/32 consecutive columns. splits <= 64: the split LSEs are
// loaded by the lanes in parallel (two per lane) and reduced with shuffles, and the partial rows
// are read 4 splits at a time, so the kernel is a couple of dependent memory round trips, not
// 2 x splits of them (it sits on the critical path of every split decode step).
template <int D, class Map>
__global__ void __launch_bounds__(128) combine_kernel(const float* __restrict__ ws_o,
                                                      const float* __restrict__ ws_lse, int rows,
                                                      int splits, long long total_rows, Map map) {
  constexpr int E = D / 32;
  pdl_wait();  // the partials are written by the kernel launched just before this one
  const long long w = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= total_rows) return;
  const int tl = static_cast<int>(w / rows), r = static_cast<int>(w % rows);
  __nv_bfloat16* out = map(tl, r);
  if (!out) return;  // warp-uniform: every lane has the same (tl, r)
  const float* lse = ws_lse + static_cast<long long>(tl) * splits * rows + r;
  const float l0 = lane < splits ? lse[static_cast<long long>(lane) * rows] : neg_inf_f();
  const float l1 = lane + 32 < splits ? lse[static_cast<long long>(lane + 32) * rows] : neg_inf_f();
  float mx = fmaxf(l0, l1);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  const float mref = mx == neg_inf_f() ? 0.f : mx;
  const float w0 = exp2f(l0 - mref), w1 = exp2f(l1 - mref);  // -inf (empty piece, or none) -> 0
  float wsum = w0 + w1;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) wsum += __shfl_xor_sync(0xffffffffu, wsum, o);
  float acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = 0.f;
  const float* src0 = ws_o + (static_cast<long long>(tl) * splits * rows + r) * D + lane * E;
#pragma unroll 4
  for (int s = 0; s < splits; ++s) {  // index order: the same bits on every run
    const float wt = __shfl_sync(0xffffffffu, s < 32 ? w0 : w1, s & 31);
    const float* src = src0 + static_cast<long long>(s) * rows * D;
#pragma unroll
    for (int e = 0; e < E; e += 2) {
      const float2 v = *reinterpret_cast<const float2*>(src + e);
      acc[e] = fmaf(wt, v.x, acc[e]);
      acc[e + 1] = fmaf(wt, v.y, acc[e + 1]);
    }
  }
  const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
#pragma unroll
  for (int e = 0; e < E; e += 2)
    *reinterpret_cast<__nv_bfloat162*>(out + lane * E + e) =
        __floats2bfloat162_rn(acc[e] * inv, acc[e + 1] * inv);
}

// Launches combine_kernel after the split kernel on the same stream, as a programmatic dependent
// launch on cc >= 9.0.
template <int D, class Map>
void launch_combine(const float* ws_o, const float* ws_lse, int rows, int splits, long long total_rows,
                    Map map, bool pdl, cudaStream_t st) {
  KL_REQUIRE(splits >= 1 && splits <= 64, "combine: " << splits << " splits (at most 64)");
  pdl_launch(combine_kernel<D, Map>, dim3(static_cast<unsigned>((total_rows + 3) / 4)), dim3(128), 0,
             st, pdl, ws_o, ws_lse, rows, splits, total_rows, map);
}

}  // namespace flash
}  // namespace kl
