// tests/test_gpu_attention_fuzz.cu — seeded random shapes for attention (the fuzz sweep of
// tests/fuzz_util.h), within the family's contract: D = 64 or 128, causal or not, GQA ratios
// G = Hq / Hkv from 1 to 8 with Hkv in {1, 2, 3, 4, 8}, B from 1, Sq from 1 to Skv. 35 in 100 shapes
// are decode steps (Sq <= 16, mostly 1, Skv up to 16384), the rest prefill (Skv up to 4096, Sq = Skv
// on a third of them); sizes are 1s, primes, the 64- and 128-row tile widths and one either side;
// B*Hq*Sq*Skv up to 2^26, B*Hkv*Skv*D up to 2^24. Every rung that accepts the shape and the entry
// point (with the workspace and without) are checked against the CPU double reference of
// bench/attention_check.h: every row where that is cheap, else 128 sampled rows (the corners
// included), with its tolerance, as in test_gpu_attention.cu.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/attention_check.h"
#include "bench/harness.h"
#include "kl/attention.h"
#include "tests/attention_test_util.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;
using namespace kl::bench;

constexpr long long kMaxWork = 1LL << 26, kMaxKv = 1LL << 24;
constexpr long long kAllRowsWork = 1LL << 26;  // reference on every row below this many row x key x D
constexpr double kSeconds = 15;

test::AttnCase draw(std::mt19937_64& g) {
  const std::vector<long long> edges = fuzz::with_pow2({176, 192, 320, 1000, 1234}, 16384);
  test::AttnCase c{};
  c.D = fuzz::chance(g, 0.5) ? 64 : 128;
  c.causal = fuzz::chance(g, 0.5);
  c.Hkv = static_cast<int>(fuzz::one_of(g, std::vector<long long>{1, 1, 2, 3, 4, 8}));
  c.Hq = c.Hkv * static_cast<int>(fuzz::uniform(g, 1, 8));
  c.B = static_cast<int>(fuzz::dim(g, 1, 4, {}));
  if (fuzz::chance(g, 0.35)) {  // decode
    c.Sq = fuzz::chance(g, 0.6) ? 1 : static_cast<int>(fuzz::uniform(g, 2, 16));
    c.Skv = static_cast<int>(fuzz::dim(g, c.Sq, 16384, edges));
  } else {
    c.Skv = static_cast<int>(fuzz::dim(g, 1, 4096, edges));
    c.Sq = fuzz::chance(g, 0.35) ? c.Skv : static_cast<int>(fuzz::dim(g, 1, c.Skv, edges));
  }
  // Within the work caps: fewer batches first, then shorter sequences (Sq <= Skv kept).
  auto work = [&] { return 1LL * c.B * c.Hq * c.Sq * c.Skv; };
  auto kv = [&] { return 1LL * c.B * c.Hkv * c.Skv * c.D; };
  while ((work() > kMaxWork || kv() > kMaxKv) && c.B > 1) --c.B;
  while (work() > kMaxWork || kv() > kMaxKv) {
    c.Skv = std::max(1, c.Skv / 2);
    c.Sq = std::min(c.Sq, c.Skv);
  }
  return c;
}

TEST(AttentionFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("attention", kSeconds, fuzz::rung_labels(attention_rungs()));
  while (run.next()) {
    const test::AttnCase c = draw(run.rng());
    run.set_shape(c.str());
    const test::AttnProblem p = test::make_attn_problem(c, run.data_seed());
    const size_t ws_bytes = attention_workspace_bytes(c.shape(), d);
    const DeviceBuffer ws(std::max<size_t>(ws_bytes, 256));
    const AttentionArgs a = p.args(ws.ptr, ws_bytes);
    const long long rows = 1LL * c.B * c.Hq * c.Sq;
    const bool all_rows = rows * c.Skv * c.D <= kAllRowsWork;
    const AttentionCheck chk = attention_reference_sampled(a, 128, run.data_seed(), all_rows ? rows : 0);
    auto prepare = [&] { poison(p.o.ptr, 2 * p.nQ); };
    // The workspace-less launch writes the same O: one check serves both.
    auto verify = [&] {
      const ErrStats e = attention_check_output(a, chk);
      return e.ok ? std::string() : test::describe(e, a, chk);
    };
    fuzz::every_rung_and_entry(run, attention_rungs(), attention, a, prepare, verify);
    const AttentionArgs no_ws = p.args();  // no workspace: still computed
    run.result(fuzz::Run::kEntry, fuzz::validate(run, prepare, [&] { attention(no_ws, 0); }, verify));
  }
}

}  // namespace
