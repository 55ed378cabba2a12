// tests/test_gpu_softmax.cu — every softmax rung on random shapes (odd and unaligned cols, single
// rows, fewer rows than SMs, rows past one block's registers) in f32 and bf16 against the CPU
// double reference, with special rows in every problem: an all -inf row (documented result: all
// zeros), rows with -inf entries, and rows of huge values (f32 1e4..3e38; bf16 the same, rounded).
// A rung that refuses a shape must say why and the entry point must still compute it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kl/softmax.h"
#include "tests/gpu_test.h"
#include "tests/rowops_test_util.h"

namespace {

using namespace kl;
using kl::rowops_test::DevTensor;

struct Case {
  int rows, cols;
};
// 270x4096: more than 2 rows per SM (up to 135 SMs) in aligned rows of 128..512 threads, the only
// shapes rung 06 takes; 9x8192 / 1x8192 bf16: the one row class rung 08 takes.
const std::vector<Case> kShapes = {
    {1, 1},     {1, 7},     {3, 33},    {5, 1000},  {17, 4099},  {130, 1024}, {200, 96},
    {9, 8192},  {4, 16384}, {3, 40000}, {2, 131072}, {6, 4096},  {1, 8192},  {70, 2048},
    {270, 4096}};

std::string name(const Case& c, DType t, int off) {
  std::ostringstream s;
  s << c.rows << "x" << c.cols << " " << dtype_name(t) << (off ? " misaligned" : "");
  return s.str();
}

// Random row values in [-10, 10) with the special rows mixed in (when there are enough rows):
//   row 0: all -inf   row 1: every 3rd entry -inf   row 2: huge magnitudes   row 3: a single
//   finite entry among -inf (a one-hot result).
std::vector<float> make_input(const Case& c, uint64_t seed) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> v = rowops_test::random_values(size_t(c.rows) * c.cols, -10.f, 10.f, seed);
  std::mt19937_64 rng(seed ^ 0x5bd1e995);
  auto row = [&](int r) { return v.data() + size_t(r) * c.cols; };
  if (c.rows >= 2) std::fill(row(0), row(0) + c.cols, ninf);
  if (c.rows >= 3)
    for (int j = 0; j < c.cols; j += 3) row(1)[j] = ninf;
  if (c.rows >= 4) {
    std::uniform_real_distribution<float> e(4.f, 38.5f);  // 1e4 .. ~3e38
    for (int j = 0; j < c.cols; ++j) {
      const float mag = std::min(3.0e38f, std::pow(10.f, e(rng)));
      row(2)[j] = (rng() & 1) ? mag : -mag;
    }
  }
  if (c.rows >= 5) {
    std::fill(row(3), row(3) + c.cols, ninf);
    row(3)[c.cols / 2] = 1.5f;
  }
  return v;
}

template <class F>
::testing::AssertionResult run_case(const Case& c, DType t, int off, uint64_t seed, F&& launch) {
  const size_t n = size_t(c.rows) * c.cols;
  DevTensor x(n, t, off), y(n, t, off);
  std::vector<float> hx = x.upload(make_input(c, seed));
  SoftmaxArgs a;
  a.x = x.ptr();
  a.y = y.ptr();
  a.rows = c.rows;
  a.cols = c.cols;
  a.dtype = t;
  launch(a);
  KL_CHECK(cudaDeviceSynchronize());
  std::vector<double> ref(n);
  softmax_reference(hx.data(), ref.data(), c.rows, c.cols);
  return rowops_test::close(y.download(), ref, t, c.cols, name(c, t, off));
}

SoftmaxArgs probe(const Case& c, DType t, int off) {
  SoftmaxArgs a;
  a.x = reinterpret_cast<void*>(off ? 256 + 2 : 256);
  a.y = reinterpret_cast<void*>(off ? 1024 + 2 : 1024);
  a.rows = c.rows;
  a.cols = c.cols;
  a.dtype = t;
  return a;
}

TEST(SoftmaxGpu, EveryRungEveryShape) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  uint64_t seed = 1;
  kl::test::RungCoverage cov(softmax_rungs());
  for (const auto& r : softmax_rungs())
    for (DType t : {DType::f32, DType::bf16})
      for (const Case& c : kShapes)
        for (int off : {0, 1}) {
          SCOPED_TRACE("rung " + std::to_string(r.number) + " " + r.name + " " + name(c, t, off));
          const std::string why = r.supports(probe(c, t, off), d);
          if (!why.empty()) {
            EXPECT_GE(r.number, 3) << "rungs 00-02 take every shape: " << why;
            cov.refused(r.number, name(c, t, off), why);
            continue;
          }
          EXPECT_TRUE(run_case(c, t, off, ++seed,
                               [&](const SoftmaxArgs& a) { launch_checked(r, a, 0); }));
          cov.ran(r.number);
        }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(SoftmaxGpu, EntryPointComputesEveryShape) {
  KL_REQUIRE_GPU();
  uint64_t seed = 500;
  for (DType t : {DType::f32, DType::bf16})
    for (const Case& c : kShapes)
      for (int off : {0, 1})
        EXPECT_TRUE(run_case(c, t, off, ++seed, [](const SoftmaxArgs& a) { softmax(a, 0); }));
}

TEST(SoftmaxGpu, AllNegInfRowIsZeros) {
  KL_REQUIRE_GPU();
  // Explicit check of the documented result on every rung that takes the shape.
  const Case c{3, 1000};
  for (const auto& r : softmax_rungs()) {
    if (!r.supports(probe(c, DType::f32, 0), device_info()).empty()) continue;
    DevTensor x(3000, DType::f32), y(3000, DType::f32);
    x.upload(std::vector<float>(3000, -std::numeric_limits<float>::infinity()));
    SoftmaxArgs a;
    a.x = x.ptr();
    a.y = y.ptr();
    a.rows = 3;
    a.cols = 1000;
    a.dtype = DType::f32;
    launch_checked(r, a, 0);
    KL_CHECK(cudaDeviceSynchronize());
    for (float v : y.download()) ASSERT_EQ(v, 0.0f) << "rung " << r.number;
  }
}

TEST(SoftmaxGpu, PicksTheIntendedRung) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  auto pick = [&](int rows, int cols, DType t) {
    const Rung<SoftmaxArgs>* r = softmax_pick(probe({rows, cols}, t, 0), d);
    return r ? r->number : -1;
  };
  // The order names every rung once; the first of it that supports a shape is picked.
  EXPECT_EQ(softmax_pick_order().size(), softmax_rungs().size());
  for (int n : softmax_pick_order()) {
    int found = 0;
    for (const auto& r : softmax_rungs()) found += r.number == n;
    EXPECT_EQ(found, 1) << "pick order names rung " << n;
  }
  // Measured best per class (docs/softmax.md): 08 for 8192-wide bf16 rows (its only class), 03 for
  // rows on the scalar path and f32 rows of 1024 to 2048 elements, 09 (07's layout with streaming
  // hints) for every other row that fits registers, 05 for rows longer than one block holds.
  EXPECT_EQ(pick(16384, 8192, DType::bf16), 8);
  EXPECT_EQ(pick(64, 8192, DType::bf16), 8);       // rung 05 measured slower where a row fits
  EXPECT_EQ(pick(4096, 16384, DType::f32), 9);
  EXPECT_EQ(pick(4096, 8192, DType::f32), 9);      // 08 is bf16 only
  EXPECT_EQ(pick(4096, 32768, DType::bf16), 9);    // a 1024-thread row
  EXPECT_EQ(pick(65536, 4096, DType::bf16), 9);
  EXPECT_EQ(pick(4096, 1024, DType::bf16), 9);
  EXPECT_EQ(pick(4096, 512, DType::f32), 9);
  EXPECT_EQ(pick(4096, 1024, DType::f32), 3);
  EXPECT_EQ(pick(4096, 2048, DType::f32), 3);
  EXPECT_EQ(pick(4096, 4099, DType::f32), 3);      // unaligned rows: the scalar path, 03 first
  EXPECT_EQ(pick(4096, 8191, DType::bf16), 3);     // unaligned: 08 needs 16-byte rows
  if (d.cc() >= 90) EXPECT_EQ(pick(16, 131072, DType::bf16), 5);  // too long: a cluster per row
  EXPECT_NE(pick(16384, 8192, DType::bf16), 6);    // measured slower than 03/04: never picked
}

TEST(SoftmaxGpu, PersistentRowsMoreRowsThanBlocks) {
  KL_REQUIRE_GPU();
  // Rung 06 only pays off (and only loops) with more rows than resident blocks: each block then
  // handles 2-3 rows with the next one prefetched, and the last rows are ragged.
  const DeviceInfo& d = device_info();
  uint64_t seed = 900;
  for (const Case c : {Case{1500, 5120}, Case{2000, 8184}})
    for (DType t : {DType::f32, DType::bf16})
      for (const auto& r : softmax_rungs()) {
        if (r.number < 3 || !r.supports(probe(c, t, 0), d).empty()) continue;
        SCOPED_TRACE("rung " + std::to_string(r.number) + " " + name(c, t, 0));
        EXPECT_TRUE(run_case(c, t, 0, ++seed,
                             [&](const SoftmaxArgs& a) { launch_checked(r, a, 0); }));
      }
}

TEST(SoftmaxGpu, Refusals) {
  KL_REQUIRE_GPU();
  SoftmaxArgs a = probe({4, 64}, DType::f32, 0);
  a.y = const_cast<void*>(a.x);
  EXPECT_THROW(softmax(a, 0), BadArgument);  // in place
  for (const auto& r : softmax_rungs()) EXPECT_THROW(launch_checked(r, a, 0), BadArgument);
  a = probe({4, 64}, DType::f32, 0);
  a.cols = 0;
  EXPECT_THROW(softmax(a, 0), BadArgument);
}

TEST(SoftmaxGpu, Deterministic) {
  KL_REQUIRE_GPU();
  // Same input twice -> same bits (fixed reduction orders, cluster sums in rank order).
  for (const auto& r : softmax_rungs()) {
    const Case c{16, 40000};
    if (!r.supports(probe(c, DType::f32, 0), device_info()).empty()) continue;
    const size_t n = size_t(c.rows) * c.cols;
    DevTensor x(n, DType::f32), y(n, DType::f32);
    x.upload(make_input(c, 9));
    SoftmaxArgs a;
    a.x = x.ptr();
    a.y = y.ptr();
    a.rows = c.rows;
    a.cols = c.cols;
    a.dtype = DType::f32;
    launch_checked(r, a, 0);
    KL_CHECK(cudaDeviceSynchronize());
    std::vector<float> first = y.download();
    y.poison();
    launch_checked(r, a, 0);
    KL_CHECK(cudaDeviceSynchronize());
    std::vector<float> second = y.download();
    EXPECT_EQ(0, std::memcmp(first.data(), second.data(), 4 * n)) << "rung " << r.number;
  }
}

}  // namespace
