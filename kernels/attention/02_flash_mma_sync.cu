// 02 flash_mma_sync — tensor-core flash attention with mma.sync.
//
// Parent: 01 flash_cuda_cores.
// Change: both products move to mma.sync.m16n8k16 (bf16 in, fp32 accumulate), everything else
//   rearranged around the fragment layouts (flash_mma.cuh): a 128-row Q tile of 4 warps x 32 rows
//   (every K/V fragment feeds two mmas); K by ldmatrix, V by ldmatrix.trans; P packed to bf16 from
//   the S accumulators into the next mma's A layout (never in shared memory); row max / sum on the
//   accumulator fragments; K/V through a cp.async ring into XOR-swizzled smem, one barrier per
//   64-key tile; causal: only diagonal tiles pay for the mask, heaviest query tiles first;
//   non-causal launches number query tiles head by head (flash::tile_of) so resident blocks share
//   a few heads' K/V in L2.
// Why: the tensor cores; 32 rows per warp halve the ldmatrix stream per FLOP (shared memory, not
//   the tensor pipe, is the roof at 16 rows per warp).
// Limits: the softmax between the two products of one warp is not overlapped (2 warps per
//   scheduler) and the MUFU exp2 costs 64 per thread per tile (docs/attention.md).
#include "attention/attention_internal.h"
#include "attention/flash_mma.cuh"

namespace kl {
namespace {

// 4 warps x 2 m-tiles = 128 query rows, 64-key tiles; D = 128: 2-stage ring, 96 KB, 2 blocks/SM
// (255 registers each); D = 64: 3 stages, 64 KB.
// HM: non-causal tiles head by head (their K/V stay in L2), causal heaviest first (flash::tile_of).
template <int D, bool HM = false>
using FlashMmaSyncTile = flash::CfgBig<D, HM>;

template <int D>
void launch_flash_mma_sync(const AttentionArgs& a, cudaStream_t s) {
  if (a.causal) flash::launch_whole_tiles<FlashMmaSyncTile<D, false>>(a, s);
  else flash::launch_whole_tiles<FlashMmaSyncTile<D, true>>(a, s);
}

}  // namespace

std::string attention_flash_mma_sync_supports(const AttentionArgs& a, const DeviceInfo& d) {
  std::string why = attention_args_supports(a, d);
  if (!why.empty()) return why;
  const int smem = a.D == 64 ? FlashMmaSyncTile<64>::SMEM : FlashMmaSyncTile<128>::SMEM;
  if (smem > d.smem_optin) return "needs " + std::to_string(smem) + " B of shared memory per block";
  const long long tiles = static_cast<long long>((a.Sq + 127) / 128) * a.B * a.Hq;
  if (tiles > 2147483647LL) return "too many query tiles for a 1-D grid";
  return "";
}

void attention_flash_mma_sync_launch(const AttentionArgs& a, cudaStream_t s) {
  if (a.D == 64) launch_flash_mma_sync<64>(a, s);
  else launch_flash_mma_sync<128>(a, s);
}

}  // namespace kl
