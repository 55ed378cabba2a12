// tests/test_cpu_rope.cpp — the RoPE CPU reference on hand-checked values (position 0 is the
// identity, single pairs at known angles, a large position), the kernels' angle reduction against
// the exact angle up to position 2^24, the byte/FLOP formulas, argument refusals that need no GPU,
// and the rung table (numbers, parents, names).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kernels/rope/rope_angle.h"
#include "kl/rope.h"

namespace {

using namespace kl;

// One token of Hq = Hkv = 1 heads: qkv = [q | k | v], each D wide.
struct OneToken {
  int D;
  std::vector<float> qkv;
  std::vector<double> q, k;
  explicit OneToken(int d) : D(d), qkv(3 * d, 0.f), q(d), k(d) {}
  void run(int pos, float theta) { rope_reference(qkv.data(), &pos, 0, 1, 1, 1, D, theta, q.data(), k.data()); }
};

TEST(RopeCpu, PositionZeroIsTheIdentity) {
  for (int D : {64, 128}) {
    OneToken x(D);
    for (int j = 0; j < 3 * D; ++j) x.qkv[j] = 0.25f * static_cast<float>(j % 17) - 2.f;
    x.run(0, 500000.f);
    for (int j = 0; j < D; ++j) {
      EXPECT_EQ(x.q[j], x.qkv[j]) << "D " << D << " q " << j;
      EXPECT_EQ(x.k[j], x.qkv[D + j]) << "D " << D << " k " << j;
    }
  }
}

TEST(RopeCpu, SinglePairsAtKnownAngles) {
  // Pair 0 has inv_freq 1: angle = pos. x = (1, 0) -> (cos, sin); x = (0, 1) -> (-sin, cos).
  OneToken x(64);
  x.qkv[0] = 1.f;       // q pair 0 = (1, 0)
  x.qkv[64 + 32] = 1.f;  // k pair 0 = (0, 1)
  x.qkv[1] = 2.f;       // q pair 1 = (2, 0): inv_freq_1 = 10000^(-2/64)
  x.run(1, 10000.f);
  EXPECT_NEAR(x.q[0], 0.5403023058681398, 1e-15);   // cos 1
  EXPECT_NEAR(x.q[32], 0.8414709848078965, 1e-15);  // sin 1
  EXPECT_NEAR(x.k[0], -0.8414709848078965, 1e-15);
  EXPECT_NEAR(x.k[32], 0.5403023058681398, 1e-15);
  x.run(3, 10000.f);  // pair 1 at angle 3 * 0.7498942093324559
  EXPECT_NEAR(x.q[1], 2 * -0.6279266524418038, 1e-14);
  EXPECT_NEAR(x.q[33], 2 * 0.7782725224195122, 1e-14);
  for (int j = 2; j < 32; ++j) EXPECT_EQ(x.q[j], 0.0);
}

TEST(RopeCpu, LargePosition) {
  OneToken x(128);
  x.qkv[0] = 1.f;  // pair 0 at angle 2^17 radians
  x.qkv[63] = 1.f;  // the slowest pair: inv_freq 500000^(-126/128) = 2.455140791131609e-06
  x.run(1 << 17, 500000.f);
  EXPECT_NEAR(x.q[0], 0.04209081525029623, 1e-11);   // cos(131072)
  EXPECT_NEAR(x.q[64], -0.9991137889507709, 1e-11);  // sin(131072)
  const double a = 131072 * 2.455140791131609e-06;
  EXPECT_NEAR(x.q[63], std::cos(a), 1e-12);
  EXPECT_NEAR(x.q[127], std::sin(a), 1e-12);
}

TEST(RopeCpu, RotationKeepsEachPairsLength) {
  OneToken x(128);
  for (int j = 0; j < 3 * 128; ++j) x.qkv[j] = std::sin(0.37f * j) * 3.f;
  for (int pos : {1, 77, 4095, 131071, 1 << 20}) {
    x.run(pos, 500000.f);
    for (int i = 0; i < 64; ++i) {
      const double in = std::hypot(double(x.qkv[i]), double(x.qkv[i + 64])), out = std::hypot(x.q[i], x.q[i + 64]);
      EXPECT_NEAR(out, in, 1e-12) << "pos " << pos << " pair " << i;
    }
  }
}

// The kernels' angle (rope_angle.h: a two-float turns table, the fractional turn formed exactly)
// against the exact angle, at positions up to 2^24: within 2^-21 radians modulo one turn. A plain
// fp32 product pos * float(inv_freq) is shown to miss that bound (the reason for the two-float turn).
TEST(RopeCpu, AngleWithin2PowMinus21RadiansUpTo2Pow24) {
  const double two_pi = 6.283185307179586476925286766559, bound = std::ldexp(1.0, -21);
  auto wrap = [&](double rad) { return rad - two_pi * std::nearbyint(rad / two_pi); };
  std::vector<int> positions = {0, 1, 2, 3, 7, 1000, 4095, 8191, 32767, 65535, 131071, 131072, 1 << 20,
                                (1 << 24) - 1, 1 << 24, -1, -131072};
  for (int k = 0; k < 200; ++k) positions.push_back(static_cast<int>((2654435761u * (k + 1)) % (1u << 24)));
  double worst = 0, worst_fp32 = 0;
  for (float theta : {10000.f, 500000.f})
    for (int D : {64, 128}) {
      const rope_detail::RopeFreqs f = rope_detail::rope_freqs(theta, D);
      for (int i = 0; i < D / 2; ++i) {
        const double inv_freq = std::pow(static_cast<double>(theta), -2.0 * i / D);
        for (int pos : positions) {
          const double exact = static_cast<double>(pos) * inv_freq;  // rel. error 2^-53: < 2^-28 rad
          const double got = two_pi * static_cast<double>(rope_detail::rope_turn(pos, f.turns[i]));
          const double err = std::fabs(wrap(got - exact));
          worst = std::max(worst, err);
          EXPECT_LE(err, bound) << "theta " << theta << " D " << D << " pair " << i << " pos " << pos;
          const float fp32 = static_cast<float>(pos) * static_cast<float>(inv_freq);
          if (std::abs(pos) <= (1 << 17)) worst_fp32 = std::max(worst_fp32, std::fabs(wrap(fp32 - exact)));
        }
      }
    }
  std::printf("  worst angle error %.3g rad (bound %.3g); a plain fp32 product: %.3g rad up to 2^17\n", worst,
              bound, worst_fp32);
  EXPECT_GT(worst_fp32, 16 * bound);
}

TEST(RopeCpu, Formulas) {
  RopeArgs a;
  a.B = 2;
  a.S = 3;
  a.Hq = 32;
  a.Hkv = 8;
  a.D = 128;
  EXPECT_DOUBLE_EQ(rope_bytes(a), 2.0 * 6 * 40 * 128 * 2 + 4.0 * 6);
  EXPECT_DOUBLE_EQ(rope_flops(a), 3.0 * 6 * 40 * 128);
  a.layout = RopeLayout::attention;  // v read and written too; the FLOPs do not change
  EXPECT_DOUBLE_EQ(rope_bytes(a), 2.0 * 6 * 48 * 128 * 2 + 4.0 * 6);
  EXPECT_DOUBLE_EQ(rope_flops(a), 3.0 * 6 * 40 * 128);
}

// Distinct fake addresses far enough apart for the overlap checks (never dereferenced).
RopeArgs valid_args(RopeLayout layout, uintptr_t misalign = 0) {
  RopeArgs a;
  a.B = 2;
  a.S = 3;
  a.Hq = 4;
  a.Hkv = 2;
  a.D = 64;
  a.L = 16;
  a.layout = layout;
  a.qkv = reinterpret_cast<const void*>(uintptr_t{1} << 20 | misalign);
  a.pos = reinterpret_cast<const int*>(uintptr_t{2} << 20);
  a.q_out = reinterpret_cast<void*>(uintptr_t{3} << 20);
  if (layout == RopeLayout::tokens) {
    a.k_out = reinterpret_cast<void*>(uintptr_t{4} << 20);
  } else {
    a.k_cache = reinterpret_cast<void*>(uintptr_t{5} << 20);
    a.v_cache = reinterpret_cast<void*>(uintptr_t{6} << 20);
  }
  return a;
}

TEST(RopeCpu, ArgumentChecks) {
  for (RopeLayout layout : {RopeLayout::tokens, RopeLayout::attention}) {
    SCOPED_TRACE(layout == RopeLayout::tokens ? "tokens" : "attention");
    const RopeArgs ok = valid_args(layout);
    EXPECT_EQ(rope_check_args(ok), "");
    auto refused = [&](auto edit, const char* what) {
      RopeArgs a = ok;
      edit(a);
      EXPECT_NE(rope_check_args(a), "") << what;
      EXPECT_THROW(rope(a, 0), BadArgument) << what;
    };
    refused([](RopeArgs& a) { a.D = 96; }, "D = 96");
    refused([](RopeArgs& a) { a.D = 256; }, "D = 256");
    refused([](RopeArgs& a) { a.Hkv = 0; }, "Hkv = 0");
    refused([](RopeArgs& a) { a.Hq = 0; }, "Hq = 0");
    refused([](RopeArgs& a) { a.B = -1; }, "B < 0");
    refused([](RopeArgs& a) { a.theta = 0.f; }, "theta = 0");
    refused([](RopeArgs& a) { a.theta = INFINITY; }, "theta = inf");
    refused([](RopeArgs& a) { a.theta = NAN; }, "theta = nan");
    refused([](RopeArgs& a) { a.qkv = nullptr; }, "qkv null");
    refused([](RopeArgs& a) { a.pos = nullptr; }, "pos null");
    refused([](RopeArgs& a) { a.pos = reinterpret_cast<const int*>(uintptr_t{2} << 20 | 2); }, "pos off 4 bytes");
    refused([](RopeArgs& a) { a.q_out = static_cast<char*>(a.q_out) + 1; }, "q_out off 2 bytes");
    refused([](RopeArgs& a) { a.layout = static_cast<RopeLayout>(5); }, "unknown layout");
    refused([](RopeArgs& a) { a.q_out = nullptr; }, "q_out null");
    refused([](RopeArgs& a) { a.q_out = const_cast<void*>(a.qkv); }, "q_out = qkv");
    refused([](RopeArgs& a) { a.q_out = static_cast<char*>(const_cast<void*>(a.qkv)) + 64; }, "q_out inside qkv");
    if (layout == RopeLayout::tokens) {
      refused([](RopeArgs& a) { a.k_out = nullptr; }, "k_out null");
      refused([](RopeArgs& a) { a.k_out = a.q_out; }, "k_out = q_out");
    } else {
      refused([](RopeArgs& a) { a.k_cache = nullptr; }, "k_cache null");
      refused([](RopeArgs& a) { a.v_cache = nullptr; }, "v_cache null");
      refused([](RopeArgs& a) { a.v_cache = a.k_cache; }, "v_cache = k_cache");
      refused([](RopeArgs& a) { a.L = 0; }, "L = 0");
      refused([](RopeArgs& a) { a.S = 17; }, "S > L");
    }
    RopeArgs empty = ok;  // no tokens: nothing to check, nothing to launch
    empty.B = 0;
    empty.qkv = nullptr;
    EXPECT_EQ(rope_check_args(empty), "");
  }
}

TEST(RopeCpu, RungRefusalsWithoutAGpu) {
  const DeviceInfo d;  // the rungs' supports() do not depend on the device
  const auto& t = rope_rungs();
  ASSERT_EQ(t.size(), 4u);
  const RopeArgs tok = valid_args(RopeLayout::tokens), att = valid_args(RopeLayout::attention);
  const RopeArgs tok_odd = valid_args(RopeLayout::tokens, 2), att_odd = valid_args(RopeLayout::attention, 2);
  EXPECT_EQ(t[0].supports(tok, d), "");
  EXPECT_EQ(t[0].supports(att, d), "");
  EXPECT_EQ(t[0].supports(tok_odd, d), "");  // the fallback takes any alignment
  EXPECT_EQ(t[0].supports(att_odd, d), "");
  EXPECT_EQ(t[1].supports(tok, d), "");
  EXPECT_NE(t[1].supports(att, d), "");
  EXPECT_NE(t[1].supports(tok_odd, d), "");
  EXPECT_NE(t[2].supports(tok, d), "");
  EXPECT_EQ(t[2].supports(att, d), "");
  EXPECT_NE(t[2].supports(att_odd, d), "");
  for (const RopeArgs& r : {tok, att, tok_odd, att_odd}) EXPECT_EQ(t[3].supports(r, d), t[2].supports(r, d));
}

TEST(RopeCpu, TableIsALadder) {
  const auto& t = rope_rungs();
  ASSERT_GE(t.size(), 3u);
  std::set<std::string> names;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].number, static_cast<int>(i));
    EXPECT_NE(std::string(t[i].name), "");
    EXPECT_NE(std::string(t[i].change), "");
    EXPECT_TRUE(names.insert(t[i].name).second) << "duplicate name " << t[i].name;
    if (i == 0)
      EXPECT_EQ(t[i].parent, -1);
    else
      EXPECT_TRUE(t[i].parent >= 0 && t[i].parent < t[i].number) << "rung " << i << " parent " << t[i].parent;
  }
  EXPECT_EQ(std::string(t[1].name), "vec128");
  EXPECT_EQ(t[2].parent, 1);
}

}  // namespace
