// kernels/attention/combine.cuh — merge split-KV partials: O = sum_s w_s O_s / sum_s w_s with
// w_s = exp2(lse2_s - max_s lse2_s). Partials are laid out [tile][split][rows][D] (fp32, each
// normalized by its own softmax sum) and lse2 as [tile][split][rows]; a Map says where row `r` of
// tile `tl` goes in O (or nullptr for a padding row). Splits are summed in index order, so the
// result is the same bits on every run. A piece that saw no key has lse2 = -inf and weight 0.
#pragma once
#include <cuda_bf16.h>

#include "common/softmax_online.cuh"

namespace kl {
namespace flash {

// One warp per (tile, row); lane holds D/32 consecutive columns.
template <int D, class Map>
__global__ void __launch_bounds__(128) combine_kernel(const float* __restrict__ ws_o,
                                                      const float* __restrict__ ws_lse, int rows,
                                                      int splits, long long total_rows, Map map) {
  constexpr int E = D / 32;
  const long long w = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= total_rows) return;
  const int tl = static_cast<int>(w / rows), r = static_cast<int>(w % rows);
  __nv_bfloat16* out = map(tl, r);
  if (!out) return;
  const float* lse = ws_lse + static_cast<long long>(tl) * splits * rows + r;
  float mx = neg_inf_f();
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, lse[static_cast<long long>(s) * rows]);
  const float mref = mx == neg_inf_f() ? 0.f : mx;
  float acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = 0.f;
  float wsum = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float wt = exp2f(lse[static_cast<long long>(s) * rows] - mref);
    wsum += wt;
    const float* src = ws_o + ((static_cast<long long>(tl) * splits + s) * rows + r) * D + lane * E;
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

}  // namespace flash
}  // namespace kl
