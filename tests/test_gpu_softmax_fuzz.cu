// tests/test_gpu_softmax_fuzz.cu — seeded random shapes for the row softmax (the fuzz sweep of
// tests/fuzz_util.h): rows x cols up to 2^22 elements and 300000 columns (past rung 05's 8 x 32768),
// f32 and bf16, x and y misaligned to the element on 1 shape in 5, and on half the shapes the special
// rows of test_gpu_softmax.cu: an all -inf row (documented result: zeros), a row with every third
// entry -inf, a row of huge magnitudes (1e4..3e38), a one-hot row. Every rung that accepts the shape
// and the entry point (every shape, every alignment) are checked against softmax_reference() with
// the harness's per-dtype tolerance.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kl/softmax.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"
#include "tests/rowops_test_util.h"

namespace {

using namespace kl;
using kl::rowops_test::DevTensor;

constexpr long long kMaxCols = 300000, kMaxElems = 1LL << 22;
constexpr double kSeconds = 10;

// Values in [-10, 10); with `special`, rows 0..3 (those that exist) become the special rows, at
// random places among the rows.
std::vector<float> make_input(int rows, int cols, bool special, uint64_t seed) {
  std::vector<float> v = rowops_test::random_values(size_t(rows) * cols, -10.f, 10.f, seed);
  if (!special) return v;
  const float ninf = -std::numeric_limits<float>::infinity();
  std::mt19937_64 g(seed ^ 0x5bd1e995u);
  auto row = [&](int k) { return v.data() + size_t(k) * cols; };
  auto pick = [&] { return static_cast<int>(fuzz::uniform(g, 0, rows - 1)); };
  float* r0 = row(pick());
  std::fill(r0, r0 + cols, ninf);
  if (rows >= 2) {
    float* r1 = row(pick());
    for (int j = 0; j < cols; j += 3) r1[j] = ninf;
  }
  if (rows >= 3) {
    float* r2 = row(pick());
    std::uniform_real_distribution<float> e(4.f, 38.5f);
    for (int j = 0; j < cols; ++j) {
      const float mag = std::min(3.0e38f, std::pow(10.f, e(g)));
      r2[j] = (g() & 1) ? mag : -mag;
    }
  }
  if (rows >= 4) {
    float* r3 = row(pick());
    std::fill(r3, r3 + cols, ninf);
    r3[fuzz::uniform(g, 0, cols - 1)] = 1.5f;
  }
  return v;
}

TEST(SoftmaxFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("softmax", kSeconds, fuzz::rung_labels(softmax_rungs()));
  while (run.next()) {
    const fuzz::RowOp s = fuzz::row_op(run.rng(), d.sms, kMaxCols, kMaxElems);
    const bool special = fuzz::chance(run.rng(), 0.5);
    run.set_shape(s.str() + (special ? " special rows" : ""));
    const size_t n = size_t(s.rows) * s.cols;
    DevTensor x(n, s.t, s.off[0]), y(n, s.t, s.off[1]);
    const std::vector<float> hx = x.upload(make_input(s.rows, s.cols, special, run.data_seed()));
    std::vector<double> ref(n);
    softmax_reference(hx.data(), ref.data(), s.rows, s.cols);
    const SoftmaxArgs a{x.ptr(), y.ptr(), s.rows, s.cols, s.t};
    fuzz::every_rung_and_entry(run, softmax_rungs(), softmax, a, [&] { y.poison(); }, [&] {
      return fuzz::failure_text(rowops_test::close(y.download(), ref, s.t, s.cols, "y"));
    });
  }
}

}  // namespace
