// 15 decode_no_split — the M <= 64 stream over W with no K split: the activations are the wgmma A
// operand (m64), a W strip the B operand, every CTA runs the whole K.
//
// Parent: 11 decode_tma_splitk.
// Change: which operand is which. The activation box (MP = 16/32/64 rows, zero-filled past M) is A
//   and W is B, so a CTA owns BN output columns over the whole K and writes them from the
//   accumulators: no reduction. Strips: the narrowest multiple of 8 rows (from 32) that fits one
//   CTA per SM in one wave. Four producer lanes fill slots j, j + 4, ... (the ring depth is even);
//   two consumer warpgroups take alternate k-blocks and are summed in a fixed order.
// Why: 11 put W in the m64 A slot, so N = 4096 had only 64 strips and needed a K split whose
//   cluster reduction tail dominated at M = 32 / 64; one producer thread could not keep pace.
// Limits: the m64 A descriptor reads 64 rows, so with MP < 64 junk rows (never stored) are
//   computed; the producer lanes rely on independent thread scheduling. Kernel and launch are in
//   whole_k.cuh (shared with rung 16); TMA writes complete on the full mbarrier before wgmma reads,
//   and the ring holds warpgroup 1's partial only after both warpgroups drained every stage.
#include "gemm_bf16/whole_k.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

// The plan for (BN, CL): the deepest ring (fewest CTAs per SM) with which the whole grid is
// resident at once (the plan's strips: one CTA per SM, e.g. N = 4096: 128 CTAs of 32 rows, N =
// 11008: 126 of 88; forced 32-row strips at N = 11008: 344 CTAs, three per SM). Past one wave
// (N > 132 x 128), the ring for as many CTAs per SM as really fit. Two W boxes go out before the
// PDL wait (rung 11's choice at M > 16).
WholeKConfig plan(int M, int N, int bn, int cl, bool splitm) {
  return one_wave_cfg<KernelSet::kDecode>([&](int cps) { return make_cfg(M, N, bn, cl, cps, 2, splitm); });
}

// The strip width the rung runs: the narrowest multiple of 8 (from 32) whose strips fit one per SM
// in one wave, no clusters: N = 4096 -> 32 (128 CTAs), N = 11008 -> 88 (126 CTAs), N = 8192 ->
// 64; past 132 x 128 columns, 128-row strips several per SM. At N = 11008 88-row strips beat
// 32-row strips at three per SM, and strips wider or narrower than one per SM are slower (96: 115
// CTAs; 80: 138 CTAs, two waves). Clusters multicasting the activation box and split-M pairs
// multicasting W are slower on every decode shape (the tests run them: ..._launch_strip).
int strip_of(int N) { return one_wave_strip(N, 1, 8); }

WholeKConfig choose(int M, int N, int bn, int cl, bool splitm = false) {
  static PlanCache<std::tuple<int, int, int, int, int, bool>, WholeKConfig> cache;
  const int mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  return cache.get(std::make_tuple(device_info().id, mp, N, bn, cl, splitm),
                   [&] { return plan(M, N, bn, cl, splitm); });
}
WholeKConfig choose(int M, int N) { return choose(M, N, strip_of(N), 1); }

}  // namespace

std::string gemm_bf16_decode_no_split_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = whole_k_supports(a, d);
  if (!why.empty()) return why;
  if (a.M > 64) return "decode rung takes 1 <= M <= 64";
  return "";
}

void gemm_bf16_decode_no_split_launch(const GemmBf16Args& a, cudaStream_t s) {
  launch_cfg<KernelSet::kDecode>(a, choose(a.M, a.N), s);
}

void gemm_bf16_decode_no_split_launch_forced(const GemmBf16Args& a, int cps, int wpre, cudaStream_t s) {
  launch_cfg<KernelSet::kDecode>(a, make_cfg(a.M, a.N, strip_of(a.N), 1, cps, wpre), s);
}

void gemm_bf16_decode_no_split_launch_strip(const GemmBf16Args& a, int bn, int cl, bool splitm, cudaStream_t s) {
  KL_REQUIRE(bn % 8 == 0 && bn >= 32 && bn <= 128, "rung 15: strip of " << bn << " rows");
  KL_REQUIRE(cl == 1 || cl == 2 || cl == 4, "rung 15: cluster of " << cl);
  KL_REQUIRE(!splitm || cl == 2, "rung 15: split-M runs in pairs");
  launch_cfg<KernelSet::kDecode>(a, choose(a.M, a.N, bn, cl, splitm), s);
}

void gemm_bf16_decode_no_split_launch_variant(const GemmBf16Args& a, int which, cudaStream_t s) {
  switch (which) {
    case 1: return gemm_bf16_decode_no_split_launch_strip(a, 32, 2, false, s);  // multicast pairs
    case 2: {                                      // one producer lane
      WholeKConfig c = choose(a.M, a.N, 32, 1);
      c.lanes = 1;
      return launch_cfg<KernelSet::kDecode>(a, c, s);
    }
    case 3: {  // the plan with its ring cut to a multiple of 4
      WholeKConfig c = choose(a.M, a.N);
      c.stages = c.stages / 4 * 4;
      return launch_cfg<KernelSet::kDecode>(a, c, s);
    }
    default: throw BadArgument("rung 15: no variant " + std::to_string(which));
  }
}

std::string gemm_bf16_decode_no_split_describe(int M, int N) {
  const WholeKConfig c = choose(M, N);
  return "MP=" + std::to_string(c.mp) + " BN=" + std::to_string(c.bn) + " CL=" + std::to_string(c.cl) + " CTAs/SM=" +
         std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " wpre=" +
         std::to_string(c.wpre) + " grid=" + std::to_string(c.grid) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
