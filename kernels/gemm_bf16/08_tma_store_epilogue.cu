// Rung 08 — tma_store_epilogue: the epilogue goes through shared memory (stmatrix, 128B swizzle)
// and leaves by TMA store, asynchronously; consumers start the next tile at once.
//
// Change from rung 07: the epilogue. Rung 07 stored each accumulator pair with a 4-byte st.global
// (8 rows x 16 B per warp instruction: 64 store instructions per thread per tile, partial
// sectors, the consumer warps stalled on the LSU while the tensor cores idle). Here each consumer
// warpgroup converts its 64x256 fp32 block to bf16 and writes it with 16 stmatrix.x4 into a
// swizzled 32 KB smem tile (four 64x64 boxes, 128-byte swizzle: conflict-free), fences the
// generic->async proxy, syncs its 128 threads on a named barrier, and one thread issues four TMA
// stores (bulk_group). TMA clips rows/cols past M/N, so ragged tiles need no predicates. The
// store of tile i completes while the warpgroup runs tile i+1's mainloop; the smem tile is only
// reused after cp.async.bulk.wait_group.read 0 (+ the named barrier) at the next epilogue.
// Budget: the 64 KB C staging forces 3 stages instead of 4: 3 x 48 KB + 64 KB = 208 KB smem.
// Proxy rule relied on: st.shared/stmatrix (generic proxy) -> fence.proxy.async.shared::cta in
// every writing thread -> bar.sync among the writers -> TMA store (async proxy) reads the tile.
// Measured (H200, 2026-11-29, round 1 (results/h200/dev/round1/gemm_bf16.jsonl)): 777 TF at 4096^3 (07: 720; cuBLAS 801), 613 at
// 2048^3, 772 at 4096x11008x4096; gemm2 request 1: 778 / 614 / 771, 802 at 4096x4096x11008,
// 792 at 8192^3. Limit: 3 stages with 2 held by the consumers = 1 load in flight (rung 12).
// Code: tma_store_gemm.cuh, instantiated with STAGES = 3 and one 64 x 256 epilogue pass.
// Since session 19 the shared kernel also launches programmatic-dependent and its CTAs exit once
// their last stores have read smem (rung 12's header: measured there, not on this rung).
#include "gemm_bf16/tma_store_gemm.cuh"

namespace kl {
namespace hopper_gemm {

std::string supports_08(const GemmBf16Args& a, const DeviceInfo& d) {
  return tma_store::supports<3, 1>(a, d);
}
void launch_08(const GemmBf16Args& a, cudaStream_t s) { tma_store::launch<3, 1>(a, s); }

}  // namespace hopper_gemm
}  // namespace kl
