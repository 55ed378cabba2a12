// Rung 16 — small_tiles: rung 15's whole-K stream over 64-row tiles of any M, for the small prefill
// shapes where rungs 12-14's 128x256 tiles leave most SMs idle.
//
// Change from rung 15: a second grid dimension. Rung 15 launches one row of W strips against an
// activation box of M <= 64 rows; here blockIdx.y picks a 64-row tile of M (the activation box's
// row and the rows its epilogue may store), so any M runs: a CTA computes one 64 x BN tile over
// the whole K with rung 15's kernel unchanged (kernels/gemm_bf16/whole_k.cuh: four producer lanes
// on a TMA ring, two consumer warpgroups on alternate k-blocks summed in a fixed order, PDL).
//  * Strips: the narrowest multiple of 8 rows (from 32) whose tiles fit one CTA per SM: 1024^3 ->
//    128 rows, 8 x 16 = 128 CTAs, an 8-stage ring; 128x4096x4096 -> 64 rows, 64 x 2. With more
//    tiles than that, 128-row strips in waves, where it is slow (below): the entry point runs it
//    only where its tiles fit one wave (gemm_bf16.cu, class OneWave).
//  * Nothing is read before griddepcontrol.wait (rung 15 requests W boxes early: decode weights);
//    at M > 64 W may be another kernel's output (attention's K, say), so the general contract holds.
//  * Pairs (experiment row 78): two CTAs of a cluster on one strip and two neighbouring tiles, each
//    loading half of every W box and multicasting it.
// Measured (H200, session 21, results/h200/dev/s21/call5_*, call6_*, best of 3 processes, us single
// launch; rung 05, the entry point's pick before, and cuBLAS beside): 1024^3 12.8-12.9 (05 14.5-14.8;
// cuBLAS 9.4 / 12.7 in the two calls), 1000x1000x1024 13.0 (14.5-14.7; 9.0-9.2), 512x1024x1024 9.7-9.8
// (14.3-14.4; 8.1-8.9), 128x4096x4096 20.3-20.6 (36.1-36.4; 16.4-16.5), 256x4096x4096 27.8-28.1
// (36.3-36.4; 18.8-19.1). In waves: 4097x1016x520 40.9 (rung 12: 16.9), 2048^3 84-85 (26.9); after
// the review's ring fix (call9_1, one process) 39.9 and 59.2. Pairs:
// 128x4096x4096 19.0, 256x4096x4096 25.7, 1024^3 14.2, 512x1024x1024 10.5: mixed, not in the plan.
// What limits it (ncu at 1024^3: L2 21%, DRAM 6% of peak): each SM takes 24 KB per k-block for
// 1 MFLOP, 384 KB per launch at 1024^3 (30 GB/s per SM over 12.9 us; rung 15's stream reaches 66
// back to back): the fixed cost of a launch is a large part; a K split would also cut the bytes per
// FLOP (docs/gemm_bf16.md "Rung 16").
#include "gemm_bf16/whole_k.cuh"

namespace kl {
namespace hopper_gemm {

namespace {
// Strips: the narrowest multiple of 8 (from 32) whose tiles (strips x 64-row tiles of M) fit one
// CTA per SM; 128 rows when none does (then waves, the ring sized for the CTAs per SM that fit).
int strip_of_16(int M, int N) {
  const int sms = device_info().sms, mt = ceil_div(M, 64);
  for (int bn = 32; bn < 128; bn += 8)
    if (static_cast<long long>(ceil_div(N, bn)) * mt <= sms) return bn;
  return 128;
}
// pairs (experiment row 78): clusters of two CTAs on one strip and two neighbouring 64-row tiles,
// each loading half of every W box and multicasting it (W crosses from L2 once per pair).
Cfg15 cfg_16(int M, int N, int bn, int cps, bool pairs) {
  if (pairs) bn = std::min(128, ceil_div(bn, 32) * 32);  // W halves of whole swizzle atoms
  // wpre = 0: nothing is read before griddepcontrol.wait, so rung 16 keeps the entry point's
  // general stream contract (gemm_bf16.h: W may be the previous kernel's output at M > 64).
  Cfg15 c = make_cfg(64, N, bn, 1, cps, 0);
  c.mtiles = ceil_div(M, 64);
  if (pairs) c.splitm = true, c.cl = 2, c.grid *= 2, c.mtiles = ceil_div(c.mtiles, 2);
  return c;
}
Cfg15 plan_16(int M, int N, bool pairs) {
  const int bn = strip_of_16(M, N);
  auto make = [&](int cps) { return cfg_16(M, N, bn, cps, pairs); };
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const Cfg15 c = make(cps);
    if (c.grid * c.mtiles <= resident<false>(c)) return c;
  }
  // More tiles than one wave holds: the ring for as many CTAs per SM as really fit (128-row
  // strips: one, 146 registers; the measured 4097x1016x520 and 2048^3 rows ran a 2-CTA ring at
  // one CTA per SM before session 21's review).
  return waves_cfg<false>(make, MAX_CPS);
}
Cfg15 choose_16(int M, int N, bool pairs = false) {
  static PlanCache<std::tuple<int, int, int, bool>, Cfg15> cache;
  return cache.get(std::make_tuple(device_info().id, M, N, pairs), [&] { return plan_16(M, N, pairs); });
}
}  // namespace

std::string supports_16(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = whole_k_supports(a, d);
  if (!why.empty()) return why;
  if (a.M < 1) return "M must be >= 1";
  if (a.M > 65535 * 64) return "M must be <= 65535 x 64 (grid.y tiles of 64 rows)";
  return "";
}

void launch_16(const GemmBf16Args& a, cudaStream_t s) { launch_cfg<false>(a, choose_16(a.M, a.N), s); }
void launch_16_pairs(const GemmBf16Args& a, cudaStream_t s) { launch_cfg<false>(a, choose_16(a.M, a.N, true), s); }

std::string describe_16(int M, int N) {
  const Cfg15 c = choose_16(M, N);
  return "BN=" + std::to_string(c.bn) + " tiles=" + std::to_string(c.grid) + "x" + std::to_string(c.mtiles) +
         " CTAs/SM=" + std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
