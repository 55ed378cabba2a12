// tests/test_gpu_attention_hopper.cu — the sm_90a attention rungs (04..10) against a CPU double
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

#include "kernels/attention/attention.h"
#include "kernels/attention/hopper_rungs.h"
#include "kernels/common/check.h"
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
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v) {
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
        double mx = -1e300;
        for (int j = 0; j <= last; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += double(Qi[d]) * K[size_t(j) * D + d];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= last; ++j) sum += (p[j] = std::exp(p[j] - mx));
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

  // Compare; bf16 output and bf16 P in the P V product: |err| <= 1.5e-2 + 2e-2 |ref|.
  size_t bad = 0, worst = 0, first_bad = SIZE_MAX;
  double worst_err = 0;
  std::vector<char> bad_row(size_t(c.B) * c.Hq * c.Sq, 0);
  for (size_t i = 0; i < ob.size(); ++i) {
    const double got = from_bf16_bits(ob[i]), want = in.ref[i];
    const double err = std::isfinite(got) ? std::fabs(got - want) : 1e30;
    if (err > 1.5e-2 + 2e-2 * std::fabs(want)) {
      ++bad;
      bad_row[i / c.D] = 1;
      if (first_bad == SIZE_MAX) first_bad = i;
    }
    if (err > worst_err) worst_err = err, worst = i;
  }
  if (!bad) return "";
  auto where = [&](size_t i) {
    std::ostringstream s;
    const size_t d = i % c.D, row = i / c.D, q = row % c.Sq, h = (row / c.Sq) % c.Hq,
                 b = row / (size_t(c.Sq) * c.Hq);
    s << "(b=" << b << " h=" << h << " q=" << q << " d=" << d << ": got "
      << from_bf16_bits(ob[i]) << " want " << in.ref[i] << ")";
    return s.str();
  };
  size_t rows_bad = 0;
  for (char x : bad_row) rows_bad += x;
  std::ostringstream s;
  s << "rung " << number << " " << r.name << " on " << describe(c) << ": " << bad << "/"
    << ob.size() << " elements wrong in " << rows_bad << "/" << bad_row.size()
    << " rows; first " << where(first_bad) << ", worst " << where(worst);
  return s.str();
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
    // 70 KV heads x 5 row tiles = 350 items > SMs: the persistent rungs (08, 10) go through
    // their tile counter, and every later case checks that the counter was reset.
    {"persistent: more items than SMs, GQA 2:1 causal", 1, 140, 70, 300, 300, 64, true},
    {"rising scores: the row max moves late (rescale path)", 1, 2, 2, 200, 1500, 128, false, true},
    {"rising scores causal GQA", 1, 4, 2, 700, 1100, 128, true, true},
    {"rising scores D=64", 1, 2, 1, 300, 1300, 64, false, true},
};

// Inputs and reference per case, built once and shared by the six rungs.
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
  if (!ran) GTEST_SKIP() << "rung " << number << " ran no case: " << skip_reason;
}

TEST_P(HopperAttention, Deterministic) {
  KL_REQUIRE_GPU();
  const int number = GetParam();
  const Case c = number == 9 ? Case{"decode", 1, 16, 2, 1, 3000, 128, false}
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

INSTANTIATE_TEST_SUITE_P(Rungs, HopperAttention, ::testing::Values(4, 5, 6, 7, 8, 9, 10),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "rung" + std::to_string(i.param);
                         });

// The table carries the Hopper rungs in order, each with a name and a change.
TEST(HopperAttentionTable, RungsListed) {
  const auto& t = kl::attention_rungs();
  for (int n = 4; n <= 10; ++n) {
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
  for (int n = 4; n <= 10; ++n) {
    const auto& r = rung(n);
    kl::AttentionArgs b = a;
    b.D = 96;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": D=96 accepted";
    b = a;
    b.Hkv = 3;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": Hq % Hkv != 0 accepted";
    b = a;
    b.Sq = 9;
    EXPECT_FALSE(r.supports(b, d).empty()) << n << ": Sq > Skv accepted";
    b = a;
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
