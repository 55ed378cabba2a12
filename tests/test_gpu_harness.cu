// tests/test_gpu_harness.cu — the harness's GPU side: fill, poison, rotation, gathers, timing and
// graphs (what they do, not how fast: timing belongs in the benches).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

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
  // Tiny sets: the count is capped, and the row then says it ran from the L2.
  const int tiny = rotation_copies(8, d, false);
  EXPECT_EQ(tiny, kMaxRotationCopies);
  EXPECT_TRUE(is_l2_resident(8, tiny, d));
  // Other buffers that take the free memory leave one copy.
  size_t free_b = 0, total_b = 0;
  KL_CHECK(cudaMemGetInfo(&free_b, &total_b));
  EXPECT_EQ(rotation_copies(set, d, false, free_b), 1);
}

TEST(GpuHarness, ReplicateByDoublingFillsEverySlot) {
  KL_REQUIRE_GPU();
  for (int copies : {1, 2, 3, 7, 8, 9, 1000}) {
    const size_t n = 37;  // floats per slot: an odd byte count
    DeviceBuffer a(n * 4 * copies);
    poison(a.ptr, a.bytes);
    fill_uniform(a.ptr, n, DType::f32, 5, -1.f, 1.f);
    KL_CHECK(cudaDeviceSynchronize());
    replicate(a.ptr, n * 4, copies);
    const std::vector<float> h = download_as_float(a.ptr, n * copies, DType::f32);
    for (int c = 0; c < copies; ++c)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(h[c * n + i], h[i]) << "copies " << copies << " slot " << c;
  }
}

TEST(GpuHarness, DeviceMemoryRefusalNamesTheShape) {
  KL_REQUIRE_GPU();
  EXPECT_NO_THROW(require_device_memory("small", 1 << 20));
  try {
    require_device_memory("bench_x shape M=1,N=1,K=1", 1e18);
    ADD_FAILURE() << "1e18 bytes of device memory accepted";
  } catch (const BadArgument& e) {
    EXPECT_NE(std::string(e.what()).find("M=1,N=1,K=1"), std::string::npos) << e.what();
  }
}

TEST(GpuHarness, GatherRowsInAnyOrder) {
  KL_REQUIRE_GPU();
  const size_t rows = 300, D = 64;
  DeviceBuffer a(rows * D * 2), b(rows * 3 * 4);
  fill_uniform(a.ptr, rows * D, DType::bf16, 9, -1.f, 1.f);
  fill_uniform(b.ptr, rows * 3, DType::f32, 9, -1.f, 1.f);
  const std::vector<float> all_a = download_as_float(a.ptr, rows * D, DType::bf16);
  const std::vector<float> all_b = download_as_float(b.ptr, rows * 3, DType::f32);
  const std::vector<long long> idx = {299, 0, 17, 17, 150};
  const std::vector<float> ga = gather_rows_as_float(a.ptr, D, idx, DType::bf16);  // 16-byte rows
  const std::vector<float> gb = gather_rows_as_float(b.ptr, 3, idx, DType::f32);    // 12-byte rows
  ASSERT_EQ(ga.size(), idx.size() * D);
  ASSERT_EQ(gb.size(), idx.size() * 3);
  for (size_t k = 0; k < idx.size(); ++k) {
    for (size_t j = 0; j < D; ++j) ASSERT_EQ(ga[k * D + j], all_a[idx[k] * D + j]);
    for (size_t j = 0; j < 3; ++j) ASSERT_EQ(gb[k * 3 + j], all_b[idx[k] * 3 + j]);
  }
  EXPECT_TRUE(gather_rows_as_float(a.ptr, D, {}, DType::bf16).empty());
}

__global__ void spin_kernel(float* p, int n) {
  float a = threadIdx.x;
  for (int i = 0; i < n; ++i) a = fmaf(a, 0.999f, 1.f);
  if (a == -1.f) *p = a;
}

__global__ void write_kernel(float* p, float v) { *p = v; }

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
  EXPECT_FALSE(t.graph_checked);  // no GraphCheck given
}

// The events bracket device time, not the host's: a launch whose host side takes 100 us before it
// enqueues a tiny kernel is still timed at that kernel's few microseconds (the chunk is queued behind
// the hold kernel). Timed one after another without the hold, each row would read >= 100 us.
TEST(GpuHarness, TimingMeasuresDeviceTimeNotHostLatency) {
  KL_REQUIRE_GPU();
  Stream s;
  DeviceBuffer sink(4);
  Options o;
  o.iters = 30;
  o.warmup = 3;
  Timing t = time_launches([&](int) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    while (std::chrono::steady_clock::now() < until) {
    }
    write_kernel<<<1, 1, 0, s>>>(sink.as<float>(), 1.f);
    KL_CHECK_LAUNCH();
  }, o, s);
  EXPECT_EQ(t.iters, 30);
  EXPECT_LT(t.median_ms, 0.05) << "the events measured the host's 100 us per launch";
}

// The graph's output after one more replay reaches the check (poisoned first by `prepare`).
TEST(GpuHarness, GraphReplayIsChecked) {
  KL_REQUIRE_GPU();
  Stream s;
  DeviceBuffer out(4);
  Options o;
  o.iters = 5;
  o.warmup = 1;
  o.graph = true;
  for (float written : {3.f, std::nanf("")}) {
    int prepared = 0;
    const GraphCheck gc{[&] {
                          ++prepared;
                          poison(out.ptr, 4, s);
                        },
                        [&] {
                          const std::vector<float> got = download_as_float(out.ptr, 1, DType::f32);
                          const double ref = 3.0;
                          return compare(got.data(), &ref, 1, Tolerance{0, 0, 0});
                        }};
    Timing t = time_launches([&](int) {
      write_kernel<<<1, 1, 0, s>>>(out.as<float>(), written);
      KL_CHECK_LAUNCH();
    }, o, s, false, &gc);
    EXPECT_EQ(prepared, 1);
    ASSERT_TRUE(t.graph_checked);
    EXPECT_EQ(t.graph_err.ok, written == 3.f);
  }
}

TEST(GpuHarness, DeviceInfoQueried) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  EXPECT_GT(d.sms, 0);
  EXPECT_GT(d.l2_bytes, 0);
  EXPECT_FALSE(d.name.empty());
  if (d.is_hopper()) EXPECT_TRUE(has_sm90a_code()) << "build with 90a in CMAKE_CUDA_ARCHITECTURES";
}
