// 14 stream_k_tail — rung 12 with a data-parallel + Stream-K hybrid schedule for the
// wave-quantized tail, and a deterministic fixup through the caller's workspace.
//
// Parent: 12 four_stages.
// Change: the schedule only. G = SMs persistent CTAs; the first tiles run whole (12's loop), the
//   last partial wave is flattened into (tile, k-block) units cut into G near-equal ranges, each CTA
//   running its whole tiles first. The host plan (mode 0) models both schedules in k-blocks and
//   splits only with T >= G, T % G != 0 and a modelled win above the noise; modes +1 / +2 force the
//   two-tile / one-tile hybrid. Fixup as rung 04 on the wgmma accumulators (common/streamk.cuh);
//   a peer's flag is raised after its next segment's mainloop, so the fence finds stores drained.
// Why: rung 12 pays ceil(tiles / SMs) whole waves of 128x256 tiles (4096^3: 3.88 waves).
// Limits: a Stream-K k-block costs more than a data-parallel one (staggered k offsets no longer
//   share A/W slices in L2: the kSkSlowdown factor), so the plan rarely splits. Workspace:
//   streamk_flag_bytes(SMs) + G x 128 KB (gemm_bf16_workspace_bytes()); supports() refuses a
//   missing / short / misaligned one. Registers: the fixup batch fits setmaxnreg 232 (no spill).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/streamk.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

using Ring = FourStages;  // rung 12's ring and epilogue (hopper_gemm.cuh)
constexpr int BM = 128, BN = 256, BK = kBK, STAGES = Ring::kStages, THREADS = 384, GROUP = 8;
constexpr int CONSUMER_WARPS = 8, CONSUMERS = 32 * CONSUMER_WARPS;  // 256 consumer threads
constexpr int A_BYTES = BM * BK * 2;  // 16 KB
constexpr int B_BYTES = BN * BK * 2;  // 32 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_BYTES = epilogue_boxes<Ring::kEpiloguePasses>() * kCSub;  // two 64 x 64 boxes used in turn
constexpr size_t SMEM = 1024 + STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8;
constexpr int VEC = BN / 2 / 4;       // float4s of accumulators per consumer thread (32)
constexpr int FIX_BATCH = 16;         // partial float4 loads in flight per thread in the fixup
constexpr size_t PARTIAL_BYTES = size_t(BM) * BN * 4;  // one fp32 tile: 128 KB per slot
constexpr int BAR_CONSUMERS = 3;      // named barrier over the 256 consumer threads (1, 2: per WG)
static_assert(BM == 2 * 64 && BN == 4 * 64, "two m64 consumers, four 64-wide store boxes");
static_assert(CONSUMER_WARPS == 2 * 4, "empty[] counts one arrive per consumer warp");
static_assert(VEC * 4 * CONSUMERS == BM * BN, "the partial is every consumer's accumulators");
static_assert(VEC % FIX_BATCH == 0, "fixup batches tile the accumulators");
static_assert(SMEM <= 227 * 1024, "fits the sm_90 opt-in limit");
static_assert(GROUP >= 1, "grouped raster height");
static_assert(BAR_CONSUMERS > 2, "named barriers 1, 2 are the warpgroups' epilogue barriers");

// The schedule (host-planned, kernel parameter).
struct Sched {
  int tiles_m, tiles_n;  // output tiles (128 x 256)
  int kt;                // k-blocks per tile
  int dp_tiles;          // tiles [0, dp_tiles) (raster order): whole, round robin over the grid
  int sk_units;          // (tile, k-block) units of tiles [dp_tiles, tiles)
  int sk_grid;           // CTAs [0, sk_grid) split the units (0: no Stream-K part)
  float4* partials;      // [sk_grid][VEC][CONSUMERS]
  unsigned* flags;       // [sk_grid] (in the common flag region)
  unsigned epoch;        // this launch's epoch (!= 0)
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// One CTA's work list, identical for the producer and the consumers: its data-parallel tiles, then
// its Stream-K range as segments (one per tile it touches).
struct WorkIter {
  int t, u, u_end;
  __device__ __forceinline__ explicit WorkIter(const Sched& s) {
    const int c = blockIdx.x;
    t = c;
    u = c < s.sk_grid ? streamk_range_begin(c, s.sk_units, s.sk_grid) : 0;
    u_end = c < s.sk_grid ? streamk_range_begin(c + 1, s.sk_units, s.sk_grid) : 0;
  }
  // Next segment: tile (raster order), k-blocks [kb, ke). False when the list is done.
  __device__ __forceinline__ bool next(const Sched& s, int& tile, int& kb, int& ke) {
    if (t < s.dp_tiles) {
      tile = t, kb = 0, ke = s.kt;
      t += gridDim.x;
      return true;
    }
    if (u >= u_end) return false;
    const int st = u / s.kt;
    kb = u - st * s.kt;
    const int seg_end = min(u_end, (st + 1) * s.kt);
    ke = seg_end - st * s.kt;
    tile = s.dp_tiles + st;
    u = seg_end;
    return true;
  }
};

// Raises this CTA's flag: every consumer's partial stores are visible at gpu scope first.
__device__ __forceinline__ void raise_flag(const Sched& s, int ct) {
  __threadfence();
  named_barrier_sync(BAR_CONSUMERS, CONSUMERS);
  if (ct == 0) streamk_st_release(s.flags + blockIdx.x, s.epoch);
}
#endif

__global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_stream_k_tail_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                                   const __grid_constant__ CUtensorMap tmC, int M, int N, int K, const Sched s) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint8_t* sA = smem;
  uint8_t* sB = smem + STAGES * A_BYTES;
  uint8_t* sC = smem + STAGES * STAGE_BYTES;  // [2 warpgroups][2 boxes][64 rows][128 B]
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + 2 * C_BYTES);
  uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;

  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    tma_prefetch_desc(&tmC);
    mbar_ring_init(full, empty, STAGES, CONSUMER_WARPS);
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      WorkIter w(s);
      int tile, kb0, ke, it = 0;  // it: running k-block counter across segments (ring slot/phase)
      while (w.next(s, tile, kb0, ke)) {
        int tm, tn;
        grouped_tile<GROUP>(tile, s.tiles_m, s.tiles_n, tm, tn);
        for (int kb = kb0; kb < ke; ++kb, ++it) {
          const int st = it % STAGES, r = it / STAGES;
          mbar_wait(&empty[st], (r & 1) ^ 1);
          mbar_arrive_expect_tx(&full[st], STAGE_BYTES);
          tma_load_2d(sA + st * A_BYTES, &tmA, &full[st], kb * BK, tm * BM);
          tma_load_2d(sB + st * B_BYTES, &tmW, &full[st], kb * BK, tn * BN);
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1, t128 = tid % 128, ct = tid - 128, lane = tid % 32;
    uint8_t* myC = sC + cw * C_BYTES;
    float acc[BN / 2];
    WorkIter w(s);
    int tile, kb0, ke, it = 0;  // must advance exactly like the producer's
    bool pending = false;       // this CTA's partial is stored, its flag not raised yet
    while (w.next(s, tile, kb0, ke)) {
      int tm, tn;
      grouped_tile<GROUP>(tile, s.tiles_m, s.tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      consume_k_blocks<STAGES, A_BYTES, B_BYTES>(acc, sA, sB, full, empty, ke - kb0, it, cw, lane,
                                                 [](uint64_t* bar) { mbar_arrive(bar); });

      // The partial stored after the previous segment has drained by now: publish it (before
      // this CTA waits on anybody, see common/streamk.cuh: deadlock freedom).
      if (pending) {
        raise_flag(s, ct);
        pending = false;
      }
      if (kb0 != 0) {
        // A peer piece (necessarily this CTA's first Stream-K segment): slot blockIdx.x.
        float4* dst = s.partials + static_cast<size_t>(blockIdx.x) * VEC * CONSUMERS + ct;
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          __stcg(dst + j * CONSUMERS,
                 make_float4(acc[4 * j + 0], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
        pending = true;
        continue;
      }
      if (ke < s.kt) {
        // Owner of a split tile: pieces [ke, kt) belong to CTAs c+1 .. cl, in K order.
        const int c = blockIdx.x;
        const int last_unit = (tile - s.dp_tiles + 1) * s.kt - 1;
        const int cl = streamk_range_holder(last_unit, s.sk_units, s.sk_grid);
        if (ct < 32) {
          for (int q = c + 1 + ct; q <= cl; q += 32) {
            while (streamk_ld_acquire(s.flags + q) != s.epoch) __nanosleep(64);
            streamk_st_release(s.flags + q, 0u);  // consumed: the next launch waits afresh
          }
        }
        named_barrier_sync(BAR_CONSUMERS, CONSUMERS);  // orders every thread's loads after
        for (int q = c + 1; q <= cl; ++q) {
          const float4* src = s.partials + static_cast<size_t>(q) * VEC * CONSUMERS + ct;
#pragma unroll
          for (int j0 = 0; j0 < VEC; j0 += FIX_BATCH) {
            float4 v[FIX_BATCH];
#pragma unroll
            for (int b = 0; b < FIX_BATCH; ++b) v[b] = __ldcg(src + (j0 + b) * CONSUMERS);
#pragma unroll
            for (int b = 0; b < FIX_BATCH; ++b) {
              acc[4 * (j0 + b) + 0] += v[b].x;
              acc[4 * (j0 + b) + 1] += v[b].y;
              acc[4 * (j0 + b) + 2] += v[b].z;
              acc[4 * (j0 + b) + 3] += v[b].w;
            }
          }
        }
      }

      // ---- epilogue (rung 12's): four passes of 64 x 64, stmatrix -> swizzled smem -> TMA store.
      tma_store_epilogue<Ring::kEpiloguePasses>(acc, myC, &tmC, M, N, tm * BM + cw * 64, tn * BN, cw, t128);
    }
    if (pending) raise_flag(s, ct);      // the CTA's only segment was a peer piece
    // smem must outlive the last stores' reads of it (the kernel's completion covers their writes)
    if (t128 == 0) tma_store_wait_read<0>();
  }
#endif
}

// ---------------------------------------------------------------- host: the plan
// mode: 0 = the model decides, +1 = Stream-K part forced on, -1 = off, +2 = the one-tile variant
// forced on (the tests).
struct Plan {
  Sched s{};
  int grid = 0;
  bool sk = false;
  double dp_cost = 0, sk_cost = 0;  // modelled, in k-blocks
  size_t need = 0;                  // workspace bytes (0 without a Stream-K part)
};

// Hybrid must beat data-parallel by more than the run-to-run noise (about 1%, the spread between
// rung 12 and this rung with the Stream-K part off, same schedule) to be taken.
constexpr double kSkMargin = 0.99;
// Owner's cost per peer partial, in k-blocks: reading 128 KB of fp32 vs 48 KB of operands per
// k-block (the peer's store is deferred under its next segment and not counted).
constexpr double kFixupKBlocks = double(PARTIAL_BYTES) / STAGE_BYTES;
// A k-block inside the Stream-K region costs this many data-parallel k-blocks, a factor fitted to
// timings: the CTAs of the Stream-K region work at staggered k offsets, so the ~132 tiles in flight
// no longer share A/W k-slices in L2 the way a data-parallel wave does, and the region slows with
// its operand footprint (L2 capacity / DRAM; inferred from timings, not profiled): least where the
// region's operands fit the 60 MB L2 (4096^3), most where they far exceed it (8192^3, K = 11008).
// 1.7 fits the shapes where the choice is close.
constexpr double kSkSlowdown = 1.7;

Plan make_plan(int M, int N, int K, int sms, int mode) {
  Plan pl;
  Sched& s = pl.s;
  s.tiles_m = ceil_div(M, BM);
  s.tiles_n = ceil_div(N, BN);
  s.kt = ceil_div(K, BK);
  const long long tiles = static_cast<long long>(s.tiles_m) * s.tiles_n;
  KL_REQUIRE(tiles < (1ll << 31), "rung 14: too many tiles");
  const int T = static_cast<int>(tiles), G = sms;
  pl.dp_cost = double((T + G - 1) / G) * s.kt;
  // Which tiles are split. mode +1: "DP + two-tile Stream-K" (the last partial wave plus one full
  // wave; all tiles when T < G). mode +2 and the plan: "DP + one-tile Stream-K", only the last
  // partial wave (ranges shorter than a tile: up to ~3 pieces per tile, but half the tiles at
  // staggered k offsets, which is what costs: kSkSlowdown). The plan splits only with at least one
  // full wave and a partial one (T >= G, T % G != 0): below one wave (2048^3: 128 tiles) every CTA
  // would pay a pipeline fill and a fixup for a fraction of a tile.
  int sk_tiles = 0;
  if (mode == +1) sk_tiles = T < G ? T : T % G + G;
  if (mode == +2) sk_tiles = T < G ? T : T % G;
  if (mode == 0 && T >= G) sk_tiles = T % G;
  pl.sk_cost = INFINITY;
  if (sk_tiles > 0) {
    const long long units = static_cast<long long>(sk_tiles) * s.kt;
    KL_REQUIRE(units < (1ll << 31), "rung 14: too many Stream-K units");
    const long long grid = std::min<long long>(G, units);
    const double longest = std::ceil(double(units) / grid);
    const double peers = std::ceil((s.kt - 1) / longest);  // pieces of a tile beyond the owner's
    pl.sk_cost = double((T - sk_tiles) / G) * s.kt + kSkSlowdown * longest + kFixupKBlocks * peers;
  }
  pl.sk = mode > 0 ? sk_tiles > 0 : mode < 0 ? false : pl.sk_cost < kSkMargin * pl.dp_cost;
  if (pl.sk) {
    s.dp_tiles = T - sk_tiles;  // a multiple of G: every CTA runs the same whole tiles first
    s.sk_units = sk_tiles * s.kt;
    s.sk_grid = std::min(G, s.sk_units);
    pl.grid = s.dp_tiles > 0 ? G : s.sk_grid;
    pl.need = streamk_flag_bytes(sms) + static_cast<size_t>(s.sk_grid) * PARTIAL_BYTES;
  } else {
    s.dp_tiles = T;  // rung 12's schedule
    s.sk_units = 0;
    s.sk_grid = 0;
    pl.grid = std::min(T, G);
    pl.need = 0;
  }
  return pl;
}

std::string schedule_workspace_supports(const GemmBf16Args& a, const DeviceInfo& d, int mode) {
  std::string why = tma_gemm_supports(a, d, SMEM);
  if (!why.empty()) return why;
  const Plan pl = make_plan(a.M, a.N, a.K, d.sms, mode);
  if (pl.need == 0) return "";
  if (!a.workspace || a.workspace_bytes < pl.need)
    return "needs a workspace of " + std::to_string(pl.need) + " bytes (have " +
           std::to_string(a.workspace ? a.workspace_bytes : 0) +
           "; size it with gemm_bf16_workspace_bytes)";
  if (!aligned(a.workspace, 256)) return "workspace must be 256-byte aligned";
  return "";
}

void launch_schedule(const GemmBf16Args& a, cudaStream_t st, int mode) {
  Plan pl = make_plan(a.M, a.N, a.K, device_info().sms, mode);
  const CUtensorMap tA = map_operand(a.A, a.M, a.K, BM);
  const CUtensorMap tW = map_operand(a.W, a.N, a.K, BN);
  const CUtensorMap tC = make_tensor_map_bf16_2d(a.C, a.M, a.N, a.N, 64, 64,
                                                 CU_TENSOR_MAP_SWIZZLE_128B);
  opt_in_smem(reinterpret_cast<const void*>(&gemm_bf16_stream_k_tail_kernel), SMEM);
  if (pl.sk) {
    char* ws = static_cast<char*>(a.workspace);
    pl.s.flags = reinterpret_cast<unsigned*>(ws);
    pl.s.partials = reinterpret_cast<float4*>(ws + streamk_flag_bytes(device_info().sms));
    pl.s.epoch = streamk_next_epoch();
  }
  gemm_bf16_stream_k_tail_kernel<<<pl.grid, THREADS, SMEM, st>>>(tA, tW, tC, a.M, a.N, a.K, pl.s);
  KL_CHECK_LAUNCH();
}

}  // namespace

std::string gemm_bf16_stream_k_tail_supports(const GemmBf16Args& a, const DeviceInfo& d) { return schedule_workspace_supports(a, d, 0); }
void gemm_bf16_stream_k_tail_launch(const GemmBf16Args& a, cudaStream_t s) { launch_schedule(a, s, 0); }
std::string gemm_bf16_stream_k_tail_supports_forced(const GemmBf16Args& a, const DeviceInfo& d, int mode) {
  return schedule_workspace_supports(a, d, mode);
}
void gemm_bf16_stream_k_tail_launch_forced(const GemmBf16Args& a, cudaStream_t s, int mode) { launch_schedule(a, s, mode); }

size_t gemm_bf16_stream_k_tail_workspace_bytes(int M, int N, int K, const DeviceInfo& d) {
  if (M <= 0 || N <= 0 || K <= 0 || d.sms <= 0) return 0;
  // Enough for the model's plan and for the Stream-K part forced on (tests).
  return std::max({make_plan(M, N, K, d.sms, 0).need, make_plan(M, N, K, d.sms, +1).need,
                   make_plan(M, N, K, d.sms, +2).need});
}

std::string gemm_bf16_stream_k_tail_describe(int M, int N, int K, int sms, int mode) {
  const Plan pl = make_plan(M, N, K, sms, mode);
  const Sched& s = pl.s;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%dx%d tiles, kt %d, grid %d: %s (dp %d tiles, sk %d units over %d CTAs); model dp "
                "%.1f vs hybrid %.1f k-blocks; workspace %zu B",
                s.tiles_m, s.tiles_n, s.kt, pl.grid, pl.sk ? "hybrid" : "data-parallel",
                s.dp_tiles, s.sk_units, s.sk_grid, pl.dp_cost, pl.sk_cost, pl.need);
  return buf;
}

}  // namespace hopper_gemm
}  // namespace kl
