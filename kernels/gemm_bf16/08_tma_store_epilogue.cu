// 08 tma_store_epilogue — the epilogue goes through shared memory (stmatrix, 128B swizzle) and
// leaves by TMA store, asynchronously; consumers start the next tile at once.
//
// Parent: 07 persistent.
// Change: the epilogue. Each consumer warpgroup converts its 64x256 fp32 block to bf16, writes it
//   with stmatrix.x4 into a swizzled smem tile, fences generic->async proxy, syncs its 128 threads
//   on a named barrier, and one thread issues the TMA stores; the tile is reused only after
//   cp.async.bulk.wait_group.read at the next epilogue. TMA clips rows/cols past M/N.
// Why: 07's 4-byte st.global (64 store instructions per thread per tile, partial sectors) stalled
//   the consumers on the LSU while the tensor cores idled; now tile i's store overlaps tile i+1.
// Limits: the 64 KB C staging leaves room for 3 stages (3 x 48 KB + 64 KB = 208 KB), and with
//   2 stages held by the consumers only one load is in flight (rung 12). Code: tma_store_gemm.cuh
//   with ThreeStages (3 stages, one 64x256 epilogue pass); it also launches programmatic-dependent.
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string gemm_bf16_tma_store_epilogue_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::tma_store_gemm_supports<ThreeStages>(a, d);
}
void gemm_bf16_tma_store_epilogue_launch(const GemmBf16Args& a, cudaStream_t s) { tma_store::tma_store_gemm_launch<ThreeStages>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
