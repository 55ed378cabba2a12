// 02 kv_cache — rung 01 writing the attention's layouts: q in [B, Hq, S, D], K and V into the cache.
//
// Parent: 01 vec128.
// Change: the same thread per 8 pairs, over the v heads too: token t = b * S + s writes its q head
//   h to q_out[b, h, s, :], its rotated k head to k_cache[b, h, pos[t], :] and copies its v head to
//   v_cache[b, h, pos[t], :] (attention layout only; a position outside [0, L) writes no cache row).
// Why: the attention reads [B, H, S, D] and a KV cache; doing the layout change and the cache
//   append in the RoPE pass saves a second pass over q, k and v (a transpose and a cache copy).
// Limits: needs 16-byte-aligned qkv, q_out, k_cache, v_cache; the angles are recomputed for every
//   q and k head as in rung 01; a warp's stores go to as many separate rows as the heads it covers
//   (4 for D = 128, 8 for D = 64), a whole row each.
#include "common/pdl.cuh"
#include "kernels/rope/rope_impl.cuh"

namespace kl::rope_detail {
namespace {

template <class Index>
__global__ void __launch_bounds__(kThreads) rope_kv_cache_kernel(const RopeParams p, Index n, bool pdl) {
  if (pdl) {  // rung 03: the next grid may start now; qkv and pos are read after their producer ends
    pdl_trigger();
    pdl_wait();
  }
  const Index u = static_cast<Index>(blockIdx.x) * kThreads + threadIdx.x;
  if (u >= n) return;
  const PairBlock w = pair_block(u, p.Hq + 2 * p.Hkv, p.D);
  const int half = p.D / 2, pos = p.pos[w.t];
  bf16* dst = attention_row(p, w.t, w.head, pos);
  if (!dst) return;  // no cache row for this position
  const bf16* x = p.qkv + w.t * p.row + static_cast<long long>(w.head) * p.D;
  uint4 a = ld16(x + w.i0), b = ld16(x + half + w.i0);
  if (w.head < p.Hq + p.Hkv) rotate8(p, pos, w.i0, a, b);  // v heads: copied as loaded
  st16(dst + w.i0, a);
  st16(dst + half + w.i0, b);
}

}  // namespace

std::string rope_kv_cache_supports(const RopeArgs& a, const DeviceInfo&) {
  std::string why = rope_check_args(a);
  if (!why.empty()) return why;
  if (a.layout != RopeLayout::attention) return "attention layout only (the tokens layout is rung 01's)";
  if (rope_tokens(a) == 0) return "";
  return rope_vector_alignment(a);
}

void rope_kv_cache_run(const RopeArgs& a, cudaStream_t s, bool pdl) {
  const long long T = rope_tokens(a);
  if (T == 0) return;
  const long long n = T * (a.Hq + 2LL * a.Hkv) * (a.D / 16);
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads)), block(kThreads);
  if (n <= (1LL << 32) - kThreads)  // every thread index of the grid fits in 32 bits
    pdl_launch(rope_kv_cache_kernel<unsigned>, grid, block, 0, s, pdl, rope_params(a), static_cast<unsigned>(n), pdl);
  else
    pdl_launch(rope_kv_cache_kernel<unsigned long long>, grid, block, 0, s, pdl, rope_params(a),
               static_cast<unsigned long long>(n), pdl);
}

void rope_kv_cache_launch(const RopeArgs& a, cudaStream_t s) { rope_kv_cache_run(a, s, false); }

}  // namespace kl::rope_detail
