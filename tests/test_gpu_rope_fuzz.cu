// tests/test_gpu_rope_fuzz.cu — seeded random shapes for RoPE (the fuzz sweep of tests/fuzz_util.h):
// both layouts, D 64 and 128, Hkv 1..16 with Hq a multiple of it (1 in 5 any Hq), B and S from 1
// (decode S = 1 on 3 shapes in 10) up to 2^22 qkv elements, caches up to 2^24 elements, theta
// 10000 / 500000 / 1000000, positions from 0 up to 2^24 (tokens layout) or anywhere in the cache
// (1 in 5 attention shapes put some decode tokens outside it), qkv and the outputs misaligned to the
// element on 1 shape in 5. Every rung that accepts the shape and the entry point are checked with
// tests/rope_test_util.h's check (the tolerance of test_gpu_rope.cu; untouched cache rows bit for bit).
#include <random>
#include <string>
#include <vector>

#include "kl/rope.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"
#include "tests/rope_test_util.h"

namespace {

using namespace kl;

constexpr long long kMaxQkvElems = 1LL << 22, kMaxCacheElems = 1LL << 24;
constexpr double kSeconds = 6;

TEST(RopeFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  fuzz::Run run("rope", kSeconds, fuzz::rung_labels(rope_rungs()));
  while (run.next()) {
    auto& g = run.rng();
    rope_test::Shape sh;
    sh.layout = fuzz::chance(g, 0.5) ? RopeLayout::tokens : RopeLayout::attention;
    sh.D = fuzz::chance(g, 0.5) ? 64 : 128;
    sh.theta = fuzz::one_of(g, std::vector<float>{10000.f, 500000.f, 1000000.f});
    sh.Hkv = static_cast<int>(fuzz::dim(g, 1, 16, {1, 2, 4, 8}));
    sh.Hq = fuzz::chance(g, 0.2) ? static_cast<int>(fuzz::dim(g, 1, 64, {1, 12, 32}))
                                 : sh.Hkv * static_cast<int>(fuzz::one_of(g, std::vector<long long>{1, 2, 4, 8}));
    const long long row = sh.row();
    const long long max_tokens = std::max(1LL, kMaxQkvElems / row);
    sh.S = fuzz::chance(g, 0.3) ? 1 : static_cast<int>(fuzz::dim(g, 1, std::min(max_tokens, 4096LL), {32, 64, 128}));
    sh.B = static_cast<int>(fuzz::dim(g, 1, std::max(1LL, std::min(128LL, max_tokens / sh.S)), {1, 16, 64}));
    bool outside = false;
    if (sh.layout == RopeLayout::attention) {
      const long long max_L = std::max<long long>(sh.S, kMaxCacheElems / (static_cast<long long>(sh.B) * sh.Hkv * sh.D));
      sh.L = static_cast<int>(std::min<long long>(max_L, sh.S + fuzz::log_uniform(g, 1, 4096) - 1));
      outside = sh.S == 1 && fuzz::chance(g, 0.2);
    }
    if (fuzz::chance(g, 0.2)) {
      sh.off_in = static_cast<int>(fuzz::uniform(g, 0, 3));
      sh.off_out = static_cast<int>(fuzz::uniform(g, 0, 3));
    }
    const int first = sh.layout == RopeLayout::tokens && fuzz::chance(g, 0.5)
                          ? static_cast<int>(fuzz::uniform(g, 0, (1LL << 24) - sh.S))
                          : 0;
    std::vector<int> pos = rope_test::prefill_positions(sh, g, first);
    if (outside)
      for (int& p : pos)
        if (fuzz::chance(g, 0.5)) p = fuzz::chance(g, 0.5) ? -1 - static_cast<int>(fuzz::uniform(g, 0, 5)) : sh.L + static_cast<int>(fuzz::uniform(g, 0, 5));
    run.set_shape(sh.str() + (first ? " positions from " + std::to_string(first) : "") +
                  (outside ? " some positions outside the cache" : ""));
    const rope_test::Problem p(sh, pos, run.data_seed());
    const RopeArgs a = p.args();
    fuzz::every_rung_and_entry(run, rope_rungs(), rope, a, [&] { p.reset(); },
                               [&] { return fuzz::failure_text(p.check("rope")); });
  }
}

}  // namespace
