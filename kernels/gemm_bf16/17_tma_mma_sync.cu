// 17 tma_mma_sync — rung 03's mma.sync tile fed by TMA boxes through a full/empty mbarrier ring.
//
// Parent: 03 mma_sync_swizzle (its CTA and warp tiles, stages, tile choice, ldmatrix fragments,
//   k-loop and epilogue: mma_sync_tile.cuh).
// Change: how a stage reaches shared memory. A producer warp (one lane) waits on the stage's empty
//   barrier, then issues two TMA boxes (A rows m0.., W rows n0.., 64 deep, 128-byte swizzle) that
//   complete on its full barrier; each consumer warp waits on full, runs rung 03's ldmatrix + mma,
//   fences (proxy.async) and arrives on empty. No block-wide barrier and no copy addressing in the
//   main loop.
// Why: TMA + mbarriers on every TMA card (sm_90 and sm_120; wgmma, rungs 05+, needs sm_90a). TMA's
//   128-byte swizzle on 1024-aligned tiles is rung 03's layout (chunk ^ row % 8): same ldmatrix.
// Limits: mma.sync's ceiling (rung 03); the producer warp holds as many registers as a consumer
//   (no setmaxnreg off sm_90a). Any M; N, K multiples of 8: TMA zero-fills the M, N, K tails, the
//   epilogue masks its stores. Below the ldmatrix warp tile's ceiling (docs/gemm_bf16.md).
#include <algorithm>
#include <cmath>
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/hopper_gemm.cuh"
#include "gemm_bf16/mma_sync_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

constexpr int kTmaGroup = 8;  // grouped raster, as rung 03

// Rung 03's tile (MmaCfg<Shape>: CTA and warp tile, stage count, CTAs per SM) plus the producer
// warp and the ring's barriers. Shared memory: 1024 bytes of alignment slack, the stages (each
// tile 1024-aligned: BM x 128 and BN x 128 bytes), then full[STAGES] and empty[STAGES].
template <class Shape>
struct TmaRing {
  using Mma = MmaCfg<Shape>;
  static constexpr int CONSUMER_WARPS = Mma::WARPS;  // warps 0.. (rung 03's); the producer is last
  static constexpr int THREADS = (CONSUMER_WARPS + 1) * 32;
  static constexpr int MIN_BLOCKS = Mma::MIN_BLOCKS;
  static constexpr int STAGES = Mma::STAGES;
  static constexpr int BARRIER_BYTES = 2 * STAGES * 8;
  static constexpr int SMEM = 1024 + Mma::SMEM + BARRIER_BYTES;
  static_assert(Mma::A_BYTES % 1024 == 0 && Mma::B_BYTES % 1024 == 0,
                "every tile of every stage stays 1024-aligned (the TMA swizzle phase)");
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
constexpr int kArchSmemOptin = 101376;  // sm_12x: 99 KB of shared memory per block
#else
constexpr int kArchSmemOptin = 232448;  // sm_90: 227 KB
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// One CTA tile: the kernel's body (tmA, tmW: the addresses of its __grid_constant__ maps).
template <class R>
__device__ __forceinline__ void tma_mma_sync_tile(const CUtensorMap* tmA, const CUtensorMap* tmW,
                                                  bf16* __restrict__ C, int M, int N, int K, int tiles_m,
                                                  int tiles_n) {
  using Cfg = typename R::Mma;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = hopper_gemm::align1024(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::SMEM);
  uint64_t* empty = full + R::STAGES;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  int tm, tn;
  grouped_tile(blockIdx.x, tiles_m, tiles_n, kTmaGroup, tm, tn);
  const int m0 = tm * Cfg::BM, n0 = tn * Cfg::BN;
  const int nk = (K + Cfg::BK - 1) / Cfg::BK;

  if (tid == 0) mbar_ring_init(full, empty, R::STAGES, R::CONSUMER_WARPS);  // one arrive per warp
  __syncthreads();  // the only block-wide barrier: the barriers exist before anyone uses them

  if (warp == R::CONSUMER_WARPS) {  // the producer warp
    if (lane == 0) {
      tma_prefetch_desc(tmA);
      tma_prefetch_desc(tmW);
      int s = 0;
      uint32_t phase = 0;
      for (int kt = 0; kt < nk; ++kt) {
        mbar_wait(&empty[s], phase ^ 1);  // first pass over the ring: the slot is free (parity 1 passes at once)
        uint8_t* st = smem + s * Cfg::STAGE_BYTES;
        mbar_arrive_expect_tx(&full[s], Cfg::STAGE_BYTES);  // zero-filled bytes count too
        tma_load_2d_cta(st, tmA, &full[s], kt * Cfg::BK, m0);
        tma_load_2d_cta(st + Cfg::A_BYTES, tmW, &full[s], kt * Cfg::BK, n0);
        if (++s == R::STAGES) s = 0, phase ^= 1;
      }
    }
    return;  // the consumers' waits on full cover every box in flight
  }

  const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc<Cfg>(acc);
  uint32_t a[2][Cfg::MI][4], b[2][Cfg::NI][2];
  int s = 0;
  uint32_t phase = 0;
  for (int kt = 0; kt < nk; ++kt) {
    mbar_wait(&full[s], phase);
    stage_mma<Cfg>(reinterpret_cast<const char*>(smem + s * Cfg::STAGE_BYTES), warp_m, warp_n, lane,
                   a, b, acc);
    // This warp's ldmatrix reads (generic proxy) are ordered before the next TMA write (async
    // proxy) into the slot; then one arrive per warp frees it.
    fence_proxy_async_smem();
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[s]);
    if (++s == R::STAGES) s = 0, phase ^= 1;
  }
  epilogue_bf16<Cfg>(acc, C, M, N, m0, n0);  // consumer warps are warps 0.., as in rung 03
}
#endif

template <class R>
__global__ void __launch_bounds__(R::THREADS, R::MIN_BLOCKS)
    gemm_bf16_tma_mma_sync_kernel(const __grid_constant__ CUtensorMap tmA,
                                  const __grid_constant__ CUtensorMap tmW, bf16* __restrict__ C, int M,
                                  int N, int K, int tiles_m, int tiles_n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // A ring larger than the card's shared memory never launches (the tile choice and launch_ring
  // read d.smem_optin), so it is not compiled for that card (sm_120: the 128x256 tile).
  if constexpr (R::SMEM <= kArchSmemOptin)
    tma_mma_sync_tile<R>(&tmA, &tmW, C, M, N, K, tiles_m, tiles_n);
  else
    __trap();
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_90+ code: supports() refuses such cards, never compute garbage
#endif
}

using RingL = TmaRing<Tile128x256>;
using RingM = TmaRing<Tile128x128>;
using RingS = TmaRing<Tile64x128>;
using RingT = TmaRing<Tile64x64>;
using RingD16 = TmaRing<Tile16x64>;
using RingD32 = TmaRing<Tile32x64>;

template <class R>
const void* kernel_of() {
  return reinterpret_cast<const void*>(&gemm_bf16_tma_mma_sync_kernel<R>);
}

template <class R>
void launch_ring(const GemmBf16Args& a, cudaStream_t s) {
  const DeviceInfo& d = device_info();
  KL_REQUIRE(ctas_per_sm<R>(kernel_of<R>(), d) > 0, "rung 17: tile " << R::Mma::BM << "x" << R::Mma::BN
                                                    << " (" << R::SMEM << " B of shared memory) does not fit this device");
  const CUtensorMap tA = hopper_gemm::map_operand(a.A, a.M, a.K, R::Mma::BM);
  const CUtensorMap tW = hopper_gemm::map_operand(a.W, a.N, a.K, R::Mma::BN);
  const int tiles_m = (a.M + R::Mma::BM - 1) / R::Mma::BM, tiles_n = (a.N + R::Mma::BN - 1) / R::Mma::BN;
  gemm_bf16_tma_mma_sync_kernel<R><<<tiles_m * tiles_n, R::THREADS, R::SMEM, s>>>(tA, tW, a.C, a.M, a.N,
                                                                                  a.K, tiles_m, tiles_n);
  KL_CHECK_LAUNCH();
}

// Calls f(TmaRing<...>{}) for tile t.
template <class F>
auto with_ring(Tile t, F&& f) {
  switch (t) {
    case Tile::L: return f(RingL{});
    case Tile::M: return f(RingM{});
    case Tile::S: return f(RingS{});
    case Tile::T: return f(RingT{});
    case Tile::D16: return f(RingD16{});
    case Tile::D32: return f(RingD32{});
    default: break;
  }
  KL_REQUIRE(false, "rung 17: unknown tile " << static_cast<int>(t));
  return f(RingT{});  // not reached
}

int smem_of(Tile t) {
  return with_ring(t, [](auto r) { return decltype(r)::SMEM; });
}

// Rung 03's wave model with this kernel's occupancy (the producer warp and the barriers can cost
// a CTA per SM where registers or shared memory are tight).
double model_tile(Tile t, const GemmBf16Args& a, const DeviceInfo& d) {
  return with_ring(t, [&](auto r) {
    using R = decltype(r);
    const int per_sm = ctas_per_sm<R>(kernel_of<R>(), d);
    if (per_sm == 0) return double(INFINITY);
    const double tiles = std::ceil(double(a.M) / R::Mma::BM) * std::ceil(double(a.N) / R::Mma::BN);
    return std::ceil(tiles / (double(d.sms) * per_sm)) * per_sm * R::Mma::BM * R::Mma::BN / tile_efficiency(t);
  });
}

// Decode shapes take rung 03's fixed tile by M; the rest the modelled best among the tiles that fit.
Tile choose(const GemmBf16Args& a, const DeviceInfo& d) {
  return choose_tile(a.M, [&](Tile t) { return model_tile(t, a, d); });
}

}  // namespace

std::string gemm_bf16_tma_mma_sync_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 90)
    return "needs sm_90+ (TMA cp.async.bulk.tensor, mbarrier transaction counts); device is sm_" +
           std::to_string(d.cc());
  std::string why = shape_alignment_supports(a);  // K % 8 == 0: 16-byte TMA row strides (K * 2)
  if (!why.empty()) return why;
  // The smallest shared memory this shape can run with: its decode tile, or the smallest prefill
  // tile (the wave model only chooses tiles that fit).
  int need = smem_of(a.M <= 16 ? Tile::D16 : a.M <= 32 ? Tile::D32 : Tile::T);
  if (a.M > 64)
    for (Tile t : kPrefillTiles) need = std::min(need, smem_of(t));
  if (need > d.smem_optin)
    return "needs " + std::to_string(need) + " B of shared memory per block, device allows " +
           std::to_string(d.smem_optin);
  const char* tma_why = "";
  if (!tma_available(&tma_why)) return std::string("TMA unavailable: ") + tma_why;
  return "";
}

void gemm_bf16_tma_mma_sync_launch_tile(Tile t, const GemmBf16Args& a, cudaStream_t s) {
  with_ring(t, [&](auto r) { launch_ring<decltype(r)>(a, s); });
}

void gemm_bf16_tma_mma_sync_launch(const GemmBf16Args& a, cudaStream_t s) {
  gemm_bf16_tma_mma_sync_launch_tile(choose(a, device_info()), a, s);
}

}  // namespace kl::gemm_bf16_detail
