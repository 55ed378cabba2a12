// kernels/gemm_bf16/whole_k.cuh — the kernel of rungs 15 and 16 and what launches it: a CTA runs
// the whole K of one 64 x BN output tile (activation rows as wgmma's A, m64; a W strip of BN rows
// as B), a producer warp of four lanes feeding a full/empty mbarrier ring by TMA, two consumer
// warpgroups on alternate k-blocks summed in a fixed order, programmatic dependent launch. Rung 15
// (15_decode_no_split.cu) launches one tile row (M <= 64); rung 16 (16_small_tiles.cu) launches a
// second grid dimension over 64-row tiles of M. The design is in 15_decode_no_split.cu's header
// and docs/gemm_bf16.md. The decoder layer (kernels/layer/fused_gemms.cu) runs the same kernel over
// two weights with SwiGLU in the epilogue (GateUpSwiglu, rung 02) and with the residual added in the
// epilogue (WithResidual, rung 03). Host code and kernels live in an unnamed namespace: each
// including file instantiates what its dispatch names.
#pragma once
#include <algorithm>
#include <tuple>

#include "common/pdl.cuh"
#include "common/silu.cuh"
#include "common/vec.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int CWARPS = 8;                  // two consumer warpgroups
constexpr int THREADS = CWARPS * 32 + 32;  // + one producer warp = 288
constexpr int NL = 4;                      // producer lanes (one in a test variant)
constexpr int HEAD = 1024;                 // mbarriers (<= 2 x 64 x 8 B) ahead of the ring
constexpr int MAX_STAGES = 64;
constexpr int SMEM_OPTIN = 227 * 1024;
constexpr int MAX_CPS = 4;                 // CTAs per SM the plan may size the ring for
static_assert(2 * MAX_STAGES * 8 <= HEAD, "barriers fit the head");
static_assert(MAX_STAGES % 2 == 0, "ring depths are even");

// Bytes of one stage (MP activation rows + BN W rows, 128 B each: both 1024-aligned), and the slack
// the m64 A descriptor may read past the last stage (64 rows from the activation box's start).
__host__ __device__ constexpr int stage_bytes(int MP, int BN) { return (MP + BN) * 128; }
__host__ __device__ constexpr int slack_bytes(int MP, int BN) {
  return 64 * 128 > stage_bytes(MP, BN) ? 64 * 128 - stage_bytes(MP, BN) : 0;
}
// Registers: 3 CTAs per SM at BN = 32 (<= 72 registers), 2 at 64, 1 above (the accumulators are
// BN / 2 floats per thread).
constexpr int min_ctas(int BN) { return BN <= 32 ? 3 : BN <= 64 ? 2 : 1; }

// The kernel's compile-time configuration: a tile, optionally changed by one of the wrappers below.
//   kMP      activation box rows (M rounded up: 16, 32, 64);
//   kBN      W rows (output columns) per CTA, a multiple of 8 from 32 to 128 (the plan's; the tests
//            force others);
//   kCluster CTAs of a cluster (1: no cluster);
//   kLanes   producer lanes;
//   kSplitM  the CTAs of a cluster share one strip and split M (SplitMPair);
//   kGateUp  the W rows are two weights' strips and the epilogue writes SwiGLU (GateUpSwiglu);
//   kResidual the epilogue adds a residual tensor to the rounded product (WithResidual).
template <int kActRows, int kWRows>
struct WholeKTile {
  static constexpr int kMP = kActRows, kBN = kWRows, kCluster = 1, kLanes = NL;
  static constexpr bool kSplitM = false, kGateUp = false, kResidual = false;
};
// No change (the plain tile, as a wrapper for the width dispatch).
template <class Tile>
using Plain = Tile;
// Clusters of kCtas neighbouring strips, each CTA loading kMP / kCtas rows of every activation box
// and multicasting them to all.
template <class Tile, int kCtas>
struct InCluster : Tile {
  static constexpr int kCluster = kCtas;
};
// One producer lane instead of four (a test variant).
template <class Tile>
struct OneProducerLane : Tile {
  static constexpr int kLanes = 1;
};
// (Tests only, cuBLAS's M = 64 pairing.) The two CTAs of a cluster share one strip instead, rank r
// taking activation rows r * kMP.. (kMP = 32 at M = 64), each loading half of every W box and
// multicasting it to both: W crosses from L2 once per pair, each CTA reads half the activations.
template <class Tile>
struct SplitMPair : Tile {
  static constexpr int kCluster = 2;
  static constexpr bool kSplitM = true;
};
// (The decoder layer's MLP.) The kBN W rows of a stage are two boxes of kBN / 2 rows, the same
// output columns of two weights (gate, then up) from two tensor maps. Warpgroup 0 multiplies the
// gate box and warpgroup 1 the up box of every stage (instead of alternate k-blocks of one strip:
// one accumulator of kBN / 2 columns each, within the registers of 288 threads), and the epilogue
// writes silu(gate) * up: kBN / 2 output columns per CTA.
template <class Tile>
struct GateUpSwiglu : Tile {
  static constexpr bool kGateUp = true;
};
// (The decoder layer's down projection.) C = R + bf16(A W^T): the epilogue rounds the sum of the two
// warpgroups to bf16, as a stored GEMM output is, adds R [M, N] in fp32 and stores once more rounded.
template <class Tile>
struct WithResidual : Tile {
  static constexpr bool kResidual = true;
};

template <class Config>
__global__ void __launch_bounds__(THREADS, min_ctas(Config::kBN))
    whole_k_gemm_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
                        const __grid_constant__ CUtensorMap tmW2, __nv_bfloat16* __restrict__ C,
                        const __nv_bfloat16* __restrict__ R, int M, int N, int K, int stages, int wpre) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int MP = Config::kMP, BN = Config::kBN, CL = Config::kCluster, LANES = Config::kLanes;
  constexpr bool SPLITM = Config::kSplitM, GATEUP = Config::kGateUp, RESIDUAL = Config::kResidual;
  static_assert(MP == 16 || MP == 32 || MP == 64, "activation box rows");
  static_assert(BN % 8 == 0 && BN >= 32 && BN <= (GATEUP ? 256 : 128), "W rows per CTA");
  static_assert(!GATEUP || (CL == 1 && (BN / 2) % 8 == 0), "gate/up: no cluster, two whole-atom boxes");
  static_assert(!RESIDUAL || (CL == 1 && !GATEUP), "residual: one CTA, one weight");
  constexpr int NC = GATEUP ? BN / 2 : BN;     // output columns per CTA, and per warpgroup's wgmma
  constexpr int KSTEP = GATEUP ? 1 : 2;        // k-blocks per warpgroup step: every one, or alternate
  constexpr bool MC = CL > 1;                  // a cluster: empty barriers freed by every CTA
  constexpr bool AMC = MC && !SPLITM;          // activation box multicast (neighbouring strips)
  constexpr int MH = AMC ? MP / CL : MP;       // activation rows this CTA loads
  constexpr int WH = SPLITM ? BN / CL : BN;    // W rows this CTA loads
  static_assert(!SPLITM || (CL == 2 && (WH * 128) % 1024 == 0), "split-M pairs: W halves of whole atoms");
  constexpr int STAGE = stage_bytes(MP, BN);
  static_assert((MH * 128) % 1024 == 0, "each part starts on a swizzle atom");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = align1024(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);  // [stages] in the head
  uint64_t* empty = full + stages;
  uint8_t* ring = smem + HEAD;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rank = MC ? static_cast<int>(cluster_ctarank()) : 0;
  // This CTA's first output column (>= N: a spare of a cluster) and first activation row.
  const int n0 = (SPLITM ? blockIdx.x / CL : blockIdx.x) * NC;
  // Rung 16: blockIdx.y is a tile of MP = 64 activation rows, or of a pair of them (rung 15
  // launches one: m0 = 0 or rank * MP).
  const int m0 = (SPLITM ? blockIdx.y * CL + rank : blockIdx.y) * MP;
  const int num_k = ceil_div(K, kBK);

  // The next kernel of the stream may place its CTAs as ours leave (it waits for our completion
  // before reading what we write).
  pdl_trigger();
  if (tid == 0) {
    tma_prefetch_desc(&tmA);
    tma_prefetch_desc(&tmW);
    if constexpr (GATEUP) tma_prefetch_desc(&tmW2);
    // One consumer warpgroup of each CTA frees a slot (both, with GATEUP: each reads its own box).
    mbar_ring_init(full, empty, stages, (GATEUP ? 8 : 4) * CL);
  }
  if constexpr (MC) cluster_sync();  // every CTA's barriers initialised before any multicast
  else __syncthreads();

  if (warp == CWARPS) {
    // ---- producer: lanes 0..LANES-1 each own every LANES-th slot of the ring (lane j: slots j,
    // j + LANES, ...) and fill them round after round, k-block r * stages + s in round r. Each
    // k-block is a chain of dependent steps (slot arithmetic, the empty-barrier try_wait,
    // expect_tx, two TMA issues); one thread running it in series cannot keep the W stream at the
    // DRAM rate, so LANES lanes of one warp run the same chain side by side. Every round of a slot
    // comes from the same lane, in order, so no lane can run two rounds ahead of a slot and test the
    // parity of a phase two back (which would re-arm a full barrier still pending; make_cfg). No
    // division: rounds advance by addition.
    // W (weights, never written by a kernel) may be requested before griddepcontrol.wait; the
    // activations (possibly the previous kernel's output) only after: the first `pre` stages get
    // their W box, every lane waits, then their activation boxes.
    if (lane < LANES) {
      const int pre = min(num_k, min(stages, wpre));
      // Box origins past the tensor are clamped to its last row (a spare CTA's strip, a split-M
      // half wholly past N or M): the rows then loaded feed only columns >= N or rows >= M,
      // which are never stored, and every box keeps at least one row inside the tensor.
      const int wrow = min(n0 + (SPLITM ? rank * WH : 0), N - 1);
      const int arow = min(m0, M - 1);
      // Activation multicast: a part whose rows lie wholly past M is not loaded at all (its smem
      // rows stay junk; accumulator rows >= M are never stored). Every CTA expects the bytes
      // actually sent.
      const int parts = AMC ? min(CL, ceil_div(M, MH)) : 1;
      const bool mine = rank < parts;
      const uint32_t bytes = BN * 128 + parts * MH * 128;
      constexpr uint16_t everyone = uint16_t((1u << CL) - 1);
      auto load_w = [&](int kb, int s) {
        uint8_t* dst = ring + s * STAGE + MP * 128 + (SPLITM ? rank * WH * 128 : 0);
        if constexpr (SPLITM) tma_load_2d_multicast(dst, &tmW, &full[s], kb * kBK, wrow, everyone);
        else tma_load_2d(dst, &tmW, &full[s], kb * kBK, wrow);
        if constexpr (GATEUP) tma_load_2d(dst + NC * 128, &tmW2, &full[s], kb * kBK, wrow);
      };
      auto load_a = [&](int kb, int s) {
        if constexpr (AMC) {
          uint8_t* dst = ring + s * STAGE + rank * MH * 128;
          if (mine) tma_load_2d_multicast(dst, &tmA, &full[s], kb * kBK, rank * MH, everyone);
        } else {
          tma_load_2d(ring + s * STAGE, &tmA, &full[s], kb * kBK, arow);
        }
      };
      // The first round's first `pre` k-blocks (slots 0..pre-1, free: no wait).
      for (int s = lane; s < pre; s += LANES) {
        mbar_arrive_expect_tx(&full[s], bytes);  // own W box + the activation parts
        load_w(s, s);
      }
      pdl_wait();
      for (int s = lane; s < pre; s += LANES) load_a(s, s);
      uint32_t ph = 0;  // round parity
      for (int base = 0; base < num_k; base += stages, ph ^= 1) {
        for (int s = lane; s < stages && base + s < num_k; s += LANES) {
          if (base + s < pre) continue;  // issued above
          mbar_wait(&empty[s], ph ^ 1);  // every CTA's consumers released slot s (first round: at once)
          mbar_arrive_expect_tx(&full[s], bytes);
          load_w(base + s, s);
          load_a(base + s, s);
        }
      }
    }
    __syncwarp();
  } else {
    // ---- consumers: warpgroup q takes k-blocks q, q + 2, ... into its own accumulator (GATEUP:
    // every k-block, warpgroup q the q-th box); slots and phases advance by addition.
    const int q = warp / 4, t128 = tid % 128;
    // A slot is free once this CTA's consumers (and, with multicast, every peer's) released it.
    // Known gap (test variants only): with activation multicast and parts <
    // CL (M at or below a part's rows), a rank that sends nothing does not hold its peers back, so
    // in principle a peer could finish round r + 1 of a slot and arrive on this CTA's empty barrier
    // before this CTA's own round-r arrival lands, miscounting its phases; it needs one remote
    // arrival to lag a whole ring round trip, and no test or sanitizer run has shown it.
    auto release = [](uint64_t* bar) {
      if constexpr (MC) {
#pragma unroll
        for (int c = 0; c < CL; ++c) mbar_arrive_remote(bar, c);
      } else {
        mbar_arrive(bar);
      }
    };
    float acc[NC / 2];
#pragma unroll
    for (int i = 0; i < NC / 2; ++i) acc[i] = 0.f;
    const int first = GATEUP ? 0 : q;
    int s = first, prev = -1;  // prev: the slot of this warpgroup's previous k-block, released one late
    uint32_t ph = 0;
    for (int kb = first; kb < num_k; kb += KSTEP) {
      mbar_wait(&full[s], ph);
      uint8_t* st = ring + s * STAGE;
      const uint64_t da = make_smem_desc_sw128(st);
      const uint64_t db = make_smem_desc_sw128(st + MP * 128 + (GATEUP ? q * NC * 128 : 0));
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) wgmma_ss_m64nk16<NC>(acc, da + 2 * kk, db + 2 * kk);
      wgmma_commit();
      wgmma_wait<1>();  // the group of `prev` has finished reading its slot
      if (prev >= 0 && lane == 0) release(&empty[prev]);
      prev = s;
      s += KSTEP;
      if (s >= stages) s -= stages, ph ^= 1;
    }
    wgmma_wait<0>();
    if (prev >= 0 && lane == 0) release(&empty[prev]);
    // Every full barrier has been waited on by a warpgroup (all TMA writes into
    // this CTA landed) and every wgmma read is complete: the ring is free for the partial.
    named_barrier_sync(1, CWARPS * 32);
    float* part = reinterpret_cast<float*>(ring) + t128 * (NC / 2);  // thread-private NC * 2 bytes
    if (q == 1) {
#pragma unroll
      for (int i = 0; i < NC / 2; i += 4)
        *reinterpret_cast<float4*>(part + i) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    }
    named_barrier_sync(1, CWARPS * 32);
    if (q == 0) {
      // Same accumulator layout in both warpgroups: thread t128 combines what thread t128 parked,
      // the sum of the two halves of K, or (GATEUP) silu(gate) * up, both rounded to bf16 first as
      // the layer's g and u tensors are.
#pragma unroll
      for (int i = 0; i < NC / 2; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(part + i);
        const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[i + e] = GATEUP ? silu_mul(Elem<DType::bf16>::round(acc[i + e]), Elem<DType::bf16>::round(w[e]))
                 : acc[i + e] + w[e];
      }
      // Rows >= M (and, split over M, rows past this CTA's MP), columns >= N skipped.
      if constexpr (RESIDUAL) {
        // R may be written by any earlier kernel of the stream: this thread waits for the previous
        // grid (the producer's wait covers only the loads it issued).
        pdl_wait();
        add_residual_bounded<NC>(acc, R, min(M, m0 + MP), N, m0, n0, t128);
      }
      store_acc_bounded<NC>(acc, C, min(M, m0 + MP), N, m0, n0, t128);
    }
  }
  if constexpr (MC) cluster_sync();  // peers may still arrive on our empty barriers
#endif
}

// Which instantiations a dispatch holds (each including file instantiates what its dispatch names):
// kDecode (rung 15) every configuration its plan and tests name: MP = 16, 32, 64, clusters, one
// producer lane; kSmallTiles (rung 16) MP = 64 with four lanes only, alone or in split-M pairs;
// kGateUp (the layer's MLP) GateUpSwiglu, MP = 16, 32, 64, strips of 32, 48, ..., 128 columns;
// kResidual (the layer's down projection) WithResidual, MP = 16, 32, 64, strips of 32, 48, ..., 128.
enum class KernelSet { kDecode, kSmallTiles, kGateUp, kResidual };

// A launch configuration (the plans of rungs 15 and 16 fill it; the tests force other values).
struct WholeKConfig {
  int mp = 64, bn = 32, cl = 1, lanes = NL, cps = 1, stages = 4, wpre = 2, grid = 1;
  int mtiles = 1;  // grid.y: 64-row tiles of M (rung 16; 1 in rung 15)
  bool splitm = false;
  bool gate_up = false;  // bn W rows = bn / 2 columns of two weights (GateUpSwiglu)
  size_t smem = 0;
};

// Calls f(Config{}) for a configuration's kernel: the instantiations that exist are, with four
// lanes, WholeKTile<MP, BN> for BN = 32, 40, ..., 128; InCluster<WholeKTile<MP, BN>, 2 or 4> and
// SplitMPair<WholeKTile<MP, BN>> for BN in {32, 64, 96, 128} (clusters of 4 only with MP >= 32:
// 8-row parts at least); OneProducerLane<WholeKTile<MP, 32>>. Rung 16's dispatch
// (KernelSet::kSmallTiles) holds MP = 64 only.
template <class Config>
const void* kernel_fn() {
  return reinterpret_cast<const void*>(&whole_k_gemm_kernel<Config>);
}
template <int MP, int BN, class F>
void with_cl(const WholeKConfig& c, F&& f) {
  if (c.cl == 1) return f(WholeKTile<MP, BN>{});
  if (c.cl == 2) return f(InCluster<WholeKTile<MP, BN>, 2>{});
  if constexpr (MP >= 32) {
    if (c.cl == 4) return f(InCluster<WholeKTile<MP, BN>, 4>{});
  }
  throw BadArgument("whole-K kernel: no kernel for MP=" + std::to_string(MP) + " CL=" + std::to_string(c.cl));
}
// Strip widths without clusters: every multiple of STEP from BN to 128 (rung 15's menu: 8 from 32;
// the residual kernel's: 16 from 32), the tile changed by Wrap.
template <int MP, int BN, template <class> class Wrap = Plain, int STEP = 8, class F>
void with_width(const WholeKConfig& c, F&& f) {
  if constexpr (BN <= 128) {
    if (c.bn == BN) return f(Wrap<WholeKTile<MP, BN>>{});
    return with_width<MP, BN + STEP, Wrap, STEP>(c, f);
  }
  throw BadArgument("whole-K kernel: no kernel for BN=" + std::to_string(c.bn));
}
// KernelSet::kSmallTiles (rung 16's dispatch): only four lanes without clusters and split-M pairs, so
// its file instantiates those alone.
template <int MP, KernelSet SET, class F>
void with_bn(const WholeKConfig& c, F&& f) {
  if (c.splitm) {  // pairs along M (MP rows each), four lanes
    KL_REQUIRE(c.cl == 2 && c.lanes == NL, "whole-K kernel: split-M runs in pairs with four lanes");
    switch (c.bn) {
      case 32: return f(SplitMPair<WholeKTile<MP, 32>>{});
      case 64: return f(SplitMPair<WholeKTile<MP, 64>>{});
      case 96: return f(SplitMPair<WholeKTile<MP, 96>>{});
      case 128: return f(SplitMPair<WholeKTile<MP, 128>>{});
    }
    throw BadArgument("whole-K kernel: no split-M kernel for MP=" + std::to_string(MP) + " BN=" + std::to_string(c.bn));
  }
  KL_REQUIRE(c.lanes == NL || (SET == KernelSet::kDecode && c.lanes == 1), "whole-K kernel: " << c.lanes << " producer lanes");
  if (c.cl == 1 && c.lanes == NL) return with_width<MP, 32>(c, f);
  if constexpr (SET == KernelSet::kDecode) {
    if (c.lanes == 1) {
      KL_REQUIRE(c.bn == 32 && c.cl == 1, "whole-K kernel: one producer lane only at BN = 32, no clusters");
      return f(OneProducerLane<WholeKTile<MP, 32>>{});
    }
    switch (c.bn) {  // clusters: the multiples of 32
      case 32: return with_cl<MP, 32>(c, f);
      case 64: return with_cl<MP, 64>(c, f);
      case 96: return with_cl<MP, 96>(c, f);
      case 128: return with_cl<MP, 128>(c, f);
    }
  }
  throw BadArgument("whole-K kernel: no cluster kernel for BN=" + std::to_string(c.bn));
}
// KernelSet::kGateUp: W rows (two strips) 64, 96, ..., 256.
template <int MP, int BN, class F>
void with_gate_up(const WholeKConfig& c, F&& f) {
  if constexpr (BN <= 256) {
    if (c.bn == BN) return f(GateUpSwiglu<WholeKTile<MP, BN>>{});
    return with_gate_up<MP, BN + 32>(c, f);
  }
  throw BadArgument("gate/up kernel: no kernel for " + std::to_string(c.bn) + " W rows");
}
template <KernelSet SET, class F>
void with_kernel(const WholeKConfig& c, F&& f) {
  if constexpr (SET == KernelSet::kGateUp) {
    KL_REQUIRE(c.gate_up && c.cl == 1 && c.lanes == NL && !c.splitm, "gate/up kernel: one CTA, four lanes");
    if (c.mp == 16) return with_gate_up<16, 64>(c, f);
    if (c.mp == 32) return with_gate_up<32, 64>(c, f);
    return with_gate_up<64, 64>(c, f);
  } else if constexpr (SET == KernelSet::kResidual) {
    KL_REQUIRE(!c.gate_up && c.cl == 1 && c.lanes == NL && !c.splitm, "residual kernel: one CTA, four lanes");
    if (c.mp == 16) return with_width<16, 32, WithResidual, 16>(c, f);
    if (c.mp == 32) return with_width<32, 32, WithResidual, 16>(c, f);
    return with_width<64, 32, WithResidual, 16>(c, f);
  } else {
    KL_REQUIRE(!c.gate_up, "whole-K kernel: a gate/up configuration outside the gate/up dispatch");
    if constexpr (SET == KernelSet::kDecode) {
      if (c.mp == 16) return with_bn<16, SET>(c, f);
      if (c.mp == 32) return with_bn<32, SET>(c, f);
    }
    KL_REQUIRE(c.mp == 64, "rung 16: 64-row tiles only");
    return with_bn<64, SET>(c, f);
  }
}

// The ring for `cps` CTAs per SM: 228 KB of shared memory per SM, 1 KB reserved per CTA, the
// 1024-byte alignment pad, the head and the slack; at most MAX_STAGES stages.
// `bn` is W rows per CTA (gate_up: bn / 2 output columns of each weight).
inline WholeKConfig make_cfg(int M, int N, int bn, int cl, int cps, int wpre, bool splitm = false,
                             bool gate_up = false) {
  WholeKConfig c;
  c.mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  if (cl == 4) c.mp = std::max(c.mp, 32);  // 4 parts of at least 8 rows (a swizzle atom)
  c.splitm = splitm;
  c.gate_up = gate_up;
  if (splitm) c.mp = std::min(c.mp, 32), cl = 2;  // each CTA of the pair: up to 32 rows
  c.bn = bn;
  c.cl = cl;
  c.cps = std::clamp(cps, 1, MAX_CPS);
  c.wpre = std::max(0, wpre);  // 0: nothing before griddepcontrol.wait (rung 16)
  const int per_cta = std::min(SMEM_OPTIN, 228 * 1024 / c.cps - 1024);
  const int fixed = 1024 + HEAD + slack_bytes(c.mp, c.bn);
  // Even (>= 4): warpgroup q takes the k-blocks of parity q, so with an even ring it always takes
  // the slots of parity q, every round of a slot consumed by one warpgroup, in order (each slot is
  // also filled by one producer lane). Were a slot's consecutive rounds filled by different lanes,
  // a lane two rounds ahead could pass the empty-barrier parity test of a phase two back and
  // re-arm a full barrier still pending. At least 4 because a warpgroup holds its previous slot
  // until its next stage's wgmmas are issued: with the two interleaved, 3 slots can be held while
  // the 4th loads.
  c.stages = std::clamp((per_cta - fixed) / stage_bytes(c.mp, c.bn) / 2 * 2, 4, MAX_STAGES);
  c.smem = size_t(fixed) + size_t(c.stages) * stage_bytes(c.mp, c.bn);
  const int strips = ceil_div(N, gate_up ? c.bn / 2 : c.bn);
  c.grid = splitm ? 2 * strips : c.cl * ceil_div(strips, c.cl);
  return c;
}

// CTAs of this configuration the device holds at once (cached occupancy queries).
template <KernelSet SET>
int resident(const WholeKConfig& c) {
  const void* fn = nullptr;
  with_kernel<SET>(c, [&](auto k) { fn = kernel_fn<decltype(k)>(); });
  opt_in_smem(fn, SMEM_OPTIN);
  return c.cl > 1 ? c.cl * resident_clusters(fn, c.cl, THREADS, c.smem)
                  : device_info().sms * resident_blocks_per_sm(fn, THREADS, c.smem);
}

// What rungs 15 and 16 both require (each checks M itself): sm_90a, 16-byte TMA row strides and
// bases, 4-byte aligned C (bf16 pairs), the opt-in shared memory, the TMA driver entry point.
inline std::string whole_k_supports(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = gemm_bf16_check_args(a);
  if (why.empty()) why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16)) return "A and W must be 16-byte aligned";
  if (!aligned(a.C, 4)) return "C must be 4-byte aligned (bf16 pairs)";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

// The narrowest strip (a multiple of `step` from 32 rows) with which `mtiles` tile rows of strips
// over N fit one CTA per SM in one wave; 128 when none does (then several per SM, in waves).
inline int one_wave_strip(int N, int mtiles, int step) {
  const int sms = device_info().sms;
  for (int bn = 32; bn < 128; bn += step)
    if (static_cast<long long>(ceil_div(N, bn)) * mtiles <= sms) return bn;
  return 128;
}

// With more CTAs than one wave holds: the ring for the most CTAs per SM the device really places
// (rings sized for more CTAs than the registers allow would run one CTA per SM on a shallow ring:
// BN >= 72 uses 117-146 registers, one CTA per SM).
template <KernelSet SET, class Make>
WholeKConfig waves_cfg(Make make, int cps_max) {
  for (int cps = cps_max; cps > 1; --cps) {
    const WholeKConfig c = make(cps);
    if (resident<SET>(c) >= cps * device_info().sms) return c;
  }
  return make(1);
}

// The deepest ring (fewest CTAs per SM) with which the whole grid is resident at once; past one
// wave, waves_cfg's ring.
template <KernelSet SET, class Make>
WholeKConfig one_wave_cfg(Make make) {
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const WholeKConfig c = make(cps);
    if (c.grid * c.mtiles <= resident<SET>(c)) return c;
  }
  return waves_cfg<SET>(make, MAX_CPS);
}

// Launches configuration `cf` (tensor maps built per launch: a pointer change never meets a stale
// map). `w2`: the second weight of a gate/up configuration (a.W is the first); `r`: the residual of a
// residual configuration ([M, N], as C).
template <KernelSet SET>
void launch_cfg(const GemmBf16Args& a, const WholeKConfig& cf, cudaStream_t s, const __nv_bfloat16* w2 = nullptr,
                const __nv_bfloat16* r = nullptr) {
  KL_REQUIRE(cf.stages % 2 == 0 && cf.stages >= 4, "whole-K kernel: ring depth " << cf.stages << " (even, >= 4)");
  with_kernel<SET>(cf, [&](auto k) {
    using Kn = decltype(k);
    // Box rows: the activation part / W part one CTA loads.
    constexpr int a_rows = Kn::kSplitM ? Kn::kMP : Kn::kMP / Kn::kCluster;
    constexpr int w_rows = Kn::kSplitM || Kn::kGateUp ? Kn::kBN / 2 : Kn::kBN;
    const CUtensorMap tA = map_operand(a.A, a.M, a.K, a_rows);
    const CUtensorMap tW = map_operand(a.W, a.N, a.K, w_rows);
    KL_REQUIRE(Kn::kGateUp == (w2 != nullptr), "whole-K kernel: a second weight exactly for gate/up");
    const CUtensorMap tW2 = Kn::kGateUp ? map_operand(w2, a.N, a.K, w_rows) : tW;
    KL_REQUIRE(Kn::kResidual == (r != nullptr), "whole-K kernel: a residual exactly for the residual kernel");
    opt_in_smem(kernel_fn<Kn>(), SMEM_OPTIN);
    // Programmatic dependent launch only on created streams (pdl.cuh).
    pdl_launch_cluster(whole_k_gemm_kernel<Kn>, dim3(cf.grid, cf.mtiles), dim3(THREADS), cf.smem, s,
                       pdl_stream(s), Kn::kCluster > 1 ? Kn::kCluster : 0, tA, tW, tW2, a.C, r, a.M, a.N,
                       a.K, cf.stages, cf.wpre);
  });
}

}  // namespace
}  // namespace hopper_gemm
}  // namespace kl
