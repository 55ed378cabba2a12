// tests/test_cpu_sgemm.cpp — the sgemm CPU references, the rung table, and refusals that need no
// launch (so they run on a machine without a GPU).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kl/check.h"
#include "kl/sgemm.h"
#include "tests/fake_device.h"

namespace {

using kl::SgemmArgs;

TEST(SgemmCpuReference, HandChecked2x2x3) {
  // A = [[1 2 3], [4 5 6]], B = [[7 8], [9 10], [11 12]] -> C = [[58 64], [139 154]].
  const std::vector<float> A = {1, 2, 3, 4, 5, 6};
  const std::vector<float> B = {7, 8, 9, 10, 11, 12};
  std::vector<double> C(4);
  kl::sgemm_reference(A.data(), B.data(), C.data(), 2, 2, 3);
  EXPECT_EQ(C[0], 58);
  EXPECT_EQ(C[1], 64);
  EXPECT_EQ(C[2], 139);
  EXPECT_EQ(C[3], 154);
  EXPECT_EQ(kl::sgemm_reference_at(A.data(), B.data(), 2, 2, 3, 1, 0), 139);
}

TEST(SgemmCpuReference, ExactInDouble) {
  // fp32 products are exact in double: 1 + 2^-24 per term summed 3 times is representable.
  const float e = 1.0f + 1.0f / (1 << 23);
  const std::vector<float> A = {e, e, e};
  const std::vector<float> B = {1, 1, 1};
  EXPECT_EQ(kl::sgemm_reference_at(A.data(), B.data(), 1, 1, 3, 0, 0), 3.0 * double(e));
}

TEST(SgemmCpuReference, AtMatchesFull) {
  const int M = 5, N = 7, K = 3;
  std::vector<float> A(M * K), B(K * N);
  for (int i = 0; i < M * K; ++i) A[i] = 0.25f * (i % 7) - 0.5f;
  for (int i = 0; i < K * N; ++i) B[i] = 0.125f * (i % 5) - 0.25f;
  std::vector<double> C(M * N);
  kl::sgemm_reference(A.data(), B.data(), C.data(), M, N, K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      EXPECT_EQ(C[i * N + j], kl::sgemm_reference_at(A.data(), B.data(), M, N, K, i, j));
}

TEST(SgemmTable, NumberedFromZeroOneChangeEach) {
  const auto& t = kl::sgemm_rungs();
  ASSERT_GE(t.size(), 10u);
  std::set<std::string> names;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].number, static_cast<int>(i));
    EXPECT_TRUE(names.insert(t[i].name).second) << "duplicate name " << t[i].name;
    EXPECT_NE(std::string(t[i].change), "");
  }
}

// Fake pointers: supports() only looks at their alignment, nothing is dereferenced.
SgemmArgs fake(int M, int N, int K, uintptr_t misalign = 0) {
  alignas(16) static float buf[8];
  SgemmArgs a;
  a.A = reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(buf) + misalign);
  a.B = buf;
  a.C = buf;
  a.M = M;
  a.N = N;
  a.K = K;
  return a;
}

using kl::test::fake_h200;

TEST(SgemmRefusals, SupportsSaysWhy) {
  const auto& t = kl::sgemm_rungs();
  const auto d = fake_h200();
  // Untiled rungs and the predicated rungs 08, 16 and 17 take anything.
  for (int r : {0, 1, 2, 8, 16, 17}) {
    EXPECT_EQ(t[r].supports(fake(67, 129, 31), d), "") << "rung " << r;
    EXPECT_EQ(t[r].supports(fake(67, 129, 31, 4), d), "") << "rung " << r;
  }
  // Fixed-tile rungs refuse a non-multiple and say which divisibility they need.
  for (int r = 3; r <= 7; ++r) {
    std::string why = t[r].supports(fake(67, 129, 31), d);
    EXPECT_NE(why.find("needs M %"), std::string::npos) << "rung " << r << ": " << why;
    EXPECT_EQ(t[r].supports(fake(512, 256, 72), d), "") << "rung " << r;
  }
  // float4 rungs refuse a misaligned pointer; the scalar-load rungs 03/04 and rung 08 do not.
  for (int r = 5; r <= 7; ++r)
    EXPECT_NE(t[r].supports(fake(512, 256, 72, 4), d).find("aligned"), std::string::npos);
  EXPECT_EQ(t[4].supports(fake(512, 256, 72, 4), d), "");
  EXPECT_EQ(t[8].supports(fake(512, 256, 72, 4), d), "");
  // Rung 09: any M, but K and N multiples of 4 and aligned pointers (cp.async rows).
  EXPECT_EQ(t[9].supports(fake(300, 260, 36), d), "");
  EXPECT_NE(t[9].supports(fake(300, 260, 36, 4), d).find("aligned"), std::string::npos);
  EXPECT_NE(t[9].supports(fake(67, 129, 32), d).find("N % 4"), std::string::npos);
  EXPECT_NE(t[9].supports(fake(64, 128, 31), d).find("K % 4"), std::string::npos);
  // Rungs 10-12: as 09, except that A may have any (4-byte) alignment.
  for (int r = 10; r <= 12; ++r) {
    EXPECT_EQ(t[r].supports(fake(300, 260, 36), d), "");
    EXPECT_EQ(t[r].supports(fake(300, 260, 36, 4), d), "");
    EXPECT_NE(t[r].supports(fake(67, 129, 32), d).find("N % 4"), std::string::npos);
    EXPECT_NE(t[r].supports(fake(64, 128, 31), d).find("K % 4"), std::string::npos);
  }
  // Rungs 13-15: 16-byte copies of A as well: A must be aligned too.
  for (int r = 13; r <= 15; ++r) {
    EXPECT_EQ(t[r].supports(fake(300, 260, 36), d), "");
    EXPECT_NE(t[r].supports(fake(300, 260, 36, 4), d).find("aligned"), std::string::npos);
  }
  // Every rung refuses empty or negative dims and null pointers.
  for (const auto& r : t) {
    EXPECT_NE(r.supports(fake(0, 8, 8), d), "");
    EXPECT_NE(r.supports(fake(8, -1, 8), d), "");
    SgemmArgs n = fake(8, 8, 8);
    n.B = nullptr;
    EXPECT_NE(r.supports(n, d), "");
  }
}

TEST(SgemmRefusals, EntryPointThrowsBeforeLaunching) {
  EXPECT_THROW(kl::sgemm(fake(0, 16, 16), nullptr), kl::BadArgument);
  EXPECT_THROW(kl::sgemm(fake(16, 16, -3), nullptr), kl::BadArgument);
  SgemmArgs n = fake(16, 16, 16);
  n.C = nullptr;
  EXPECT_THROW(kl::sgemm(n, nullptr), kl::BadArgument);
  EXPECT_THROW(kl::sgemm(fake(16, 16, 0x7fffffff), nullptr), kl::BadArgument);
}

TEST(SgemmRefusals, EveryRungRefusesWhatNoFloatArrayIs) {
  const auto& t = kl::sgemm_rungs();
  const auto d = fake_h200();
  // A pointer that is not 4-byte aligned is no float array; a dimension near 2^31 would overflow
  // the tile arithmetic.
  for (const auto& r : t) {
    EXPECT_NE(r.supports(fake(67, 129, 31, 2), d).find("4-byte aligned"), std::string::npos)
        << "rung " << r.number;
    SgemmArgs b = fake(67, 129, 31);
    b.B = reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(b.B) + 1);
    EXPECT_NE(r.supports(b, d), "") << "rung " << r.number;
    EXPECT_NE(r.supports(fake(1, 1, 0x7fffffff - 100), d).find("at most"), std::string::npos)
        << "rung " << r.number;
  }
  // Rung 17 takes B and C misaligned by a float as well as A.
  SgemmArgs bc = fake(67, 129, 31);
  bc.B = bc.B + 1;
  bc.C = bc.C + 3;
  EXPECT_EQ(t[17].supports(bc, d), "");
}

TEST(SgemmPick, TopRungsForLargeShapes) {
  const auto d = fake_h200();
  const auto* big = kl::sgemm_pick(fake(4096, 4096, 4096), d);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->number, 15);  // two waves or more of 256x128 tiles: 2 stages of 64-deep k-tiles
  const auto* huge = kl::sgemm_pick(fake(8192, 8192, 8192), d);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(huge->number, 15);
  // Rungs 15, 14 and 09 need a 16-byte aligned A; rung 12 copies A 4 bytes at a time: a misaligned A
  // alone takes it instead of 08.
  const auto* big_misaligned = kl::sgemm_pick(fake(4096, 4096, 4096, 4), d);
  ASSERT_NE(big_misaligned, nullptr);
  EXPECT_EQ(big_misaligned->number, 12);
  const auto* odd = kl::sgemm_pick(fake(4097, 1023, 515), d);
  ASSERT_NE(odd, nullptr);
  // Only rungs 00-02, 08 and 16 take N = 1023; 136 tiles of 256x128 leave a second wave of 4
  // blocks, 264 of 128x128 fill the 2 x 132 slots of rung 16.
  EXPECT_EQ(odd->number, 16);
  // Many waves either way: rung 08's larger tile does more per SM than rung 16.
  const auto* big_odd = kl::sgemm_pick(fake(8191, 8191, 8191), d);
  ASSERT_NE(big_odd, nullptr);
  EXPECT_EQ(big_odd->number, 8);
  // Aligned, 136 tiles of 256x128 for 132 SMs: the 128x128 ring's full wave (rung 11).
  const auto* wave_aligned = kl::sgemm_pick(fake(4097, 1024, 516), d);
  ASSERT_NE(wave_aligned, nullptr);
  EXPECT_EQ(wave_aligned->number, 11);
  // The same shape with C misaligned: 09-12 refuse it, rung 16 runs the 128x128 ring.
  SgemmArgs c_off = fake(4097, 1024, 516);
  c_off.C = reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(c_off.C) + 4);
  const auto* wave_c_off = kl::sgemm_pick(c_off, d);
  ASSERT_NE(wave_c_off, nullptr);
  EXPECT_EQ(wave_c_off->number, 16);
  // Under half a wave of 256x128 tiles and N = 1001: the small-shape path's any-shape rung.
  const auto* small_odd_n = kl::sgemm_pick(fake(1000, 1001, 1000), d);
  ASSERT_NE(small_odd_n, nullptr);
  EXPECT_EQ(small_odd_n->number, 16);
  const auto* small = kl::sgemm_pick(fake(1024, 1024, 1024), d);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->number, 11);  // under one wave of 256x128 tiles: the small-shape path
  const auto* mid = kl::sgemm_pick(fake(2048, 2048, 2048), d);
  ASSERT_NE(mid, nullptr);
  EXPECT_EQ(mid->number, 9);  // 128 tiles of 256x128: one wave, 09 is faster than 128x128
  const auto* small_odd = kl::sgemm_pick(fake(1000, 1000, 1000), d);
  ASSERT_NE(small_odd, nullptr);
  EXPECT_EQ(small_odd->number, 11);
}

}  // namespace
