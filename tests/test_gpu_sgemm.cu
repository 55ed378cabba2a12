// tests/test_gpu_sgemm.cu — every sgemm rung against a CPU double product on small shapes
// (including non-multiples of every tile where the rung supports them), the entry point on odd
// shapes and misaligned pointers, launch refusals, determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kl/check.h"
#include "kl/sgemm.h"
#include "tests/gpu_test.h"

namespace {

using kl::SgemmArgs;

struct Dims {
  int M, N, K;
};
std::string str(const Dims& d) {
  std::ostringstream s;
  s << d.M << "x" << d.N << "x" << d.K;
  return s.str();
}

// Device copies of random A, B in [-1, 1) and a NaN-poisoned C; `offset` floats of misalignment.
struct Problem {
  Dims d;
  std::vector<float> A, B;
  float *dA = nullptr, *dB = nullptr, *dC = nullptr;
  int offset;
  Problem(Dims dims, uint64_t seed, int off = 0) : d(dims), offset(off) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    A.resize(size_t(d.M) * d.K);
    B.resize(size_t(d.K) * d.N);
    for (auto& x : A) x = u(rng);
    for (auto& x : B) x = u(rng);
    KL_CHECK(cudaMalloc(&dA, 4 * (A.size() + off)));
    KL_CHECK(cudaMalloc(&dB, 4 * (B.size() + off)));
    KL_CHECK(cudaMalloc(&dC, 4 * (size_t(d.M) * d.N + off)));
    KL_CHECK(cudaMemcpy(dA + off, A.data(), 4 * A.size(), cudaMemcpyHostToDevice));
    KL_CHECK(cudaMemcpy(dB + off, B.data(), 4 * B.size(), cudaMemcpyHostToDevice));
    poison();
  }
  ~Problem() {
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
  }
  void poison() { KL_CHECK(cudaMemset(dC, 0xFF, 4 * (size_t(d.M) * d.N + offset))); }
  SgemmArgs args() const {
    SgemmArgs a;
    a.A = dA + offset;
    a.B = dB + offset;
    a.C = dC + offset;
    a.M = d.M;
    a.N = d.N;
    a.K = d.K;
    return a;
  }
  std::vector<float> result() const {
    std::vector<float> c(size_t(d.M) * d.N);
    KL_CHECK(cudaDeviceSynchronize());
    KL_CHECK(cudaMemcpy(c.data(), dC + offset, 4 * c.size(), cudaMemcpyDeviceToHost));
    return c;
  }
};

double tol(const Dims& d, double ref) { return 1e-5 + 2e-6 * d.K + 1e-4 * std::fabs(ref); }

// Full comparison with the CPU double product; reports the first few bad elements by (i, j).
::testing::AssertionResult matches_full(const Problem& p, const std::vector<float>& got) {
  std::vector<double> ref(got.size());
  kl::sgemm_reference(p.A.data(), p.B.data(), ref.data(), p.d.M, p.d.N, p.d.K);
  size_t bad = 0;
  std::ostringstream s;
  for (int i = 0; i < p.d.M; ++i)
    for (int j = 0; j < p.d.N; ++j) {
      const size_t k = size_t(i) * p.d.N + j;
      if (!(std::fabs(got[k] - ref[k]) <= tol(p.d, ref[k]))) {
        if (bad < 5) s << " C[" << i << "," << j << "]=" << got[k] << " want " << ref[k] << ";";
        ++bad;
      }
    }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << str(p.d) << ": " << bad << " of " << got.size()
                                       << " elements wrong:" << s.str();
}

// Sampled comparison (corners + 256 random entries) for shapes too big for a full CPU product.
::testing::AssertionResult matches_sampled(const Problem& p, const std::vector<float>& got) {
  std::mt19937_64 rng(7);
  std::ostringstream s;
  size_t bad = 0;
  for (int t = 0; t < 260; ++t) {
    int i = t == 0 || t == 1 ? 0 : t == 2 || t == 3 ? p.d.M - 1 : int(rng() % p.d.M);
    int j = t == 0 || t == 2 ? 0 : t == 1 || t == 3 ? p.d.N - 1 : int(rng() % p.d.N);
    double r = kl::sgemm_reference_at(p.A.data(), p.B.data(), p.d.M, p.d.N, p.d.K, i, j);
    float g = got[size_t(i) * p.d.N + j];
    if (!(std::fabs(g - r) <= tol(p.d, r))) {
      if (bad < 5) s << " C[" << i << "," << j << "]=" << g << " want " << r << ";";
      ++bad;
    }
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << str(p.d) << ": " << bad << " of 260 sampled wrong:"
                                       << s.str();
}

// Small shapes: the brief's three (non-multiples of every tile, a multiple of 128), one that every
// fixed-tile rung takes (multiple of 256 x 128 x 8), one tile exactly, and rung-08 tails.
// 300x260x520: 9 k-tiles of 64 (rung 15's 2-stage ring wraps four times, partial last tile).
const std::vector<Dims> kShapes = {{67, 129, 31},  {128, 128, 128}, {257, 255, 100},
                                   {512, 256, 72}, {256, 128, 8},   {1, 1, 1},
                                   {300, 260, 36}, {33, 1023, 515}, {255, 127, 9},
                                   {100, 132, 20}, {300, 260, 520}};

TEST(SgemmGpu, EveryRungSmallShapes) {
  KL_REQUIRE_GPU();
  const auto& dev = kl::device_info();
  int ran = 0;
  kl::test::RungCoverage cov(kl::sgemm_rungs());
  for (const auto& r : kl::sgemm_rungs()) {
    for (const Dims& d : kShapes) {
      Problem p(d, 1000 + r.number * 31 + d.M);
      const std::string why = r.supports(p.args(), dev);
      if (!why.empty()) {  // refusals are checked below and in test_cpu_sgemm
        cov.refused(r.number, str(d), why);
        continue;
      }
      SCOPED_TRACE("rung " + std::to_string(r.number) + " (" + r.name + ") " + str(d));
      kl::launch_checked(r, p.args(), nullptr);
      KL_CHECK(cudaGetLastError());
      EXPECT_TRUE(matches_full(p, p.result()));
      cov.ran(r.number);
      ++ran;
    }
    // Every rung takes at least the all-multiples shape.
    Problem p({512, 256, 72}, 5);
    EXPECT_EQ(r.supports(p.args(), dev), "") << "rung " << r.number;
  }
  EXPECT_TRUE(cov.every_rung_ran());
  EXPECT_GT(ran, 40);
}

TEST(SgemmGpu, MisalignedPointersTakeTheScalarPaths) {
  KL_REQUIRE_GPU();
  const auto& dev = kl::device_info();
  // 67x129x600 splits K on rung 16 (2 tiles, 38 k-tiles): float atomics into a misaligned C.
  for (const Dims& d :
       {Dims{256, 128, 64}, Dims{67, 129, 31}, Dims{300, 260, 36}, Dims{67, 129, 600}}) {
    for (int rung : {8, 16, 17}) {
      const auto& r = kl::sgemm_rungs()[rung];
      Problem p(d, 77 + d.K + rung, /*offset floats=*/1);
      ASSERT_EQ(r.supports(p.args(), dev), "");
      SCOPED_TRACE("rung " + std::to_string(rung) + " misaligned " + str(d));
      kl::launch_checked(r, p.args(), nullptr);
      EXPECT_TRUE(matches_full(p, p.result()));
    }
    // The float4 / cp.async rungs refuse it.
    Problem p(d, 78, /*offset floats=*/1);
    EXPECT_NE(kl::sgemm_rungs()[7].supports(p.args(), dev), "");
    EXPECT_NE(kl::sgemm_rungs()[9].supports(p.args(), dev), "");
  }
}

TEST(SgemmGpu, EntryPointOddShapes) {
  KL_REQUIRE_GPU();
  for (const Dims& d : {Dims{67, 129, 31}, Dims{257, 255, 100}, Dims{3, 5, 7}, Dims{1, 4096, 1}}) {
    Problem p(d, 11 + d.N);
    kl::sgemm(p.args(), nullptr);
    EXPECT_TRUE(matches_full(p, p.result()));
  }
  for (const Dims& d : {Dims{1000, 1000, 1000}, Dims{4097, 1023, 515}, Dims{1024, 1024, 1024}}) {
    Problem p(d, 13 + d.M);
    kl::sgemm(p.args(), nullptr);
    EXPECT_TRUE(matches_sampled(p, p.result()));
  }
  Problem p({129, 67, 200}, 17, /*offset floats=*/3);
  kl::sgemm(p.args(), nullptr);
  EXPECT_TRUE(matches_full(p, p.result()));
}

// The any-shape rungs on the odd default shape (one full wave of 128x128 tiles, 33 row tiles: five
// raster groups) and on a full-checked shape with two raster groups and a ragged last one.
TEST(SgemmGpu, AnyShapeRungsOnTheOddShapes) {
  KL_REQUIRE_GPU();
  const auto& dev = kl::device_info();
  for (int rung : {16, 17}) {
    const auto& r = kl::sgemm_rungs()[rung];
    SCOPED_TRACE("rung " + std::to_string(rung));
    Problem big({4097, 1023, 515}, 41 + rung);
    ASSERT_EQ(r.supports(big.args(), dev), "");
    kl::launch_checked(r, big.args(), nullptr);
    EXPECT_TRUE(matches_sampled(big, big.result()));
    Problem groups({1100, 300, 40}, 43 + rung, /*offset floats=*/1);
    ASSERT_EQ(r.supports(groups.args(), dev), "");
    kl::launch_checked(r, groups.args(), nullptr);
    EXPECT_TRUE(matches_full(groups, groups.result()));
  }
}

TEST(SgemmGpu, RefusesWithoutLaunching) {
  KL_REQUIRE_GPU();
  const auto& t = kl::sgemm_rungs();
  Problem p({67, 129, 31}, 3);
  for (int r = 3; r <= 7; ++r)
    EXPECT_THROW(kl::launch_checked(t[r], p.args(), nullptr), kl::BadArgument) << "rung " << r;
  // Nothing was written: C is still the poison.
  std::vector<float> c = p.result();
  for (float x : c) ASSERT_TRUE(std::isnan(x));
  SgemmArgs bad = p.args();
  bad.K = 0;
  EXPECT_THROW(kl::sgemm(bad, nullptr), kl::BadArgument);
}

TEST(SgemmGpu, TopRungsDeterministic) {
  KL_REQUIRE_GPU();
  for (int r : {8, 9, 10, 11, 12, 13, 14, 15, 16, 17}) {
    Problem p({300, 260, 136}, 21);
    kl::launch_checked(kl::sgemm_rungs()[r], p.args(), nullptr);
    std::vector<float> c1 = p.result();
    p.poison();
    kl::launch_checked(kl::sgemm_rungs()[r], p.args(), nullptr);
    std::vector<float> c2 = p.result();
    ASSERT_EQ(c1.size(), c2.size());
    for (size_t i = 0; i < c1.size(); ++i) ASSERT_EQ(c1[i], c2[i]) << "rung " << r << " element " << i;
  }
}

// Rung 11's split-K path (tiles <= SMs, K >= 32 k-tiles): two K halves add into the zeroed C.
// Tails in M and N, a partial last k-tile in the second slice; two slices must be bit-stable.
TEST(SgemmGpu, SplitKPathMatchesAndIsDeterministic) {
  KL_REQUIRE_GPU();
  const auto& r11 = *kl::find_rung(kl::sgemm_rungs(), std::string("11"));
  for (const Dims& d : {Dims{300, 260, 1000}, Dims{128, 128, 512}, Dims{1, 4, 2048}}) {
    Problem p(d, 31 + d.K);
    SCOPED_TRACE("rung 11 split " + str(d));
    ASSERT_EQ(r11.supports(p.args(), kl::device_info()), "");
    kl::launch_checked(r11, p.args(), nullptr);
    std::vector<float> c1 = p.result();
    EXPECT_TRUE(matches_full(p, c1));
    p.poison();
    kl::launch_checked(r11, p.args(), nullptr);
    std::vector<float> c2 = p.result();
    for (size_t i = 0; i < c1.size(); ++i) ASSERT_EQ(c1[i], c2[i]) << "element " << i;
  }
}

// Rungs 10-12 copy A 4 bytes at a time: an A that is 4 but not 16-byte aligned is taken.
TEST(SgemmGpu, RingRungsTakeMisalignedA) {
  KL_REQUIRE_GPU();
  const auto& dev = kl::device_info();
  for (const Dims& d : {Dims{257, 132, 52}, Dims{300, 260, 1000}}) {
    Problem p(d, 41 + d.K);
    float* a1 = nullptr;  // A again, one float past a 16-byte boundary
    KL_CHECK(cudaMalloc(&a1, 4 * (p.A.size() + 1)));
    KL_CHECK(cudaMemcpy(a1 + 1, p.A.data(), 4 * p.A.size(), cudaMemcpyHostToDevice));
    for (const char* n : {"10", "11", "12"}) {
      const auto& r = *kl::find_rung(kl::sgemm_rungs(), std::string(n));
      SgemmArgs a = p.args();
      a.A = a1 + 1;
      SCOPED_TRACE(std::string("rung ") + n + " misaligned A " + str(d));
      ASSERT_EQ(r.supports(a, dev), "");
      p.poison();
      kl::launch_checked(r, a, nullptr);
      EXPECT_TRUE(matches_full(p, p.result()));
    }
    cudaFree(a1);
  }
}

}  // namespace
