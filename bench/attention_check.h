// bench/attention_check.h — validating an attention output on the device against the CPU double
// reference (kernels/attention/reference.h), shared by bench_attention and the attention tests
// (both parts of the ladder).
//
// attention_reference_sampled() picks the checked rows (every row of a small problem; otherwise at
// least one row of every (batch, query head) pair, the corner rows, and random rows up to the
// sample size), downloads their Q rows (one gather) and every K/V head they read (in chunks of
// consecutive heads), and computes the reference rows; attention_check_output() gathers those rows
// of O and compares. Tolerance (bf16 output; P is rounded to bf16 before P V on the tensor cores):
// |got - ref| <= 1e-2 * rms(ref) + 2^-8 * max|V| + 1e-2 * |ref| per element and a relative L2 error
// <= 1e-2 over the checked rows. Expected errors are ~0.3% (one bf16 rounding of O, bf16 P); a
// wrong row, a missing tile or a bad mask is off by O(rms).
#pragma once
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "bench/harness.h"
#include "kl/attention.h"
#include "kernels/attention/reference.h"
#include "kernels/common/parallel.h"

namespace kl::bench {

struct AttentionCheck {
  std::vector<AttentionRowId> rows;
  std::vector<long long> flat;  // each checked row's index in Q and O: (b * Hq + hq) * Sq + i
  std::vector<double> ref;      // rows.size() * D
  Tolerance tol;
  bool all_rows = false;
};

inline long long attention_row_index(const AttentionArgs& a, const AttentionRowId& r) {
  return (static_cast<long long>(r.b) * a.Hq + r.hq) * a.Sq + r.i;
}

// Causal pairs (i, j) a query may see, summed over the queries of one head.
inline double attention_pairs(const AttentionArgs& a) {
  if (!a.causal) return static_cast<double>(a.Sq) * a.Skv;
  const double off = static_cast<double>(a.Skv) - a.Sq;
  return a.Sq * (off + 1) + 0.5 * static_cast<double>(a.Sq) * (a.Sq - 1);
}
// 4 * B * Hq * D * (visible pairs): two GEMM-like products of 2 FLOPs per multiply-add.
inline double attention_flops(const AttentionArgs& a) {
  return 4.0 * a.B * a.Hq * a.D * attention_pairs(a);
}
// Minimum DRAM bytes: Q and O once, K and V once (GQA: once per KV head).
inline double attention_bytes(const AttentionArgs& a) {
  return 2.0 * a.D * (2.0 * a.B * a.Hq * a.Sq + 2.0 * a.B * a.Hkv * a.Skv);
}

// K (and V) bf16 bytes downloaded at a time by the reference: consecutive KV heads up to this
// size (at least one head).
constexpr double kAttentionChunkBytes = double(512u << 20);

// Whether every row is checked: B*Hq*Sq <= all_rows_below and the cache is small (at most 2^25 K
// elements), or max_rows <= 0 (every row is wanted, whatever the cache).
inline bool attention_checks_all_rows(const AttentionArgs& a, int max_rows, long long all_rows_below) {
  const double total = static_cast<double>(a.B) * a.Hq * a.Sq;
  const bool small_kv = static_cast<double>(a.B) * a.Hkv * a.Skv * a.D <= static_cast<double>(1 << 25);
  return total <= static_cast<double>(all_rows_below) && (small_kv || max_rows <= 0);
}
// Rows checked, before de-duplication: every row, or one per (b, hq) pair + 3 corners + max_rows.
inline double attention_checked_rows(const AttentionArgs& a, int max_rows, long long all_rows_below) {
  if (attention_checks_all_rows(a, max_rows, all_rows_below)) return static_cast<double>(a.B) * a.Hq * a.Sq;
  return static_cast<double>(a.B) * a.Hq + 3 + std::max(max_rows, 0);
}
// Host bytes the reference and a check hold at their peak: one chunk of K and V heads as floats
// (with the bf16 staging of a download), and per checked row its Q row, reference row and output row.
inline double attention_check_host_bytes(const AttentionArgs& a, int max_rows, long long all_rows_below = 4096) {
  const double head = static_cast<double>(a.Skv) * a.D;  // elements of one K head
  const double heads = static_cast<double>(a.B) * a.Hkv;
  const double chunk = head * std::min(heads, std::max(1.0, std::floor(kAttentionChunkBytes / (2 * head))));
  const double rows = attention_checked_rows(a, max_rows, all_rows_below);
  return 10.0 * chunk + rows * (a.D * (4.0 + 8.0 + 4.0 + 2.0) + 32.0);
}

// The checked rows, sorted by their index in Q / O (so rows of one KV head are consecutive).
inline std::vector<long long> attention_check_rows(const AttentionArgs& a, int max_rows, uint64_t seed,
                                                   bool all_rows) {
  const long long pairs = static_cast<long long>(a.B) * a.Hq, total = pairs * a.Sq;
  std::vector<long long> f;
  if (all_rows) {
    f.resize(static_cast<size_t>(total));
    for (long long k = 0; k < total; ++k) f[static_cast<size_t>(k)] = k;
    return f;
  }
  uint64_t x = seed ? seed : 0x9E3779B97F4A7C15ULL;
  auto next = [&x]() {  // splitmix64
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  // The longest causal row of the first head, row 0, the last row of the last head (tail tiles).
  f.reserve(static_cast<size_t>(pairs) + 3);
  f.push_back(a.Sq - 1);
  f.push_back(0);
  f.push_back(total - 1);
  for (long long p = 0; p < pairs; ++p)  // one row of every (b, hq) pair
    f.push_back(p * a.Sq + static_cast<long long>(next() % static_cast<uint64_t>(a.Sq)));
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  const long long want = std::min<long long>(std::max(max_rows, 0), total);
  if (static_cast<long long>(f.size()) < want) {  // random rows of random pairs up to the sample size
    std::set<long long> s(f.begin(), f.end());
    for (long long tries = 0; static_cast<long long>(s.size()) < want && tries < 64 * want; ++tries)
      s.insert(static_cast<long long>(next() % static_cast<uint64_t>(total)));
    f.assign(s.begin(), s.end());
  }
  return f;
}

// Largest |v| of a host array, over the host's cores.
inline double attention_max_abs(const std::vector<float>& v) {
  const long long n = static_cast<long long>(v.size());
  const int t = parallel_chunks(n);
  const long long per = (n + t - 1) / std::max(t, 1);
  std::vector<double> part(static_cast<size_t>(std::max(t, 1)), 0.0);
  parallel_for(t, [&](long long c0, long long c1) {
    for (long long c = c0; c < c1; ++c) {
      double m = 0;
      for (long long i = c * per; i < std::min(n, (c + 1) * per); ++i)
        m = std::max(m, static_cast<double>(std::fabs(v[static_cast<size_t>(i)])));
      part[static_cast<size_t>(c)] = m;
    }
  }, 2);
  return part.empty() ? 0.0 : *std::max_element(part.begin(), part.end());
}

// `max_rows`: sample size beyond the one row per (b, hq) pair; every row when
// attention_checks_all_rows() (B*Hq*Sq <= all_rows_below and a small cache, or max_rows <= 0).
inline AttentionCheck attention_reference_sampled(const AttentionArgs& a, int max_rows,
                                                  uint64_t seed, long long all_rows_below = 4096) {
  AttentionCheck c;
  const int D = a.D, G = a.Hq / a.Hkv;
  c.all_rows = attention_checks_all_rows(a, max_rows, all_rows_below);
  c.flat = attention_check_rows(a, max_rows, seed, c.all_rows);
  c.rows.reserve(c.flat.size());
  for (long long f : c.flat)
    c.rows.push_back({static_cast<int>(f / (static_cast<long long>(a.Hq) * a.Sq)),
                      static_cast<int>((f / a.Sq) % a.Hq), static_cast<int>(f % a.Sq)});
  const std::vector<float> q = gather_rows_as_float(a.Q, static_cast<size_t>(D), c.flat, DType::bf16);
  c.ref.resize(c.rows.size() * D);
  const double scale = attention_scale(a);
  double vmax = 0;  // max |V| over the heads the checked rows read
  // Chunks of consecutive KV heads (b * Hkv + hkv); the rows are sorted, so each chunk's rows are
  // consecutive too. Only chunks that hold a checked row are downloaded.
  const size_t head = static_cast<size_t>(a.Skv) * D;
  const long long heads = static_cast<long long>(a.B) * a.Hkv;
  const long long per_chunk = std::max<long long>(
      1, static_cast<long long>(kAttentionChunkBytes / (2.0 * static_cast<double>(head))));
  auto kv_head = [&](size_t k) { return static_cast<long long>(c.rows[k].b) * a.Hkv + c.rows[k].hq / G; };
  size_t k0 = 0;
  while (k0 < c.rows.size()) {
    const long long h0 = kv_head(k0), h1 = std::min(heads, h0 + per_chunk);
    size_t k1 = k0;
    while (k1 < c.rows.size() && kv_head(k1) < h1) ++k1;
    const size_t n = static_cast<size_t>(h1 - h0) * head;
    const std::vector<float> K = download_as_float(a.K + static_cast<size_t>(h0) * head, n, DType::bf16);
    const std::vector<float> V = download_as_float(a.V + static_cast<size_t>(h0) * head, n, DType::bf16);
    vmax = std::max(vmax, attention_max_abs(V));
    // Each row writes only its own slot of c.ref: the result does not depend on the thread count.
    parallel_for(static_cast<long long>(k1 - k0), [&](long long b, long long e) {
      for (long long j = b; j < e; ++j) {
        const size_t k = k0 + static_cast<size_t>(j);
        const auto& r = c.rows[k];
        const size_t off = static_cast<size_t>(kv_head(k) - h0) * head;
        attention_reference_row(&q[k * D], K.data() + off, V.data() + off,
                                attention_visible_keys(r.i, a.Sq, a.Skv, a.causal), D, scale,
                                &c.ref[k * D]);
      }
    }, /*serial_below=*/2);
    k0 = k1;
  }
  double ss = 0;
  for (double v : c.ref) ss += v * v;
  const double rms = c.ref.empty() ? 0 : std::sqrt(ss / c.ref.size());
  // P is rounded to bf16 (relative error <= 2^-9 per weight) before P V, so a row's output can
  // move by up to 2^-9 * sum_j p_j |v_j| <= 2^-9 * max|V| whatever its size: rows that see few keys
  // (early causal rows) have large weights and small |O|, where 1e-2 * rms(ref) alone is too tight
  // (a single element of such a row can exceed it with every rung agreeing bit for bit).
  // Allow twice that bound on top of the relative terms.
  c.tol.abs = 1e-2 * rms + std::ldexp(vmax, -8) + 1e-6;
  c.tol.rel = 1e-2;
  c.tol.rel_l2 = 1e-2;
  return c;
}

// Gathers the checked rows of a.O and compares them with the reference.
inline ErrStats attention_check_output(const AttentionArgs& a, const AttentionCheck& c) {
  const std::vector<float> got = gather_rows_as_float(a.O, static_cast<size_t>(a.D), c.flat, DType::bf16);
  return compare(got.data(), c.ref.data(), got.size(), c.tol);
}

// "b=.. hq=.. i=.. d=.." of the worst element of a check (for failure messages).
inline std::string attention_where(const AttentionArgs& a, const AttentionCheck& c, size_t flat) {
  if (c.rows.empty()) return "";
  const auto& r = c.rows[flat / a.D];
  return "b=" + std::to_string(r.b) + " hq=" + std::to_string(r.hq) + " i=" + std::to_string(r.i) +
         " d=" + std::to_string(flat % a.D);
}

// The problem a parsed bench shape names (B, Hq, Hkv, Sq, Skv, D, causal); no pointers.
inline AttentionArgs attention_shape(const Shape& sh) {
  AttentionArgs a;
  a.B = static_cast<int>(sh["B"]);
  a.Hq = static_cast<int>(sh["Hq"]);
  a.Hkv = static_cast<int>(sh["Hkv"]);
  a.Sq = static_cast<int>(sh["Sq"]);
  a.Skv = static_cast<int>(sh["Skv"]);
  a.D = static_cast<int>(sh["D"]);
  a.causal = sh["causal"] != 0;
  return a;
}

// Elements of Q (and O) and of K (and V) of a problem.
inline size_t attention_q_elems(const AttentionArgs& a) { return size_t(a.B) * a.Hq * a.Sq * a.D; }
inline size_t attention_kv_elems(const AttentionArgs& a) { return size_t(a.B) * a.Hkv * a.Skv * a.D; }

// The device inputs of one attention problem (bench_attention):
// `copies` identical sets of Q, K, V (bf16, uniform in [-1, 1] from `seed`) so that launches can
// rotate through more bytes than the L2 holds, one O, and the workspace the rungs ask for
// (attention_workspace_bytes, at least 256 bytes). args(i) points a launch at set i % copies.
struct AttentionInputs {
  AttentionArgs shape;
  size_t nQ, nKV;
  int copies;
  size_t ws_bytes;
  DeviceBuffer dQ, dK, dV, dO, dW;  // (declared after the sizes: initialized in this order)
  AttentionInputs(const AttentionArgs& s, int n_copies, uint64_t seed, cudaStream_t stream)
      : shape(s), nQ(attention_q_elems(s)), nKV(attention_kv_elems(s)), copies(n_copies),
        ws_bytes(attention_workspace_bytes(s, device_info())), dQ(2 * nQ * copies), dK(2 * nKV * copies),
        dV(2 * nKV * copies), dO(2 * nQ), dW(std::max<size_t>(ws_bytes, 256)) {
    KL_CHECK(cudaMemsetAsync(dW.ptr, 0, dW.bytes, stream));  // the workspace contract: zeroed once
    fill_uniform(dQ.ptr, nQ, DType::bf16, seed, -1.f, 1.f, stream);
    fill_uniform(dK.ptr, nKV, DType::bf16, seed ^ 0x9e3779b97f4a7c15ULL, -1.f, 1.f, stream);
    fill_uniform(dV.ptr, nKV, DType::bf16, seed ^ 0x6a09e667f3bcc909ULL, -1.f, 1.f, stream);
    KL_CHECK(cudaStreamSynchronize(stream));  // replicate() copies on the legacy stream
    replicate(dQ.ptr, 2 * nQ, copies);
    replicate(dK.ptr, 2 * nKV, copies);
    replicate(dV.ptr, 2 * nKV, copies);
  }
  AttentionArgs args(int i) const {
    AttentionArgs a = shape;
    a.Q = dQ.as<__nv_bfloat16>() + size_t(i % copies) * nQ;
    a.K = dK.as<__nv_bfloat16>() + size_t(i % copies) * nKV;
    a.V = dV.as<__nv_bfloat16>() + size_t(i % copies) * nKV;
    a.O = dO.as<__nv_bfloat16>();
    a.workspace = dW.ptr;
    a.workspace_bytes = ws_bytes;
    return a;
  }
};

}  // namespace kl::bench
