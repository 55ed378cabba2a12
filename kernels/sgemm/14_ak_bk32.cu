// Rung 14 — 32-deep k-tiles for rung 13's kernel.
//
// Change from 13: BK = 32 instead of 16. Rung 13 pays once per k-tile for a barrier at the top of
// the tile with the first fragment loads behind it (every warp of the block waits on the slowest,
// then on an LDS latency), the copy issue and the ring bookkeeping; 32-deep tiles pay it once per
// 4,096 FMAs per thread instead of 2,048. Per thread and tile: 8 + 4 sixteen-byte copies. The A
// rows are 128 bytes (8 quads); the quad swizzle is unchanged (the 4 rows a warp reads differ in
// the low 2 bits of the quad position).
// Tile 256x128, BK = 32, 3-stage ring: 3 x 32 x (256 + 128) floats = 144 KB (one block per SM).
// Needs K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (rung 08 takes the rest).
// Measured (H200, final run of 14647d0, results/h200/sgemm.jsonl, 1980 MHz): 4096^3 46.5 TFLOP/s
// (13: 44.6, cuBLAS 51.2: 0.91x), 8192^3 47.1 (0.92x), 4096x11008x4096 46.0 (0.92x),
// 4096x4096x11008 46.7 (0.92x): the entry point's pick on every large shape.
#include "ak.cuh"

namespace kl::sgemm_detail {

std::string supports_14(const SgemmArgs& a, const DeviceInfo& d) { return ak::supports_ak<32>(a, d); }
void launch_14(const SgemmArgs& a, cudaStream_t s) { ak::launch_ak<32>(a, s); }

}  // namespace kl::sgemm_detail
