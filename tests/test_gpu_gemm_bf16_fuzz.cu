// tests/test_gpu_gemm_bf16_fuzz.cu — seeded random shapes for the bf16 tensor-core GEMM (the fuzz
// sweep of tests/fuzz_util.h), within the entry point's contract: any M >= 1, N and K multiples of 8
// (drawn sizes are rounded up to one, so a draw just past a tile width lands 8 past it), 16-byte
// aligned pointers, a workspace. 35 in 100 shapes are decode-like (M <= 64, N up to 14336: the
// decode and split-K rungs and the wide-N class), the rest M up to 4096; M x N up to 2^19 and
// M x N x K up to 2^25 (every element is checked against the double product). Every rung that
// accepts the shape and the entry point are checked with GemmProblem::check
// (tests/gemm_bf16_test_util.h), on the legacy default stream.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "kl/gemm_bf16.h"
#include "tests/fuzz_util.h"
#include "tests/gemm_bf16_test_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;

constexpr long long kMaxMN = 1LL << 19, kMaxMNK = 1LL << 25;
constexpr double kSeconds = 15;

// A multiple of 8 in [8, hi8] (hi8 a multiple of 8): v rounded up, then capped.
long long round8(long long v, long long hi8) { return std::min(std::max(8LL, (v + 7) / 8 * 8), hi8); }
long long floor8(long long v) { return std::max(8LL, v / 8 * 8); }

TEST(GemmBf16Fuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("gemm_bf16", kSeconds, fuzz::rung_labels(gemm_bf16_rungs()));
  const std::vector<long long> edges = fuzz::with_pow2({d.sms, 192, 320, 4096 + 128, 11008}, 16384);
  while (run.next()) {
    auto& g = run.rng();
    long long M, N, K;
    if (fuzz::chance(g, 0.35)) {
      M = fuzz::dim(g, 1, 64, {1, 8, 16, 32, 48, 64});
      N = round8(fuzz::dim(g, 8, 14336, edges), floor8(std::min(14336LL, kMaxMN / M)));
    } else {
      M = fuzz::dim(g, 1, 4096, edges);
      N = round8(fuzz::dim(g, 8, 8192, edges), floor8(std::min(8192LL, kMaxMN / M)));
    }
    K = round8(fuzz::dim(g, 8, 8192, edges), floor8(std::min(8192LL, kMaxMNK / (M * N))));
    std::ostringstream sh;
    sh << "M=" << M << ",N=" << N << ",K=" << K;
    run.set_shape(sh.str());

    test::GemmProblem p(int(M), int(N), int(K), run.data_seed(), /*with_workspace=*/true);
    const GemmBf16Args a = p.args();
    fuzz::every_rung_and_entry(run, gemm_bf16_rungs(), gemm_bf16, a, [&] { p.poison(); },
                               [&] { return p.check(p.result()); });
  }
}

}  // namespace
