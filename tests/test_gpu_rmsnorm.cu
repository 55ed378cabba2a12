// tests/test_gpu_rmsnorm.cu — every rung of rmsnorm and add_rmsnorm on random shapes (odd and
// unaligned columns, misaligned pointers, one row, fewer rows than SMs, 131072-column rows), large
// values (no overflow of the sum of squares), determinism, and the entry point on every shape any
// rung refuses. References: the CPU double references of kernels/rmsnorm/rmsnorm_ref.h on the
// storage-rounded inputs, compared with the harness's compare()/default_tolerance().
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kl/rmsnorm.h"
#include "kernels/rmsnorm/rmsnorm_ref.h"
#include "tests/gpu_test.h"

namespace {
using namespace kl;
using kl::bench::DeviceBuffer;

const float kEps = 1e-6f;

// Host values already rounded to the storage type, never exactly zero.
std::vector<float> rand_vec(size_t n, DType t, uint64_t seed, float lo, float hi) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) {
    do e = t == DType::bf16 ? round_to_bf16(u(g)) : u(g);
    while (e == 0.0f);
  }
  return v;
}
// Magnitudes 10^U(lo_exp, hi_exp) with random signs.
std::vector<float> rand_log_vec(size_t n, DType t, uint64_t seed, float lo_exp, float hi_exp) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo_exp, hi_exp);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    float m = std::pow(10.0f, u(g)) * ((g() & 1) ? 1.f : -1.f);
    v[i] = t == DType::bf16 ? round_to_bf16(m) : m;
  }
  return v;
}

// Device copy of `v` in storage type t, starting `off` elements into the allocation (off = 1 makes
// the pointer 2- or 4-byte aligned only). Returns the buffer; *p gets the data pointer.
DeviceBuffer upload(const std::vector<float>& v, DType t, int off, void** p) {
  const size_t es = dtype_size(t);
  DeviceBuffer b((v.size() + off + 16) * es);
  std::vector<unsigned char> host(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32) {
      std::memcpy(&host[i * es], &v[i], 4);
    } else {
      const uint16_t h = float_to_bf16_bits(v[i]);
      std::memcpy(&host[i * es], &h, 2);
    }
  }
  *p = static_cast<char*>(b.ptr) + off * es;
  KL_CHECK(cudaMemcpy(*p, host.data(), host.size(), cudaMemcpyHostToDevice));
  return b;
}
DeviceBuffer alloc_out(size_t n, DType t, int off, void** p) {
  const size_t es = dtype_size(t);
  DeviceBuffer b((n + off + 16) * es);
  KL_CHECK(cudaMemset(b.ptr, 0xFF, b.bytes));  // NaN poison: an unwritten element fails
  *p = static_cast<char*>(b.ptr) + off * es;
  return b;
}

std::string what(const char* op, const char* rung, int rows, int cols, DType t, int off) {
  std::ostringstream s;
  s << op << " rung " << rung << " " << dtype_name(t) << " rows=" << rows << " cols=" << cols
    << " ptr_offset=" << off;
  return s.str();
}

::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& ref,
                                 DType t, const std::string& label, int cols) {
  return kl::test::check_close(got.data(), ref.data(), got.size(), bench::default_tolerance(t), label,
                               [cols](size_t i) {
                                 return "row " + std::to_string(i / cols) + " col " + std::to_string(i % cols);
                               });
}

// ---------------------------------------------------------------- plain rmsnorm
struct PlainCase {
  std::vector<float> x, w, yref;
};
PlainCase plain_case(int rows, int cols, DType t, uint64_t seed, bool large = false) {
  PlainCase c;
  const size_t n = size_t(rows) * cols;
  c.x = large ? rand_log_vec(n, t, seed, 4.f, 18.f) : rand_vec(n, t, seed, -2.f, 2.f);
  c.w = rand_vec(cols, t, seed + 1, 0.25f, 2.f);
  c.yref.resize(n);
  rmsnorm_ref(c.x.data(), c.w.data(), c.yref.data(), rows, cols, kEps);
  return c;
}

// Runs `rung` (nullptr = the entry point). Returns "" if it ran and matched, "SKIP: why" if the
// rung refused (supports()), else the failure text.
std::string run_plain(const Rung<RmsnormArgs>* rung, const PlainCase& c, int rows, int cols,
                      DType t, int off, std::vector<float>* y_out = nullptr) {
  RmsnormArgs a;
  void *px, *pw, *py;
  DeviceBuffer bx = upload(c.x, t, off, &px), bw = upload(c.w, t, off, &pw);
  DeviceBuffer by = alloc_out(c.x.size(), t, off, &py);
  a.x = px;
  a.w = pw;
  a.y = py;
  a.rows = rows;
  a.cols = cols;
  a.eps = kEps;
  a.dtype = t;
  const std::string label = what("rmsnorm", rung ? rung->name : "auto", rows, cols, t, off);
  if (rung) {
    const std::string why = rung->supports(a, device_info());
    if (!why.empty()) return "SKIP: " + why;
    rung->launch(a, 0);
  } else {
    rmsnorm(a, 0);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return label + ": CUDA error " + cudaGetErrorString(e);
  std::vector<float> got = bench::download_as_float(py, c.x.size(), t);
  if (y_out) *y_out = got;
  auto r = close(got, c.yref, t, label, cols);
  return r ? "" : r.message();
}

struct Shape2 {
  int rows, cols;
};
// Odd, unaligned, tiny, one-row, fewer-rows-than-SMs, and long shapes; 1000x96 and 600x1024 have
// the >= 4 x SMs aligned rows (on up to 150 SMs) that rungs 06 / 07 and fused 04 need.
const std::vector<Shape2> kShapes = {
    {1, 1},     {1, 8},     {3, 7},    {5, 33},    {17, 256},  {64, 1000}, {7, 1024},
    {200, 64},  {33, 4099}, {2, 8192}, {4, 12288}, {3, 32768}, {2, 40000}, {1, 131072},
    {3, 131075}, {300, 520}, {1000, 96}, {600, 1024},
};

std::string shape_str(const Shape2& s, DType t) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + " " + dtype_name(t);
}

TEST(RmsnormGpu, EveryRungRandomShapes) {
  KL_REQUIRE_GPU();
  uint64_t seed = 1234;
  kl::test::RungCoverage cov(rmsnorm_rungs());
  for (DType t : {DType::f32, DType::bf16})
    for (const auto& s : kShapes) {
      const PlainCase c = plain_case(s.rows, s.cols, t, ++seed);
      std::string r = run_plain(nullptr, c, s.rows, s.cols, t, 0);
      EXPECT_EQ(r, "") << "entry point must compute every shape";
      for (const auto& rung : rmsnorm_rungs()) {
        if (rung.number == 0 && size_t(s.rows) * s.cols > (1u << 20)) continue;  // naive: slow
        r = run_plain(&rung, c, s.rows, s.cols, t, 0);
        if (r.rfind("SKIP: ", 0) == 0) {  // refused with a reason; auto covered it
          cov.refused(rung.number, shape_str(s, t), r.substr(6));
          continue;
        }
        EXPECT_EQ(r, "");
        cov.ran(rung.number);
      }
    }
  EXPECT_TRUE(cov.every_rung_ran());
}

// Rung 06 needs >= 2 x SMs row groups: many rows, several grid sweeps (the prefetch loop), a last
// partial sweep, several rows per block (G < 256) and 1024-thread groups.
TEST(RmsnormGpu, PrefetchRungManyRows) {
  KL_REQUIRE_GPU();
  const auto* rung = find_rung(rmsnorm_rungs(), "prefetch_next_row");
  ASSERT_NE(rung, nullptr);
  uint64_t seed = 606;
  int ran = 0;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : {Shape2{5000, 1000}, Shape2{3001, 4096}, Shape2{1111, 16384},
                           Shape2{20000, 64}, Shape2{700, 8}, Shape2{2000, 8192}}) {
      const PlainCase c = plain_case(s.rows, s.cols, t, ++seed);
      const std::string r = run_plain(rung, c, s.rows, s.cols, t, 0);
      if (r.rfind("SKIP: ", 0) == 0) continue;
      ++ran;
      EXPECT_EQ(r, "");
      EXPECT_EQ(run_plain(nullptr, c, s.rows, s.cols, t, 0), "");
    }
  EXPECT_GE(ran, 8) << "rung 06 refused most many-row shapes";
}

TEST(RmsnormGpu, MisalignedPointersAndOddCols) {
  KL_REQUIRE_GPU();
  uint64_t seed = 99;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : {Shape2{5, 64}, Shape2{33, 4096}, Shape2{9, 4097}, Shape2{2, 131072}})
      for (int off : {1, 3}) {
        const PlainCase c = plain_case(s.rows, s.cols, t, ++seed);
        EXPECT_EQ(run_plain(nullptr, c, s.rows, s.cols, t, off), "");
        for (const auto& rung : rmsnorm_rungs()) {
          if (rung.number == 0) continue;
          const std::string r = run_plain(&rung, c, s.rows, s.cols, t, off);
          if (rung.number == 2 || rung.number == 3) {
            EXPECT_EQ(r.rfind("SKIP: ", 0), 0u) << rung.name << " must refuse misaligned pointers";
          } else if (r.rfind("SKIP: ", 0) != 0) {
            EXPECT_EQ(r, "");
          }
        }
      }
}

// |x| from 1e4 to 1e18: x^2 up to 1e36, summed over 131072 columns would be ~1e41 > FLT_MAX
// without the 2^-32 pre-scale.
TEST(RmsnormGpu, LargeValuesDoNotOverflow) {
  KL_REQUIRE_GPU();
  uint64_t seed = 7;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : {Shape2{4, 8192}, Shape2{2, 131072}, Shape2{6, 4099}, Shape2{300, 512}}) {
      const PlainCase c = plain_case(s.rows, s.cols, t, ++seed, /*large=*/true);
      EXPECT_EQ(run_plain(nullptr, c, s.rows, s.cols, t, 0), "");
      for (const auto& rung : rmsnorm_rungs()) {
        if (rung.number == 0 && s.cols > 10000) continue;
        const std::string r = run_plain(&rung, c, s.rows, s.cols, t, 0);
        if (r.rfind("SKIP: ", 0) != 0) EXPECT_EQ(r, "") << "large values";
      }
    }
  // A constant row of 1e18: y = w * 1e18 / sqrt(1e36 + eps) = w exactly up to rounding.
  for (DType t : {DType::f32, DType::bf16}) {
    PlainCase c;
    const int cols = 8192;
    c.x.assign(cols, t == DType::bf16 ? round_to_bf16(1e18f) : 1e18f);
    c.w = rand_vec(cols, t, 5, 0.25f, 2.f);
    c.yref.resize(cols);
    rmsnorm_ref(c.x.data(), c.w.data(), c.yref.data(), 1, cols, kEps);
    for (const auto& rung : rmsnorm_rungs()) {
      const std::string r = run_plain(&rung, c, 1, cols, t, 0);
      if (r.rfind("SKIP: ", 0) != 0) EXPECT_EQ(r, "") << "constant 1e18 row";
    }
  }
}

// Rung 07 (bulk_pipeline) needs >= 4 x SMs aligned rows. On an H200 (132 SMs, 2 blocks per SM):
// the stage ring wrapping (20000x64: 16 stages, ~76 rows per block; 4000x2048 f32: 14 stages,
// ~15 rows per block; 600x16384 f32: one block per SM, 3 x 64 KB stages, ~5 rows per block), rows
// of 16 bytes (700x8 bf16), a last partial sweep (rows not a multiple of the grid); repeatable bit
// for bit.
const std::vector<Shape2> kManyRows = {{1000, 1000}, {4000, 2048}, {600, 16384}, {20000, 64},
                                       {700, 8},     {600, 8192},  {2000, 1032}};
TEST(RmsnormGpu, BulkRungManyRows) {
  KL_REQUIRE_GPU();
  const auto* rung = find_rung(rmsnorm_rungs(), "bulk_pipeline");
  ASSERT_NE(rung, nullptr);
  uint64_t seed = 707;
  int ran = 0;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : kManyRows) {
      const PlainCase c = plain_case(s.rows, s.cols, t, ++seed);
      std::vector<float> y1, y2;
      const std::string r = run_plain(rung, c, s.rows, s.cols, t, 0, &y1);
      if (r.rfind("SKIP: ", 0) == 0) continue;
      ++ran;
      EXPECT_EQ(r, "");
      EXPECT_EQ(run_plain(rung, c, s.rows, s.cols, t, 0, &y2), "");
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0)
          << "bulk_pipeline rows=" << s.rows << " cols=" << s.cols << " not bitwise repeatable";
    }
  EXPECT_GE(ran, 12) << "rung 07 refused most many-row shapes";
  // Large values through the bulk path (no overflow of the sum of squares).
  const PlainCase big = plain_case(1000, 4096, DType::f32, 99, /*large=*/true);
  EXPECT_EQ(run_plain(rung, big, 1000, 4096, DType::f32, 0), "");
  // Misaligned pointers: refused with a reason, the entry point still computes.
  const PlainCase odd = plain_case(700, 1024, DType::bf16, 98);
  EXPECT_EQ(run_plain(rung, odd, 700, 1024, DType::bf16, 1).rfind("SKIP: ", 0), 0u);
  EXPECT_EQ(run_plain(nullptr, odd, 700, 1024, DType::bf16, 1), "");
}

TEST(RmsnormGpu, RegisterRungsAreDeterministic) {
  KL_REQUIRE_GPU();
  for (const Shape2 s : {Shape2{1, 8192}, Shape2{4, 131072}, Shape2{512, 4096}, Shape2{3000, 2048}}) {
    const PlainCase c = plain_case(s.rows, s.cols, DType::f32, 42);
    for (int num : {4, 5, 6, 7, 8}) {
      const auto* rung = find_rung(rmsnorm_rungs(), std::to_string(num));
      ASSERT_NE(rung, nullptr);
      std::vector<float> y1, y2;
      const std::string r1 = run_plain(rung, c, s.rows, s.cols, DType::f32, 0, &y1);
      if (r1.rfind("SKIP: ", 0) == 0) continue;
      EXPECT_EQ(r1, "");
      EXPECT_EQ(run_plain(rung, c, s.rows, s.cols, DType::f32, 0, &y2), "");
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0)
          << rung->name << " rows=" << s.rows << " cols=" << s.cols << " not bitwise repeatable";
    }
  }
}

TEST(RmsnormGpu, TopRungsTakeTheHeadlineShapes) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  if (d.cc_major < 9) GTEST_SKIP() << "cluster rung needs cc >= 9.0";
  void* p = nullptr;
  DeviceBuffer b(256);
  p = b.ptr;  // aligned; supports() never dereferences
  // {rows, cols, dtype, rmsnorm top, add_rmsnorm top}: the programmatic-dependent plain-load
  // register rungs (09 / fused 06: the cluster rungs 05 / fused 03 with plain x loads, C = 1 on many
  // rows and on rows under 16384 columns) everywhere; the bulk rungs (07 / fused 04) are in the
  // ladder but never picked.
  for (auto [rows, cols, t, top, ftop] : {std::tuple{16384, 8192, DType::bf16, 9, 6},
                                          std::tuple{4096, 16384, DType::f32, 9, 6},
                                          std::tuple{65536, 4096, DType::bf16, 9, 6},
                                          std::tuple{64, 8192, DType::bf16, 9, 6},
                                          std::tuple{64, 131072, DType::bf16, 9, 6}}) {
    RmsnormArgs a{p, p, p, rows, cols, kEps, t};
    const auto* r = rmsnorm_pick(a, d);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->number, top) << rows << "x" << cols;
    AddRmsnormArgs f{p, p, p, p, rows, cols, kEps, t};
    const auto* rf = add_rmsnorm_pick(f, d);
    ASSERT_NE(rf, nullptr);
    EXPECT_EQ(rf->number, ftop) << rows << "x" << cols;
  }
}

// ---------------------------------------------------------------- fused add + rmsnorm
struct FusedCase {
  std::vector<float> r, x, w, rref, yref;
};
FusedCase fused_case(int rows, int cols, DType t, uint64_t seed, bool large = false) {
  FusedCase c;
  const size_t n = size_t(rows) * cols;
  c.r = large ? rand_log_vec(n, t, seed, 4.f, 18.f) : rand_vec(n, t, seed, -2.f, 2.f);
  c.x = large ? rand_log_vec(n, t, seed + 2, 4.f, 18.f) : rand_vec(n, t, seed + 2, -2.f, 2.f);
  c.w = rand_vec(cols, t, seed + 1, 0.25f, 2.f);
  c.rref.resize(n);
  c.yref.resize(n);
  add_rmsnorm_ref(c.r.data(), c.x.data(), c.w.data(), c.rref.data(), c.yref.data(), rows, cols,
                  kEps, t);
  return c;
}

std::string run_fused(const Rung<AddRmsnormArgs>* rung, const FusedCase& c, int rows, int cols,
                      DType t, int off) {
  AddRmsnormArgs a;
  void *pr, *px, *pw, *py;
  DeviceBuffer br = upload(c.r, t, off, &pr), bx = upload(c.x, t, off, &px),
               bw = upload(c.w, t, off, &pw);
  DeviceBuffer by = alloc_out(c.x.size(), t, off, &py);
  a.r = pr;
  a.x = px;
  a.w = pw;
  a.y = py;
  a.rows = rows;
  a.cols = cols;
  a.eps = kEps;
  a.dtype = t;
  const std::string label = what("add_rmsnorm", rung ? rung->name : "auto", rows, cols, t, off);
  if (rung) {
    const std::string why = rung->supports(a, device_info());
    if (!why.empty()) return "SKIP: " + why;
    rung->launch(a, 0);
  } else {
    add_rmsnorm(a, 0);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return label + ": CUDA error " + cudaGetErrorString(e);
  // r = round(r + x) is computed identically on both sides: it must match bit for bit.
  std::vector<float> gr = bench::download_as_float(pr, c.r.size(), t);
  for (size_t i = 0; i < gr.size(); ++i)
    if (!(gr[i] == c.rref[i])) {
      std::ostringstream s;
      s << label << ": r (= r + x) at row " << i / cols << " col " << i % cols << " is " << gr[i]
        << ", expected " << c.rref[i];
      return s.str();
    }
  std::vector<float> gy = bench::download_as_float(py, c.x.size(), t);
  auto r = close(gy, c.yref, t, label, cols);
  return r ? "" : r.message();
}

TEST(AddRmsnormGpu, EveryRungRandomShapes) {
  KL_REQUIRE_GPU();
  uint64_t seed = 4321;
  kl::test::RungCoverage cov(add_rmsnorm_rungs());
  for (DType t : {DType::f32, DType::bf16})
    for (const auto& s : kShapes) {
      const FusedCase c = fused_case(s.rows, s.cols, t, ++seed);
      EXPECT_EQ(run_fused(nullptr, c, s.rows, s.cols, t, 0), "")
          << "entry point must compute every shape";
      for (const auto& rung : add_rmsnorm_rungs()) {
        if (rung.number == 0 && size_t(s.rows) * s.cols > (1u << 20)) continue;
        const std::string r = run_fused(&rung, c, s.rows, s.cols, t, 0);
        if (r.rfind("SKIP: ", 0) == 0) {
          cov.refused(rung.number, shape_str(s, t), r.substr(6));
          continue;
        }
        EXPECT_EQ(r, "");
        cov.ran(rung.number);
      }
    }
  EXPECT_TRUE(cov.every_rung_ran());
}

TEST(AddRmsnormGpu, BulkRungManyRows) {
  KL_REQUIRE_GPU();
  const auto* rung = find_rung(add_rmsnorm_rungs(), "bulk_pipeline");
  ASSERT_NE(rung, nullptr);
  uint64_t seed = 404;
  int ran = 0;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : kManyRows)
      for (bool large : {false, true}) {
        if (large && s.rows * static_cast<long long>(s.cols) > (1 << 22)) continue;
        const FusedCase c = fused_case(s.rows, s.cols, t, ++seed, large);
        const std::string r = run_fused(rung, c, s.rows, s.cols, t, 0);
        if (r.rfind("SKIP: ", 0) == 0) continue;
        ++ran;
        EXPECT_EQ(r, "") << (large ? "large values" : "");
      }
  EXPECT_GE(ran, 16) << "fused rung 04 refused most many-row shapes";
}

TEST(AddRmsnormGpu, MisalignedPointersAndLargeValues) {
  KL_REQUIRE_GPU();
  uint64_t seed = 555;
  for (DType t : {DType::f32, DType::bf16})
    for (const Shape2 s : {Shape2{5, 64}, Shape2{33, 4096}, Shape2{9, 4097}, Shape2{2, 131072}})
      for (int off : {0, 1})
        for (bool large : {false, true}) {
          const FusedCase c = fused_case(s.rows, s.cols, t, ++seed, large);
          EXPECT_EQ(run_fused(nullptr, c, s.rows, s.cols, t, off), "")
              << (large ? "large values" : "");
          for (const auto& rung : add_rmsnorm_rungs()) {
            if (rung.number == 0) continue;
            const std::string r = run_fused(&rung, c, s.rows, s.cols, t, off);
            if (r.rfind("SKIP: ", 0) != 0) EXPECT_EQ(r, "") << (large ? "large values" : "");
          }
        }
}

}  // namespace

namespace {
// Launchers never synchronize or allocate: the entry points (incl. the cluster launch) capture into
// a CUDA graph, and the replay computes the same result.
TEST(RmsnormGpu, EntryPointsAreGraphCapturable) {
  KL_REQUIRE_GPU();
  using namespace kl;
  const int rows = 64, cols = 32768;  // a cluster of 4 blocks per row on an H200
  const DType t = DType::bf16;
  const PlainCase c = plain_case(rows, cols, t, 77);
  void *px, *pw, *py;
  DeviceBuffer bx = upload(c.x, t, 0, &px), bw = upload(c.w, t, 0, &pw);
  DeviceBuffer by = alloc_out(c.x.size(), t, 0, &py);
  RmsnormArgs a{px, pw, py, rows, cols, kEps, t};
  (void)rmsnorm_pick(a, device_info());  // device_info() cached before capture
  cudaStream_t s;
  KL_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  KL_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  rmsnorm(a, s);
  KL_CHECK(cudaStreamEndCapture(s, &g));
  KL_CHECK(cudaGraphInstantiate(&ge, g, 0));
  KL_CHECK(cudaGraphLaunch(ge, s));
  KL_CHECK(cudaStreamSynchronize(s));
  std::vector<float> got = bench::download_as_float(py, c.x.size(), t);
  EXPECT_TRUE(close(got, c.yref, t, "graph replay of rmsnorm", cols));
  KL_CHECK(cudaGraphExecDestroy(ge));
  KL_CHECK(cudaGraphDestroy(g));
  KL_CHECK(cudaStreamDestroy(s));
}
}  // namespace
