// kernels/rope/rope.cu — THE table of RoPE rungs (number, name, the one change), the entry point,
// the argument checks and the parameter block. Rung code lives in NN_*.cu, the CPU reference in
// reference.cpp.
#include <cmath>
#include <cstdint>

#include "kernels/rope/rope_impl.cuh"
#include "kl/rope.h"

namespace kl {

const std::vector<Rung<RopeArgs>>& rope_rungs() {
  using namespace rope_detail;
  static const std::vector<Rung<RopeArgs>> table = {
      {0, "naive", "one thread per output element, its own sin/cos, scalar loads", rope_naive_supports,
       rope_naive_launch},
      {1, "vec128", "one thread per 8 pairs of a head: two 16-byte loads and stores", rope_vec128_supports,
       rope_vec128_launch, /*parent=*/0},
      {2, "kv_cache", "rung 01 writing q in [B, Hq, S, D] and K, V into the cache rows of their positions",
       rope_kv_cache_supports, rope_kv_cache_launch, /*parent=*/1},
      {3, "pdl", "rung 02 launched programmatic-dependent: each block releases the next grid, then waits for the last",
       rope_pdl_supports, rope_pdl_launch, /*parent=*/2},
  };
  return table;
}

namespace {

struct Span {
  uintptr_t lo, hi;  // [lo, hi) bytes
};
Span span(const void* p, double elems) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  return {lo, lo + static_cast<uintptr_t>(elems * 2)};
}
bool overlap(const Span& a, const Span& b) { return a.lo < b.hi && b.lo < a.hi; }

}  // namespace

std::string rope_check_args(const RopeArgs& a) {
  if (a.layout != RopeLayout::tokens && a.layout != RopeLayout::attention)
    return "layout must be tokens or attention";
  if (a.B < 0 || a.S < 0) return "need B >= 0 and S >= 0";
  if (a.Hq < 1 || a.Hkv < 1) return "need Hq >= 1 and Hkv >= 1";
  if (a.D != 64 && a.D != 128) return "D must be 64 or 128";
  if (!(a.theta > 0.f) || !std::isfinite(a.theta)) return "theta must be a finite number > 0";
  const bool att = a.layout == RopeLayout::attention;
  if (att && a.L < 1) return "the attention layout needs a cache length L >= 1";
  if (att && a.S > a.L) return "S tokens per sequence must fit in the cache (S <= L)";
  const double row = (static_cast<double>(a.Hq) + 2.0 * a.Hkv) * a.D;
  const double T = static_cast<double>(a.B) * a.S;
  if (row > (1 << 30)) return "(Hq + 2 Hkv) * D above 2^30";
  if (T * row > std::ldexp(1.0, 38)) return "more than 2^38 qkv elements";
  if (att && static_cast<double>(a.B) * a.Hkv * a.L * a.D > std::ldexp(1.0, 40))
    return "a cache of more than 2^40 elements";
  if (T == 0) return "";
  if (!a.qkv || !a.pos || !a.q_out) return "null pointer (qkv, pos or q_out)";
  if (att ? (!a.k_cache || !a.v_cache) : !a.k_out)
    return att ? "null pointer (k_cache or v_cache)" : "null pointer (k_out)";
  if (!aligned(a.pos, 4)) return "pos must be 4-byte aligned (int32)";
  if (!aligned(a.qkv, 2) || !aligned(a.q_out, 2) ||
      (att ? (!aligned(a.k_cache, 2) || !aligned(a.v_cache, 2)) : !aligned(a.k_out, 2)))
    return "qkv and the outputs must be 2-byte aligned (bf16)";
  const Span in = span(a.qkv, T * row), q = span(a.q_out, T * a.Hq * a.D);
  if (overlap(in, q)) return "q_out overlaps qkv";
  if (att) {
    const double cache = static_cast<double>(a.B) * a.Hkv * a.L * a.D;
    const Span k = span(a.k_cache, cache), v = span(a.v_cache, cache);
    if (overlap(in, k) || overlap(in, v)) return "a cache overlaps qkv";
    if (overlap(q, k) || overlap(q, v) || overlap(k, v)) return "q_out, k_cache and v_cache overlap";
  } else {
    const Span k = span(a.k_out, T * a.Hkv * a.D);
    if (overlap(in, k)) return "k_out overlaps qkv";
    if (overlap(q, k)) return "q_out and k_out overlap";
  }
  return "";
}

const Rung<RopeArgs>* rope_pick(const RopeArgs& a, const DeviceInfo& d) {
  return best_supported(rope_rungs(), a, d);
}

void rope(const RopeArgs& a, cudaStream_t stream) {
  const std::string why = rope_check_args(a);
  KL_REQUIRE(why.empty(), "rope: " << why);
  const Rung<RopeArgs>* r = rope_pick(a, device_info());
  KL_REQUIRE(r, "rope: no rung supports B=" << a.B << " S=" << a.S << " Hq=" << a.Hq << " Hkv=" << a.Hkv
                                            << " D=" << a.D);
  r->launch(a, stream);
}

double rope_bytes(const RopeArgs& a) {
  const double T = static_cast<double>(a.B) * a.S;
  const double heads = a.Hq + a.Hkv + (a.layout == RopeLayout::attention ? a.Hkv : 0);
  return 2.0 * T * heads * a.D * 2.0 + 4.0 * T;
}
double rope_flops(const RopeArgs& a) {
  return 3.0 * static_cast<double>(a.B) * a.S * (a.Hq + a.Hkv) * a.D;
}

namespace rope_detail {

RopeParams rope_params(const RopeArgs& a) {
  struct Cached {
    float theta = 0.f;
    int D = 0;
    RopeFreqs f{};
  };
  thread_local Cached c;
  if (c.theta != a.theta || c.D != a.D) c = {a.theta, a.D, rope_freqs(a.theta, a.D)};
  RopeParams p;
  p.qkv = static_cast<const bf16*>(a.qkv);
  p.pos = a.pos;
  p.q_out = static_cast<bf16*>(a.q_out);
  p.k_out = static_cast<bf16*>(a.k_out);
  p.k_cache = static_cast<bf16*>(a.k_cache);
  p.v_cache = static_cast<bf16*>(a.v_cache);
  p.S = a.S;
  p.Hq = a.Hq;
  p.Hkv = a.Hkv;
  p.D = a.D;
  p.L = a.L;
  p.row = (a.Hq + 2 * a.Hkv) * a.D;
  p.f = c.f;
  return p;
}

std::string rope_vector_alignment(const RopeArgs& a) {
  const bool att = a.layout == RopeLayout::attention;
  if (!aligned(a.qkv, 16) || !aligned(a.q_out, 16)) return "qkv and q_out must be 16-byte aligned";
  if (att && (!aligned(a.k_cache, 16) || !aligned(a.v_cache, 16)))
    return "k_cache and v_cache must be 16-byte aligned";
  if (!att && !aligned(a.k_out, 16)) return "k_out must be 16-byte aligned";
  return "";
}

}  // namespace rope_detail

}  // namespace kl
