// tests/test_gpu_rope.cu — every RoPE rung on shapes of both layouts (T = 1, odd T, GQA and MHA,
// D = 64 and 128, prefill and decode) against the CPU double reference (tests/rope_test_util.h:
// half a bf16 ulp plus 2e-5, a relative-L2 gate, cache rows no position names left bit for bit);
// misaligned pointers (the vector rungs refuse, rung 00 and the entry point compute); positions up
// to 2^24 and negative ones; positions outside the cache; refusals that launch nothing; the pick.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kl/rope.h"
#include "tests/gpu_test.h"
#include "tests/rope_test_util.h"

namespace {

using namespace kl;
using rope_test::Problem;
using rope_test::Shape;

Shape tokens(int B, int S, int Hq, int Hkv, int D) {
  Shape s;
  s.B = B;
  s.S = S;
  s.Hq = Hq;
  s.Hkv = Hkv;
  s.D = D;
  return s;
}
Shape attention(int B, int S, int Hq, int Hkv, int D, int L) {
  Shape s = tokens(B, S, Hq, Hkv, D);
  s.layout = RopeLayout::attention;
  s.L = L;
  return s;
}

// Tokens layout: T = 1, odd T, MHA, GQA 4 and 3, D 64 and 128. Attention layout: decode (S = 1,
// one or several sequences at their own positions), prefill with S < L and with S = L (the cache
// full), GQA 4 and 32/8.
const std::vector<Shape> kShapes = {
    tokens(1, 1, 1, 1, 64),         tokens(1, 7, 4, 4, 128),         tokens(3, 5, 8, 2, 64),
    tokens(2, 33, 32, 8, 128),      tokens(1, 257, 12, 4, 64),       tokens(1, 1, 32, 8, 128),
    attention(1, 1, 32, 8, 128, 64), attention(4, 1, 8, 2, 64, 37),  attention(2, 33, 8, 2, 128, 40),
    attention(3, 5, 4, 4, 64, 5),   attention(1, 7, 4, 1, 128, 100), attention(5, 3, 12, 4, 64, 11),
};

std::vector<int> positions_for(const Shape& sh, uint64_t seed, int first = 0) {
  std::mt19937_64 g(seed);
  return rope_test::prefill_positions(sh, g, first);
}

TEST(RopeGpu, EveryRungEveryShape) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  kl::test::RungCoverage cov(rope_rungs());
  uint64_t seed = 1;
  for (const auto& r : rope_rungs())
    for (Shape sh : kShapes)
      for (int off : {0, 1}) {
        sh.off_in = sh.off_out = off;
        ++seed;
        Problem p(sh, positions_for(sh, seed, static_cast<int>(seed % 3) * 1000), seed);
        const RopeArgs a = p.args();
        const std::string what = "rung " + std::to_string(r.number) + " " + r.name + " " + sh.str();
        SCOPED_TRACE(what);
        const std::string why = r.supports(a, d);
        if (!why.empty()) {
          // Only the layout (rungs 01, 02, 03) and the alignment (the vector rungs) are reasons to refuse.
          const bool layout = (r.number == 1 && sh.layout != RopeLayout::tokens) ||
                              (r.number >= 2 && sh.layout != RopeLayout::attention);
          EXPECT_TRUE(layout || (off == 1 && r.number >= 1)) << "refused: " << why;
          cov.refused(r.number, sh.str(), why);
          continue;
        }
        launch_checked(r, a, 0);
        EXPECT_TRUE(p.check(what));
        cov.ran(r.number);
      }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(RopeGpu, EntryPointComputesEveryShapeAndAlignment) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  uint64_t seed = 100;
  for (Shape sh : kShapes)
    for (int off : {0, 1}) {
      sh.off_in = sh.off_out = off;
      Problem p(sh, positions_for(sh, ++seed), seed);
      const RopeArgs a = p.args();
      const Rung<RopeArgs>* picked = rope_pick(a, d);
      ASSERT_NE(picked, nullptr) << sh.str();
      // Aligned: the vector rung of the layout (attention: rung 02 launched programmatic-dependent,
      // rung 03); misaligned: rung 00.
      EXPECT_EQ(picked->number, off ? 0 : (sh.layout == RopeLayout::tokens ? 1 : 3)) << sh.str();
      rope(a, 0);
      EXPECT_TRUE(p.check("entry " + sh.str()));
    }
}

TEST(RopeGpu, LargeAndNegativePositions) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  uint64_t seed = 200;
  // Tokens layout: runs of 64 positions ending at 2^17, 2^20 and 2^24 (the accuracy bound's end),
  // and starting at -2^17; theta 500000 and 10000.
  for (const auto& r : rope_rungs())
    for (int D : {64, 128})
      for (float theta : {500000.f, 10000.f})
        for (int first : {(1 << 17) - 32, (1 << 20) - 63, (1 << 24) - 63, -(1 << 17)}) {
          Shape sh = tokens(2, 32, 4, 2, D);
          sh.theta = theta;
          Problem p(sh, positions_for(sh, ++seed, first), seed);
          const RopeArgs a = p.args();
          if (!r.supports(a, d).empty()) continue;  // rung 02: the attention layout below
          launch_checked(r, a, 0);
          EXPECT_TRUE(p.check("rung " + std::to_string(r.number) + " " + sh.str() + " first position " +
                              std::to_string(first)));
        }
  // Attention layout: a cache of 2^17 + 16 rows, prefill at its end and decode steps near it.
  for (const auto& r : rope_rungs())
    for (int S : {16, 1}) {
      Shape sh = attention(2, S, 4, 1, 128, (1 << 17) + 16);
      std::vector<int> pos(sh.T());
      for (long long t = 0; t < sh.T(); ++t) pos[t] = sh.L - S + static_cast<int>(t % S) - static_cast<int>(t / S);
      Problem p(sh, pos, ++seed);
      const RopeArgs a = p.args();
      if (!r.supports(a, d).empty()) continue;  // rung 01: tokens only
      launch_checked(r, a, 0);
      EXPECT_TRUE(p.check("rung " + std::to_string(r.number) + " " + sh.str()));
    }
}

TEST(RopeGpu, PositionsOutsideTheCacheWriteNoRow) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  // Decode: 4 sequences at -1, L, 3 and L - 1: the first two write q only.
  const Shape sh = attention(4, 1, 8, 2, 128, 16);
  int ran = 0;
  for (const auto& r : rope_rungs()) {
    Problem p(sh, {-1, 16, 3, 15}, 300 + r.number);
    const RopeArgs a = p.args();
    if (!r.supports(a, d).empty()) continue;
    launch_checked(r, a, 0);
    EXPECT_TRUE(p.check("rung " + std::to_string(r.number) + " positions -1, L, 3, L-1"));
    ++ran;
  }
  EXPECT_EQ(ran, 3);  // rungs 00, 02 and 03
  Problem p(sh, {-1, 16, 3, 15}, 310);
  rope(p.args(), 0);
  EXPECT_TRUE(p.check("entry positions -1, L, 3, L-1"));
}

TEST(RopeGpu, RefusalsLaunchNothing) {
  KL_REQUIRE_GPU();
  for (Shape sh : {tokens(2, 5, 8, 2, 128), attention(2, 5, 8, 2, 128, 8)}) {
    sh.off_in = sh.off_out = 1;  // misaligned: the vector rungs refuse
    Problem p(sh, positions_for(sh, 7), 7);
    std::vector<std::pair<std::string, RopeArgs>> bad;
    RopeArgs a = p.args();
    a.D = 96;
    bad.push_back({"D = 96", a});
    a = p.args();
    a.theta = 0.f;
    bad.push_back({"theta = 0", a});
    a = p.args();
    a.q_out = const_cast<void*>(a.qkv);
    bad.push_back({"q_out = qkv", a});
    a = p.args();
    a.pos = nullptr;
    bad.push_back({"pos null", a});
    for (const auto& r : rope_rungs()) {
      SCOPED_TRACE("rung " + std::to_string(r.number) + " " + sh.str());
      for (const auto& [what, args] : bad) EXPECT_THROW(launch_checked(r, args, 0), BadArgument) << what;
      if (r.number >= 1) EXPECT_THROW(launch_checked(r, p.args(), 0), BadArgument) << "misaligned";
    }
    for (const auto& [what, args] : bad) EXPECT_THROW(rope(args, 0), BadArgument) << what;
    KL_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(p.untouched()) << sh.str() << ": a refused launch wrote output";
  }
}

TEST(RopeGpu, ZeroTokensIsANoOp) {
  KL_REQUIRE_GPU();
  for (RopeLayout layout : {RopeLayout::tokens, RopeLayout::attention}) {
    RopeArgs a;
    a.B = 0;
    a.S = 4;
    a.Hq = 8;
    a.Hkv = 2;
    a.D = 64;
    a.L = 4;
    a.layout = layout;
    for (const auto& r : rope_rungs())
      if (r.supports(a, device_info()).empty()) EXPECT_NO_THROW(r.launch(a, 0));
    EXPECT_NO_THROW(rope(a, 0));
  }
  KL_CHECK(cudaDeviceSynchronize());
}

}  // namespace
