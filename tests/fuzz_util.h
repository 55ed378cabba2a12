// tests/fuzz_util.h — what the fuzz tests (tests/test_gpu_<family>_fuzz.cu) share: the seed, the
// time budget, the validation of every rung and the entry point, the dimension generators and the
// one-line summary.
//
// A fuzz test draws shapes (and dtypes) at random within its family's documented limits, runs every
// rung whose supports() accepts the shape and the entry point, and validates each against the
// family's CPU reference with the tolerances of the family's GPU test. Environment:
//   KL_FUZZ_SEED=N     the seed (default: from the clock). Printed first, so a failure replays.
//   KL_FUZZ_SECONDS=S  time budget of each fuzz test, checked between shapes (default: the family's).
//   KL_FUZZ_SHAPES=N   exactly N shapes, whatever the time: with the seed of a failing run and N =
//                      the failing shape's number + 1, the replay stops right after that shape.
// Shape k draws from its own generator, seeded from (seed, k): one seed gives the same shapes and
// data, in the same order, on every run on the same kind of GPU (some sizes are SM-count multiples).
// At the end (also after a failed assertion) one line:
//   FUZZ <family>: seed S, N shapes, P (rung, shape) pairs validated (E entry point), R refusals,
//   T s[; never ran: rungs]
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kl/device.h"
#include "kl/dtype.h"
#include "kl/registry.h"
#include "tests/gpu_test.h"

namespace kl::fuzz {

// "06": a rung's label in the summary.
inline std::string rung_label(int number) {
  char b[16];
  std::snprintf(b, sizeof b, "%02d", number);
  return b;
}
template <class Table>
std::vector<std::string> rung_labels(const Table& t) {
  std::vector<std::string> v;
  for (const auto& r : t) v.push_back(rung_label(r.number));
  return v;
}

// Runs `f` (returning "" or a failure text); an exception becomes the failure text.
template <class F>
std::string guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

// A gtest check as a failure text: "" when it passed, else its message.
inline std::string failure_text(const ::testing::AssertionResult& r) {
  return r ? std::string() : std::string(r.message());
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A positive decimal from the environment; false when unset. A malformed value fails the test
// (a typo must not silently fall back to a random seed).
inline bool env_number(const char* name, double* out) {
  const char* s = std::getenv(name);
  if (!s || !*s) return false;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0) || !std::isfinite(v)) {
    ADD_FAILURE() << name << "='" << s << "' is not a non-negative number; ignored";
    return false;
  }
  *out = v;
  return true;
}

class Run {
 public:
  // `rungs`: the labels of every rung the test may run ("06", "add 04"), for the never-ran list.
  Run(std::string family, double default_seconds, std::vector<std::string> rungs = {})
      : family_(std::move(family)), all_rungs_(std::move(rungs)), t0_(Clock::now()) {
    const char* s = std::getenv("KL_FUZZ_SEED");
    if (s && *s) {
      char* end = nullptr;
      seed_ = std::strtoull(s, &end, 10);
      if (end == s || *end != '\0') {
        ADD_FAILURE() << "KL_FUZZ_SEED='" << s << "' is not a decimal number; using the clock";
        seed_ = clock_seed();
      }
    } else {
      seed_ = clock_seed();
    }
    seconds_ = default_seconds;
    env_number("KL_FUZZ_SECONDS", &seconds_);
    double n = 0;
    if (env_number("KL_FUZZ_SHAPES", &n)) max_shapes_ = static_cast<long long>(n);
    std::printf("FUZZ %s: seed %llu, budget %.1f s%s (replay: KL_FUZZ_SEED=%llu)\n", family_.c_str(),
                static_cast<unsigned long long>(seed_), seconds_,
                max_shapes_ >= 0 ? (", " + std::to_string(max_shapes_) + " shapes").c_str() : "",
                static_cast<unsigned long long>(seed_));
    std::fflush(stdout);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run() { summary(); }

  // Starts the next shape (its own generator, rng()); false when the budget is spent (or
  // KL_FUZZ_SHAPES reached, or 5 shapes have failed). The first shape always runs.
  bool next() {
    if (max_shapes_ >= 0 ? shapes_ >= max_shapes_ : (shapes_ > 0 && elapsed() >= seconds_)) return false;
    if (failed_shapes_ >= 5) {
      std::printf("FUZZ %s: stopping after 5 failing shapes\n", family_.c_str());
      return false;
    }
    last_failed_ = false;
    // A kernel fault leaves the context unusable: every later shape would fail the same way.
    if (shapes_ > 0) {
      const cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) {
        ADD_FAILURE() << where() << ": the device is in error (" << cudaGetErrorString(e) << "); stopping";
        return false;
      }
    }
    shape_.clear();
    shape_seed_ = splitmix64(seed_ ^ splitmix64(static_cast<uint64_t>(shapes_)));
    rng_.seed(shape_seed_);
    ++shapes_;
    return true;
  }
  std::mt19937_64& rng() { return rng_; }
  // A seed for this shape's data.
  uint64_t data_seed() const { return shape_seed_; }
  // Shape numbers count from 0; "seed S shape #k" names the shape in failure messages.
  std::string where() const {
    return "[fuzz " + family_ + " seed " + std::to_string(seed_) + " shape #" +
           std::to_string(shapes_ - 1) + " " + shape_ + "; replay: KL_FUZZ_SEED=" +
           std::to_string(seed_) + " KL_FUZZ_SHAPES=" + std::to_string(shapes_) + "]";
  }
  // The drawn shape in words (for where()).
  void set_shape(std::string s) { shape_ = std::move(s); }

  // One validation of `rung` (kEntry: the entry point) on this shape: `err` "" = it matched the
  // reference; anything else fails the test with the shape's replay line.
  static constexpr const char* kEntry = "entry";
  void result(const std::string& rung, const std::string& err) {
    if (err.empty()) {
      if (rung == kEntry) {
        ++entry_;
      } else {
        ++pairs_;
        ran_.insert(rung);
      }
      return;
    }
    ADD_FAILURE() << where() << " " << (rung == kEntry ? "entry point" : "rung " + rung) << ": " << err;
    if (!last_failed_) {
      last_failed_ = true;
      ++failed_shapes_;
    }
  }
  void refused() { ++refusals_; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  void summary() {
    if (printed_) return;
    printed_ = true;
    std::string never;
    for (const auto& r : all_rungs_)
      if (!ran_.count(r)) never += (never.empty() ? "" : " ") + r;
    std::printf("FUZZ %s: seed %llu, %lld shapes, %lld (rung, shape) pairs validated (%lld entry point), "
                "%lld refusals, %.1f s%s%s\n",
                family_.c_str(), static_cast<unsigned long long>(seed_), shapes_, pairs_, entry_,
                refusals_, elapsed(), never.empty() ? "" : "; never ran: ", never.c_str());
    std::fflush(stdout);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static uint64_t clock_seed() {
    const uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    return splitmix64(t ^ (static_cast<uint64_t>(std::random_device{}()) << 32)) % 1000000000000ull;
  }
  std::string family_, shape_;
  std::vector<std::string> all_rungs_;
  std::set<std::string> ran_;
  Clock::time_point t0_;
  uint64_t seed_ = 0, shape_seed_ = 0;
  double seconds_ = 10;
  long long max_shapes_ = -1, shapes_ = 0, pairs_ = 0, entry_ = 0, refusals_ = 0;
  int failed_shapes_ = 0;
  bool last_failed_ = false, printed_ = false;
  std::mt19937_64 rng_;
};

// ---------------------------------------------------------------- validation
// One validation on the current shape: prepare() (poison the outputs, restore what the kernel
// writes in place), launch(), a synchronize (a hang exits naming run.where()), then verify(): ""
// when the output matched the reference, else the failure text. An exception is the failure text.
template <class Prepare, class Launch, class Verify>
std::string validate(const Run& run, Prepare&& prepare, Launch&& launch, Verify&& verify) {
  return guarded([&]() -> std::string {
    prepare();
    launch();
    test::sync_or_die(run.where());
    return verify();
  });
}

// Validates `a` on every rung of `rungs` whose supports() accepts it (the others count as
// refusals), then on the entry point `entry`, all on the legacy default stream.
template <class Args, class Prepare, class Verify>
void every_rung_and_entry(Run& run, const std::vector<Rung<Args>>& rungs,
                          void (*entry)(const Args&, cudaStream_t), const Args& a, Prepare&& prepare,
                          Verify&& verify) {
  const DeviceInfo& d = device_info();
  for (const auto& r : rungs) {
    if (!r.supports(a, d).empty()) {
      run.refused();
      continue;
    }
    run.result(rung_label(r.number), validate(run, prepare, [&] { launch_checked(r, a, 0); }, verify));
  }
  run.result(Run::kEntry, validate(run, prepare, [&] { entry(a, 0); }, verify));
}

// ---------------------------------------------------------------- generators
inline long long uniform(std::mt19937_64& g, long long lo, long long hi) {
  return std::uniform_int_distribution<long long>(lo, hi)(g);
}
inline bool chance(std::mt19937_64& g, double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
template <class T>
const T& one_of(std::mt19937_64& g, const std::vector<T>& v) {
  return v[static_cast<size_t>(uniform(g, 0, static_cast<long long>(v.size()) - 1))];
}
// Log-uniform in [lo, hi] (lo >= 1): small and large sizes equally likely per octave.
inline long long log_uniform(std::mt19937_64& g, long long lo, long long hi) {
  if (hi <= lo) return lo;
  const double a = std::log(static_cast<double>(lo)), b = std::log(static_cast<double>(hi) + 1);
  const long long v = static_cast<long long>(std::exp(std::uniform_real_distribution<double>(a, b)(g)));
  return std::clamp(v, lo, hi);
}

inline const std::vector<long long>& primes() {
  static const std::vector<long long> p = {2,    3,    5,    7,    11,   13,    17,    31,    61,
                                           127,  251,  257,  509,  521,  1021,  2039,  4093,  4099,
                                           8191, 8209, 16381, 32749, 65537, 131071};
  return p;
}
inline const std::vector<long long>& powers_of_two() {
  static const std::vector<long long> p = {2,    4,    8,     16,    32,    64,    128,    256,  512,
                                           1024, 2048, 4096,  8192,  16384, 32768, 65536, 131072};
  return p;
}

// A size in [lo, hi] (lo >= 1): 1 in 10 the low end itself, 2 in 10 a prime, 3 in 10 one of
// `edges` (tile and vector widths, SM counts) or one either side of it, else log-uniform. Draws that
// fall outside [lo, hi] become log-uniform.
inline long long dim(std::mt19937_64& g, long long lo, long long hi, const std::vector<long long>& edges) {
  const double u = std::uniform_real_distribution<double>(0, 1)(g);
  long long v = -1;
  if (u < 0.1) {
    v = lo;
  } else if (u < 0.3) {
    v = one_of(g, primes());
  } else if (u < 0.6 && !edges.empty()) {
    v = one_of(g, edges) + uniform(g, -1, 1);
  }
  if (v < lo || v > hi) v = log_uniform(g, lo, hi);
  return v;
}
// `edges` plus every power of two from 8 up to `up_to`.
inline std::vector<long long> with_pow2(std::vector<long long> edges, long long up_to) {
  for (long long p : powers_of_two())
    if (p >= 8 && p <= up_to) edges.push_back(p);
  return edges;
}

// ---------------------------------------------------------------- row ops (rmsnorm, swiglu, softmax)
// rows x cols of one storage type; off[i]: tensor i starts off[i] elements into its allocation (1 in
// 5 shapes misaligns some tensors: pointers then aligned to the element only, each tensor its own).
struct RowOp {
  int rows = 1, cols = 1;
  DType t = DType::f32;
  int off[4] = {0, 0, 0, 0};
  std::string str() const {
    std::string s = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols) + " " + dtype_name(t);
    if (off[0] || off[1] || off[2] || off[3])
      s += " offsets " + std::to_string(off[0]) + "," + std::to_string(off[1]) + "," +
           std::to_string(off[2]) + "," + std::to_string(off[3]);
    return s;
  }
};
// Columns: 1s, primes, powers of two and one either side (vector widths, warp and block sizes, the
// register-row limits 16384 / 32768 per block, 262144 per 8-block cluster), 4099, 7200..8192 (the
// 256-thread bf16 class), 11008 (the FFN width). Rows: 1s, primes, and SM-count multiples either
// side (the persistent rungs need 2 x or 4 x SMs rows). 15 in 100 shapes take a model width; 3 in 10
// of the rest many rows (2 x SMs - 1 to 12 x SMs) with the columns that then fit in max_elems.
inline RowOp row_op(std::mt19937_64& g, int sms, long long max_cols, long long max_elems) {
  RowOp s;
  s.t = chance(g, 0.5) ? DType::f32 : DType::bf16;
  if (chance(g, 0.2))
    for (int& o : s.off) o = static_cast<int>(uniform(g, 0, 3));
  const std::vector<long long> col_edges =
      with_pow2({7200, 7232, 8184, 11008, 4099, 1000, 262144, 3 * 1024, 12288}, max_cols);
  const std::vector<long long> row_edges = {sms, 2LL * sms, 4LL * sms, 8LL * sms, 64, 128, 256};
  long long rows, cols;
  if (chance(g, 0.15)) {  // model widths: 4096, 8192, 11008, 14336 and 7169..8192 in steps of 8
    cols = chance(g, 0.5) ? one_of(g, std::vector<long long>{4096, 8192, 11008, 14336})
                          : 7168 + 8 * uniform(g, 1, 128);
    cols = std::min(cols, max_cols);
    rows = dim(g, 1, std::max(1LL, max_elems / cols), row_edges);
  } else {
    if (chance(g, 0.3)) {
      rows = chance(g, 0.5) ? one_of(g, std::vector<long long>{2LL * sms - 1, 2LL * sms, 4LL * sms - 1,
                                                               4LL * sms, 4LL * sms + 1})
                            : uniform(g, 2LL * sms, 12LL * sms);
      cols = dim(g, 1, std::max(1LL, std::min(max_cols, max_elems / rows)), col_edges);
    } else {
      cols = dim(g, 1, max_cols, col_edges);
      rows = 0;
    }
    // Whole 16-byte rows on 4 draws in 10 (the vector rungs' case), odd widths on the rest.
    if (chance(g, 0.4) && (cols + 7) / 8 * 8 <= max_cols) cols = (cols + 7) / 8 * 8;
    if (rows == 0) rows = dim(g, 1, std::max(1LL, max_elems / cols), row_edges);
    rows = std::max(1LL, std::min(rows, max_elems / cols));
  }
  s.rows = static_cast<int>(rows);
  s.cols = static_cast<int>(cols);
  return s;
}

}  // namespace kl::fuzz
