// 00 naive — one thread per output element, its own sine and cosine, scalar bf16 loads.
//
// Parent: none (the baseline of the ladder).
// Change: the direct kernel: output element d of head h of token t reads x[i] and x[i + D/2]
//   (i = d mod D/2), computes the angle of (pos[t], i) and writes one bf16. Both layouts: in the
//   attention layout the v heads are copied into the cache too, and a position outside [0, L)
//   writes no cache element.
// Why: the reference point, and the entry point's fallback for any alignment.
// Limits: every pair's sine and cosine are computed twice (once per output of the pair) and once
//   more per head of the token; each warp instruction moves 64 bytes; a 64-bit division per thread.
#include "kernels/rope/rope_impl.cuh"

namespace kl::rope_detail {
namespace {

__global__ void __launch_bounds__(kThreads)
    rope_naive_kernel(const RopeParams p, bool attention, long long n, int width) {
  const long long e = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const long long t = e / width;
  const int col = static_cast<int>(e - t * width);
  const int head = col / p.D, d = col - head * p.D, half = p.D / 2;
  const int pos = p.pos[t];
  const bf16* x = p.qkv + t * p.row + static_cast<long long>(head) * p.D;
  bf16* dst = attention ? attention_row(p, t, head, pos) : tokens_row(p, t, head);
  if (!dst) return;  // no cache row for this position
  if (head >= p.Hq + p.Hkv) {  // v (attention layout): a copy (bf16 -> float -> bf16 is exact)
    dst[d] = x[d];
    return;
  }
  const int i = d < half ? d : d - half;
  float s, c;
  rope_sincos(pos, p.f.turns[i], &s, &c);
  const float a = __bfloat162float(x[i]), b = __bfloat162float(x[i + half]);
  dst[d] = __float2bfloat16_rn(d < half ? a * c - b * s : b * c + a * s);
}

}  // namespace

std::string rope_naive_supports(const RopeArgs& a, const DeviceInfo&) { return rope_check_args(a); }

void rope_naive_launch(const RopeArgs& a, cudaStream_t s) {
  const long long T = rope_tokens(a);
  if (T == 0) return;
  const bool att = a.layout == RopeLayout::attention;
  const int width = (a.Hq + a.Hkv + (att ? a.Hkv : 0)) * a.D;  // output elements per token
  const long long n = T * width;
  const long long blocks = (n + kThreads - 1) / kThreads;  // <= 2^30: n <= 2^38
  rope_naive_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(rope_params(a), att, n, width);
  KL_CHECK_LAUNCH();
}

}  // namespace kl::rope_detail
