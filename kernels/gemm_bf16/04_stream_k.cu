// Rung 04 — Stream-K: a persistent grid over the (tile, k-step) space with a deterministic fixup.
//
// Changes from rung 03: the same CTA tile and k-loop (mma_sync_tile.cuh), but the grid is no longer
// one CTA per output tile. Rung 03 pays ceil(tiles / slots) full rounds: 2048^3 in 128x256 tiles is
// 128 tiles on 132 SMs (97% busy), 4096^3 is 512 tiles = 3.88 rounds paid as 4, and a decode shape
// (M = 16, N = 4096) is 64 narrow tiles that leave half the card idle and too few bytes in flight.
// Here G = SMs x CTAs-per-SM persistent CTAs (one resident set) share the work:
//   * data-parallel part: whole tiles, round robin, as many full waves as divide evenly, minus one;
//   * Stream-K part: the remaining tiles (the partial wave plus one full wave, or every tile when
//     there are fewer tiles than slots) flattened into (tile, k-step) units and cut into G equal
//     contiguous ranges, one per CTA — no quantization at all. A decode shape thereby splits K.
// Tiles are visited in grouped raster order (8 tile rows per group) so the tiles in flight share A
// rows and W columns in L2.
// Fixup (Stream-K paper's scheme, made deterministic): a tile split over CTAs c < c+1 < ... < c_last
// is "owned" by c, the CTA whose range covers its k-step 0; every other piece is the FIRST segment
// of its CTA's range, so each CTA produces at most one partial: workspace slot c, flag c. A peer
// stores its fp32 partial and release-stores the launch's epoch into its flag; the owner finishes
// its own piece [0, x), waits (acquire; warp 0 polls all peers' flags at once) for flags c+1 ..
// c_last == epoch, resets them to 0, and adds partials c+1, c+2, ... in that order. The sum is ((own + p1) + p2) + ... in K order whichever
// CTA computed each piece, and the schedule depends only on the shape and the SM count: the output
// is the same bits every run. Nothing is cleared between launches: a flag only counts if it holds
// this launch's epoch (a host counter incremented per launch, never 0), and each consumed flag is
// reset by its owner, so even a CUDA graph replaying one captured launch (same epoch) is safe.
// Deadlock freedom: G never exceeds the resident capacity, and a peer's first segment never waits.
//
// Measured (H200): pending
#include <algorithm>
#include <atomic>
#include <string>

#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/mma_sync_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

constexpr int kGroup = 8;       // grouped raster rows
constexpr int kMaxPerSm = 4;    // CTAs per SM we ever ask for (flag region capacity)

struct SkParams {
  int tiles_m, tiles_n, tiles;  // output tiles
  int kt;                       // k-steps per tile
  int sk_tiles;                 // the first sk_tiles tiles (raster order) are Stream-K
  int sk_units;                 // sk_tiles * kt (host checks it fits)
  float* partials;              // [G][Cfg::ACC * THREADS] fp32, fragment order
  unsigned* flags;              // [G]
  unsigned epoch;               // this launch's epoch (!= 0)
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// First unit of CTA c's Stream-K range: floor(c * units / G) (ranges differ by at most one unit).
__device__ __forceinline__ int range_begin(int c, int units, int G) {
  return static_cast<int>(static_cast<long long>(c) * units / G);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    k04(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C, int M, int N,
        int K, SkParams p) {
  extern __shared__ __align__(128) char smem[];
  const int c = blockIdx.x, G = gridDim.x, tid = threadIdx.x;
  float acc[Cfg::MI][Cfg::NI][4];
  // acc viewed as float4s: j = mi * NI + ni (the partial's layout: float4 j of thread t at
  // j * THREADS + t, so every partial store/load is a fully coalesced 16-byte access).
  float4* acc4 = reinterpret_cast<float4*>(&acc[0][0][0]);
  constexpr int kVec = Cfg::ACC / 4;

  // Peers' partials loaded together in the fixup: ~8 extra float4 registers (decode tiles).
  constexpr int kBatch = kVec >= 8 ? 1 : 8 / kVec;

  // One loop over this CTA's work items, so the k-loop is instantiated once: first the Stream-K
  // segments of its range [u, u_end) (pieces of tiles 0 .. sk_tiles-1), then its data-parallel
  // whole tiles sk_tiles + c, + G, ... (the same count for every CTA).
  int u = p.sk_units > 0 ? range_begin(c, p.sk_units, G) : 0;
  int t_dp = p.sk_tiles + c;
  while (true) {
    int tile, kb, ke;
    // (u_end recomputed per item rather than held across the k-loop: one register fewer there.)
    const int u_end = p.sk_units > 0 ? range_begin(c + 1, p.sk_units, G) : 0;
    if (u < u_end) {
      tile = u / p.kt;
      kb = u - tile * p.kt;
      const int tile_end = (tile + 1) * p.kt;
      const int seg_end = u_end < tile_end ? u_end : tile_end;
      ke = seg_end - tile * p.kt;
      u = seg_end;
    } else if (t_dp < p.tiles) {
      tile = t_dp;
      kb = 0;
      ke = p.kt;
      t_dp += G;
    } else {
      break;
    }
    int tm, tn;
    grouped_tile(tile, p.tiles_m, p.tiles_n, kGroup, tm, tn);
    zero_acc<Cfg>(acc);
    mainloop<Cfg>(smem, A, W, M, N, K, tm * Cfg::BM, tn * Cfg::BN, kb, ke, acc);
    if (kb != 0) {
      // A peer piece (necessarily this CTA's first segment): publish the partial.
      float4* dst =
          reinterpret_cast<float4*>(p.partials) + static_cast<size_t>(c) * kVec * Cfg::THREADS;
#pragma unroll
      for (int j = 0; j < kVec; ++j) __stcg(dst + j * Cfg::THREADS + tid, acc4[j]);
      __threadfence();  // this thread's partial is visible at gpu scope ...
      __syncthreads();  // ... for every thread, before thread 0 raises the flag
      if (tid == 0) st_release(p.flags + c, p.epoch);
      continue;
    }
    if (ke < p.kt) {
      // Owner of a split tile: the pieces [ke, kt) belong to CTAs c+1 .. cl, in K order.
      const int last_unit = (tile + 1) * p.kt - 1;
      // floor guess of the CTA holding last_unit, then step to the exact one
      int cl = static_cast<int>(static_cast<long long>(last_unit) * G / p.sk_units);
      while (cl + 1 < G && range_begin(cl + 1, p.sk_units, G) <= last_unit) ++cl;
      // Warp 0 polls all the peers' flags at once (lane i: flag c+1+i, ...), so the wait costs one
      // L2 round trip, not one per peer; each consumed flag is reset to 0 so the next launch must
      // wait afresh even if it carries the same epoch (a replayed CUDA graph).
      if (tid < 32) {
        for (int q = c + 1 + tid; q <= cl; q += 32) {
          while (ld_acquire(p.flags + q) != p.epoch) __nanosleep(32);
          st_release(p.flags + q, 0u);
        }
      }
      __syncthreads();  // the lanes' acquires order every thread's partial reads after the writes
      // Partials are loaded kBatch peers at a time (independent loads in flight together: few
      // round trips for the decode tiles' 5-8 small partials) and added strictly in K order.
      for (int q0 = c + 1; q0 <= cl; q0 += kBatch) {
        float4 v[kBatch][kVec];
#pragma unroll
        for (int bq = 0; bq < kBatch; ++bq)
          if (q0 + bq <= cl) {
            const float4* src = reinterpret_cast<const float4*>(p.partials) +
                                static_cast<size_t>(q0 + bq) * kVec * Cfg::THREADS;
#pragma unroll
            for (int j = 0; j < kVec; ++j) v[bq][j] = __ldcg(src + j * Cfg::THREADS + tid);
          }
#pragma unroll
        for (int bq = 0; bq < kBatch; ++bq)
          if (q0 + bq <= cl) {
#pragma unroll
            for (int j = 0; j < kVec; ++j) {
              acc4[j].x += v[bq][j].x;
              acc4[j].y += v[bq][j].y;
              acc4[j].z += v[bq][j].z;
              acc4[j].w += v[bq][j].w;
            }
          }
      }
    }
    epilogue_bf16<Cfg>(acc, C, M, N, tm * Cfg::BM, tn * Cfg::BN);
  }
}

enum class Tile { L, M, T, D16, D32 };

// The schedule for one shape (host). Deterministic in (M, N, K, SM count).
struct Plan {
  Tile tile = Tile::L;
  int grid = 0;   // CTAs launched
  int g0 = 0;     // resident capacity: SMs x CTAs per SM
  SkParams p{};
  size_t flag_bytes = 0, partial_bytes = 0;
};

size_t flag_region(const DeviceInfo& d) {
  // Fixed size and offset whatever the shape, so a workspace reused across shapes always has its
  // flags in the same words (and they only ever hold 0 or a consumed epoch between launches).
  return (static_cast<size_t>(d.sms) * kMaxPerSm * sizeof(unsigned) + 255) / 256 * 256;
}

template <class Cfg>
bool plan_cfg(int M, int N, int K, const DeviceInfo& d, Plan& pl) {
  int per_sm = ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&k04<Cfg>), d);
  if (per_sm == 0) return false;
  per_sm = std::min(per_sm, kMaxPerSm);
  const int G0 = d.sms * per_sm;
  pl.g0 = G0;
  SkParams& p = pl.p;
  p.tiles_m = (M + Cfg::BM - 1) / Cfg::BM;
  p.tiles_n = (N + Cfg::BN - 1) / Cfg::BN;
  p.tiles = p.tiles_m * p.tiles_n;
  p.kt = (K + Cfg::BK - 1) / Cfg::BK;
  if (p.tiles % G0 == 0) p.sk_tiles = 0;             // whole waves: plain data-parallel
  else if (p.tiles < G0) p.sk_tiles = p.tiles;       // under one wave: everything Stream-K
  else p.sk_tiles = p.tiles % G0 + G0;               // partial wave + one full wave
  KL_REQUIRE(static_cast<long long>(p.sk_tiles) * p.kt * G0 < (1ll << 62) &&
                 static_cast<long long>(p.sk_tiles) * p.kt < (1ll << 31),
             "rung 04: shape too large for the Stream-K unit index");
  p.sk_units = p.sk_tiles * p.kt;
  pl.grid = p.sk_tiles ? std::min(G0, p.sk_units) : G0;
  pl.flag_bytes = flag_region(d);
  pl.partial_bytes = p.sk_tiles ? static_cast<size_t>(pl.grid) * Cfg::ACC * Cfg::THREADS * sizeof(float) : 0;
  return true;
}

Plan make_plan(int M, int N, int K, const DeviceInfo& d) {
  Plan pl;
  bool ok = false;
  if (M <= 16) pl.tile = Tile::D16, ok = plan_cfg<CfgD16>(M, N, K, d, pl);
  else if (M <= 32) pl.tile = Tile::D32, ok = plan_cfg<CfgD32>(M, N, K, d, pl);
  else if (M <= 64) pl.tile = Tile::T, ok = plan_cfg<CfgT>(M, N, K, d, pl);
  else {
    // The big 128x256 tile whenever it gives at least half a wave of tiles (Stream-K removes the
    // quantization, so the biggest, most efficient tile wins); else 128x128.
    pl.tile = Tile::L;
    ok = plan_cfg<CfgL>(M, N, K, d, pl) && pl.p.tiles * 2 >= pl.g0;
    if (!ok) pl = Plan{}, pl.tile = Tile::M, ok = plan_cfg<CfgM>(M, N, K, d, pl);
    if (!ok) pl = Plan{}, pl.tile = Tile::T, ok = plan_cfg<CfgT>(M, N, K, d, pl);
  }
  KL_REQUIRE(ok, "rung 04: no Stream-K tile fits this device");
  return pl;
}

std::atomic<unsigned> g_epoch{0};

template <class Cfg>
void launch_cfg(const GemmBf16Args& a, Plan pl, cudaStream_t s) {
  char* ws = static_cast<char*>(a.workspace);
  pl.p.flags = reinterpret_cast<unsigned*>(ws);
  pl.p.partials = reinterpret_cast<float*>(ws + pl.flag_bytes);
  unsigned e = ++g_epoch;
  if (e == 0) e = ++g_epoch;  // 0 means "consumed / never written"
  pl.p.epoch = e;
  k04<Cfg><<<pl.grid, Cfg::THREADS, Cfg::SMEM, s>>>(a.A, a.W, a.C, a.M, a.N, a.K, pl.p);
  KL_CHECK_LAUNCH();
}

}  // namespace

size_t streamk_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  const Plan pl = make_plan(M, N, K, d);
  return pl.flag_bytes + pl.partial_bytes;
}

std::string rung04_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  if (d.cc() < 80) return "needs sm_80+ (mma.sync bf16, cp.async, ldmatrix)";
  std::string why = basic_supports(a);
  if (!why.empty()) return why;
  const size_t need = streamk_workspace_bytes(a.M, a.N, a.K, d);
  if (a.workspace_bytes < need || (need && !a.workspace))
    return "needs a workspace of " + std::to_string(need) + " bytes (have " +
           std::to_string(a.workspace ? a.workspace_bytes : 0) +
           "; size it with gemm_bf16_workspace_bytes)";
  if (a.workspace && !aligned(a.workspace, 256)) return "workspace must be 256-byte aligned";
  return "";
}

void rung04_launch(const GemmBf16Args& a, cudaStream_t s) {
  const Plan pl = make_plan(a.M, a.N, a.K, device_info());
  switch (pl.tile) {
    case Tile::L: return launch_cfg<CfgL>(a, pl, s);
    case Tile::M: return launch_cfg<CfgM>(a, pl, s);
    case Tile::T: return launch_cfg<CfgT>(a, pl, s);
    case Tile::D16: return launch_cfg<CfgD16>(a, pl, s);
    case Tile::D32: return launch_cfg<CfgD32>(a, pl, s);
  }
}

}  // namespace kl::gemm_bf16_detail
