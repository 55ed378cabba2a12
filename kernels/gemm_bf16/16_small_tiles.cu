// 16 small_tiles — rung 15's whole-K stream over 64-row tiles of any M, for the small prefill
// shapes where the 128x256 tiles of rungs 12-14 leave most SMs idle.
//
// Parent: 15 decode_no_split.
// Change: a second grid dimension: blockIdx.y picks a 64-row tile of M, so any M runs; rung 15's
//   kernel is unchanged (whole_k.cuh). Strips: the narrowest multiple of 8 rows (from 32) whose
//   tiles fit one CTA per SM; else 128-row strips in waves.
// Why: small prefill shapes (e.g. 1024^3, 128x4096x4096) have too few 128x256 tiles for the card.
// Limits: nothing is read before griddepcontrol.wait (at M > 64, W may be another kernel's output);
//   the fixed cost of a launch is a large part of the time, and in waves it is slow, so the entry
//   point runs it only where its tiles fit one wave (gemm_bf16.cu, class OneWave). Pairs (tests only,
//   not in the plan): two CTAs of a cluster share each W box by multicast.
#include "gemm_bf16/whole_k.cuh"

namespace kl {
namespace hopper_gemm {

namespace {
// Strips: the narrowest multiple of 8 (from 32) whose tiles (strips x 64-row tiles of M) fit one
// CTA per SM; 128 rows when none does (then waves, the ring sized for the CTAs per SM that fit).
int strip_of_16(int M, int N) { return one_wave_strip(N, ceil_div(M, 64), 8); }
// pairs (tests only): clusters of two CTAs on one strip and two neighbouring 64-row tiles,
// each loading half of every W box and multicasting it (W crosses from L2 once per pair).
WholeKConfig cfg_16(int M, int N, int bn, int cps, bool pairs) {
  if (pairs) bn = std::min(128, ceil_div(bn, 32) * 32);  // W halves of whole swizzle atoms
  // wpre = 0: nothing is read before griddepcontrol.wait, so rung 16 keeps the entry point's
  // general stream contract (gemm_bf16.h: W may be the previous kernel's output at M > 64).
  WholeKConfig c = make_cfg(64, N, bn, 1, cps, 0);
  c.mtiles = ceil_div(M, 64);
  if (pairs) c.splitm = true, c.cl = 2, c.grid *= 2, c.mtiles = ceil_div(c.mtiles, 2);
  return c;
}
WholeKConfig plan_16(int M, int N, bool pairs) {
  const int bn = strip_of_16(M, N);
  // More tiles than one wave holds: the ring for as many CTAs per SM as really fit (128-row
  // strips: one, 146 registers).
  return one_wave_cfg<KernelSet::kSmallTiles>([&](int cps) { return cfg_16(M, N, bn, cps, pairs); });
}
WholeKConfig choose_16(int M, int N, bool pairs = false) {
  static PlanCache<std::tuple<int, int, int, bool>, WholeKConfig> cache;
  return cache.get(std::make_tuple(device_info().id, M, N, pairs), [&] { return plan_16(M, N, pairs); });
}
}  // namespace

std::string gemm_bf16_small_tiles_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = whole_k_supports(a, d);
  if (!why.empty()) return why;
  if (a.M > 65535 * 64) return "M must be <= 65535 x 64 (grid.y tiles of 64 rows)";
  return "";
}

void gemm_bf16_small_tiles_launch(const GemmBf16Args& a, cudaStream_t s) {
  launch_cfg<KernelSet::kSmallTiles>(a, choose_16(a.M, a.N), s);
}
void gemm_bf16_small_tiles_launch_pairs(const GemmBf16Args& a, cudaStream_t s) {
  launch_cfg<KernelSet::kSmallTiles>(a, choose_16(a.M, a.N, true), s);
}

std::string gemm_bf16_small_tiles_describe(int M, int N) {
  const WholeKConfig c = choose_16(M, N);
  return "BN=" + std::to_string(c.bn) + " tiles=" + std::to_string(c.grid) + "x" + std::to_string(c.mtiles) +
         " CTAs/SM=" + std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
