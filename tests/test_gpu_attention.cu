// tests/test_gpu_attention.cu — every attention rung (both parts of the table) against the CPU
// double reference on small random shapes (all rows checked), the entry point with and without a
// workspace, bitwise determinism, and refusals through launch_checked / attention().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "kl/attention.h"
#include "kernels/attention/attention_internal.h"  // attention_flash_split_kv_workspace_bytes: does rung 03 split here?
#include "tests/attention_test_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;
using namespace kl::bench;

using Case = kl::test::AttnCase;

const std::vector<Case> kCases = {
    {1, 2, 1, 77, 77, 64, true},       // ragged single tile, GQA 2:1
    {2, 4, 2, 33, 200, 128, true},     // Sq < Skv, causal diagonal at the end, small-query tile
    {1, 3, 3, 130, 130, 128, false},   // two query tiles, ragged
    {2, 8, 2, 1, 1000, 128, true},     // decode: GQA heads packed, ragged last key tile
    {1, 4, 1, 5, 300, 64, true},       // decode Sq = 5 causal: 20 packed rows = two 16-row tiles
    {1, 2, 2, 300, 517, 64, false},    // non-causal Sq < Skv, D = 64
    {1, 1, 1, 1, 1, 128, false},       // one key
    {1, 16, 16, 16, 16, 128, true},    // Sq = Skv = 16 causal (decode path, square)
    {1, 4, 4, 256, 1024, 128, false},  // few tiles: rung 03 splits every tile's KV range
    {1, 4, 2, 192, 192, 64, true},     // causal, 128-row tiles, last tile ragged
    {1, 2, 1, 260, 400, 128, true},    // causal, Sq < Skv, GQA, 3 query tiles: diagonal in each m-tile
};

// The shared problem plus the workspace every rung of this table may use.
struct Problem : kl::test::AttnProblem {
  DeviceBuffer ws;
  size_t ws_bytes = 0;
  AttentionArgs args(bool with_ws = true) const {
    return with_ws ? AttnProblem::args(ws.ptr, ws_bytes) : AttnProblem::args();
  }
};

Problem make_problem(const Case& c, uint64_t seed) {
  Problem p;
  static_cast<kl::test::AttnProblem&>(p) = kl::test::make_attn_problem(c, seed);
  p.ws_bytes = attention_workspace_bytes(c.shape(), device_info());
  p.ws = DeviceBuffer(std::max<size_t>(p.ws_bytes, 256));
  return p;
}

TEST(AttentionGpu, EveryRungMatchesReference) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  uint64_t seed = 1234;
  kl::test::RungCoverage cov(attention_rungs());
  for (const Case& c : kCases) {
    Problem p = make_problem(c, seed++);
    const AttentionArgs a = p.args();
    const AttentionCheck chk = attention_reference_sampled(a, 0, 1, 1LL << 40);  // all rows
    for (const auto& r : attention_rungs()) {
      const std::string what = "rung " + std::to_string(r.number) + " (" + r.name + ") on " + c.str();
      const std::string why = r.supports(a, d);
      if (!why.empty()) {
        // Part-1 rungs take every valid shape on sm_80+; later rungs may decline with a reason.
        EXPECT_GT(r.number, 3) << what << " refused: " << why;
        std::printf("  [skip] %s: %s\n", what.c_str(), why.c_str());
        cov.refused(r.number, c.str(), why);
        continue;
      }
      poison(p.o.ptr, 2 * p.nQ);
      launch_checked(r, a, 0);
      KL_CHECK(cudaDeviceSynchronize());
      EXPECT_TRUE(kl::test::attention_verdict(attention_check_output(a, chk), a, chk, what));
      cov.ran(r.number);
    }
  }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(AttentionGpu, EntryPointWithAndWithoutWorkspace) {
  KL_REQUIRE_GPU();
  uint64_t seed = 99;
  for (const Case& c : kCases) {
    Problem p = make_problem(c, seed++);
    for (bool ws : {true, false}) {
      const AttentionArgs a = p.args(ws);
      const AttentionCheck chk = attention_reference_sampled(a, 0, 1, 1LL << 40);
      poison(p.o.ptr, 2 * p.nQ);
      attention(a, 0);
      KL_CHECK(cudaDeviceSynchronize());
      const Rung<AttentionArgs>* r = attention_pick(a, device_info());
      EXPECT_TRUE(kl::test::attention_verdict(
          attention_check_output(a, chk), a, chk,
          "attention() (picked rung " + std::to_string(r ? r->number : -1) + ", workspace " +
              (ws ? "given" : "none") + ") on " + c.str()));
    }
  }
}

// The entry point's shape classes on an sm_90a GPU (the lists in attention.cu): D = 64 takes 15,
// short KV ranges at D = 128 14, long causal ones 08, long non-causal ones 06, decode 03.
TEST(AttentionGpu, EntryPointPicksPerShapeClass) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  if (!require_sm90a(d).empty()) GTEST_SKIP() << "the lists start with sm_90a rungs: " << require_sm90a(d);
  alignas(16) static __nv_bfloat16 dummy[64];
  struct Want { int B, Hq, Hkv, Sq, Skv, D; bool causal; int rung; };
  const Want wants[] = {
      {16, 32, 32, 512, 512, 64, true, 15},    {8, 32, 32, 1024, 1024, 64, false, 15},
      {2, 12, 4, 1000, 1234, 64, true, 15},    {16, 32, 32, 512, 512, 128, true, 14},
      {8, 32, 32, 1024, 1024, 128, false, 14}, {1, 32, 32, 4096, 4096, 128, true, 8},
      {1, 32, 32, 4096, 4096, 64, false, 15},  {1, 32, 32, 8192, 8192, 64, true, 15},
      {1, 32, 32, 4096, 4096, 128, false, 6},  {1, 32, 8, 1, 4096, 128, true, 3},
  };
  for (const Want& w : wants) {
    AttentionArgs a;
    a.Q = a.K = a.V = dummy;
    a.O = dummy;
    a.B = w.B, a.Hq = w.Hq, a.Hkv = w.Hkv, a.Sq = w.Sq, a.Skv = w.Skv, a.D = w.D, a.causal = w.causal;
    const Rung<AttentionArgs>* r = attention_pick(a, d);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->number, w.rung) << "B=" << w.B << " S=" << w.Sq << "/" << w.Skv << " D=" << w.D
                                 << (w.causal ? " causal" : "") << ": picked " << r->name;
  }
}

TEST(AttentionGpu, BitwiseDeterministic) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  for (const Case& c : {kCases[3], kCases[8], kCases[1]}) {
    Problem p = make_problem(c, 4242);
    const AttentionArgs a = p.args();
    for (const auto& r : attention_rungs()) {
      if (!r.supports(a, d).empty()) continue;
      std::vector<uint16_t> first(p.nQ), again(p.nQ);
      for (int run = 0; run < 3; ++run) {
        poison(p.o.ptr, 2 * p.nQ);
        launch_checked(r, a, 0);
        KL_CHECK(cudaDeviceSynchronize());
        KL_CHECK(cudaMemcpy(run ? again.data() : first.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
        if (run) {
          size_t diff = 0;
          for (size_t i = 0; i < p.nQ; ++i) diff += first[i] != again[i];
          EXPECT_EQ(diff, 0u) << "rung " << r.number << " (" << r.name << ") on " << c.str()
                              << ": run " << run << " differs from run 0 in " << diff << " elements";
        }
      }
    }
  }
}

// Rung 03 on a non-causal prefill whose last wave is a small tail (tiles = W + 6 at W = 2 blocks x
// SMs): the tail tiles are split and merged by the combine kernel, whose map must place them by the
// non-causal (head-major) tile order of flash::tile_of. Checked against rung 02 (every tile whole,
// validated above) on ALL rows: a misplaced tile errs by O(|O|), the split's own rounding by ~1e-3.
TEST(AttentionGpu, TailSplitNonCausalMatchesRung02) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  const int H = d.sms + 3;  // 2 query tiles per head: 2 * SMs + 6 tiles
  Problem p = make_problem({1, H, H, 256, 256, 64, false}, 777);
  const AttentionArgs a = p.args();
  const auto& rs = attention_rungs();
  auto rung = [&](int n) {
    const auto it = std::find_if(rs.begin(), rs.end(), [&](const auto& r) { return r.number == n; });
    KL_REQUIRE(it != rs.end(), "attention rung " << n << " is not in the table");
    KL_REQUIRE(it->supports(a, d).empty(), "rung " << n << " refuses " << a.Hq << " heads: " << it->supports(a, d));
    return *it;
  };
  if (attention_flash_split_kv_workspace_bytes(a, d) == 0)
    GTEST_SKIP() << "rung 03's plan on this device splits no tail at " << a.Hq * 2 << " tiles";
  std::vector<uint16_t> o2(p.nQ), o3(p.nQ);
  for (int n : {2, 3}) {
    poison(p.o.ptr, 2 * p.nQ);
    launch_checked(rung(n), a, 0);
    KL_CHECK(cudaDeviceSynchronize());
    KL_CHECK(cudaMemcpy(n == 2 ? o2.data() : o3.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < p.nQ; ++i) {
    const double x = bf16_bits_to_float(o3[i]), y = bf16_bits_to_float(o2[i]);
    if (!(std::fabs(x - y) <= 1e-2 + 1e-2 * std::fabs(y)) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << "rung 03 vs rung 02 on " << a.Hq << " heads: " << bad << " elements differ, first at "
                     << first << " (head " << first / (256 * 64) << ", row " << first / 64 % 256 << ")";
}

// Rung 11 (rung 03's tile fed by TMA) runs rung 03's math in rung 03's order, so with no workspace
// (every tile whole in both) its output is rung 03's, bit for bit: a wrong swizzle, panel offset,
// zero-fill or barrier phase shows up as a difference. Shapes: B > 1, GQA, D = 64 and 128, causal
// and not, Sq over one 128-row tile and ragged, Skv not a multiple of the 64-key tile, the 64-row
// tile (Sq <= 64). With a workspace (rung 11's own tail split where its plan splits) against the
// CPU reference, and a tail-split shape (tiles = SMs + a few) against rung 03 unsplit.
TEST(AttentionGpu, TmaMmaSyncMatchesRung03) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  const auto& rs = attention_rungs();
  const auto it11 = std::find_if(rs.begin(), rs.end(), [](const auto& r) { return r.number == 11; });
  const auto it03 = std::find_if(rs.begin(), rs.end(), [](const auto& r) { return r.number == 3; });
  ASSERT_TRUE(it11 != rs.end() && it03 != rs.end());
  const std::vector<Case> cases = {
      {2, 4, 2, 200, 333, 128, false},  // B = 2, GQA, 2 ragged query tiles, ragged key tile
      {2, 4, 2, 200, 333, 128, true},
      {1, 6, 2, 300, 300, 64, true},    // D = 64, 3 query tiles, causal diagonal in each
      {1, 3, 1, 257, 1000, 64, false},  // one row past 2 tiles
      {1, 4, 4, 64, 130, 128, true},    // 64-row tile, Skv = 2 tiles + 2 keys
      {3, 2, 2, 40, 100, 64, false},    // 64-row tile, D = 64, B = 3
      {1, 2, 1, 129, 129, 128, true},   // Sq = one tile + 1
      {1, 4, 4, 256, 1024, 128, false}, // few tiles: split when a workspace is given
  };
  uint64_t seed = 5150;
  for (const Case& c : cases) {
    Problem p = make_problem(c, seed++);
    const AttentionArgs a = p.args(false);
    const std::string why = it11->supports(a, d);
    if (!why.empty()) {
      ASSERT_LT(d.cc(), 90) << "rung 11 refuses " << c.str() << " on sm_" << d.cc() << ": " << why;
      GTEST_SKIP() << "rung 11: " << why;
    }
    std::vector<uint16_t> o3(p.nQ), o11(p.nQ);
    for (const auto* r : {&*it03, &*it11}) {
      poison(p.o.ptr, 2 * p.nQ);
      launch_checked(*r, a, 0);
      KL_CHECK(cudaDeviceSynchronize());
      KL_CHECK(cudaMemcpy(r == &*it03 ? o3.data() : o11.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
    }
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < p.nQ; ++i)
      if (o3[i] != o11[i] && diff++ == 0) first = i;
    EXPECT_EQ(diff, 0u) << "rung 11 vs rung 03 (no workspace) on " << c.str() << ": " << diff
                        << " elements differ, first at " << first << " (row " << first / c.D << ")";
    const AttentionArgs aw = p.args(true);
    const AttentionCheck chk = attention_reference_sampled(aw, 0, 1, 1LL << 40);
    poison(p.o.ptr, 2 * p.nQ);
    launch_checked(*it11, aw, 0);
    KL_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kl::test::attention_verdict(attention_check_output(aw, chk), aw, chk,
                                            "rung 11 with workspace on " + c.str()));
  }
  // Tail split: 2 query tiles per head, SMs + 3 heads (the 128-row tiles run one block per SM).
  const int H = d.sms + 3;
  Problem p = make_problem({1, H, H, 256, 256, 64, false}, 778);
  const AttentionArgs aw = p.args(true), a0 = p.args(false);
  if (attention_tma_mma_sync_workspace_bytes(aw, d) == 0)
    GTEST_SKIP() << "rung 11's plan on this device splits no tail at " << H * 2 << " tiles";
  std::vector<uint16_t> o3(p.nQ), o11(p.nQ);
  poison(p.o.ptr, 2 * p.nQ);
  launch_checked(*it03, a0, 0);
  KL_CHECK(cudaDeviceSynchronize());
  KL_CHECK(cudaMemcpy(o3.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
  poison(p.o.ptr, 2 * p.nQ);
  launch_checked(*it11, aw, 0);
  KL_CHECK(cudaDeviceSynchronize());
  KL_CHECK(cudaMemcpy(o11.data(), p.o.ptr, 2 * p.nQ, cudaMemcpyDeviceToHost));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < p.nQ; ++i) {
    const double x = bf16_bits_to_float(o11[i]), y = bf16_bits_to_float(o3[i]);
    if (!(std::fabs(x - y) <= 1e-2 + 1e-2 * std::fabs(y)) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << "rung 11 (tail split) vs rung 03 on " << H << " heads: " << bad
                     << " elements differ, first at " << first;
}

TEST(AttentionGpu, RefusesBadInput) {
  KL_REQUIRE_GPU();
  Problem p = make_problem({1, 4, 2, 64, 64, 128, true}, 7);
  const DeviceInfo& d = device_info();
  auto expect_refused = [&](AttentionArgs a, const std::string& what) {
    for (const auto& r : attention_rungs()) {
      EXPECT_FALSE(r.supports(a, d).empty()) << "rung " << r.number << " accepts " << what;
      EXPECT_THROW(launch_checked(r, a, 0), BadArgument) << "rung " << r.number << ": " << what;
    }
    EXPECT_THROW(attention(a, 0), BadArgument) << "attention(): " << what;
  };
  AttentionArgs a = p.args();
  { AttentionArgs b = a; b.D = 96; expect_refused(b, "D=96"); }
  { AttentionArgs b = a; b.Hkv = 3; expect_refused(b, "Hq=4, Hkv=3"); }
  { AttentionArgs b = a; b.Sq = 65; expect_refused(b, "Sq > Skv"); }
  { AttentionArgs b = a; b.O = b.O + 1; expect_refused(b, "O misaligned by 2 bytes"); }
  { AttentionArgs b = a; b.K = nullptr; expect_refused(b, "null K"); }
  { AttentionArgs b = a; b.B = 0; expect_refused(b, "B=0"); }
  KL_CHECK(cudaDeviceSynchronize());  // nothing was launched
}

}  // namespace
