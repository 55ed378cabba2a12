// tests/test_cpu_attention.cpp — the CPU double attention reference on hand-checked cases, the row
// sampler, the FLOP/byte accounting, and the part-1 rungs' refusals (no GPU needed: supports()
// takes a DeviceInfo and launches nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "bench/attention_check.h"
#include "kl/attention.h"
#include "kernels/attention/reference.h"
#include "tests/fake_device.h"

namespace {

using namespace kl;

TEST(AttentionReference, VisibleKeys) {
  EXPECT_EQ(attention_visible_keys(0, 3, 5, false), 5);
  EXPECT_EQ(attention_visible_keys(0, 3, 5, true), 3);  // diagonal aligned to the end: 0 + 2 + 1
  EXPECT_EQ(attention_visible_keys(2, 3, 5, true), 5);
  EXPECT_EQ(attention_visible_keys(0, 1, 4096, true), 4096);  // decode sees the whole cache
  EXPECT_EQ(attention_visible_keys(7, 8, 8, true), 8);
  EXPECT_EQ(attention_visible_keys(0, 8, 8, true), 1);
}

TEST(AttentionReference, OneKeyReturnsItsValue) {
  const int D = 4;
  std::vector<float> q = {1, 2, 3, 4}, k = {0.5f, -1, 2, 0}, v = {3, -2, 0.25f, 7};
  double out[D];
  attention_reference_row(q.data(), k.data(), v.data(), 1, D, 0.5, out);
  for (int d = 0; d < D; ++d) EXPECT_DOUBLE_EQ(out[d], v[d]);
}

TEST(AttentionReference, TwoKeysHandComputed) {
  // q.k0 = 2, q.k1 = 0, scale 0.5: weights e^1 / (e^1 + e^0) and 1 / (e + 1).
  const int D = 2;
  std::vector<float> q = {1, 1}, k = {1, 1, 0, 0}, v = {1, 0, 0, 1};
  double out[D];
  attention_reference_row(q.data(), k.data(), v.data(), 2, D, 0.5, out);
  const double w0 = std::exp(1.0) / (std::exp(1.0) + 1.0);
  EXPECT_NEAR(out[0], w0, 1e-15);
  EXPECT_NEAR(out[1], 1 - w0, 1e-15);
  // Only the first key visible: exactly v0.
  attention_reference_row(q.data(), k.data(), v.data(), 1, D, 0.5, out);
  EXPECT_DOUBLE_EQ(out[0], 1);
  EXPECT_DOUBLE_EQ(out[1], 0);
}

TEST(AttentionReference, LargeScoresStayFinite) {
  const int D = 1;
  std::vector<float> q = {1000}, k = {1000, 999}, v = {2, 4};
  double out[1];
  attention_reference_row(q.data(), k.data(), v.data(), 2, D, 1.0, out);
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_NEAR(out[0], 2, 1e-12);  // e^-1000 weight on the second key
}

TEST(AttentionReference, ZeroQueryAveragesVisibleValues) {
  // q = 0: uniform weights. Causal, Sq = 2, Skv = 3: row 0 sees keys 0..1, row 1 sees 0..2.
  AttentionArgs s;
  s.B = 1; s.Hq = 2; s.Hkv = 1; s.Sq = 2; s.Skv = 3; s.D = 64; s.causal = true;
  std::vector<float> Q(2 * 2 * 64, 0.f), K(3 * 64), V(3 * 64);
  for (int j = 0; j < 3; ++j)
    for (int d = 0; d < 64; ++d) {
      K[j * 64 + d] = 0.1f * (j + d);
      V[j * 64 + d] = static_cast<float>(j * 10 + d);
    }
  std::vector<double> O = attention_reference(Q, K, V, s);
  for (int h = 0; h < 2; ++h)  // both query heads read KV head 0 (GQA)
    for (int d = 0; d < 64; ++d) {
      EXPECT_NEAR(O[((h * 2) + 0) * 64 + d], (0 + 10) / 2.0 + d, 1e-12);
      EXPECT_NEAR(O[((h * 2) + 1) * 64 + d], (0 + 10 + 20) / 3.0 + d, 1e-12);
    }
}

TEST(AttentionCheck, RowsCoverEveryBatchHeadPair) {
  AttentionArgs s;
  s.B = 2; s.Hq = 8; s.Hkv = 2; s.Sq = 4096; s.Skv = 4096; s.D = 128;
  const long long pairs = 16, total = pairs * s.Sq;
  auto rows = bench::attention_check_rows(s, 64, 42, false);
  EXPECT_EQ(rows.size(), 64u);  // 3 corners + one row per pair, topped up with random rows
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::set<long long>(rows.begin(), rows.end()).size(), rows.size());
  std::set<long long> covered;
  for (long long r : rows) {
    ASSERT_GE(r, 0);
    ASSERT_LT(r, total);
    covered.insert(r / s.Sq);
  }
  EXPECT_EQ(static_cast<long long>(covered.size()), pairs);
  EXPECT_TRUE(std::count(rows.begin(), rows.end(), s.Sq - 1));  // the longest causal row
  EXPECT_TRUE(std::count(rows.begin(), rows.end(), total - 1));  // the last row of the last head
  EXPECT_EQ(bench::attention_check_rows(s, 64, 42, false), rows);  // deterministic for a seed
  // More pairs than the sample size: still one row of every pair.
  s.B = 8; s.Hq = 32; s.Sq = 2;
  auto many = bench::attention_check_rows(s, 64, 7, false);
  std::set<long long> pairs_seen;
  for (long long r : many) pairs_seen.insert(r / s.Sq);
  EXPECT_EQ(pairs_seen.size(), 256u);
  // Every row when asked.
  AttentionArgs t = s;
  t.B = 1; t.Hq = 2; t.Hkv = 1; t.Sq = 3;
  auto all = bench::attention_check_rows(t, 64, 1, true);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[5], 5);
}

TEST(AttentionReference, FlopAndByteAccounting) {
  AttentionArgs s;
  s.B = 2; s.Hq = 4; s.Hkv = 2; s.Sq = 3; s.Skv = 5; s.D = 64;
  EXPECT_DOUBLE_EQ(bench::attention_flops(s), 4.0 * 2 * 4 * 64 * 15);
  s.causal = true;  // rows see 3, 4, 5 keys
  EXPECT_DOUBLE_EQ(bench::attention_flops(s), 4.0 * 2 * 4 * 64 * 12);
  EXPECT_DOUBLE_EQ(bench::attention_bytes(s), 2.0 * 64 * (2 * 2 * 4 * 3 + 2 * 2 * 2 * 5));
  s.Sq = s.Skv = 4096;  // square causal: S(S+1)/2 pairs
  EXPECT_DOUBLE_EQ(bench::attention_pairs(s), 4096.0 * 4097 / 2);
}

using kl::test::fake_h200;

TEST(AttentionRefusals, PartOneRungsSayWhy) {
  alignas(16) static uint16_t buf[64];
  const auto* p = reinterpret_cast<__nv_bfloat16*>(buf);
  AttentionArgs a;
  a.Q = a.K = a.V = p;
  a.O = const_cast<__nv_bfloat16*>(p);
  a.B = 1; a.Hq = 4; a.Hkv = 2; a.Sq = 64; a.Skv = 64; a.D = 128; a.causal = true;
  const DeviceInfo d = fake_h200();
  struct Bad { const char* what; AttentionArgs a; const char* needle; };
  std::vector<Bad> bad;
  { AttentionArgs b = a; b.D = 96; bad.push_back({"D=96", b, "D=96"}); }
  { AttentionArgs b = a; b.Hkv = 3; bad.push_back({"Hq % Hkv", b, "multiple of Hkv"}); }
  { AttentionArgs b = a; b.Sq = 65; bad.push_back({"Sq > Skv", b, "Skv"}); }
  { AttentionArgs b = a; b.O = b.O + 1; bad.push_back({"misaligned O", b, "aligned"}); }
  { AttentionArgs b = a; b.V = nullptr; bad.push_back({"null V", b, "null"}); }
  { AttentionArgs b = a; b.Skv = 0; b.Sq = 0; bad.push_back({"empty", b, ">= 1"}); }
  { AttentionArgs b = a; b.scale = -1.f; bad.push_back({"negative scale", b, "scale"}); }
  for (const auto& r : attention_rungs()) {
    if (r.number > 3) continue;  // Hopper rungs query the device; tested on the GPU
    EXPECT_EQ(r.supports(a, d), "") << "rung " << r.number << " refuses a valid shape";
    for (const auto& b : bad) {
      const std::string why = r.supports(b.a, d);
      EXPECT_NE(why.find(b.needle), std::string::npos)
          << "rung " << r.number << " on " << b.what << ": reason '" << why << "'";
    }
    DeviceInfo old = d;
    old.cc_major = 7; old.cc_minor = 5;
    EXPECT_NE(r.supports(a, old).find("sm_80"), std::string::npos) << "rung " << r.number;
  }
}

// Rung 15 fits two CTAs per SM at D = 64 only; it refuses D = 128 before it asks the device.
TEST(AttentionRefusals, ShortTmaStoreIsD64Only) {
  alignas(16) static uint16_t buf[64];
  auto* p = reinterpret_cast<__nv_bfloat16*>(buf);
  AttentionArgs a;
  a.Q = a.K = a.V = a.O = p;
  a.B = 16; a.Hq = 32; a.Hkv = 32; a.Sq = 512; a.Skv = 512; a.D = 128; a.causal = false;
  const Rung<AttentionArgs>* r = find_rung(attention_rungs(), "15");
  ASSERT_NE(r, nullptr);
  EXPECT_STREQ(r->name, "short_tma_store");
  EXPECT_EQ(r->parent, 13);
  const std::string why = r->supports(a, fake_h200());
  EXPECT_NE(why.find("D = 64 only"), std::string::npos) << why;
  a.D = 96;  // not a head dim at all: the family's own reason comes first
  EXPECT_NE(r->supports(a, fake_h200()).find("D=96"), std::string::npos);
}

TEST(AttentionWorkspace, SplitShapesAskForScratch) {
  const DeviceInfo d = fake_h200();
  AttentionArgs a;
  a.B = 1; a.Hq = 32; a.Hkv = 8; a.Sq = 1; a.Skv = 32768; a.D = 128; a.causal = true;
  EXPECT_GT(attention_workspace_bytes(a, d), 0u);  // decode: 8 KV heads cannot fill 132 SMs
  a.Sq = a.Skv = 4096; a.Hkv = 32; a.causal = false;
  // 1024 tiles over 132 SMs leave a tail of 100 > half a wave: no split.
  EXPECT_EQ(attention_workspace_bytes(a, d), 0u);
  a.Sq = a.Skv = 1024; a.Hq = a.Hkv = 4;  // 32 tiles: every tile split
  EXPECT_GT(attention_workspace_bytes(a, d), 0u);
  a.D = 80;
  EXPECT_EQ(attention_workspace_bytes(a, d), 0u);
}

}  // namespace
