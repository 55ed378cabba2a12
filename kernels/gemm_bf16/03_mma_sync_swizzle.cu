// 03 mma_sync_swizzle — mma.sync.m16n8k16 issued directly, ldmatrix fragments, XOR-swizzled tile.
//
// Parent: 02 cp_async_pipeline.
// Change: WMMA is gone. The CTA tile (mma_sync_tile.cuh) issues mma.sync.m16n8k16 and loads
//   fragments with ldmatrix.x4 (per 16-wide k slice a 64x64 warp tile does 4 + 4 ldmatrix.x4 for
//   32 mma); the shared tile is XOR-swizzled (chunk ^ row%8) instead of padded, so the k-step grows
//   to 64 (one 128-byte row); 3 or 4 stages; the epilogue writes bf16 pairs from the accumulators.
//   The tile height (16, 32, 64, 128) is picked per call by a wave model (below); decode shapes
//   (M <= 64) take a 16/32/64-row tile with a deeper pipeline.
// Why: the WMMA rungs top out on fragment-load overhead and padded-tile waste; this is the
//   hand-scheduled inner loop rung 04 keeps. Interior tiles copy without row tests (InteriorCopies).
// Limits: mma.sync on Hopper is issue- and shared-memory-bound well short of its peak (operands
//   through registers, B re-read per warp); wave quantization (rung 04). Any M; N, K multiples of 8.
#include <cmath>
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/mma_sync_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

constexpr int kGroup = 8;  // grouped raster: 8 tile rows per group (tiles in flight share L2 lines)

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    mma_sync_gemm_kernel(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C, int M, int N,
                         int K, int tiles_m, int tiles_n) {
  extern __shared__ __align__(128) char smem[];
  int tm, tn;
  grouped_tile(blockIdx.x, tiles_m, tiles_n, kGroup, tm, tn);
  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc<Cfg>(acc);
  const int kt = (K + Cfg::BK - 1) / Cfg::BK;
  mainloop<Cfg>(smem, A, W, M, N, K, tm * Cfg::BM, tn * Cfg::BN, 0, kt, acc);
  epilogue_bf16<Cfg>(acc, C, M, N, tm * Cfg::BM, tn * Cfg::BN);
}

template <class Cfg>
void launch_cfg(const GemmBf16Args& a, cudaStream_t s) {
  const DeviceInfo& d = device_info();
  KL_REQUIRE(ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&mma_sync_gemm_kernel<Cfg>), d) > 0,
             "rung 03: tile " << Cfg::BM << "x" << Cfg::BN << " does not fit this device");
  const int tiles_m = (a.M + Cfg::BM - 1) / Cfg::BM, tiles_n = (a.N + Cfg::BN - 1) / Cfg::BN;
  mma_sync_gemm_kernel<Cfg><<<tiles_m * tiles_n, Cfg::THREADS, Cfg::SMEM, s>>>(a.A, a.W, a.C, a.M, a.N, a.K,
                                                              tiles_m, tiles_n);
  KL_CHECK_LAUNCH();
}

// Modelled time of one tile shape: rounds x (CTAs per SM x tile area) / efficiency (the
// efficiency says how close each tile gets to the tensor pipe's peak per SM when the SM is full;
// tile_efficiency in mma_sync_tile.cuh, shared with rung 04).
template <class Cfg>
double model(const GemmBf16Args& a, const DeviceInfo& d, Tile t) {
  const int per_sm = ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&mma_sync_gemm_kernel<Cfg>), d);
  if (per_sm == 0) return INFINITY;
  const double tiles = std::ceil(double(a.M) / Cfg::BM) * std::ceil(double(a.N) / Cfg::BN);
  const double slots = double(d.sms) * per_sm;
  return std::ceil(tiles / slots) * per_sm * Cfg::BM * Cfg::BN / tile_efficiency(t);
}

double model_tile(Tile t, const GemmBf16Args& a, const DeviceInfo& d) {
  switch (t) {
    case Tile::L: return model<CfgL>(a, d, t);
    case Tile::M: return model<CfgM>(a, d, t);
    case Tile::S: return model<CfgS>(a, d, t);
    case Tile::T: return model<CfgT>(a, d, t);
    default: return INFINITY;
  }
}

Tile choose(const GemmBf16Args& a, const DeviceInfo& d) {
  return choose_tile(a.M, [&](Tile t) { return model_tile(t, a, d); });
}

}  // namespace

std::string gemm_bf16_mma_sync_swizzle_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (mma.sync bf16, cp.async, ldmatrix)";
  return shape_alignment_supports(a);
}

void gemm_bf16_mma_sync_swizzle_launch_tile(Tile t, const GemmBf16Args& a, cudaStream_t s) {
  switch (t) {
    case Tile::L: return launch_cfg<CfgL>(a, s);
    case Tile::M: return launch_cfg<CfgM>(a, s);
    case Tile::S: return launch_cfg<CfgS>(a, s);
    case Tile::T: return launch_cfg<CfgT>(a, s);
    case Tile::D16: return launch_cfg<CfgD16>(a, s);
    case Tile::D32: return launch_cfg<CfgD32>(a, s);
    default: break;
  }
  KL_REQUIRE(false, "rung 03: unknown tile " << static_cast<int>(t));
}

void gemm_bf16_mma_sync_swizzle_launch(const GemmBf16Args& a, cudaStream_t s) {
  gemm_bf16_mma_sync_swizzle_launch_tile(choose(a, device_info()), a, s);
}

}  // namespace kl::gemm_bf16_detail
