// tests/test_gpu_swiglu.cu — every SwiGLU rung on random shapes (odd counts, a ragged vector tail,
// single rows) in f32 and bf16 against the CPU double reference; misaligned pointers (vector rungs
// refuse, the entry point still computes); large |g| (exp overflow paths); the entry point's pick.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "kl/swiglu.h"
#include "tests/gpu_test.h"
#include "tests/rowops_test_util.h"

namespace {

using namespace kl;
using kl::rowops_test::DevTensor;

struct Case {
  int rows, cols;
};
const std::vector<Case> kShapes = {{1, 1},   {1, 7},    {3, 5},    {7, 33},  {64, 1000},
                                   {33, 4099}, {1, 8192}, {5, 11007}, {256, 1024}};

std::string name(const Case& c, DType t, int off) {
  std::ostringstream s;
  s << c.rows << "x" << c.cols << " " << dtype_name(t) << (off ? " misaligned" : "");
  return s.str();
}

// Runs `launch` on a fresh problem; returns the comparison against the CPU reference.
template <class F>
::testing::AssertionResult run_case(const Case& c, DType t, int off, float glo, float ghi,
                                    uint64_t seed, F&& launch, SwigluArgs* args_out = nullptr) {
  const size_t n = size_t(c.rows) * c.cols;
  DevTensor g(n, t, off), u(n, t, off), y(n, t, off);
  std::vector<float> hg = g.upload(rowops_test::random_values(n, glo, ghi, seed));
  std::vector<float> hu = u.upload(rowops_test::random_values(n, -2.f, 2.f, seed + 1));
  SwigluArgs a;
  a.g = g.ptr();
  a.u = u.ptr();
  a.y = y.ptr();
  a.rows = c.rows;
  a.cols = c.cols;
  a.dtype = t;
  if (args_out) *args_out = a;
  launch(a);
  KL_CHECK(cudaDeviceSynchronize());
  std::vector<double> ref(n);
  swiglu_reference(hg.data(), hu.data(), ref.data(), n);
  return rowops_test::close(y.download(), ref, t, c.cols, name(c, t, off));
}

TEST(SwigluGpu, EveryRungEveryShape) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  uint64_t seed = 1;
  kl::test::RungCoverage cov(swiglu_rungs());
  for (const auto& r : swiglu_rungs())
    for (DType t : {DType::f32, DType::bf16})
      for (const Case& c : kShapes)
        for (int off : {0, 1}) {
          SwigluArgs probe;
          probe.g = reinterpret_cast<void*>(off ? 256 + 2 : 256);  // distinct, like the real ones
          probe.u = reinterpret_cast<void*>(off ? 1024 + 2 : 1024);
          probe.y = reinterpret_cast<void*>(off ? 4096 + 2 : 4096);
          probe.rows = c.rows;
          probe.cols = c.cols;
          probe.dtype = t;
          const std::string why = r.supports(probe, d);
          SCOPED_TRACE("rung " + std::to_string(r.number) + " " + r.name + " " + name(c, t, off));
          if (!why.empty()) {
            // Only the alignment is a reason to refuse a flat elementwise op.
            EXPECT_EQ(off, 1) << "refused an aligned shape: " << why;
            cov.refused(r.number, name(c, t, off), why);
            continue;
          }
          EXPECT_TRUE(run_case(c, t, off, -6.f, 6.f, ++seed,
                               [&](const SwigluArgs& a) { launch_checked(r, a, 0); }));
          cov.ran(r.number);
        }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(SwigluGpu, EntryPointComputesEveryShapeAndAlignment) {
  KL_REQUIRE_GPU();
  uint64_t seed = 100;
  for (DType t : {DType::f32, DType::bf16})
    for (const Case& c : kShapes)
      for (int off : {0, 1})
        EXPECT_TRUE(run_case(c, t, off, -6.f, 6.f, ++seed,
                             [](const SwigluArgs& a) { swiglu(a, 0); }));
}

TEST(SwigluGpu, LargeGateValues) {
  KL_REQUIRE_GPU();
  // |g| up to 200: exp(-g) overflows to inf (g < -88) and underflows (g > 88) — no NaN allowed.
  for (const auto& r : swiglu_rungs())
    for (DType t : {DType::f32, DType::bf16}) {
      SCOPED_TRACE("rung " + std::to_string(r.number));
      EXPECT_TRUE(run_case({17, 1000}, t, 0, -200.f, 200.f, 7,
                           [&](const SwigluArgs& a) { launch_checked(r, a, 0); }));
    }
}

TEST(SwigluGpu, GridStrideLoopsSeveralTimes) {
  KL_REQUIRE_GPU();
  // 2053 x 8191 = 16.8M elements: ~2000 (bf16) / ~4100 (f32) chunks of 1024 vectors against a
  // resident wave of ~500-700 blocks, so rung 04's loop runs 3-8 times and ends ragged (+ tail).
  for (const auto& r : swiglu_rungs())
    for (DType t : {DType::f32, DType::bf16}) {
      if (r.number < 2) continue;
      SCOPED_TRACE("rung " + std::to_string(r.number));
      EXPECT_TRUE(run_case({2053, 8191}, t, 0, -6.f, 6.f, 11 + r.number,
                           [&](const SwigluArgs& a) { launch_checked(r, a, 0); }));
    }
}

TEST(SwigluGpu, PickAndRefusals) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  SwigluArgs a;
  a.g = reinterpret_cast<void*>(256);
  a.u = reinterpret_cast<void*>(1024);
  a.y = reinterpret_cast<void*>(4096);
  a.rows = 16384;
  a.cols = 8192;
  a.dtype = DType::bf16;
  const auto* p = swiglu_pick(a, d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->number, swiglu_pick_order().front());  // the measured best vector rung
  for (int n : swiglu_pick_order()) {  // the order names every rung exactly once
    int found = 0;
    for (const auto& r : swiglu_rungs()) found += r.number == n;
    EXPECT_EQ(found, 1) << "pick order names rung " << n;
  }
  EXPECT_EQ(swiglu_pick_order().size(), swiglu_rungs().size());
  a.u = reinterpret_cast<void*>(1026);  // misaligned: only the scalar rung
  p = swiglu_pick(a, d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->number, 0);
  a.u = a.y;  // in place: refused
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  a.u = nullptr;
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  for (const auto& r : swiglu_rungs()) EXPECT_THROW(launch_checked(r, a, 0), BadArgument);
}

TEST(SwigluGpu, ZeroRowsIsANoOp) {
  KL_REQUIRE_GPU();
  SwigluArgs a;
  a.rows = 0;
  a.cols = 8;
  for (const auto& r : swiglu_rungs()) EXPECT_NO_THROW(launch_checked(r, a, 0));
  KL_CHECK(cudaDeviceSynchronize());
}

}  // namespace
