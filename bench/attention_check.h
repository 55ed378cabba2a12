// bench/attention_check.h — validating an attention output on the device against the CPU double
// reference (kernels/attention/reference.h), shared by bench_attention and the attention tests
// (both parts of the ladder).
//
// attention_reference_sampled() downloads only what the sampled rows need (their Q rows and the
// K/V heads they read) and computes the reference rows; attention_check_output() downloads those
// rows of O and compares. Tolerance (bf16 output; P is rounded to bf16 before P V on the tensor
// cores): |got - ref| <= 1e-2 * rms(ref) + 2^-8 * max|V| + 1e-2 * |ref| per element and a relative L2 error <= 1e-2
// over the sampled rows. Expected errors are ~0.3% (one bf16 rounding of O, bf16 P); a wrong row,
// a missing tile or a bad mask is off by O(rms).
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "bench/harness.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/reference.h"
#include "kernels/common/parallel.h"

namespace kl::bench {

struct AttentionCheck {
  std::vector<AttentionRowId> rows;
  std::vector<double> ref;  // rows.size() * D
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

// `max_rows`: sample size; every row when B*Hq*Sq <= all_rows_below and the cache is small (at most
// 2^25 K elements), or when max_rows <= 0 (an explicit request for every row, whatever the cache).
inline AttentionCheck attention_reference_sampled(const AttentionArgs& a, int max_rows,
                                                  uint64_t seed, long long all_rows_below = 4096) {
  AttentionCheck c;
  const long long total = static_cast<long long>(a.B) * a.Hq * a.Sq;
  const int D = a.D, G = a.Hq / a.Hkv;
  // The host cost is the K/V heads downloaded (64 MB per head at Skv = 131072) and the rows x Skv
  // double dot products. Every row when the problem is small in both; on a large cache (decode at
  // B = 8, Hkv = 32, Skv = 131072 read 256 heads, 16 GB, and took tens of seconds) the sample stays
  // within kMaxHeads KV heads: G * Sq rows each, so 8 rows at G = 1, Sq = 1.
  constexpr int kMaxHeads = 8;
  const bool small_kv = static_cast<double>(a.B) * a.Hkv * a.Skv * D <= static_cast<double>(1 << 25);
  // max_rows <= 0 asks for every row explicitly (the tests): no cap then.
  c.all_rows = total <= all_rows_below && (small_kv || max_rows <= 0);
  if (!c.all_rows && !small_kv)
    max_rows = static_cast<int>(std::min<long long>(max_rows, static_cast<long long>(kMaxHeads) * G * a.Sq));
  c.rows = attention_sample_rows(a, c.all_rows ? static_cast<int>(total) : max_rows, seed, kMaxHeads);
  std::vector<float> Qall;
  if (c.all_rows) Qall = download_as_float(a.Q, static_cast<size_t>(total) * D, DType::bf16);
  c.ref.resize(c.rows.size() * D);
  const double scale = attention_scale(a);
  double vmax = 0;  // max |V| over the heads the sampled rows read
  // Head by head (one K/V head on the host at a time: a 128K-token head is 128 MB as floats).
  std::map<long long, std::vector<size_t>> by_head;  // b*Hkv+hkv -> indices into c.rows
  for (size_t k = 0; k < c.rows.size(); ++k)
    by_head[static_cast<long long>(c.rows[k].b) * a.Hkv + c.rows[k].hq / G].push_back(k);
  for (const auto& h : by_head) {
    const size_t n = static_cast<size_t>(a.Skv) * D;
    const std::vector<float> K = download_as_float(a.K + h.first * n, n, DType::bf16);
    const std::vector<float> V = download_as_float(a.V + h.first * n, n, DType::bf16);
    for (float v : V) vmax = std::max(vmax, static_cast<double>(std::fabs(v)));
    // The Q rows first (device copies stay on this thread), then the rows in parallel: each
    // writes only its own slot of c.ref, so the result does not depend on the thread count.
    const std::vector<size_t>& ks = h.second;
    std::vector<float> q(ks.size() * D);
    for (size_t j = 0; j < ks.size(); ++j) {
      const long long row = attention_row_index(a, c.rows[ks[j]]);
      if (c.all_rows) {
        std::copy_n(&Qall[static_cast<size_t>(row) * D], D, &q[j * D]);
      } else {
        const std::vector<float> qr = download_as_float(a.Q + row * D, D, DType::bf16);
        std::copy(qr.begin(), qr.end(), &q[j * D]);
      }
    }
    parallel_for(static_cast<long long>(ks.size()), [&](long long b, long long e) {
      for (long long j = b; j < e; ++j) {
        const auto& r = c.rows[ks[j]];
        attention_reference_row(&q[j * D], K.data(), V.data(),
                                attention_visible_keys(r.i, a.Sq, a.Skv, a.causal), D, scale,
                                &c.ref[ks[j] * D]);
      }
    }, /*serial_below=*/2);
  }
  double ss = 0;
  for (double v : c.ref) ss += v * v;
  const double rms = c.ref.empty() ? 0 : std::sqrt(ss / c.ref.size());
  // P is rounded to bf16 (relative error <= 2^-9 per weight) before P V, so a row's output can
  // move by up to 2^-9 * sum_j p_j |v_j| <= 2^-9 * max|V| whatever its size: rows that see few keys
  // (early causal rows) have large weights and small |O|, where 1e-2 * rms(ref) alone is too tight
  // (seen on the H200: one element of 8192 at 2.2e-3 with every rung agreeing bit for bit).
  // Allow twice that bound on top of the relative terms.
  c.tol.abs = 1e-2 * rms + std::ldexp(vmax, -8) + 1e-6;
  c.tol.rel = 1e-2;
  c.tol.rel_l2 = 1e-2;
  return c;
}

// Downloads the checked rows of a.O and compares them with the reference.
inline ErrStats attention_check_output(const AttentionArgs& a, const AttentionCheck& c) {
  const int D = a.D;
  std::vector<float> got(c.rows.size() * D);
  if (c.all_rows) {
    std::vector<float> all = download_as_float(a.O, c.rows.size() * D, DType::bf16);
    for (size_t k = 0; k < c.rows.size(); ++k) {
      const long long row = attention_row_index(a, c.rows[k]);
      std::copy(all.begin() + row * D, all.begin() + (row + 1) * D, got.begin() + k * D);
    }
  } else {
    for (size_t k = 0; k < c.rows.size(); ++k) {
      std::vector<float> o = download_as_float(a.O + attention_row_index(a, c.rows[k]) * D, D, DType::bf16);
      std::copy(o.begin(), o.end(), got.begin() + k * D);
    }
  }
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

// The device inputs of one attention problem, shared by bench_attention and tools/dec_trace:
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
