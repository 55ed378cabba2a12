// tests/test_gpu_attention_hopper.cu — the sm_90a attention rungs (04..10, 12..15) against a CPU double
// reference on the same bf16-rounded inputs. Small shapes that each isolate one thing (one tile,
// ragged tiles, causal diagonal, Sq < Skv, GQA packing, D = 64, multi-round K/V ring, split-KV
// decode), so a failure names the feature. On a non-Hopper device every case skips with the reason.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kl/attention.h"
#include "kernels/attention/hopper_rungs.h"
#include "kl/check.h"
#include "tests/gpu_test.h"

namespace {

struct Case {
  const char* what;
  int B, Hq, Hkv, Sq, Skv, D;
  bool causal;
  // K amplitude rising along the keys (x0.25 at key 0 to x8 at the last): the row max grows by
  // many exp2 units late in the KV loop, so the lazy rescale's O *= alpha path runs mid-loop.
  bool rising = false;
};

std::string describe(const Case& c) {
  std::ostringstream s;
  s << c.what << " [B=" << c.B << " Hq=" << c.Hq << " Hkv=" << c.Hkv << " Sq=" << c.Sq
    << " Skv=" << c.Skv << " D=" << c.D << (c.causal ? " causal" : "") << "]";
  return s.str();
}

uint16_t to_bf16_bits(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float from_bf16_bits(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// O[b,h,i,:] = softmax_j(scale * q_i . k_j, j <= i + Skv - Sq if causal) v_j, in double.
// Keys drop_begin <= j < drop_end are left out (a model of a kernel that skips a K/V tile).
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              int drop_begin = 0, int drop_end = 0) {
  const int G = c.Hq / c.Hkv, D = c.D;
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> o(size_t(c.B) * c.Hq * c.Sq * D, 0.0), p(c.Skv);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.Hq; ++h) {
      const int hk = h / G;
      const float* K = &k[(size_t(b) * c.Hkv + hk) * c.Skv * D];
      const float* V = &v[(size_t(b) * c.Hkv + hk) * c.Skv * D];
      for (int i = 0; i < c.Sq; ++i) {
        const float* Qi = &q[((size_t(b) * c.Hq + h) * c.Sq + i) * D];
        const int last = c.causal ? i + c.Skv - c.Sq : c.Skv - 1;
        auto dropped = [&](int j) { return j >= drop_begin && j < drop_end; };
        double mx = -1e300;
        for (int j = 0; j <= last; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += double(Qi[d]) * K[size_t(j) * D + d];
          p[j] = s * scale;
          if (!dropped(j)) mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= last; ++j) sum += (p[j] = dropped(j) ? 0.0 : std::exp(p[j] - mx));
        double* Oi = &o[((size_t(b) * c.Hq + h) * c.Sq + i) * D];
        for (int j = 0; j <= last; ++j)
          for (int d = 0; d < D; ++d) Oi[d] += p[j] / sum * V[size_t(j) * D + d];
      }
    }
  return o;
}

struct Device {
  std::vector<void*> ptrs;
  template <class T>
  T* alloc(size_t n) {
    void* p = nullptr;
    KL_CHECK(cudaMalloc(&p, n * sizeof(T) + 16));
    ptrs.push_back(p);
    return static_cast<T*>(p);
  }
  ~Device() {
    for (void* p : ptrs) cudaFree(p);
  }
};

struct Inputs {
  Case c;
  std::vector<uint16_t> qb, kb, vb;
  std::vector<float> qf, kf, vf;
  std::vector<double> ref;
};

Inputs make_inputs(const Case& c, unsigned seed) {
  Inputs in{c, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  auto fill = [&](size_t n, std::vector<uint16_t>& b, std::vector<float>& f, float amp,
                  bool rise = false) {
    b.resize(n);
    f.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const float key = float((i / c.D) % c.Skv) / float(c.Skv > 1 ? c.Skv - 1 : 1);
      b[i] = to_bf16_bits((rise ? amp * (0.25f + 7.75f * key) : amp) * U(rng));
      f[i] = from_bf16_bits(b[i]);
    }
  };
  // Q amplitude 2: scores spread over several units so the softmax is far from uniform.
  fill(size_t(c.B) * c.Hq * c.Sq * c.D, in.qb, in.qf, 2.f);
  fill(size_t(c.B) * c.Hkv * c.Skv * c.D, in.kb, in.kf, 2.f, c.rising);
  fill(size_t(c.B) * c.Hkv * c.Skv * c.D, in.vb, in.vf, 1.f);
  in.ref = reference(c, in.qf, in.kf, in.vf);
  return in;
}

const kl::Rung<kl::AttentionArgs>& rung(int number) {
  const auto* r = kl::find_rung(kl::attention_rungs(), std::to_string(number));
  if (!r) throw std::runtime_error("rung " + std::to_string(number) + " not in the table");
  return *r;
}

// bf16 output and bf16 P in the P V product: |err| <= 1.5e-2 + 2e-2 |ref| per element, and the
// relative L2 error over the whole output within kl::test::kBf16RelL2 (the element bound alone
// lets a dropped 64-key tile through on long caches: see RelL2GateCatchesADroppedKeyTile).
const kl::bench::Tolerance kTol{1.5e-2, 2e-2, kl::test::kBf16RelL2};

// `out` (bf16 bits) against in.ref with `tol`; failures name the element by (b, h, q, d).
::testing::AssertionResult compare_output(const Inputs& in, const std::vector<uint16_t>& out,
                                          const std::string& who,
                                          const kl::bench::Tolerance& tol = kTol) {
  const Case& c = in.c;
  std::vector<float> got(out.size());
  for (size_t i = 0; i < out.size(); ++i) got[i] = from_bf16_bits(out[i]);
  return kl::test::check_close(got, in.ref, tol, who + " on " + describe(c), [&](size_t i) {
    const size_t row = i / c.D;
    return "(b=" + std::to_string(row / (size_t(c.Sq) * c.Hq)) + " h=" +
           std::to_string((row / c.Sq) % c.Hq) + " q=" + std::to_string(row % c.Sq) +
           " d=" + std::to_string(i % c.D) + ")";
  });
}

// Runs rung `number` on `in`; returns "" if it matches the reference, else a diagnosis.
// `workspace`: give the split-KV rung scratch (false: it must fall back to one split).
std::string run_and_compare(int number, const Inputs& in, bool workspace, bool* skipped,
                            std::vector<uint16_t>* out_bits = nullptr) {
  const Case& c = in.c;
  const auto& r = rung(number);
  Device dev;
  kl::AttentionArgs a;
  a.B = c.B, a.Hq = c.Hq, a.Hkv = c.Hkv, a.Sq = c.Sq, a.Skv = c.Skv, a.D = c.D;
  a.causal = c.causal;
  auto* Q = dev.alloc<__nv_bfloat16>(in.qb.size());
  auto* K = dev.alloc<__nv_bfloat16>(in.kb.size());
  auto* V = dev.alloc<__nv_bfloat16>(in.vb.size());
  auto* O = dev.alloc<__nv_bfloat16>(in.ref.size());
  KL_CHECK(cudaMemcpy(Q, in.qb.data(), in.qb.size() * 2, cudaMemcpyHostToDevice));
  KL_CHECK(cudaMemcpy(K, in.kb.data(), in.kb.size() * 2, cudaMemcpyHostToDevice));
  KL_CHECK(cudaMemcpy(V, in.vb.data(), in.vb.size() * 2, cudaMemcpyHostToDevice));
  KL_CHECK(cudaMemset(O, 0xFF, in.ref.size() * 2));  // poison: NaN bf16
  a.Q = Q, a.K = K, a.V = V, a.O = O;
  if (workspace) {
    a.workspace_bytes = kl::attention_hopper_workspace_bytes(a, kl::device_info());
    if (a.workspace_bytes) {
      a.workspace = dev.alloc<char>(a.workspace_bytes);
      KL_CHECK(cudaMemset(a.workspace, 0xFF, a.workspace_bytes));  // poison scratch too
    }
  }
  std::string why = r.supports(a, kl::device_info());
  if (!why.empty()) {
    *skipped = true;
    return why;
  }
  *skipped = false;
  kl::launch_checked(r, a, 0);
  KL_CHECK(cudaGetLastError());
  KL_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> ob(in.ref.size());
  KL_CHECK(cudaMemcpy(ob.data(), O, ob.size() * 2, cudaMemcpyDeviceToHost));
  if (out_bits) *out_bits = ob;

  const ::testing::AssertionResult ok = compare_output(in, ob, "rung " + std::to_string(number) + " " + r.name);
  return ok ? "" : ok.message();
}

const Case kCases[] = {
    {"single tile (64 q x 64 k)", 1, 1, 1, 64, 64, 128, false},
    {"single tile causal", 1, 1, 1, 64, 64, 128, true},
    {"ragged S=200 (partial Q and K tiles)", 1, 2, 2, 200, 200, 128, false},
    {"ragged causal S=300", 1, 2, 2, 300, 300, 128, true},
    {"Sq < Skv causal, diagonal at the end", 1, 2, 2, 77, 333, 128, true},
    {"GQA 8:2, packed rows straddle heads", 2, 8, 2, 130, 257, 128, true},
    {"multi-round K/V ring (8+ tiles)", 1, 2, 1, 1024, 1024, 128, false},
    {"multi-round ring causal", 1, 2, 1, 1024, 1024, 128, true},
    {"D=64 single tile", 1, 1, 1, 64, 64, 64, false},
    {"D=64 ragged causal GQA", 2, 4, 2, 190, 390, 64, true},
    {"D=64 multi-round", 1, 2, 2, 1000, 1000, 64, false},
    {"decode GQA 32:4 (8 heads packed)", 2, 32, 4, 1, 1000, 128, false},
    {"decode MHA, long cache", 1, 8, 8, 1, 4100, 128, true},
    {"decode D=64 GQA", 1, 16, 2, 1, 777, 64, true},
    {"short prefill Sq=4 GQA 8:1 causal", 1, 8, 1, 4, 2000, 128, true},
    // 70 KV heads x 5 row tiles of 128 (10 of 64) = 350 (700) items, more than the persistent
    // rungs' CTAs (08, 10, 12, 14: one per SM; 13, 15: two): they go through their tile counter, and every
    // later case checks that the counter was reset. At both head dims (rung 13's tiles differ).
    {"persistent: more items than SMs, GQA 2:1 causal", 1, 140, 70, 300, 300, 64, true},
    {"persistent D=128: more items than SMs, GQA 2:1 causal", 1, 140, 70, 300, 300, 128, true},
    {"rising scores: the row max moves late (rescale path)", 1, 2, 2, 200, 1500, 128, false, true},
    {"rising scores causal GQA", 1, 4, 2, 700, 1100, 128, true, true},
    {"rising scores D=64", 1, 2, 1, 300, 1300, 64, false, true},
};

// Inputs and reference per case, built once and shared by the rungs.
const Inputs& cached_inputs(size_t i) {
  static std::vector<std::unique_ptr<Inputs>> cache(sizeof(kCases) / sizeof(kCases[0]));
  if (!cache[i]) cache[i] = std::make_unique<Inputs>(make_inputs(kCases[i], 1234u + unsigned(i)));
  return *cache[i];
}

class HopperAttention : public ::testing::TestWithParam<int> {};

TEST_P(HopperAttention, MatchesReferenceOnEveryCase) {
  KL_REQUIRE_GPU();
  const int number = GetParam();
  int ran = 0;
  std::string skip_reason;
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    const Inputs& in = cached_inputs(i);
    for (bool ws : {true, false}) {
      if (!ws && number != 9) continue;  // only the split-KV rung uses the workspace
      bool skipped = false;
      std::string msg = run_and_compare(number, in, ws, &skipped);
      if (skipped) {
        skip_reason = msg;
        continue;
      }
      ++ran;
      EXPECT_TRUE(msg.empty()) << msg << (ws ? "" : " (no workspace: single split)");
    }
  }
  if (!ran) {
    const std::string arch = kl::require_sm90a(kl::device_info());
    if (!arch.empty()) GTEST_SKIP() << "rung " << number << " ran no case: " << skip_reason;
    FAIL() << "rung " << number << " (" << rung(number).name << ") refused every case; last reason: "
           << skip_reason;
  }
}

TEST_P(HopperAttention, Deterministic) {
  KL_REQUIRE_GPU();
  const int number = GetParam();
  const Case c = number == 9    ? Case{"decode", 1, 16, 2, 1, 3000, 128, false}
                 : number == 15 ? Case{"prefill D=64", 1, 4, 2, 500, 700, 64, true}  // D = 64 only
                                : Case{"prefill", 1, 4, 2, 500, 700, 128, true};
  const Inputs in = make_inputs(c, 99);
  std::vector<uint16_t> o1, o2;
  bool skipped = false;
  std::string m1 = run_and_compare(number, in, true, &skipped, &o1);
  if (skipped) GTEST_SKIP() << m1;
  std::string m2 = run_and_compare(number, in, true, &skipped, &o2);
  EXPECT_TRUE(m1.empty()) << m1;
  EXPECT_TRUE(o1 == o2) << "rung " << number << ": two runs differ bitwise on " << describe(c);
}

INSTANTIATE_TEST_SUITE_P(Rungs, HopperAttention, ::testing::Values(4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "rung" + std::to_string(i.param);
                         });

// The check itself, on planted bugs (no GPU needed): the long-cache decode case's exact output with
// one 64-key tile, or one 256-key split piece, left out (what a kernel that skips it would write,
// rounded to bf16 like a kernel's output), for every tile and piece of the cache. The relative-L2
// gate must catch each; the element bound alone misses some (the reason for the gate); the exact
// output passes.
TEST(HopperAttentionCheck, RelL2GateCatchesADroppedKeyTile) {
  size_t at = 0;
  while (std::strcmp(kCases[at].what, "decode MHA, long cache") != 0) ++at;
  const Inputs& in = cached_inputs(at);
  ASSERT_EQ(in.c.Skv, 4100);
  auto as_output = [](const std::vector<double>& o) {
    std::vector<uint16_t> b(o.size());
    for (size_t i = 0; i < o.size(); ++i) b[i] = to_bf16_bits(float(o[i]));
    return b;
  };
  kl::bench::Tolerance elements_only = kTol;
  elements_only.rel_l2 = INFINITY;
  EXPECT_TRUE(compare_output(in, as_output(in.ref), "exact output"));
  for (int width : {64, 256}) {
    int dropped = 0, missed_by_elements = 0;
    std::string example;
    for (int b = 0; b < in.c.Skv; b += width) {
      const int e = std::min(b + width, in.c.Skv);
      const std::string what = "keys " + std::to_string(b) + ".." + std::to_string(e - 1) + " dropped";
      const std::vector<uint16_t> bad = as_output(reference(in.c, in.qf, in.kf, in.vf, b, e));
      const ::testing::AssertionResult gated = compare_output(in, bad, what);
      EXPECT_FALSE(gated) << "the check let " << what << " through";
      EXPECT_NE(std::string(gated.message()).find("rel_l2"), std::string::npos) << gated.message();
      ++dropped;
      if (compare_output(in, bad, what, elements_only)) {
        ++missed_by_elements;
        if (example.empty()) example = gated.message();
      }
    }
    std::printf("  [planted] %d-key pieces: the element bound alone passes %d of %d; the check fails "
                "all, e.g. %s\n", width, missed_by_elements, dropped, example.c_str());
    EXPECT_GT(missed_by_elements, 0) << "every dropped " << width
                                     << "-key piece already fails the element bound: the case no "
                                        "longer shows what the relative-L2 gate adds";
  }
}

// The table carries the Hopper rungs in order, each with a name and a change.
TEST(HopperAttentionTable, RungsListed) {
  const auto& t = kl::attention_rungs();
  for (int n : {4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15}) {
    const auto* r = kl::find_rung(t, std::to_string(n));
    ASSERT_NE(r, nullptr) << "rung " << n << " missing";
    EXPECT_GT(std::strlen(r->name), 0u);
    EXPECT_GT(std::strlen(r->change), 0u);
  }
}

// Refusals need no launch: bad D, GQA mismatch, Sq > Skv, misaligned pointer.
TEST(HopperAttentionTable, RefusesBadShapes) {
  KL_REQUIRE_GPU();
  const auto& d = kl::device_info();
  alignas(16) static __nv_bfloat16 dummy[64];
  kl::AttentionArgs a;
  a.Q = a.K = a.V = dummy;
  a.O = dummy;
  a.B = 1, a.Hq = 4, a.Hkv = 2, a.Sq = 8, a.Skv = 8, a.D = 128;
  for (int n : {4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15}) {
    const auto& r = rung(n);
    kl::AttentionArgs base = a;
    if (n == 15) base.D = 64;  // rung 15 takes D = 64 only: start it from a shape it takes
    if (n == 15 && kl::require_sm90a(d).empty())
      EXPECT_TRUE(r.supports(base, d).empty()) << r.supports(base, d);
    kl::AttentionArgs b = base;
    b.D = 96;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": D=96 accepted";
    b = base;
    b.Hkv = 3;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": Hq % Hkv != 0 accepted";
    b = base;
    b.Sq = 9;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": Sq > Skv accepted";
    b = base;
    b.K = reinterpret_cast<const __nv_bfloat16*>(reinterpret_cast<const char*>(dummy) + 2);
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": misaligned K accepted";
  }
  // The decode rung only takes decode shapes (Sq <= 16; any number of packed 16-row tiles).
  kl::AttentionArgs b = a;
  b.Sq = 17, b.Skv = 100, b.Hq = 32, b.Hkv = 2;
  EXPECT_FALSE(rung(9).supports(b, d).empty());
  b.Sq = 8;  // 16 heads x 8 = 128 packed rows: 8 tiles of 16
  if (kl::require_sm90a(d).empty()) EXPECT_TRUE(rung(9).supports(b, d).empty()) << rung(9).supports(b, d);
}

}  // namespace
