// 04 stream_k — Stream-K: the tail of the (tile, k-step) space split evenly over the card, with a
// deterministic fixup.
//
// Parent: 03 mma_sync_swizzle.
// Change: the same CTA tiles and k-loop (mma_sync_tile.cuh), a different grid: Stream-K CTAs
//   (the last partial wave plus one full wave, or every tile when there are fewer tiles than slots)
//   cut the flattened (tile, k-step) units into G near-equal contiguous ranges; the remaining tiles
//   run whole as data-parallel CTAs after them. A host plan models both per shape and takes the
//   cheaper; tiles go in grouped raster order (8 tile rows per group).
// Why: rung 03 pays ceil(tiles / slots) full waves, and a decode shape's few narrow tiles leave
//   half the card idle; Stream-K removes the quantization and splits K over the card at decode.
// Limits: a deterministic fixup (a split tile's owner adds its peers' fp32 partials in K order;
//   flags carry a per-launch epoch, so nothing is cleared between launches and a replayed graph is
//   safe); the Stream-K part is off where it does not pay (only the 128x256 tile, K <= kSkMaxK).
//   Deadlock-free: G never exceeds resident capacity, and no piece that others wait on waits.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <string>

#include "common/streamk.cuh"
#include "gemm_bf16/gemm_bf16_rungs.h"
#include "gemm_bf16/mma_sync_tile.cuh"

namespace kl::gemm_bf16_detail {
namespace {

constexpr int kGroup = 8;       // grouped raster rows
constexpr int kMaxPerSm = 4;    // CTAs per SM we ever ask for (flag region capacity)
// Stream-K must beat data-parallel by 2% in the model (a smaller modelled gain is within the
// run-to-run noise, so data-parallel).
constexpr double kSkMargin = 0.98;
// Prefill shapes split only the 128x256 tile and only for K <= 8192: with Stream-K forced on, long
// K (4096x4096x11008) loses (each CTA walks ~2 tiles' A/W panels at a k offset of its own, so the
// tiles in flight no longer share k-slices in L2), and so do small shapes on the 64x128 tile (every
// CTA pays two pipeline fills and a partial for 8-16 k-steps of work). The model has no term for
// either effect.
constexpr int kSkMaxK = 8192;

struct SkParams {
  int tiles_m, tiles_n, tiles;  // output tiles
  int kt;                       // k-steps per tile
  int sk_tiles;                 // the first sk_tiles tiles (raster order) are Stream-K
  int sk_units;                 // sk_tiles * kt (host checks it fits)
  int sk_grid;                  // CTAs [0, sk_grid) split the Stream-K units; the rest: 1 tile each
  float* partials;              // [sk_grid][Cfg::ACC * THREADS] fp32, fragment order
  unsigned* flags;              // [sk_grid]
  unsigned epoch;               // this launch's epoch (!= 0)
};

// Flag acquire/release, range bounds, the flag region and the launch epoch are shared with rung 14:
// kernels/common/streamk.cuh.
static_assert(kMaxPerSm == kStreamkMaxCtasPerSm, "the flag region holds one flag per CTA slot");

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    stream_k_gemm_kernel(const bf16* __restrict__ A, const bf16* __restrict__ W, bf16* __restrict__ C, int M, int N,
                         int K, SkParams p) {
  extern __shared__ __align__(128) char smem[];
  const int c = blockIdx.x, tid = threadIdx.x;
  float acc[Cfg::MI][Cfg::NI][4];

  if (c >= p.sk_grid) {
    // Data-parallel part: one whole tile per CTA, dispatched by the hardware block scheduler
    // after the Stream-K CTAs (lower block indices) — a slow SM simply gets fewer of them.
    int tm, tn;
    grouped_tile(p.sk_tiles + (c - p.sk_grid), p.tiles_m, p.tiles_n, kGroup, tm, tn);
    zero_acc<Cfg>(acc);
    mainloop<Cfg>(smem, A, W, M, N, K, tm * Cfg::BM, tn * Cfg::BN, 0, p.kt, acc);
    epilogue_bf16<Cfg>(acc, C, M, N, tm * Cfg::BM, tn * Cfg::BN);
    return;
  }

  // Stream-K part: CTA c owns units [range_begin(c), range_begin(c+1)) of the flattened
  // (tile, k-step) space of tiles 0 .. sk_tiles-1, visited as segments (one per tile touched).
  const int G = p.sk_grid;
  // acc viewed as float4s: j = mi * NI + ni (the partial's layout: float4 j of thread t at
  // j * THREADS + t, so every partial store/load is a fully coalesced 16-byte access).
  float4* acc4 = reinterpret_cast<float4*>(&acc[0][0][0]);
  constexpr int kVec = Cfg::ACC / 4;
  // Peers' partials loaded together in the fixup: ~8 extra float4 registers (decode tiles).
  constexpr int kBatch = kVec >= 8 ? 1 : 8 / kVec;

  int u = streamk_range_begin(c, p.sk_units, G);
  while (true) {
    // (u_end recomputed per segment rather than held across the k-loop: one register fewer there.)
    const int u_end = streamk_range_begin(c + 1, p.sk_units, G);
    if (u >= u_end) break;
    const int tile = u / p.kt;
    const int kb = u - tile * p.kt;
    const int tile_end = (tile + 1) * p.kt;
    const int seg_end = u_end < tile_end ? u_end : tile_end;
    const int ke = seg_end - tile * p.kt;
    u = seg_end;
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
      if (tid == 0) streamk_st_release(p.flags + c, p.epoch);
      continue;
    }
    if (ke < p.kt) {
      // Owner of a split tile: the pieces [ke, kt) belong to CTAs c+1 .. cl, in K order.
      const int last_unit = (tile + 1) * p.kt - 1;
      // floor guess of the CTA holding last_unit, then step to the exact one
      int cl = static_cast<int>(static_cast<long long>(last_unit) * G / p.sk_units);
      if (cl < c + 1) cl = c + 1;
      while (cl + 1 < G && streamk_range_begin(cl + 1, p.sk_units, G) <= last_unit) ++cl;
      // Warp 0 polls all the peers' flags at once (lane i: flag c+1+i, ...), so the wait costs one
      // L2 round trip, not one per peer; each consumed flag is reset to 0 so the next launch must
      // wait afresh even if it carries the same epoch (a replayed CUDA graph).
      if (tid < 32) {
        for (int q = c + 1 + tid; q <= cl; q += 32) {
          while (streamk_ld_acquire(p.flags + q) != p.epoch) __nanosleep(32);
          streamk_st_release(p.flags + q, 0u);
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

// The schedule for one shape (host). Deterministic in (M, N, K, SM count).
struct Plan {
  Tile tile = Tile::L;
  int grid = 0;   // CTAs launched: sk_grid Stream-K CTAs + one per data-parallel tile
  int g0 = 0;     // resident capacity: SMs x CTAs per SM
  double cost = 0;  // modelled time (arbitrary units, comparable across tiles)
  SkParams p{};
  size_t flag_bytes = 0, partial_bytes = 0;
};

size_t flag_region(const DeviceInfo& d) {
  // Fixed size and offset whatever the shape, so a workspace reused across shapes always has its
  // flags in the same words (and they only ever hold 0 or a consumed epoch between launches).
  return streamk_flag_bytes(d.sms);
}

// Plans tile Cfg: data-parallel only, or Stream-K for the last partial wave plus one full wave
// (every tile when there are fewer tiles than slots) with the remaining full waves data-parallel;
// whichever the model says is faster, unless `sk` forces the choice (+1 Stream-K, -1 not, 0 model).
// Model, in k-steps of this tile: data-parallel = waves x kt; Stream-K = full DP waves x kt + the
// longest Stream-K range + the fixup (a peer writes its fp32 partial, the owner reads it: each
// BM x BN x 4 bytes, as costly as loading BM*BN*4 / ((BM+BN)*128) k-steps of operands).
// `eff` converts to time across tiles (tile_efficiency).
template <class Cfg>
bool plan_cfg(Tile t, int M, int N, int K, const DeviceInfo& d, int sk, Plan& pl) {
  int per_sm = ctas_per_sm<Cfg>(reinterpret_cast<const void*>(&stream_k_gemm_kernel<Cfg>), d);
  if (per_sm == 0) return false;
  per_sm = std::min(per_sm, kMaxPerSm);
  const int G0 = d.sms * per_sm;
  pl = Plan{};
  pl.tile = t;
  pl.g0 = G0;
  SkParams& p = pl.p;
  p.tiles_m = (M + Cfg::BM - 1) / Cfg::BM;
  p.tiles_n = (N + Cfg::BN - 1) / Cfg::BN;
  p.tiles = p.tiles_m * p.tiles_n;
  p.kt = (K + Cfg::BK - 1) / Cfg::BK;
  const double kstep_time = double(per_sm) * Cfg::BM * Cfg::BN / tile_efficiency(t);
  const double dp_cost = double((p.tiles + G0 - 1) / G0) * p.kt;
  int sk_tiles = 0;
  if (p.tiles % G0 != 0) sk_tiles = p.tiles < G0 ? p.tiles : p.tiles % G0 + G0;
  double sk_cost = INFINITY;
  if (sk_tiles > 0) {
    const long long units = static_cast<long long>(sk_tiles) * p.kt;
    const int grid = static_cast<int>(std::min<long long>(G0, units));
    const double longest = std::ceil(double(units) / grid);
    const double fix = double(Cfg::BM) * Cfg::BN * 4 / ((Cfg::BM + Cfg::BN) * 128.0);
    // pieces per split tile beyond the owner's: the owner reads them all, a peer writes one
    const double peers = std::ceil(p.kt / longest);
    sk_cost = double((p.tiles - sk_tiles) / G0) * p.kt + longest + fix * (1 + peers);
  }
  // Stream-K only when the model says it wins by more than its own error: the fixup's cost is a
  // rough estimate, and at a tie the data-parallel grid is the same kernel as rung 03.
  const bool use_sk = sk > 0 ? sk_tiles > 0 : sk < 0 ? false : sk_cost < kSkMargin * dp_cost;
  p.sk_tiles = use_sk ? sk_tiles : 0;
  KL_REQUIRE(static_cast<long long>(p.sk_tiles) * p.kt * G0 < (1ll << 62) &&
                 static_cast<long long>(p.sk_tiles) * p.kt < (1ll << 31) &&
                 static_cast<long long>(p.tiles) < (1ll << 31),
             "rung 04: shape too large for the Stream-K unit index");
  p.sk_units = p.sk_tiles * p.kt;
  p.sk_grid = p.sk_tiles ? std::min(G0, p.sk_units) : 0;
  pl.grid = p.sk_grid + (p.tiles - p.sk_tiles);
  pl.cost = (use_sk ? sk_cost : dp_cost) * kstep_time;
  pl.flag_bytes = flag_region(d);
  pl.partial_bytes =
      static_cast<size_t>(p.sk_grid) * Cfg::ACC * Cfg::THREADS * sizeof(float);
  return true;
}

bool plan_tile(Tile t, int M, int N, int K, const DeviceInfo& d, int sk, Plan& pl) {
  switch (t) {
    case Tile::L: return plan_cfg<CfgL>(t, M, N, K, d, sk, pl);
    case Tile::M: return plan_cfg<CfgM>(t, M, N, K, d, sk, pl);
    case Tile::S: return plan_cfg<CfgS>(t, M, N, K, d, sk, pl);
    case Tile::T: return plan_cfg<CfgT>(t, M, N, K, d, sk, pl);
    case Tile::D16: return plan_cfg<CfgD16>(t, M, N, K, d, sk, pl);
    case Tile::D32: return plan_cfg<CfgD32>(t, M, N, K, d, sk, pl);
    default: return false;
  }
}

// The plan rung 04 runs: the decode tile fixed by M (as rung 03), Stream-K per the model; else the
// cheapest of the prefill tiles, the 128x256 one planned data-parallel or Stream-K by the model
// (K <= kSkMaxK), the others data-parallel (rung 03's grid).
Plan make_plan(int M, int N, int K, const DeviceInfo& d) {
  Plan best, pl;
  bool ok = false;
  if (M <= 64) {
    const Tile t = M <= 16 ? Tile::D16 : M <= 32 ? Tile::D32 : Tile::T;
    ok = plan_tile(t, M, N, K, d, 0, best);
  } else {
    for (Tile t : kPrefillTiles) {
      const int sk = (t == Tile::L && K <= kSkMaxK) ? 0 : -1;  // see kSkMaxK
      if (plan_tile(t, M, N, K, d, sk, pl) && (!ok || pl.cost < best.cost)) best = pl, ok = true;
    }
  }
  KL_REQUIRE(ok, "rung 04: no Stream-K tile fits this device");
  return best;
}

Plan make_plan_tile(Tile t, int sk, int M, int N, int K, const DeviceInfo& d) {
  Plan pl;
  KL_REQUIRE(plan_tile(t, M, N, K, d, sk, pl),
             "rung 04: tile " << tile_name(t) << " does not fit this device");
  return pl;
}

template <class Cfg>
void launch_cfg(const GemmBf16Args& a, Plan pl, cudaStream_t s) {
  char* ws = static_cast<char*>(a.workspace);
  pl.p.flags = reinterpret_cast<unsigned*>(ws);
  pl.p.partials = reinterpret_cast<float*>(ws + pl.flag_bytes);
  pl.p.epoch = streamk_next_epoch();  // never 0 (0 means "consumed / never written")
  stream_k_gemm_kernel<Cfg><<<pl.grid, Cfg::THREADS, Cfg::SMEM, s>>>(a.A, a.W, a.C, a.M, a.N, a.K, pl.p);
  KL_CHECK_LAUNCH();
}

void launch_plan(const GemmBf16Args& a, const Plan& pl, cudaStream_t s) {
  switch (pl.tile) {
    case Tile::L: return launch_cfg<CfgL>(a, pl, s);
    case Tile::M: return launch_cfg<CfgM>(a, pl, s);
    case Tile::S: return launch_cfg<CfgS>(a, pl, s);
    case Tile::T: return launch_cfg<CfgT>(a, pl, s);
    case Tile::D16: return launch_cfg<CfgD16>(a, pl, s);
    case Tile::D32: return launch_cfg<CfgD32>(a, pl, s);
    default: KL_REQUIRE(false, "rung 04: tile " << tile_name(pl.tile) << " not instantiated");
  }
}

std::string plan_workspace_supports(const GemmBf16Args& a, const DeviceInfo& d, size_t need) {
  if (d.cc() < 80) return "needs sm_80+ (mma.sync bf16, cp.async, ldmatrix)";
  std::string why = shape_alignment_supports(a);
  if (!why.empty()) return why;
  if (a.workspace_bytes < need || (need && !a.workspace))
    return "needs a workspace of " + std::to_string(need) + " bytes (have " +
           std::to_string(a.workspace ? a.workspace_bytes : 0) +
           "; size it with gemm_bf16_workspace_bytes)";
  if (a.workspace && !aligned(a.workspace, 256)) return "workspace must be 256-byte aligned";
  return "";
}

}  // namespace

size_t streamk_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  // Enough for whichever plan rung 04 makes for this shape, and (prefill shapes) for any tile forced
  // with the Stream-K part on (tests): the largest Stream-K grid times that tile's
  // partial. Decode shapes only ever use the tile M decides (a few MB, not 17).
  size_t need = 0;
  for (int i = 0; i < static_cast<int>(Tile::kCount); ++i) {
    const Tile t = static_cast<Tile>(i);
    if (M <= 64 && t != (M <= 16 ? Tile::D16 : M <= 32 ? Tile::D32 : Tile::T)) continue;
    Plan pl;
    if (plan_tile(t, M, N, K, d, +1, pl)) need = std::max(need, pl.flag_bytes + pl.partial_bytes);
  }
  return need;
}

std::string gemm_bf16_stream_k_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = shape_alignment_supports(a);
  if (d.cc() < 80 || !why.empty()) return plan_workspace_supports(a, d, 0);
  const Plan pl = make_plan(a.M, a.N, a.K, d);
  return plan_workspace_supports(a, d, pl.flag_bytes + pl.partial_bytes);
}

void gemm_bf16_stream_k_launch(const GemmBf16Args& a, cudaStream_t s) {
  launch_plan(a, make_plan(a.M, a.N, a.K, device_info()), s);
}

std::string gemm_bf16_stream_k_supports_tile(Tile t, int sk, const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = shape_alignment_supports(a);
  if (d.cc() < 80 || !why.empty()) return plan_workspace_supports(a, d, 0);
  Plan pl;
  if (!plan_tile(t, a.M, a.N, a.K, d, sk, pl))
    return std::string("tile ") + tile_name(t) + " does not fit this device";
  return plan_workspace_supports(a, d, pl.flag_bytes + pl.partial_bytes);
}

void gemm_bf16_stream_k_launch_tile(Tile t, int sk, const GemmBf16Args& a, cudaStream_t s) {
  launch_plan(a, make_plan_tile(t, sk, a.M, a.N, a.K, device_info()), s);
}

}  // namespace kl::gemm_bf16_detail
