// tests/attention_test_util.h — what the attention GPU tests share: the problem description, its
// device inputs and the failure message.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "kl/attention.h"
#include "tests/gpu_test.h"

namespace kl::test {

// One attention problem: [B, H, S, D] bf16 Q/K/V/O, GQA (Hkv divides Hq), causal or not.
struct AttnCase {
  int B, Hq, Hkv, Sq, Skv, D;
  bool causal;
  // The bench's shape string, so a failing case can be re-run with bench_attention --shape.
  std::string str() const {
    return "B=" + std::to_string(B) + ",Hq=" + std::to_string(Hq) + ",Hkv=" + std::to_string(Hkv) +
           ",Sq=" + std::to_string(Sq) + ",Skv=" + std::to_string(Skv) + ",D=" + std::to_string(D) +
           ",causal=" + std::to_string(causal);
  }
  // The shape alone (no pointers): what attention_workspace_bytes() takes.
  AttentionArgs shape() const {
    AttentionArgs a;
    a.B = B; a.Hq = Hq; a.Hkv = Hkv; a.Sq = Sq; a.Skv = Skv; a.D = D;
    a.causal = causal;
    return a;
  }
};

// A case's device buffers: Q, K, V uniform in [-1, 1) (seeds seed, 3 seed + 1, 7 seed + 2), and O.
struct AttnProblem {
  AttnCase c;
  bench::DeviceBuffer q, k, v, o;
  size_t nQ = 0, nKV = 0;
  AttentionArgs args(void* ws = nullptr, size_t ws_bytes = 0) const {
    AttentionArgs a = c.shape();
    a.Q = q.as<__nv_bfloat16>();
    a.K = k.as<__nv_bfloat16>();
    a.V = v.as<__nv_bfloat16>();
    a.O = o.as<__nv_bfloat16>();
    a.workspace = ws;
    a.workspace_bytes = ws_bytes;
    return a;
  }
};

inline AttnProblem make_attn_problem(const AttnCase& c, uint64_t seed) {
  AttnProblem p;
  p.c = c;
  p.nQ = size_t(c.B) * c.Hq * c.Sq * c.D;
  p.nKV = size_t(c.B) * c.Hkv * c.Skv * c.D;
  p.q = bench::DeviceBuffer(2 * p.nQ);
  p.k = bench::DeviceBuffer(2 * p.nKV);
  p.v = bench::DeviceBuffer(2 * p.nKV);
  p.o = bench::DeviceBuffer(2 * p.nQ);
  bench::fill_uniform(p.q.ptr, p.nQ, DType::bf16, seed, -1.f, 1.f);
  bench::fill_uniform(p.k.ptr, p.nKV, DType::bf16, seed * 3 + 1, -1.f, 1.f);
  bench::fill_uniform(p.v.ptr, p.nKV, DType::bf16, seed * 7 + 2, -1.f, 1.f);
  KL_CHECK(cudaDeviceSynchronize());
  return p;
}

// A failed comparison in words: error statistics and the worst element's place and values.
inline std::string describe(const bench::ErrStats& e, const AttentionArgs& a,
                            const bench::AttentionCheck& c) {
  return "max_abs=" + std::to_string(e.max_abs) + " rel_l2=" + std::to_string(e.rel_l2) +
         " bad=" + std::to_string(e.bad) + "/" + std::to_string(e.n) +
         " nonfinite=" + std::to_string(e.nonfinite) + " worst at " +
         bench::attention_where(a, c, e.worst) + " got=" + std::to_string(e.worst_got) +
         " ref=" + std::to_string(e.worst_ref);
}

// The verdict on attention_check_output()'s statistics (element tolerance and the relative-L2 gate
// of c.tol, through the shared kl::test::verdict), the worst element named by (b, hq, i, d).
inline ::testing::AssertionResult attention_verdict(const bench::ErrStats& e, const AttentionArgs& a,
                                                    const bench::AttentionCheck& c,
                                                    const std::string& what) {
  return verdict(e, c.tol, what, [&](size_t i) { return bench::attention_where(a, c, i); });
}

}  // namespace kl::test
