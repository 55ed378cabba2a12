// 19 narrow_tiles — rung 12's kernel over 128 x 64 tiles, for the small GEMMs whose 128 x 256 tiles
// leave most SMs idle.
//
// Parent: 12 four_stages.
// Change: FourStages -> NarrowTiles (hopper_gemm.cuh): each consumer warpgroup computes an m64n64
//   block per k16 step, a stage is 24 KB (A 128 x 64, W 64 x 64), so the ring is 8 deep, and the
//   64 x 64 block leaves in one TMA-store pass through one staging box per warpgroup.
// Why: at 1024^3 the 128 x 256 tiles are 32 for 132 SMs (rung 18's 128 x 128: 64); 128 x 64 tiles
//   are 128, one wave that fills the card, and each CTA streams a quarter of rung 12's W bytes.
// Limits: an m64n64 wgmma reads its A block from shared memory for 64 columns instead of 256, so
//   the shared-memory bytes per FLOP are 1.6 times rung 12's: it cannot reach rung 12's rate
//   once the tiles fill several waves. Same kernel and proxy rules as 12 (tma_store_gemm.cuh).
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_narrow_tiles_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::tma_store_gemm_supports<NarrowTiles>(a, d);
}
void gemm_bf16_narrow_tiles_launch(const GemmBf16Args& a, cudaStream_t s) {
  tma_store::tma_store_gemm_launch<NarrowTiles>(a, s);
}

}  // namespace hopper_gemm
}  // namespace kl
