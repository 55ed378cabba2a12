// tests/test_cpu_rmsnorm.cpp — the CPU references on hand-checked cases, the register-kernel launch
// arithmetic, and the refusals (supports() and the entry points) that need no launch.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kl/rmsnorm.h"
#include "kernels/rmsnorm/rmsnorm_internal.h"
#include "kernels/rmsnorm/rmsnorm_ref.h"
#include "tests/fake_device.h"

namespace {
using namespace kl;

using kl::test::fake_h200;
// supports() never dereferences: any 16-byte-aligned address will do.
void* const kP = reinterpret_cast<void*>(0x10000);
void* const kOdd = reinterpret_cast<void*>(0x10002);   // a bf16 element off 16 bytes
void* const kOdd4 = reinterpret_cast<void*>(0x10004);  // an f32 element off 16 bytes

TEST(RmsnormRef, HandChecked) {
  // Row [3, 4]: mean of squares 12.5, rms sqrt(12.5) = 3.5355...; w = [1, 2].
  const float x[2] = {3.f, 4.f}, w[2] = {1.f, 2.f};
  float y[2];
  rmsnorm_ref(x, w, y, 1, 2, 0.0f);
  EXPECT_NEAR(y[0], 3.0 / std::sqrt(12.5), 1e-7);
  EXPECT_NEAR(y[1], 2.0 * 4.0 / std::sqrt(12.5), 3e-7);  // float result: ulp 2.4e-7
  // eps enters inside the root: [1, 1] with eps 3 -> 1 / sqrt(1 + 3) = 0.5.
  const float x1[2] = {1.f, 1.f}, w1[2] = {1.f, 1.f};
  rmsnorm_ref(x1, w1, y, 1, 2, 3.0f);
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 0.5f);
}

TEST(RmsnormRef, RowsAreIndependentAndLargeValuesFinite) {
  // Two rows: [1e18, -1e18] (x^2 = 1e36, fp32 would overflow summing many) and [2, 2].
  const float x[4] = {1e18f, -1e18f, 2.f, 2.f}, w[2] = {1.f, 1.f};
  float y[4];
  rmsnorm_ref(x, w, y, 2, 2, 1e-6f);
  EXPECT_NEAR(y[0], 1.0, 1e-6);
  EXPECT_NEAR(y[1], -1.0, 1e-6);
  EXPECT_NEAR(y[2], 2.0 / std::sqrt(4.0 + 1e-6), 1e-6);
}

TEST(RmsnormRef, FusedRoundsTheSumToStorage) {
  // bf16: 1 + 2^-9 is not representable (8 bits of mantissa): round to nearest even gives 1.
  const float r[2] = {1.0f, 3.0f}, x[2] = {0.001953125f, 1.0f}, w[2] = {1.f, 1.f};
  float ro[2], y[2];
  add_rmsnorm_ref(r, x, w, ro, y, 1, 2, 0.0f, DType::bf16);
  EXPECT_EQ(ro[0], 1.0f);
  EXPECT_EQ(ro[1], 4.0f);
  EXPECT_NEAR(y[0], 1.0 / std::sqrt((1.0 + 16.0) / 2), 1e-7);
  add_rmsnorm_ref(r, x, w, ro, y, 1, 2, 0.0f, DType::f32);
  EXPECT_EQ(ro[0], 1.001953125f);  // exact in fp32
}

TEST(RmsnormConfig, GroupSizedFromRowLength) {
  using namespace rmsnorm_detail;
  // bf16 8192: 1024 chunks of 8; <= 4 chunks (32 elements) per thread -> 256 threads x 4.
  RowRegsConfig c = row_regs_config(DType::bf16, 16384, 8192, 32, 1, 132);
  ASSERT_EQ(c.why, "");
  EXPECT_EQ(c.group, 256);
  EXPECT_EQ(c.vecs, 4);
  EXPECT_EQ(c.rows_per_block, 1);
  EXPECT_EQ(c.blocks, 16384);
  // f32 1024: 256 chunks of 4; <= 8 per thread -> 32 threads x 8, 8 rows per 256-thread block.
  c = row_regs_config(DType::f32, 4096, 1024, 32, 1, 132);
  EXPECT_EQ(c.group, 32);
  EXPECT_EQ(c.vecs, 8);
  EXPECT_EQ(c.rows_per_block, 8);
  EXPECT_EQ(c.blocks, 512);
  // Few rows: rows per block shrink so the grid keeps covering the SMs.
  c = row_regs_config(DType::f32, 64, 1024, 32, 1, 132);
  EXPECT_EQ(c.rows_per_block, 1);
  // 4099 bf16 columns: 513 chunks -> 256 threads x 3 (the last chunk partial).
  c = row_regs_config(DType::bf16, 10, 4099, 32, 1, 132);
  EXPECT_EQ(c.group, 256);
  EXPECT_EQ(c.vecs, 3);
  EXPECT_EQ(c.slice, 4104);
  // 131072 does not fit one block; it fits a cluster of 4 (bf16, 32 elements) or 8 (16 elements).
  EXPECT_NE(row_regs_config(DType::bf16, 64, 131072, 32, 1, 132).why, "");
  c = row_regs_config(DType::bf16, 64, 131072, 32, 4, 132);
  EXPECT_EQ(c.why, "");
  EXPECT_EQ(c.slice, 32768);
  EXPECT_EQ(c.group, 1024);
  EXPECT_EQ(c.blocks, 256);
  // Every config covers the row: cluster * slice >= cols, group * vecs * K >= slice.
  for (int cols : {1, 7, 8, 9, 1000, 4099, 8192, 12345, 32768, 65537, 131072})
    for (int C : {1, 2, 4, 8})
      for (DType t : {DType::f32, DType::bf16})
        for (int me : {16, 32}) {
          const RowRegsConfig k = row_regs_config(t, 3, cols, me, C, 132);
          if (!k.why.empty()) continue;
          const int K = t == DType::f32 ? 4 : 8;
          EXPECT_GE(static_cast<long long>(k.slice) * C, cols);
          EXPECT_EQ(k.slice % K, 0);
          EXPECT_GE(static_cast<long long>(k.group) * k.vecs * K, k.slice);
          EXPECT_LE(k.vecs * K, me);
          EXPECT_LE(k.group * k.rows_per_block, 1024);
        }
}

TEST(RmsnormConfig, ClusterSizeFromShape) {
  using namespace rmsnorm_detail;
  EXPECT_EQ(pick_cluster(DType::bf16, 16384, 8192, 32, 132), 1);  // many rows: no cluster
  // Few rows of 8192 columns: a split would leave fewer than 8192 columns per block, so none.
  EXPECT_EQ(pick_cluster(DType::bf16, 64, 8192, 32, 132), 1);
  EXPECT_EQ(pick_cluster(DType::bf16, 1, 8192, 32, 132), 1);
  EXPECT_EQ(pick_cluster(DType::bf16, 1, 16384, 32, 132), 2);     // two blocks of 8192 columns
  EXPECT_EQ(pick_cluster(DType::bf16, 1, 32768, 32, 132), 4);
  EXPECT_EQ(pick_cluster(DType::bf16, 64, 131072, 32, 132), 8);   // 4 fits; 8 fills the SMs
  // 4 fits and fills the SMs (also halving 1024-thread blocks was measured slower, so it is not done).
  EXPECT_EQ(pick_cluster(DType::bf16, 1024, 131072, 32, 132), 4);
  EXPECT_EQ(pick_cluster(DType::f32, 4096, 16384, 32, 132), 1);   // 512 threads x 32 elements
  EXPECT_EQ(pick_cluster(DType::f32, 4096, 16384, 16, 132), 1);   // fused: 1024-thread blocks
  EXPECT_EQ(pick_cluster(DType::f32, 16, 131072, 32, 132), 8);
  EXPECT_EQ(pick_cluster(DType::f32, 16, 131072, 16, 132), 8);
  EXPECT_EQ(pick_cluster(DType::f32, 16, 262145, 16, 132), 0);    // too long for any cluster
}

TEST(RmsnormSupports, RefusalsSayWhy) {
  const DeviceInfo d = fake_h200();
  RmsnormArgs a{kP, kP, kP, 4096, 4096, 1e-6f, DType::bf16};
  for (const auto& r : rmsnorm_rungs()) EXPECT_EQ(r.supports(a, d), "") << r.name;
  EXPECT_EQ(rmsnorm_pick(a, d)->number, 9);  // 09 (= 08 = 05 with plain loads, PDL) covers 04-07
  // Few rows: the persistent prefetch and bulk rungs refuse, the cluster rungs (05, 08, 09) take them.
  RmsnormArgs few = a;
  few.rows = 64;
  EXPECT_NE(find_rung(rmsnorm_rungs(), "prefetch_next_row")->supports(few, d), "");
  EXPECT_NE(find_rung(rmsnorm_rungs(), "bulk_pipeline")->supports(few, d), "");
  few.rows = 4 * 132 - 1;  // 06 would run (>= 2 x SMs groups): refuses, its domain stays in 07's
  EXPECT_NE(find_rung(rmsnorm_rungs(), "prefetch_next_row")->supports(few, d), "");
  few.rows = 64;
  EXPECT_EQ(rmsnorm_pick(few, d)->number, 9);
  // Odd columns and misaligned pointers: the 128-bit two-pass rungs refuse, the rest run.
  RmsnormArgs odd = a;
  odd.cols = 4099;
  RmsnormArgs mis = a;
  mis.x = kOdd;
  for (const RmsnormArgs& b : {odd, mis}) {
    EXPECT_NE(find_rung(rmsnorm_rungs(), "vec128")->supports(b, d), "");
    EXPECT_NE(find_rung(rmsnorm_rungs(), "block_per_row")->supports(b, d), "");
    EXPECT_EQ(find_rung(rmsnorm_rungs(), "row_in_registers")->supports(b, d), "");
    EXPECT_NE(find_rung(rmsnorm_rungs(), "prefetch_next_row")->supports(b, d), "");
    EXPECT_NE(find_rung(rmsnorm_rungs(), "bulk_pipeline")->supports(b, d), "");
    // Unaligned bf16 with many rows (>= 16 per SM): warp per row beats the scalar register path.
    EXPECT_EQ(rmsnorm_pick(b, d)->number, 1);
    RmsnormArgs f32 = b;
    f32.dtype = DType::f32;
    if (f32.x == kOdd) {  // 2 bytes off is no f32 array: every rung refuses it
      for (const auto& r : rmsnorm_rungs())
        EXPECT_NE(r.supports(f32, d).find("element size"), std::string::npos) << r.name;
      f32.x = kOdd4;
    }
    EXPECT_EQ(rmsnorm_pick(f32, d)->number, 9);  // f32: the register path stays ahead
    RmsnormArgs some = b;
    some.rows = 16 * d.sms;
    EXPECT_EQ(rmsnorm_pick(some, d)->number, 1);  // the bound: 16 rows per SM
    some.rows = 16 * d.sms - 1;
    EXPECT_EQ(rmsnorm_pick(some, d)->number, 9);  // fewer rows: the register rungs
  }
  // What no rmsnorm is: an unknown dtype, rows longer than the column loops can count.
  RmsnormArgs no_dtype = a;
  no_dtype.dtype = static_cast<DType>(7);
  RmsnormArgs too_long = a;
  too_long.cols = 0x7fffffff - 100;
  for (const auto& r : rmsnorm_rungs()) {
    EXPECT_NE(r.supports(no_dtype, d).find("dtype"), std::string::npos) << r.name;
    EXPECT_NE(r.supports(too_long, d).find("at most"), std::string::npos) << r.name;
  }
  // Long rows: rung 04 refuses above 32768 columns, 05 takes up to 8 x 32768.
  RmsnormArgs lng = a;
  lng.cols = 131072;
  EXPECT_NE(find_rung(rmsnorm_rungs(), "row_in_registers")->supports(lng, d), "");
  EXPECT_EQ(find_rung(rmsnorm_rungs(), "cluster_row")->supports(lng, d), "");
  lng.cols = 300000;
  EXPECT_NE(find_rung(rmsnorm_rungs(), "cluster_row")->supports(lng, d), "");
  EXPECT_EQ(rmsnorm_pick(lng, d)->number, 3);  // the two-pass block-per-row rung still runs it
  lng.cols = 300001;
  EXPECT_EQ(rmsnorm_pick(lng, d)->number, 1);  // odd and too long: warp per row
  // No clusters before sm_90.
  DeviceInfo ampere = d;
  ampere.cc_major = 8;
  EXPECT_NE(find_rung(rmsnorm_rungs(), "cluster_row")->supports(a, ampere), "");
  EXPECT_EQ(rmsnorm_pick(few, ampere)->number, 4);
  // Invalid arguments: every rung refuses.
  RmsnormArgs bad = a;
  bad.rows = 0;
  for (const auto& r : rmsnorm_rungs()) EXPECT_NE(r.supports(bad, d), "") << r.name;
  bad = a;
  bad.y = nullptr;
  for (const auto& r : rmsnorm_rungs()) EXPECT_NE(r.supports(bad, d), "") << r.name;
  bad = a;
  bad.eps = -1.0f;
  for (const auto& r : rmsnorm_rungs()) EXPECT_NE(r.supports(bad, d), "") << r.name;

  AddRmsnormArgs f{kP, kP, kP, kP, 16, 4096, 1e-6f, DType::f32};
  for (const auto& r : add_rmsnorm_rungs())
    if (r.number != 4) EXPECT_EQ(r.supports(f, d), "") << r.name;
  // The bulk rung wants many rows (>= 4 x SMs) and three (r, x) stages in shared memory.
  EXPECT_NE(find_rung(add_rmsnorm_rungs(), "bulk_pipeline")->supports(f, d), "");
  f.rows = 4096;
  EXPECT_EQ(find_rung(add_rmsnorm_rungs(), "bulk_pipeline")->supports(f, d), "");
  EXPECT_EQ(add_rmsnorm_pick(f, d)->number, 6);  // fused 06 (= 05 = 03 with plain loads, PDL) covers 04
  f.cols = 16384;  // three 128 KB (r, x) stages do not fit in 227 KB: fused 04 refuses
  EXPECT_NE(find_rung(add_rmsnorm_rungs(), "bulk_pipeline")->supports(f, d), "");
  EXPECT_EQ(add_rmsnorm_pick(f, d)->number, 6);
  f.rows = 16;
  f.cols = 4096;
  f.r = nullptr;
  for (const auto& r : add_rmsnorm_rungs()) EXPECT_NE(r.supports(f, d), "") << r.name;
  f.r = kP;
  f.cols = 16385;  // over 16 elements x 1024 threads: fused 02 refuses, 03 clusters it
  EXPECT_NE(find_rung(add_rmsnorm_rungs(), "row_in_registers")->supports(f, d), "");
  EXPECT_EQ(add_rmsnorm_pick(f, d)->number, 6);
  f.cols = 131072 * 2;
  EXPECT_EQ(add_rmsnorm_pick(f, d)->number, 1);
  // Unaligned rows (4099 columns): bf16 with many rows takes fused 01, f32 or few rows fused 06.
  AddRmsnormArgs u{kP, kP, kP, kP, 4096, 4099, 1e-6f, DType::bf16};
  EXPECT_EQ(add_rmsnorm_pick(u, d)->number, 1);
  u.dtype = DType::f32;
  EXPECT_EQ(add_rmsnorm_pick(u, d)->number, 6);
  u.dtype = DType::bf16;
  u.rows = 64;
  EXPECT_EQ(add_rmsnorm_pick(u, d)->number, 6);
  // Fused register budget: 32 bf16 (packed) or 16 f32 elements per thread when aligned.
  f.cols = 32768;
  EXPECT_NE(find_rung(add_rmsnorm_rungs(), "row_in_registers")->supports(f, d), "");
  f.dtype = DType::bf16;
  EXPECT_EQ(find_rung(add_rmsnorm_rungs(), "row_in_registers")->supports(f, d), "");
  EXPECT_EQ(rmsnorm_detail::max_elems(DType::bf16, true, true), 32);
  EXPECT_EQ(rmsnorm_detail::max_elems(DType::f32, true, true), 16);
  EXPECT_EQ(rmsnorm_detail::max_elems(DType::bf16, false, false), 16);
  EXPECT_EQ(rmsnorm_detail::max_elems(DType::f32, false, true), 32);
}

TEST(RmsnormEntry, BadArgumentsThrowBeforeAnyLaunch) {
  RmsnormArgs a{kP, kP, kP, 0, 4096, 1e-6f, DType::bf16};
  EXPECT_THROW(rmsnorm(a, 0), BadArgument);
  a.rows = 4;
  a.x = nullptr;
  EXPECT_THROW(rmsnorm(a, 0), BadArgument);
  AddRmsnormArgs f{nullptr, kP, kP, kP, 4, 4096, 1e-6f, DType::bf16};
  EXPECT_THROW(add_rmsnorm(f, 0), BadArgument);
  f.r = kP;
  f.cols = -1;
  EXPECT_THROW(add_rmsnorm(f, 0), BadArgument);
}

TEST(RmsnormTable, NumbersAndNames) {
  const auto& t = rmsnorm_rungs();
  ASSERT_EQ(t.size(), 10u);
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].number, static_cast<int>(i));
  EXPECT_STREQ(t[0].name, "thread_per_row");
  EXPECT_STREQ(t[4].name, "row_in_registers");
  const auto& f = add_rmsnorm_rungs();
  ASSERT_EQ(f.size(), 7u);
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i].number, static_cast<int>(i));
}

TEST(RmsnormBytes, MinimumTraffic) {
  RmsnormArgs a{kP, kP, kP, 16384, 8192, 1e-6f, DType::bf16};
  EXPECT_DOUBLE_EQ(rmsnorm_bytes(a), (2.0 * 16384 * 8192 + 8192) * 2);
  AddRmsnormArgs f{kP, kP, kP, kP, 4096, 16384, 1e-6f, DType::f32};
  EXPECT_DOUBLE_EQ(add_rmsnorm_bytes(f), (4.0 * 4096 * 16384 + 16384) * 4);
}

}  // namespace
