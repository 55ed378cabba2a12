// tests/test_gpu_harness.cu — the harness's GPU side: fill, poison, rotation, timing, graphs.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/harness.h"
#include "tests/gpu_test.h"

using namespace kl;
using namespace kl::bench;

TEST(GpuHarness, FillIsRandomInRangeAndSeeded) {
  KL_REQUIRE_GPU();
  const size_t n = 1 << 16;
  DeviceBuffer a(n * 4), b(n * 2);
  fill_uniform(a.ptr, n, DType::f32, 123, -2.f, 3.f);
  fill_uniform(b.ptr, n, DType::bf16, 123, -2.f, 3.f);
  auto x = download_as_float(a.ptr, n, DType::f32);
  auto y = download_as_float(b.ptr, n, DType::bf16);
  size_t zeros = 0;
  double mean = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_GE(x[i], -2.f);
    ASSERT_LT(x[i], 3.f);
    zeros += x[i] == 0.f;
    mean += x[i];
    // the bf16 fill is the rounded f32 fill of the same (seed, index)
    ASSERT_EQ(y[i], round_to_bf16(x[i])) << i;
  }
  EXPECT_LT(zeros, 4u);
  EXPECT_NEAR(mean / n, 0.5, 0.05);
  fill_uniform(a.ptr, n, DType::f32, 124, -2.f, 3.f);
  auto z = download_as_float(a.ptr, n, DType::f32);
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += z[i] == x[i];
  EXPECT_LT(same, n / 100) << "another seed must give other values";
}

TEST(GpuHarness, PoisonIsNaN) {
  KL_REQUIRE_GPU();
  DeviceBuffer a(1024 * 4);
  poison(a.ptr, a.bytes);
  for (float v : download_as_float(a.ptr, 1024, DType::f32)) ASSERT_TRUE(std::isnan(v));
  for (float v : download_as_float(a.ptr, 2048, DType::bf16)) ASSERT_TRUE(std::isnan(v));
}

TEST(GpuHarness, RotationExceedsThreeL2) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  const size_t set = 8u << 20;
  int c = rotation_copies(set, d, false);
  EXPECT_GT(static_cast<double>(c) * set, 3.0 * d.l2_bytes);
  EXPECT_FALSE(is_l2_resident(set, c, d));
  EXPECT_EQ(rotation_copies(set, d, true), 1);
  EXPECT_TRUE(is_l2_resident(set, 1, d));
  EXPECT_EQ(rotation_copies(size_t(4) << 30, d, false), 1);
}

__global__ void spin_kernel(float* p, int n) {
  float a = threadIdx.x;
  for (int i = 0; i < n; ++i) a = fmaf(a, 0.999f, 1.f);
  if (a == -1.f) *p = a;
}

TEST(GpuHarness, TimingAndGraph) {
  KL_REQUIRE_GPU();
  Stream s;
  DeviceBuffer sink(4);
  Options o;
  o.iters = 21;
  o.warmup = 2;
  o.graph = true;
  int calls = 0;
  Timing t = time_launches([&](int) {
    ++calls;
    spin_kernel<<<132, 128, 0, s>>>(sink.as<float>(), 20000);
    KL_CHECK_LAUNCH();
  }, o, s);
  EXPECT_EQ(calls, 2 + 21 + 21);  // warm-up, timed, captured
  EXPECT_EQ(t.iters, 21);
  EXPECT_GT(t.median_ms, 0.0);
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.max_ms);
  ASSERT_TRUE(std::isfinite(t.graph_ms));
  EXPECT_GT(t.graph_ms, 0.0);
  EXPECT_LT(t.graph_ms, t.median_ms * 1.5);
}

TEST(GpuHarness, DeviceInfoQueried) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  EXPECT_GT(d.sms, 0);
  EXPECT_GT(d.l2_bytes, 0);
  EXPECT_FALSE(d.name.empty());
  if (d.is_hopper()) EXPECT_TRUE(has_sm90a_code()) << "build with 90a in CMAKE_CUDA_ARCHITECTURES";
}
