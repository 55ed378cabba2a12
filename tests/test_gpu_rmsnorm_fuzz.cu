// tests/test_gpu_rmsnorm_fuzz.cu — seeded random shapes for rmsnorm and add_rmsnorm (the fuzz
// sweep of tests/fuzz_util.h): rows x cols up to 2^22 elements and 300000 columns (past the
// 8-block cluster's 262144), f32 and bf16, pointers misaligned to the element on 1 shape in 5, large
// magnitudes (10^4..10^18: the sum of squares must not overflow) on 1 in 8. Every rung that accepts
// the shape and the entry point (which takes every shape and alignment) are checked against the CPU
// references of kernels/rmsnorm/rmsnorm_ref.h with the harness's per-dtype tolerance, as in
// test_gpu_rmsnorm.cu; add_rmsnorm's r (= r + x, rounded) must match bit for bit.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kl/rmsnorm.h"
#include "kernels/rmsnorm/rmsnorm_ref.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"
#include "tests/rowops_test_util.h"

namespace {

using namespace kl;
using kl::rowops_test::DevTensor;

constexpr float kEps = 1e-6f;
constexpr long long kMaxCols = 300000, kMaxElems = 1LL << 22;
constexpr double kSeconds = 6;  // per op

// Inputs: uniform in [-2, 2), or (large) magnitudes 10^U(4, 18) with random signs.
std::vector<float> inputs(size_t n, bool large, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f), e(4.f, 18.f);
  std::vector<float> v(n);
  for (auto& x : v) x = large ? std::pow(10.f, e(g)) * ((g() & 1) ? 1.f : -1.f) : u(g);
  return v;
}

// The shape of this fuzz step, with its large-values flag.
struct Drawn {
  fuzz::RowOp s;
  bool large;
};
Drawn draw(fuzz::Run& run, const DeviceInfo& d) {
  Drawn r{fuzz::row_op(run.rng(), d.sms, kMaxCols, kMaxElems), fuzz::chance(run.rng(), 0.125)};
  run.set_shape(r.s.str() + (r.large ? " large values" : ""));
  return r;
}

std::string compare_y(const DevTensor& y, const std::vector<double>& ref, const fuzz::RowOp& s) {
  return fuzz::failure_text(rowops_test::close(y.download(), ref, s.t, s.cols, "y"));
}

TEST(RmsnormFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("rmsnorm", kSeconds, fuzz::rung_labels(rmsnorm_rungs()));
  while (run.next()) {
    const Drawn dr = draw(run, d);
    const fuzz::RowOp& s = dr.s;
    const size_t n = size_t(s.rows) * s.cols;
    DevTensor x(n, s.t, s.off[0]), w(s.cols, s.t, s.off[1]), y(n, s.t, s.off[2]);
    const std::vector<float> hx = x.upload(inputs(n, dr.large, run.data_seed()));
    const std::vector<float> hw = w.upload(rowops_test::random_values(s.cols, 0.25f, 2.f, run.data_seed() + 1));
    std::vector<float> yref(n);
    rmsnorm_ref(hx.data(), hw.data(), yref.data(), s.rows, s.cols, kEps);
    const std::vector<double> ref(yref.begin(), yref.end());
    const RmsnormArgs a{x.ptr(), w.ptr(), y.ptr(), s.rows, s.cols, kEps, s.t};
    fuzz::every_rung_and_entry(run, rmsnorm_rungs(), rmsnorm, a, [&] { y.poison(); },
                               [&] { return compare_y(y, ref, s); });
  }
}

TEST(AddRmsnormFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("add_rmsnorm", kSeconds, fuzz::rung_labels(add_rmsnorm_rungs()));
  while (run.next()) {
    const Drawn dr = draw(run, d);
    const fuzz::RowOp& s = dr.s;
    const size_t n = size_t(s.rows) * s.cols;
    DevTensor r(n, s.t, s.off[0]), x(n, s.t, s.off[1]), w(s.cols, s.t, s.off[2]), y(n, s.t, s.off[3]);
    const std::vector<float> r_in = inputs(n, dr.large, run.data_seed());
    const std::vector<float> hr = r.upload(r_in);
    const std::vector<float> hx = x.upload(inputs(n, dr.large, run.data_seed() + 2));
    const std::vector<float> hw = w.upload(rowops_test::random_values(s.cols, 0.25f, 2.f, run.data_seed() + 1));
    std::vector<float> rref(n), yref(n);
    add_rmsnorm_ref(hr.data(), hx.data(), hw.data(), rref.data(), yref.data(), s.rows, s.cols, kEps, s.t);
    const std::vector<double> ref(yref.begin(), yref.end());
    const AddRmsnormArgs a{r.ptr(), x.ptr(), w.ptr(), y.ptr(), s.rows, s.cols, kEps, s.t};
    auto prepare = [&] {
      r.upload(r_in);  // r is read and written: every launch starts from the same residual
      y.poison();
    };
    fuzz::every_rung_and_entry(run, add_rmsnorm_rungs(), add_rmsnorm, a, prepare, [&] {
      // r = round(r + x) is computed identically on both sides: it must match bit for bit.
      const std::vector<float> gr = r.download();
      for (size_t i = 0; i < n; ++i)
        if (!(gr[i] == rref[i]))
          return "r (= r + x) at row " + std::to_string(i / s.cols) + " col " +
                 std::to_string(i % s.cols) + " is " + std::to_string(gr[i]) + ", expected " +
                 std::to_string(rref[i]);
      return compare_y(y, ref, s);
    });
  }
}

}  // namespace
