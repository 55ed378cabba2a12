// 02 kv_cache — rung 01 writing the attention's layouts: q in [B, Hq, S, D], K and V into the cache.
//
// Parent: 01 vec128.
// Change: the same thread per 8 pairs, over the v heads too: token t = b * S + s writes its q head
//   h to q_out[b, h, s, :], its rotated k head to k_cache[b, h, pos[t], :] and copies its v head to
//   v_cache[b, h, pos[t], :] (attention layout only; a position outside [0, L) writes no cache row).
// Why: the attention reads [B, H, S, D] and a KV cache; doing the layout change and the cache
//   append in the RoPE pass saves a second pass over q, k and v (a transpose and a cache copy).
// Limits: needs 16-byte-aligned qkv, q_out, k_cache, v_cache; the angles are recomputed for every
//   q and k head as in rung 01; q and the cache rows are written 256 or 128 bytes per head row, so a
//   warp's stores cover 2-4 separate rows.
#include "kernels/rope/rope_impl.cuh"

namespace kl::rope_detail {
namespace {

template <class Index>
__global__ void __launch_bounds__(kThreads) rope_kv_cache_kernel(const RopeParams p, Index n) {
  const Index u = static_cast<Index>(blockIdx.x) * kThreads + threadIdx.x;
  if (u >= n) return;
  const int per_head = p.D / 16, half = p.D / 2;
  const Index per_token = static_cast<Index>(p.Hq + 2 * p.Hkv) * per_head;
  const Index t = u / per_token;
  const int r = static_cast<int>(u - t * per_token);
  const int head = r / per_head, i0 = (r - head * per_head) * 8;
  const long long tl = static_cast<long long>(t), b = tl / p.S, s = tl - b * p.S;
  const int pos = p.pos[tl];
  bf16* dst;
  if (head < p.Hq) {
    dst = p.q_out + ((b * p.Hq + head) * p.S + s) * p.D;
  } else {
    if (pos < 0 || pos >= p.L) return;  // no cache row for this position
    const bool is_k = head < p.Hq + p.Hkv;
    const int h = head - p.Hq - (is_k ? 0 : p.Hkv);
    dst = (is_k ? p.k_cache : p.v_cache) + ((b * p.Hkv + h) * p.L + pos) * p.D;
  }
  const bf16* x = p.qkv + tl * p.row + static_cast<long long>(head) * p.D;
  uint4 va = ld16(x + i0), vb = ld16(x + half + i0);
  if (head < p.Hq + p.Hkv) rotate8(p, pos, i0, va, vb);  // v heads: copied as loaded
  st16(dst + i0, va);
  st16(dst + half + i0, vb);
}

}  // namespace

std::string rope_kv_cache_supports(const RopeArgs& a, const DeviceInfo&) {
  std::string why = rope_check_args(a);
  if (!why.empty()) return why;
  if (a.layout != RopeLayout::attention) return "attention layout only (the tokens layout is rung 01's)";
  if (rope_tokens(a) == 0) return "";
  return rope_vector_alignment(a);
}

void rope_kv_cache_launch(const RopeArgs& a, cudaStream_t s) {
  const long long T = rope_tokens(a);
  if (T == 0) return;
  const long long n = T * (a.Hq + 2LL * a.Hkv) * (a.D / 16);
  const long long blocks = (n + kThreads - 1) / kThreads;
  if (n <= (1LL << 32) - kThreads)  // every thread index of the grid fits in 32 bits
    rope_kv_cache_kernel<unsigned><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
        rope_params(a), static_cast<unsigned>(n));
  else
    rope_kv_cache_kernel<unsigned long long><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
        rope_params(a), static_cast<unsigned long long>(n));
  KL_CHECK_LAUNCH();
}

}  // namespace kl::rope_detail
