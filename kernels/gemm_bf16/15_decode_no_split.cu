// Rung 15 — decode_no_split: the M <= 64 stream over W with no K split and no reduction: the
// activations are the wgmma A operand (m64), a W strip the B operand, every CTA runs the whole K
// and writes its strip's C columns straight from the accumulators, and four producer lanes keep
// the TMA ring full.
//
// Change from rung 11 (the previous decode rung): which operand is which, and so how the work is
// cut. Rung 11 put W in the wgmma A slot (m64: 64 W rows per slab), so N = 4096 had only 64 strips
// and it split K over a 2-CTA cluster to reach 128 CTAs, summing the halves through DSMEM after a
// cluster barrier: 2.2-3.0 us of tail after the mainloop at M = 32 / 64 (tools/gemm_trace,
// docs/gemm_bf16.md "The decode rung, fourth pass"). Here the activation box (MP = 16, 32 or 64
// rows: M rounded up, zero-filled by TMA past M) is A and W is B, so a CTA owns BN output columns
// over the whole K, no reduction. What stays from rung 11: one producer warp issuing TMA into a
// full/empty mbarrier ring, programmatic dependent launch with the first W boxes requested before
// griddepcontrol.wait, a ring sized so the grid runs in one wave.
//  * Strips: the narrowest multiple of 8 rows (from 32) that fits one CTA per SM in one wave: 32
//    at N = 4096 (128 CTAs), 88 at N = 11008 (126 CTAs; session 21: 32-row strips three per SM
//    took 42.0 us at 64x11008x4096, 88-row strips 28.6, cuBLAS 28.4). Widths that are not
//    wgmma shapes are cut into native pieces (wgmma_ss_m64nk16, common/hopper.cuh).
//  * Producer: four lanes of the producer warp, lane j filling slots j, j + 4, ... round after
//    round. The first version had one thread and ran at ~300 ns per k-block whatever the ring
//    depth (24.3-24.5 us at 4096^2 for every M): ncu put 41% of the warp samples in the consumers'
//    full-barrier wait with DRAM 23% busy, i.e. the single thread's per-k-block chain (a division
//    by the runtime ring depth, the empty-barrier try_wait, expect_tx, two TMA issues) was the
//    stream's rate. Slot and phase now advance by addition and four chains run side by side
//    (results/h200/dev/dec15/).
//  * Two consumer warpgroups take alternate k-blocks into their own accumulators; warpgroup 1
//    parks its 64 x BN fp32 block in the drained ring and warpgroup 0 adds it (fixed order:
//    bitwise repeatable, the same bits at every strip width) and stores bf16 C (rows >= M,
//    columns >= N skipped).
//  * Stage = [activation box MP x 128 B][W box BN x 128 B], both 1024-aligned (swizzle atoms). The
//    m64 A descriptor reads 64 rows: with MP < 64 the rows past MP read the W box and the next
//    stage (or the slack after the ring): junk accumulator rows >= M, never stored.
//  * Ring depth even: each slot is filled by one producer lane and consumed by one warpgroup,
//    round after round, in order (make_cfg: what broke when a slot's rounds came from different
//    lanes). The lanes spin on different barriers inside one warp and rely on independent thread
//    scheduling to make progress (the 4-stage forced-ring tests exercise it).
// Measured and not kept (docs/gemm_bf16.md "Rung 15", "Rung 15, session 21"; experiment rows 75-77
// and 130-149 keep them): clusters of 2 or 4 neighbouring strips multicasting the activation box
// (cuBLAS's pairing at N = 11008; slower than the best width without clusters on every decode
// shape), split-M pairs multicasting W (cuBLAS's pairing at 64x4096x4096; 17.5 against 15.9 us), a stagger of each
// cluster's walk over K, L2 evict-first / evict-last policies (no change), one producer thread,
// rings cut to a multiple of 4 (no change).
// Measured (H200, family run of 7135f41, results/h200/dev/final-7135f41/gemm_bf16.jsonl, us single
// launch / CUDA graph; cuBLAS beside): 16x4096x4096 14.8 / 10.7 (18.5 / 12.7; rung 11 17.5 / 16.7), 64x4096x4096
// 15.8 / 11.6 (14.7 / 11.8), 16x4096x11008 27.7 / 24.0 (30.8 / 27.7), 64x11008x4096 29.0 / 24.5
// (28.4 / 25.7; rung 11 34.0 / 27.4); rung 03 stays the pick at N = 11008 for M <= 16 (1x11008x4096
// auto (03) 26.8 / 24.0, 15 28.9 / 24.3).
// The kernel (k15), its configuration and its launch are in whole_k.cuh, shared with rung 16 (which
// launches it over 64-row tiles of M); this file holds rung 15's plan and entry points.
// Proxy rule relied on: TMA (async proxy) writes complete on the full mbarrier before the
// consumers' wgmma reads; a consumer warp releases a slot after wgmma.wait_group has completed the
// reads of it. The ring is reused for warpgroup 1's partial only after both warpgroups have waited
// on every full barrier (every TMA write landed) and drained their wgmmas (named barrier of the
// 256 consumers).
#include "gemm_bf16/whole_k.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

// The plan for (BN, CL): the deepest ring (fewest CTAs per SM) with which the whole grid is
// resident at once (the plan's strips: one CTA per SM, e.g. N = 4096: 128 CTAs of 32 rows, N =
// 11008: 126 of 88; forced 32-row strips at N = 11008: 344 CTAs, three per SM). Past one wave
// (N > 132 x 128), the ring for as many CTAs per SM as really fit. Two W boxes go out before the
// PDL wait (rung 11 v4's measured choice at M > 16).
Cfg15 plan(int M, int N, int bn, int cl, bool splitm) {
  auto make = [&](int cps) { return make_cfg(M, N, bn, cl, cps, 2, splitm); };
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const Cfg15 c = make(cps);
    if (c.grid * c.mtiles <= resident<true>(c)) return c;
  }
  return waves_cfg<true>(make, MAX_CPS);
}

// The strip width the rung runs: the narrowest multiple of 8 (from 32) whose strips fit one per SM
// in one wave, no clusters: N = 4096 -> 32 (128 CTAs), N = 11008 -> 88 (126 CTAs), N = 8192 ->
// 64; past 132 x 128 columns, 128-row strips several per SM. Measured (H200, session 21,
// results/h200/dev/s21/): at N = 11008 88-row strips against 32-row strips at three per SM
// 28.8 / 24.6 against 31.7 / 28.2 us at M = 64, 28.8 / 24.4 against 28.8 / 26.2 at M = 32 (single /
// graph); wider or narrower strips than one per SM slower (96: 115 CTAs, 29.5 / 27.0; 80: 138
// CTAs, two waves, 33.9 / 37.0). Clusters multicasting the activation box and split-M pairs
// multicasting W slower than this plan on every decode shape (rows 130-145).
int strip_of(int N) {
  const int sms = device_info().sms;
  for (int bn = 32; bn < 128; bn += 8)
    if (ceil_div(N, bn) <= sms) return bn;
  return 128;
}

Cfg15 choose(int M, int N, int bn, int cl, bool splitm = false) {
  static PlanCache<std::tuple<int, int, int, int, int, bool>, Cfg15> cache;
  const int mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  return cache.get(std::make_tuple(device_info().id, mp, N, bn, cl, splitm),
                   [&] { return plan(M, N, bn, cl, splitm); });
}
Cfg15 choose(int M, int N) { return choose(M, N, strip_of(N), 1); }

}  // namespace

std::string supports_15(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = whole_k_supports(a, d);
  if (!why.empty()) return why;
  if (a.M < 1 || a.M > 64) return "decode rung takes 1 <= M <= 64";
  return "";
}

void launch_15(const GemmBf16Args& a, cudaStream_t s) { launch_cfg<true>(a, choose(a.M, a.N), s); }

void launch_15_forced(const GemmBf16Args& a, int cps, int wpre, cudaStream_t s) {
  launch_cfg<true>(a, make_cfg(a.M, a.N, strip_of(a.N), 1, cps, wpre), s);
}

void launch_15_strip(const GemmBf16Args& a, int bn, int cl, bool splitm, cudaStream_t s) {
  KL_REQUIRE(bn % 8 == 0 && bn >= 32 && bn <= 128, "rung 15: strip of " << bn << " rows");
  KL_REQUIRE(cl == 1 || cl == 2 || cl == 4, "rung 15: cluster of " << cl);
  KL_REQUIRE(!splitm || cl == 2, "rung 15: split-M runs in pairs");
  launch_cfg<true>(a, choose(a.M, a.N, bn, cl, splitm), s);
}

void launch_15_variant(const GemmBf16Args& a, int which, cudaStream_t s) {
  switch (which) {
    case 1: return launch_15_strip(a, 32, 2, false, s);  // multicast pairs
    case 2: {                                      // one producer lane
      Cfg15 c = choose(a.M, a.N, 32, 1);
      c.lanes = 1;
      return launch_cfg<true>(a, c, s);
    }
    case 3: {  // the plan with its ring cut to a multiple of 4 (session 20's rounding)
      Cfg15 c = choose(a.M, a.N);
      c.stages = c.stages / 4 * 4;
      return launch_cfg<true>(a, c, s);
    }
    default: throw BadArgument("rung 15: no variant " + std::to_string(which));
  }
}

std::string describe_15(int M, int N) {
  const Cfg15 c = choose(M, N);
  return "MP=" + std::to_string(c.mp) + " BN=" + std::to_string(c.bn) + " CL=" + std::to_string(c.cl) + " CTAs/SM=" +
         std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " wpre=" +
         std::to_string(c.wpre) + " grid=" + std::to_string(c.grid) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
