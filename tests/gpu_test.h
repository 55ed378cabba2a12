// tests/gpu_test.h — what every GPU test starts with.
//
// KL_REQUIRE_GPU() skips the test, visibly and with the reason, when no CUDA device is usable
// (no driver, no device). On a machine with a GPU the test always runs.
// check_close() / verdict(): the one output check of the GPU tests (element tolerance plus a
// relative-L2 gate). RungCoverage: which rungs of a registry a test ran, and why the rest refused.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.h"
#include "kl/check.h"
#include "kl/device.h"
#include "kl/registry.h"

#define KL_REQUIRE_GPU()                                                 \
  do {                                                                   \
    std::string kl_why_ = ::kl::gpu_unavailable_reason();               \
    if (!kl_why_.empty()) GTEST_SKIP() << "no usable GPU: " << kl_why_; \
  } while (0)

namespace kl::test {

// cudaDeviceSynchronize with a watchdog: a barrier-phase or flag bug deadlocks a kernel forever;
// rather than hang the whole ctest run, name what was running and exit.
inline void sync_or_die(const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = cudaStreamQuery(0);
    if (e != cudaErrorNotReady) {
      KL_CHECK(e);
      KL_CHECK(cudaDeviceSynchronize());
      return;
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) {
      std::fprintf(stderr, "\nHANG: %s did not finish in 20 s (mbarrier phase, arrival count or flag?)\n",
                   what.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// ---------------------------------------------------------------- output check
// The relative-L2 bound for bf16 outputs of the tensor-core kernels: one bf16 rounding of the
// output (at most 2^-9 relative, about 1.6e-3 rms) plus bf16 operands (P in attention) leave a
// correct kernel near 2e-3 to 5e-3; a missing K/V tile, split piece or k-block moves whole rows by
// a few percent or more, which the per-element tolerance alone can miss.
constexpr double kBf16RelL2 = 1e-2;

// Names element i of an output for a failure message ("row 3 col 7"); empty: "element i".
using WhereFn = std::function<std::string(size_t)>;

// The verdict on precomputed statistics (bench::compare / compare_at with `tol`): passes when every
// element is within tol.abs + tol.rel * |ref|, none is non-finite where the reference is finite,
// and ||got - ref||_2 / ||ref||_2 <= tol.rel_l2. A failure names the rel-L2 and its bound, the
// number of elements outside the element tolerance and the worst one.
inline ::testing::AssertionResult verdict(const bench::ErrStats& e, const bench::Tolerance& tol,
                                          const std::string& what, const WhereFn& where = {}) {
  if (e.ok) return ::testing::AssertionSuccess();
  std::ostringstream s;
  s << what << ": ";
  if (e.n == 0) return ::testing::AssertionFailure() << s.str() << "nothing compared";
  const bool l2_bad = !(e.rel_l2 <= tol.rel_l2);
  if (l2_bad) s << "rel_l2 " << e.rel_l2 << " exceeds the bound " << tol.rel_l2 << "; ";
  if (e.bad)
    s << e.bad << " of " << e.n << " elements outside |got - ref| <= " << tol.abs << " + "
      << tol.rel << " |ref| (" << e.nonfinite << " non-finite)";
  else
    s << "every element within |got - ref| <= " << tol.abs << " + " << tol.rel << " |ref|";
  s << "; worst at " << (where ? where(e.worst) : "element " + std::to_string(e.worst)) << " got "
    << e.worst_got << " ref " << e.worst_ref << "; max_abs " << e.max_abs << ", rel_l2 "
    << e.rel_l2 << " (bound " << tol.rel_l2 << ")";
  return ::testing::AssertionFailure() << s.str();
}

// Compares n elements of `got` with `ref` (see verdict()).
inline ::testing::AssertionResult check_close(const float* got, const double* ref, size_t n,
                                              const bench::Tolerance& tol, const std::string& what,
                                              const WhereFn& where = {}) {
  return verdict(bench::compare(got, ref, n, tol), tol, what, where);
}
inline ::testing::AssertionResult check_close(const float* got, const float* ref, size_t n,
                                              const bench::Tolerance& tol, const std::string& what,
                                              const WhereFn& where = {}) {
  return verdict(bench::compare(got, ref, n, tol), tol, what, where);
}
inline ::testing::AssertionResult check_close(const std::vector<float>& got,
                                              const std::vector<double>& ref,
                                              const bench::Tolerance& tol, const std::string& what,
                                              const WhereFn& where = {}) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " elements, reference has "
                                         << ref.size();
  return check_close(got.data(), ref.data(), got.size(), tol, what, where);
}
// Whether one element fails the element tolerance (for diagnostics that locate the bad elements).
inline bool outside(double got, double ref, const bench::Tolerance& tol) {
  return !(std::fabs(got - ref) <= tol.abs + tol.rel * std::fabs(ref));
}

// ---------------------------------------------------------------- rung coverage
// Records, over one test, which rungs of a registry ran (were accepted and validated) and the
// refusals of the others; every_rung_ran() fails naming each rung that ran on no shape and its
// refusal reasons. On a device without sm_90a code (rungs for sm_90a or clusters cannot run), a
// rung whose refusals name the architecture is excused, and printed as such.
class RungCoverage {
 public:
  template <class Args>
  explicit RungCoverage(const std::vector<Rung<Args>>& table, int below = 1 << 30) {
    for (const auto& r : table)
      if (r.number < below) add(r);
  }
  template <class Args>
  RungCoverage(const std::vector<Rung<Args>>& table, const std::vector<int>& only) {
    for (const auto& r : table)
      for (int n : only)
        if (r.number == n) add(r);
  }
  template <class Args>
  explicit RungCoverage(const Rung<Args>& only) {
    add(only);
  }
  void ran(int number) { rungs_.at(number).ran = true; }
  void refused(int number, const std::string& shape, const std::string& why) {
    Entry& e = rungs_.at(number);
    if (why.find("sm_") != std::string::npos || why.find("compute capability") != std::string::npos)
      e.arch = true;
    if (++e.reasons[why] == 1) e.first_shape[why] = shape;
  }
  ::testing::AssertionResult every_rung_ran() const {
    std::ostringstream s;
    int missing = 0;
    for (const auto& [number, e] : rungs_) {
      if (e.ran) continue;
      std::ostringstream r;
      r << "rung " << number << " (" << e.name << ") ran on no shape of this test; refusals:";
      if (e.reasons.empty()) r << " none (never tried)";
      for (const auto& [why, count] : e.reasons)
        r << "\n    " << count << "x, e.g. " << e.first_shape.at(why) << ": " << why;
      if (e.arch && !require_sm90a(device_info()).empty()) {
        std::printf("  [excused: no sm_90a here] %s\n", r.str().c_str());
        continue;
      }
      ++missing;
      s << "\n  " << r.str();
    }
    if (!missing) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << missing << " rung(s) never ran:" << s.str();
  }

 private:
  struct Entry {
    std::string name;
    bool ran = false, arch = false;
    std::map<std::string, int> reasons;
    std::map<std::string, std::string> first_shape;
  };
  template <class Args>
  void add(const Rung<Args>& r) {
    rungs_[r.number].name = r.name;
  }
  std::map<int, Entry> rungs_;
};

}  // namespace kl::test
