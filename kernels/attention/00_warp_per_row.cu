// 00 warp_per_row — a warp per query row, online softmax key by key.
//
// Parent: none (the baseline of the ladder).
// Change: the naive fused kernel. Warp w owns query row (b, hq, i); each lane holds D/32
//   consecutive elements of q and of the fp32 output accumulator. For every visible key j the warp
//   computes q.k_j (per-lane partial dot product + a 5-step xor-shuffle all-reduce), updates the
//   running max / sum (online softmax: the score row is never stored) and accumulates v_j.
// Why: the correctness baseline every later rung is checked against.
// Limits: nothing is shared between rows (every query head reads its whole KV head from L2/DRAM);
//   one dot product per 5 shuffles and a dependent exp2 per key; no tensor cores, no shared memory.
#include <cuda_bf16.h>

#include "attention/attention_internal.h"
#include "common/softmax_online.cuh"

namespace kl {
namespace {

template <int D>
__global__ void __launch_bounds__(128) attention_warp_per_row_kernel(AttentionArgs a, float sl2) {
  constexpr int E = D / 32;  // elements per lane: 2 (D=64) or 4 (D=128), contiguous
  static_assert(D % 64 == 0 && E % 2 == 0, "D must be 64 or 128");
  const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const long long rows = static_cast<long long>(a.B) * a.Hq * a.Sq;
  if (row >= rows) return;  // whole warps exit together (row is warp-uniform)
  const int i = static_cast<int>(row % a.Sq);
  const long long bh = row / a.Sq;  // b * Hq + hq
  const int hq = static_cast<int>(bh % a.Hq);
  const int b = static_cast<int>(bh / a.Hq);
  const int hkv = hq / (a.Hq / a.Hkv);  // GQA: query heads [hkv*G, hkv*G+G) share KV head hkv

  float q[E], acc[E];
  const __nv_bfloat16* qp = a.Q + row * D + lane * E;
#pragma unroll
  for (int e = 0; e < E; e += 2) {
    float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(qp + e));
    q[e] = f.x;
    q[e + 1] = f.y;
    acc[e] = acc[e + 1] = 0.f;
  }
  const long long kv_base = (static_cast<long long>(b) * a.Hkv + hkv) * a.Skv * D + lane * E;
  const __nv_bfloat16* kp = a.K + kv_base;
  const __nv_bfloat16* vp = a.V + kv_base;
  // Causal with the diagonal at the end: row i sees keys j <= i + (Skv - Sq).
  const int visible = a.causal ? i + (a.Skv - a.Sq) + 1 : a.Skv;

  float m = neg_inf_f(), l = 0.f;
  for (int j = 0; j < visible; ++j) {
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < E; e += 2) {
      float2 k = __bfloat1622float2(
          *reinterpret_cast<const __nv_bfloat162*>(kp + static_cast<long long>(j) * D + e));
      s = fmaf(q[e], k.x, s);
      s = fmaf(q[e + 1], k.y, s);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);  // full dot product
    const float m_new = fmaxf(m, s);
    const float off = online_row_offset(m_new, sl2);
    const float alpha = online_rescale(m, off, sl2);  // 0 on the first key (m = -inf)
    const float p = online_prob(s, off, sl2);
    l = fmaf(l, alpha, p);
#pragma unroll
    for (int e = 0; e < E; e += 2) {
      float2 v = __bfloat1622float2(
          *reinterpret_cast<const __nv_bfloat162*>(vp + static_cast<long long>(j) * D + e));
      acc[e] = fmaf(acc[e], alpha, p * v.x);
      acc[e + 1] = fmaf(acc[e + 1], alpha, p * v.y);
    }
    m = m_new;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat16* op = a.O + row * D + lane * E;
#pragma unroll
  for (int e = 0; e < E; e += 2)
    *reinterpret_cast<__nv_bfloat162*>(op + e) = __floats2bfloat162_rn(acc[e] * inv, acc[e + 1] * inv);
}

}  // namespace

std::string attention_warp_per_row_supports(const AttentionArgs& a, const DeviceInfo& d) {
  return attention_args_supports(a, d);
}

void attention_warp_per_row_launch(const AttentionArgs& a, cudaStream_t s) {
  const long long rows = static_cast<long long>(a.B) * a.Hq * a.Sq;
  const unsigned grid = static_cast<unsigned>((rows + 3) / 4);  // 4 warps (rows) per block
  const float sl2 = attention_scale_log2(a);
  if (a.D == 64) attention_warp_per_row_kernel<64><<<grid, 128, 0, s>>>(a, sl2);
  else attention_warp_per_row_kernel<128><<<grid, 128, 0, s>>>(a, sl2);
  KL_CHECK_LAUNCH();
}

}  // namespace kl
