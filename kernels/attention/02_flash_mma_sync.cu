// kernels/attention/02_flash_mma_sync.cu — rung 02: tensor-core flash attention with mma.sync.
//
// Change from rung 01: the two products move to the tensor cores (mma.sync.m16n8k16, bf16 in,
// fp32 accumulate) and everything else is rearranged around their fragment layouts
// (flash_mma.cuh has the kernel and the layout reasoning):
//   * a 128-row Q tile, 4 warps x 32 rows (two m16 tiles per warp): every K and V fragment read
//     from shared memory feeds two mmas, so the ldmatrix stream per FLOP is half that of 16 rows
//     per warp (which needs 154 B/clk of the SM's 128: shared memory, not the tensor pipe, was the
//     roof). Q fragments are re-read from shared memory per k-step (2 x (O + S + Q) fragments do
//     not fit in 255 registers); D = 128: 2-stage ring, 96 KB, 2 blocks/SM;
//   * S = Q K^T with K read by plain ldmatrix (K rows are the B operand's columns), O += P V with V
//     read by ldmatrix.trans; P is packed to bf16 straight from the S accumulators into the A
//     layout of the next mma, so it never touches shared memory;
//   * the row max / sum live on the accumulator fragments (register loop + 2 quad shuffles), exp2
//     with scale*log2(e) folded into one ffma per score; O is rescaled only when a row max of the
//     warp moved (warp vote);
//   * K and V stream through a cp.async ring into XOR-swizzled shared memory (no padding,
//     conflict-free ldmatrix; one offset register per operand, k-steps by XOR), one __syncthreads
//     per 64-key tile;
//   * causal: key tiles past the tile's diagonal are never loaded, only the diagonal tiles pay
//     for the mask; the heaviest query tiles are launched first.
// Round 2 (measured, request attn1-1, H200, S=4096 D=128 non-causal / causal / D=64 non-causal):
// round 1's 8 warps x 16 rows (Q in registers, 3 stages, 1 block/SM) ran 280 / 270 / 263 TFLOP/s
// in the same run; 4 warps x 32 rows ran 336 / 316 / 286 (8 warps x 32 rows 334 / 306 / 264,
// 4 warps x 16 rows at 2 blocks/SM 298 / 293 / 266, 4 x 32 rows with 32-key tiles 326 / 309 / 243).
// What limits it: the softmax between the two products of one warp (no overlap inside a warp;
// 2 warps per scheduler) and the MUFU exp2 (64 per thread per tile) -- see docs/attention.md.
// Measured (H200, 2026-11-29, request attn1 r2-1, results/h200/dev/batch/attn1/pre_b.jsonl): B=1, H=32,
// S=4096, D=128: 336 TFLOP/s non-causal, 316 causal; D=64 non-causal 286 (round 1: 310 / 298 /
// 255; same run, round 1's tile: 280 / 270 / 263). Targets 1.2x FA2 = 410 / 307: causal met,
// non-causal not (82%).
// Since 9dd5fcb (flash_mma.cuh, D = 128: the stale-max softmax, docs/attention.md log item 12; same-call
// A/B -2.4% / -3.8% time at S=4096 non-causal / causal): full run of 9dd5fcb (results/h200/dev/final-9dd5fcb/attention.jsonl,
// NVML MHz in brackets) S=4096 D=128 328.3 [1965] / 345.8 [1965] TFLOP/s causal / non-causal, S=8192
// 344.2 / 344.9, D=64 S=4096 non-causal 291.1 [1980] (D = 64 keeps the max-based softmax).
// Session 22 (docs/attention.md "Session 22"): non-causal launches number the query tiles head by
// head (flash::tile_of, Cfg's HEAD_MAJOR), so the blocks resident at once share a few heads' K/V in
// L2; the compile-time order also let ptxas drop the 8-byte spill the D = 128 kernel keeps inside its
// KV loop. Measured (H200, results/h200/dev/s22/call4_attn_p1.jsonl, b32ba5c): non-causal D = 128
// 366.7 / 368.6 / 371.0 TFLOP/s at S = 4096 / 8192 / 16384 (was 344.9 / 347.8 / 350.1 in ca64a51's
// tables), 1.04x / 1.05x / 1.06x the same call's flash; D = 64 within 2%. The kernel with its
// softmax compiled out (tools/attn_ceiling) runs 434-444: issue 7's 1.2x flash non-causal (421-423)
// is 95-97% of that. Causal D = 128 (flash_mma.cuh's kOpaque: the loop's 8-byte spill gone; call 6,
// 2895f67): 325.0 -> 332.1 TFLOP/s at S = 4096 (1.22x flash), 344.8 -> 355.7 at 8192 (1.11x).
#include "attention/attention_internal.h"
#include "attention/flash_mma.cuh"

namespace kl {
namespace {

// 4 warps x 2 m-tiles = 128 query rows, 64-key tiles; D = 128: 2-stage ring, 96 KB, 2 blocks/SM
// (255 registers each); D = 64: 3 stages, 64 KB.
// HM: non-causal tiles head by head (their K/V stay in L2), causal heaviest first (flash::tile_of).
template <int D, bool HM = false>
using Cfg02 = flash::CfgBig<D, HM>;

template <int D>
void launch02(const AttentionArgs& a, cudaStream_t s) {
  if (a.causal) flash::launch_whole_tiles<Cfg02<D, false>>(a, s);
  else flash::launch_whole_tiles<Cfg02<D, true>>(a, s);
}

}  // namespace

std::string attn02_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_common_supports(a, d);
  if (!why.empty()) return why;
  const int smem = a.D == 64 ? Cfg02<64>::SMEM : Cfg02<128>::SMEM;
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  const long long tiles = static_cast<long long>((a.Sq + 127) / 128) * a.B * a.Hq;
  if (tiles > 2147483647LL) return "too many query tiles for a 1-D grid";
  return "";
}

void attn02_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) launch02<64>(a, s);
  else launch02<128>(a, s);
}

}  // namespace kl
