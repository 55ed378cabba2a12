// tests/test_cpu_gemm_bf16.cpp — what the bf16 GEMM family decides without a GPU: the table's
// numbering, and refusals with a reason (shape, alignment, compute capability, shared memory) that
// never touch the device (every part-1 supports() and rung 17's check these before anything that
// queries the card).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kl/gemm_bf16.h"
#include "tests/fake_device.h"

namespace {

using namespace kl;

using kl::test::fake_h200;

GemmBf16Args args(int M, int N, int K, uintptr_t a = 256, uintptr_t w = 512, uintptr_t c = 1024) {
  GemmBf16Args x;
  x.A = reinterpret_cast<const __nv_bfloat16*>(a);  // never dereferenced: refusals only
  x.W = reinterpret_cast<const __nv_bfloat16*>(w);
  x.C = reinterpret_cast<__nv_bfloat16*>(c);
  x.M = M;
  x.N = N;
  x.K = K;
  return x;
}

TEST(GemmBf16Cpu, TableNumbersAndNames) {
  const auto& t = gemm_bf16_rungs();
  ASSERT_GE(t.size(), 5u);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].number, static_cast<int>(i)) << "rungs are numbered in ladder order";
    for (size_t j = 0; j < i; ++j) EXPECT_STRNE(t[i].name, t[j].name);
  }
}

TEST(GemmBf16Cpu, RefusesBadShapesWithReason) {
  const DeviceInfo d = fake_h200();
  for (int r = 0; r <= 4; ++r) {
    const auto& rung = gemm_bf16_rungs()[r];
    EXPECT_NE(rung.supports(args(64, 64, 60), d).find("multiple of 8"), std::string::npos) << r;
    EXPECT_NE(rung.supports(args(64, 60, 64), d).find("multiple of 8"), std::string::npos) << r;
    EXPECT_NE(rung.supports(args(0, 64, 64), d).find("positive"), std::string::npos) << r;
    EXPECT_NE(rung.supports(args(64, 64, 64, 258), d).find("aligned"), std::string::npos) << r;
    EXPECT_NE(rung.supports(args(64, 64, 64, 256, 520), d).find("aligned"), std::string::npos) << r;
    DeviceInfo old = d;
    old.cc_major = 7;
    old.cc_minor = 5;
    EXPECT_NE(rung.supports(args(64, 64, 64), old).find("sm_80"), std::string::npos) << r;
  }
  // Rung 00 (WMMA straight from global) needs whole 16x16 fragments.
  EXPECT_NE(gemm_bf16_rungs()[0].supports(args(200, 136, 72), d).find("16"), std::string::npos);
  EXPECT_EQ(gemm_bf16_rungs()[0].supports(args(64, 64, 64), d), "");
  EXPECT_EQ(gemm_bf16_rungs()[1].supports(args(200, 136, 72), d), "");
}

// Every rung refuses what no bf16 GEMM is: a dimension past 2^31 - 513 (tile counts and k-block
// offsets would wrap) or a pointer off the 2-byte grid, and the entry point picks nothing.
TEST(GemmBf16Cpu, EveryRungRefusesHugeDimsAndOddPointers) {
  const DeviceInfo d = fake_h200();
  const int huge = 0x7fffffff - 7;  // a multiple of 8
  for (const auto& r : gemm_bf16_rungs()) {
    EXPECT_NE(r.supports(args(1, 8, huge), d).find("at most"), std::string::npos) << r.number;
    EXPECT_NE(r.supports(args(huge, 8, 8), d).find("at most"), std::string::npos) << r.number;
    EXPECT_NE(r.supports(args(64, 64, 64, 257), d).find("aligned"), std::string::npos) << r.number;
  }
  // Rungs 00, 05 and 06 put row tiles on grid.y: at most 65535 of them.
  for (int r : {0, 5, 6})
    EXPECT_NE(gemm_bf16_rungs()[r].supports(args(8388608, 16, 16), d).find("grid.y"), std::string::npos) << r;
  EXPECT_EQ(gemm_bf16_pick(args(1, 8, huge), d), nullptr);
  EXPECT_EQ(gemm_bf16_pick(args(huge, 8, 8), d), nullptr);
  EXPECT_EQ(gemm_bf16_check_args(args(64, 64, 64)), "");
}

// Rung 17 (TMA, sm_90+): its refusals come before its one device query (the driver's TMA entry
// point), so they are decided here: an sm_80 card, the family's shape and alignment rules (K a
// multiple of 8 is also TMA's 16-byte row stride), and a card whose per-block shared memory is
// below the shape's smallest ring (decode: its fixed tile; prefill: the smallest tile).
TEST(GemmBf16Cpu, TmaMmaSyncRefusals) {
  const DeviceInfo d = fake_h200();
  const auto& r17 = gemm_bf16_rungs()[17];
  ASSERT_EQ(r17.number, 17);
  EXPECT_STREQ(r17.name, "tma_mma_sync");
  EXPECT_EQ(r17.parent, 3);
  DeviceInfo a100 = d;
  a100.cc_major = 8;
  a100.cc_minor = 0;
  EXPECT_NE(r17.supports(args(64, 64, 64), a100).find("sm_90"), std::string::npos);
  EXPECT_NE(r17.supports(args(64, 64, 60), d).find("multiple of 8"), std::string::npos);
  EXPECT_NE(r17.supports(args(64, 60, 64), d).find("multiple of 8"), std::string::npos);
  EXPECT_NE(r17.supports(args(0, 64, 64), d).find("positive"), std::string::npos);
  EXPECT_NE(r17.supports(args(64, 64, 64, 258), d).find("aligned"), std::string::npos);
  EXPECT_NE(r17.supports(args(64, 64, 64, 256, 520), d).find("aligned"), std::string::npos);
  EXPECT_NE(r17.supports(args(64, 64, 64, 256, 512, 1030), d).find("aligned"), std::string::npos);
  DeviceInfo small = d;
  small.smem_optin = 48 * 1024;
  for (int M : {1, 16, 32, 64, 65, 4096})
    EXPECT_NE(r17.supports(args(M, 4096, 4096), small).find("shared memory"), std::string::npos) << M;
}

// A Hopper rung in the table under its parent, refused off Hopper before any device query (its
// other refusals follow the sm_90a check, which asks the card: the GPU tests).
void expect_hopper_rung(int number, const char* name, int parent, const GemmBf16Args& a) {
  const auto& t = gemm_bf16_rungs();
  ASSERT_GT(t.size(), size_t(number));
  EXPECT_EQ(t[number].number, number);
  EXPECT_STREQ(t[number].name, name);
  EXPECT_EQ(t[number].parent, parent);
  DeviceInfo sm120 = fake_h200();
  sm120.cc_major = 12;
  EXPECT_NE(t[number].supports(a, sm120).find("sm_90a"), std::string::npos) << name;
}

// Rung 18 (ping-pong consumers), rung 19 (128 x 64 tiles of rung 12's kernel), rung 20 (rung
// 19's tiles in clusters along N) and rung 21 (rung 13's tiles in clusters along N).
TEST(GemmBf16Cpu, PingpongRegistered) { expect_hopper_rung(18, "pingpong", 12, args(4096, 4096, 4096)); }
TEST(GemmBf16Cpu, NarrowTilesRegistered) { expect_hopper_rung(19, "narrow_tiles", 12, args(1024, 1024, 1024)); }
TEST(GemmBf16Cpu, PairAlongNRegistered) { expect_hopper_rung(20, "pair_along_n", 19, args(1024, 1024, 1024)); }
TEST(GemmBf16Cpu, WidePairAlongNRegistered) {
  expect_hopper_rung(21, "wide_pair_along_n", 13, args(4097, 1016, 520));
}

}  // namespace
