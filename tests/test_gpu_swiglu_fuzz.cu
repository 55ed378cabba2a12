// tests/test_gpu_swiglu_fuzz.cu — seeded random shapes for SwiGLU (the fuzz sweep of
// tests/fuzz_util.h): rows x cols up to 2^22 elements (odd counts: a ragged vector tail; grids of
// one or several resident waves), f32 and bf16, g, u and y misaligned to the element on 1 shape in 5
// (each its own offset), gates up to |g| = 200 (exp overflow and underflow) on 1 in 8. Every rung
// that accepts the shape and the entry point (every shape, every alignment) are checked against
// swiglu_reference() with the harness's per-dtype tolerance, as in test_gpu_swiglu.cu.
#include <string>
#include <vector>

#include "kl/swiglu.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"
#include "tests/rowops_test_util.h"

namespace {

using namespace kl;
using kl::rowops_test::DevTensor;

constexpr long long kMaxCols = 1 << 20, kMaxElems = 1LL << 22;
constexpr double kSeconds = 6;

TEST(SwigluFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("swiglu", kSeconds, fuzz::rung_labels(swiglu_rungs()));
  while (run.next()) {
    const fuzz::RowOp s = fuzz::row_op(run.rng(), d.sms, kMaxCols, kMaxElems);
    const float gmax = fuzz::chance(run.rng(), 0.125) ? 200.f : 6.f;
    run.set_shape(s.str() + (gmax > 6.f ? " |g| <= 200" : ""));
    const size_t n = size_t(s.rows) * s.cols;
    DevTensor g(n, s.t, s.off[0]), u(n, s.t, s.off[1]), y(n, s.t, s.off[2]);
    const std::vector<float> hg = g.upload(rowops_test::random_values(n, -gmax, gmax, run.data_seed()));
    const std::vector<float> hu = u.upload(rowops_test::random_values(n, -2.f, 2.f, run.data_seed() + 1));
    std::vector<double> ref(n);
    swiglu_reference(hg.data(), hu.data(), ref.data(), n);
    const SwigluArgs a{g.ptr(), u.ptr(), y.ptr(), s.rows, s.cols, s.t};
    fuzz::every_rung_and_entry(run, swiglu_rungs(), swiglu, a, [&] { y.poison(); }, [&] {
      return fuzz::failure_text(rowops_test::close(y.download(), ref, s.t, s.cols, "y"));
    });
  }
}

}  // namespace
