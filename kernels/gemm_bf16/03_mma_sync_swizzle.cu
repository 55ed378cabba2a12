// Rung 03 — mma.sync.m16n8k16 issued directly, ldmatrix fragment loads, XOR-swizzled shared tile.
//
// Changes from rung 02: WMMA is gone. The CTA tile (mma_sync_tile.cuh) issues
// mma.sync.m16n8k16 itself and loads fragments with ldmatrix.x4, so the fragment layout is
// explicit: per 16-wide k slice a 64x64 warp tile does 4 + 4 ldmatrix.x4 for 32 mma (rung 02's
// WMMA path does a load per 16x16 fragment and cannot reuse across the warp tile as freely). The
// shared tile is XOR-swizzled (chunk ^ row%8) instead of padded: conflict-free for cp.async stores
// and ldmatrix reads with zero wasted bytes, and it lets the k-step grow to 64 (one 128-byte row).
// Three or four stages. The epilogue writes bf16 pairs straight from the accumulators (no shared
// round trip). Tile height is a template parameter (16, 32, 64, 128); rows past M are zero-filled by
// cp.async src-size 0, so ANY M runs; N and K need only be multiples of 8.
// Why: the WMMA rungs top out on fragment-load overhead and padded-tile waste; this is the
// hand-scheduled inner loop every later rung keeps.
// Tile per call: the one with the lowest modelled time = rounds x (per-SM work per round) /
// (relative tile efficiency), rounds = ceil(tiles / (SMs x CTAs per SM)) on device_info().sms.
// Decode shapes (M <= 64) take a 16/32/64-row tile with a deeper pipeline.
//
// Measured (H200): pending
#include <cmath>
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/mma_sync_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

constexpr int kGroup = 8;  // grouped raster: 8 tile rows per group (tiles in flight share L2 lines)

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    k03(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C, int M, int N,
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
  KL_REQUIRE(ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&k03<Cfg>), d) > 0,
             "rung 03: tile " << Cfg::BM << "x" << Cfg::BN << " does not fit this device");
  const int tiles_m = (a.M + Cfg::BM - 1) / Cfg::BM, tiles_n = (a.N + Cfg::BN - 1) / Cfg::BN;
  k03<Cfg><<<tiles_m * tiles_n, Cfg::THREADS, Cfg::SMEM, s>>>(a.A, a.W, a.C, a.M, a.N, a.K,
                                                              tiles_m, tiles_n);
  KL_CHECK_LAUNCH();
}

// Modelled time of one tile shape: rounds x (CTAs per SM x tile area) / efficiency. The efficiency
// factors say how close each tile gets to the tensor pipe's peak per SM when the SM is full (bigger
// warp tiles reuse each ldmatrix over more mma; fewer barriers per FLOP).
template <class Cfg>
double model(const GemmBf16Args& a, const DeviceInfo& d, double eff) {
  const int per_sm = ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&k03<Cfg>), d);
  if (per_sm == 0) return INFINITY;
  const double tiles = std::ceil(double(a.M) / Cfg::BM) * std::ceil(double(a.N) / Cfg::BN);
  const double slots = double(d.sms) * per_sm;
  return std::ceil(tiles / slots) * per_sm * Cfg::BM * Cfg::BN / eff;
}

enum class Tile { L, M, S, T, D16, D32 };

Tile choose(const GemmBf16Args& a, const DeviceInfo& d) {
  if (a.M <= 16) return Tile::D16;
  if (a.M <= 32) return Tile::D32;
  if (a.M <= 64) return Tile::T;
  const double tl = model<CfgL>(a, d, 1.00), tm = model<CfgM>(a, d, 0.90),
               ts = model<CfgS>(a, d, 0.75), tt = model<CfgT>(a, d, 0.55);
  Tile best = Tile::L;
  double bt = tl;
  if (tm < bt) best = Tile::M, bt = tm;
  if (ts < bt) best = Tile::S, bt = ts;
  if (tt < bt) best = Tile::T, bt = tt;
  return best;
}

}  // namespace

std::string rung03_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (mma.sync bf16, cp.async, ldmatrix)";
  return basic_supports(a);
}

void rung03_launch(const GemmBf16Args& a, cudaStream_t s) {
  switch (choose(a, device_info())) {
    case Tile::L: return launch_cfg<CfgL>(a, s);
    case Tile::M: return launch_cfg<CfgM>(a, s);
    case Tile::S: return launch_cfg<CfgS>(a, s);
    case Tile::T: return launch_cfg<CfgT>(a, s);
    case Tile::D16: return launch_cfg<CfgD16>(a, s);
    case Tile::D32: return launch_cfg<CfgD32>(a, s);
  }
}

}  // namespace kl::gemm_bf16_detail
