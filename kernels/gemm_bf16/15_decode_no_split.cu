// Rung 15 — decode_no_split: the M <= 64 stream over W with no K split and no reduction: the
// activations are the wgmma A operand (m64), a W strip the B operand, every CTA runs the whole K
// and writes its strip's C columns straight from the accumulators, and four producer lanes keep
// the TMA ring full.
//
// Change from rung 11 (the previous decode rung): which operand is which, and so how the work is
// cut. Rung 11 put W in the wgmma A slot (m64: 64 W rows per slab), so N = 4096 had only 64 strips
// and it split K over a 2-CTA cluster to reach 128 CTAs, summing the halves through DSMEM after a
// cluster barrier: 2.2-3.0 us of tail after the mainloop at M = 32 / 64 (tools/gemm_trace,
// docs/gemm_bf16.md "The decode rung, fourth pass"). Here the activation box (MP = 16, 32 or 64
// rows: M rounded up, zero-filled by TMA past M) is A and W is B, so a CTA owns BN output columns
// over the whole K, no reduction. What stays from rung 11: one producer warp issuing TMA into a
// full/empty mbarrier ring, programmatic dependent launch with the first W boxes requested before
// griddepcontrol.wait, a ring sized so the grid runs in one wave.
//  * Strips: the narrowest multiple of 8 rows (from 32) that fits one CTA per SM in one wave: 32
//    at N = 4096 (128 CTAs), 88 at N = 11008 (126 CTAs; session 21: 32-row strips three per SM
//    took 42.0 us at 64x11008x4096, 88-row strips 28.6, cuBLAS 28.4). Widths that are not
//    wgmma shapes are cut into native pieces (wgmma_ss_m64nk16, common/hopper.cuh).
//  * Producer: four lanes of the producer warp, lane j filling slots j, j + 4, ... round after
//    round. The first version had one thread and ran at ~300 ns per k-block whatever the ring
//    depth (24.3-24.5 us at 4096^2 for every M): ncu put 41% of the warp samples in the consumers'
//    full-barrier wait with DRAM 23% busy, i.e. the single thread's per-k-block chain (a division
//    by the runtime ring depth, the empty-barrier try_wait, expect_tx, two TMA issues) was the
//    stream's rate. Slot and phase now advance by addition and four chains run side by side
//    (results/h200/dev/dec15/).
//  * Two consumer warpgroups take alternate k-blocks into their own accumulators; warpgroup 1
//    parks its 64 x BN fp32 block in the drained ring and warpgroup 0 adds it (fixed order:
//    bitwise repeatable, the same bits at every strip width) and stores bf16 C (rows >= M,
//    columns >= N skipped).
//  * Stage = [activation box MP x 128 B][W box BN x 128 B], both 1024-aligned (swizzle atoms). The
//    m64 A descriptor reads 64 rows: with MP < 64 the rows past MP read the W box and the next
//    stage (or the slack after the ring): junk accumulator rows >= M, never stored.
//  * Ring depth even: each slot is filled by one producer lane and consumed by one warpgroup,
//    round after round, in order (make_cfg: what broke when a slot's rounds came from different
//    lanes). The lanes spin on different barriers inside one warp and rely on independent thread
//    scheduling to make progress (the 4-stage forced-ring tests exercise it).
// Measured and not kept (docs/gemm_bf16.md "Rung 15", "Rung 15, session 21"; experiment rows 75-77
// and 130-149 keep them): clusters of 2 or 4 neighbouring strips multicasting the activation box
// (cuBLAS's pairing at N = 11008; slower than no clusters on every decode shape), split-M pairs
// multicasting W (cuBLAS's pairing at 64x4096x4096; 17.5 against 15.9 us), a stagger of each
// cluster's walk over K, L2 evict-first / evict-last policies (no change), one producer thread,
// rings cut to a multiple of 4 (no change).
// Measured (H200, family run of 7135f41, results/h200/gemm_bf16.jsonl, us single launch / CUDA
// graph; cuBLAS beside): 16x4096x4096 14.8 / 10.7 (18.5 / 12.7; rung 11 17.5 / 16.7), 64x4096x4096
// 15.8 / 11.6 (14.7 / 11.8), 16x4096x11008 27.7 / 24.0 (30.8 / 27.7), 64x11008x4096 29.0 / 24.5
// (28.4 / 25.7; rung 11 34.0 / 27.4); rung 03 stays the pick at N = 11008 for M <= 16 (1x11008x4096
// 03 26.8 / 24.0, 15 28.9 / 24.3).
// Proxy rule relied on: TMA (async proxy) writes complete on the full mbarrier before the
// consumers' wgmma reads; a consumer warp releases a slot after wgmma.wait_group has completed the
// reads of it. The ring is reused for warpgroup 1's partial only after both warpgroups have waited
// on every full barrier (every TMA write landed) and drained their wgmmas (named barrier of the
// 256 consumers).
#include <algorithm>
#include <tuple>

#include "common/pdl.cuh"
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace {

constexpr int CWARPS = 8;                  // two consumer warpgroups
constexpr int THREADS = CWARPS * 32 + 32;  // + one producer warp = 288
constexpr int NL = 4;                      // producer lanes (row 76: one)
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

// MP: activation box rows (M rounded up: 16, 32, 64). BN: W rows (output columns) per CTA, a
// multiple of 8 from 32 to 128 (the plan's; the experiment rows force others). CL: CTAs of a cluster of
// neighbouring strips, each loading MP / CL rows of every activation box and multicasting them to
// all (1: no cluster). LANES: producer lanes (experiment row 76: 1). SPLITM (experiment rows
// 142-145, cuBLAS's M = 64 pairing): the two CTAs of a cluster (CL = 2) share one strip instead,
// rank r taking activation rows r * MP.. (MP = 32 at M = 64), each loading half of every W box and
// multicasting it to both: W crosses from L2 once per pair, each CTA reads half the activations.
template <int MP, int BN, int CL, int LANES, bool SPLITM = false>
__global__ void __launch_bounds__(THREADS, min_ctas(BN))
    k15(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW,
        __nv_bfloat16* __restrict__ C, int M, int N, int K, int stages, int wpre) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(MP == 16 || MP == 32 || MP == 64, "activation box rows");
  static_assert(BN % 8 == 0 && BN >= 32 && BN <= 128, "W rows per CTA");
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
  const int n0 = (SPLITM ? blockIdx.x / CL : blockIdx.x) * BN;
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
    mbar_ring_init(full, empty, stages, 4 * CL);  // one consumer warpgroup of each CTA frees a slot
  }
  if constexpr (MC) cluster_sync();  // every CTA's barriers initialised before any multicast
  else __syncthreads();

  if (warp == CWARPS) {
    // ---- producer: lanes 0..LANES-1 each own every LANES-th slot of the ring (lane j: slots j,
    // j + LANES, ...) and fill them round after round, k-block r * stages + s in round r. One
    // thread walking the ring issued a stage every ~300 ns (ncu: the consumers' full-barrier waits
    // held 41% of the samples, DRAM 23% busy): each k-block is a chain of dependent steps (slot
    // arithmetic, the empty-barrier try_wait, expect_tx, two TMA issues) that one thread runs in
    // series; LANES lanes of one warp run the same chain side by side. Every round of a slot comes
    // from the same lane, in order, so no lane can run two rounds ahead of a slot and test the
    // parity of a phase two back (the bug of the first four-lane version, which gave lane j the
    // k-blocks j, j + 4, ...: with 11 stages consecutive rounds of a slot went to different lanes,
    // one re-armed a full barrier still pending; make_cfg). No division: rounds advance by
    // addition.
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
      };
      auto load_a = [&](int kb, int s) {
        if constexpr (AMC) {
          uint8_t* dst = ring + s * STAGE + rank * MH * 128;
          if (mine) tma_load_2d_multicast(dst, &tmA, &full[s], kb * kBK, rank * MH, everyone);
        } else {
          tma_load_2d(ring + s * STAGE, &tmA, &full[s], kb * kBK, arow);
        }
      };
      // Round 0's first `pre` k-blocks (slots 0..pre-1, free: no wait).
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
          mbar_wait(&empty[s], ph ^ 1);  // every CTA's consumers released slot s (round 0: at once)
          mbar_arrive_expect_tx(&full[s], bytes);
          load_w(base + s, s);
          load_a(base + s, s);
        }
      }
    }
    __syncwarp();
  } else {
    // ---- consumers: warpgroup q takes k-blocks q, q + 2, ... into its own accumulator; slots
    // and phases advance by addition.
    const int q = warp / 4, t128 = tid % 128;
    // A slot is free once this CTA's consumers (and, with multicast, every peer's) released it.
    auto release = [](uint64_t* bar) {
      if constexpr (MC) {
#pragma unroll
        for (int c = 0; c < CL; ++c) mbar_arrive_remote(bar, c);
      } else {
        mbar_arrive(bar);
      }
    };
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    int s = q, prev = -1;  // prev: the slot of this warpgroup's previous k-block, released one late
    uint32_t ph = 0;
    for (int kb = q; kb < num_k; kb += 2) {
      mbar_wait(&full[s], ph);
      uint8_t* st = ring + s * STAGE;
      const uint64_t da = make_smem_desc_sw128(st);
      const uint64_t db = make_smem_desc_sw128(st + MP * 128);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) wgmma_ss_m64nk16<BN>(acc, da + 2 * kk, db + 2 * kk);
      wgmma_commit();
      wgmma_wait<1>();  // the group of `prev` has finished reading its slot
      if (prev >= 0 && lane == 0) release(&empty[prev]);
      prev = s;
      s += 2;
      if (s >= stages) s -= stages, ph ^= 1;
    }
    wgmma_wait<0>();
    if (prev >= 0 && lane == 0) release(&empty[prev]);
    // Every full barrier has been waited on by one of the two warpgroups (all TMA writes into
    // this CTA landed) and every wgmma read is complete: the ring is free for the partial.
    named_barrier_sync(1, CWARPS * 32);
    float* part = reinterpret_cast<float*>(ring) + t128 * (BN / 2);  // thread-private BN * 2 bytes
    if (q == 1) {
#pragma unroll
      for (int i = 0; i < BN / 2; i += 4)
        *reinterpret_cast<float4*>(part + i) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    }
    named_barrier_sync(1, CWARPS * 32);
    if (q == 0) {
      // Same accumulator layout in both warpgroups: thread t128 adds what thread t128 parked.
#pragma unroll
      for (int i = 0; i < BN / 2; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(part + i);
        acc[i] += v.x, acc[i + 1] += v.y, acc[i + 2] += v.z, acc[i + 3] += v.w;
      }
      // Rows >= M (and, split over M, rows past this CTA's MP), columns >= N skipped.
      store_acc_bounded<BN>(acc, C, min(M, m0 + MP), N, m0, n0, t128);
    }
  }
  if constexpr (MC) cluster_sync();  // peers may still arrive on our empty barriers
#endif
}

struct Cfg15 {
  int mp = 64, bn = 32, cl = 1, lanes = NL, cps = 1, stages = 4, wpre = 2, grid = 1;
  int mtiles = 1;  // grid.y: 64-row tiles of M (rung 16; 1 in rung 15)
  bool splitm = false;
  size_t smem = 0;
};

// Calls f(Kern<MP, BN, CL, LANES, SPLITM>{}) for a configuration's kernel: the instantiations that
// exist are, with four lanes, BN = 32, 40, ..., 128 without clusters; BN in {32, 64, 96, 128} in
// clusters of 2 or 4 (4 only with MP >= 32: 8-row parts at least) or split-M pairs (MP <= 32);
// one lane only at BN = 32 without clusters (row 76).
template <int MP_, int BN_, int CL_, int LANES_, bool SPLITM_ = false>
struct Kern {
  static constexpr int MP = MP_, BN = BN_, CL = CL_, LANES = LANES_;
  static constexpr bool SPLITM = SPLITM_;
  static const void* fn() { return reinterpret_cast<const void*>(&k15<MP, BN, CL, LANES, SPLITM>); }
};
template <int MP, int BN, class F>
void with_cl(const Cfg15& c, F&& f) {
  if (c.cl == 1) return f(Kern<MP, BN, 1, NL>{});
  if (c.cl == 2) return f(Kern<MP, BN, 2, NL>{});
  if constexpr (MP >= 32) {
    if (c.cl == 4) return f(Kern<MP, BN, 4, NL>{});
  }
  throw BadArgument("rung 15: no kernel for MP=" + std::to_string(MP) + " CL=" + std::to_string(c.cl));
}
// Strip widths without clusters: every multiple of 8 from 32 to 128 (the plan's menu).
template <int MP, int BN, class F>
void with_width(const Cfg15& c, F&& f) {
  if constexpr (BN <= 128) {
    if (c.bn == BN) return f(Kern<MP, BN, 1, NL>{});
    return with_width<MP, BN + 8>(c, f);
  }
  throw BadArgument("rung 15: no kernel for BN=" + std::to_string(c.bn));
}
template <int MP, class F>
void with_bn(const Cfg15& c, F&& f) {
  if (c.splitm) {  // pairs along M (MP rows each), four lanes
    KL_REQUIRE(c.cl == 2 && c.lanes == NL, "rung 15: split-M runs in pairs with four lanes");
    switch (c.bn) {
      case 32: return f(Kern<MP, 32, 2, NL, true>{});
      case 64: return f(Kern<MP, 64, 2, NL, true>{});
      case 96: return f(Kern<MP, 96, 2, NL, true>{});
      case 128: return f(Kern<MP, 128, 2, NL, true>{});
    }
    throw BadArgument("rung 15: no split-M kernel for MP=" + std::to_string(MP) + " BN=" + std::to_string(c.bn));
  }
  if (c.lanes == 1) {
    KL_REQUIRE(c.bn == 32 && c.cl == 1, "rung 15: one producer lane only at BN = 32, no clusters");
    return f(Kern<MP, 32, 1, 1>{});
  }
  KL_REQUIRE(c.lanes == NL, "rung 15: " << c.lanes << " producer lanes");
  if (c.cl == 1) return with_width<MP, 32>(c, f);
  switch (c.bn) {  // clusters: the multiples of 32
    case 32: return with_cl<MP, 32>(c, f);
    case 64: return with_cl<MP, 64>(c, f);
    case 96: return with_cl<MP, 96>(c, f);
    case 128: return with_cl<MP, 128>(c, f);
  }
  throw BadArgument("rung 15: no cluster kernel for BN=" + std::to_string(c.bn));
}
template <class F>
void with_kernel(const Cfg15& c, F&& f) {
  if (c.mp == 16) return with_bn<16>(c, f);
  if (c.mp == 32) return with_bn<32>(c, f);
  return with_bn<64>(c, f);
}

// The ring for `cps` CTAs per SM: 228 KB of shared memory per SM, 1 KB reserved per CTA, the
// 1024-byte alignment pad, the head and the slack; at most MAX_STAGES stages.
Cfg15 make_cfg(int M, int N, int bn, int cl, int cps, int wpre, bool splitm = false) {
  Cfg15 c;
  c.mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  if (cl == 4) c.mp = std::max(c.mp, 32);  // 4 parts of at least 8 rows (a swizzle atom)
  c.splitm = splitm;
  if (splitm) c.mp = std::min(c.mp, 32), cl = 2;  // each CTA of the pair: up to 32 rows
  c.bn = bn;
  c.cl = cl;
  c.cps = std::clamp(cps, 1, MAX_CPS);
  c.wpre = std::max(1, wpre);
  const int per_cta = std::min(SMEM_OPTIN, 228 * 1024 / c.cps - 1024);
  const int fixed = 1024 + HEAD + slack_bytes(c.mp, c.bn);
  // Even (>= 4): warpgroup q takes the k-blocks of parity q, so with an even ring it always takes
  // the slots of parity q, every round of a slot consumed by one warpgroup, in order (each slot is
  // also filled by one producer lane). (Session 20's producer needed a multiple of 4: it gave
  // lane j the k-blocks j, j + 4, ...; with 11 stages consecutive rounds of a slot went to
  // different lanes, a lane two rounds ahead passed the empty-barrier parity test of a phase two
  // back and re-armed a full barrier still pending: compute-sanitizer flagged the
  // arrive.expect_tx, the bench died with a launch failure at 1x11008x4096.) At least 4 because
  // a warpgroup holds its previous slot until its next stage's wgmmas are issued: with the two
  // interleaved, 3 slots can be held while the 4th loads.
  c.stages = std::clamp((per_cta - fixed) / stage_bytes(c.mp, c.bn) / 2 * 2, 4, MAX_STAGES);
  c.smem = size_t(fixed) + size_t(c.stages) * stage_bytes(c.mp, c.bn);
  const int strips = ceil_div(N, c.bn);
  c.grid = splitm ? 2 * strips : c.cl * ceil_div(strips, c.cl);
  return c;
}

// CTAs of this configuration the device holds at once (cached occupancy queries).
int resident(const Cfg15& c) {
  const void* fn = nullptr;
  with_kernel(c, [&](auto k) { fn = decltype(k)::fn(); });
  opt_in_smem(fn, SMEM_OPTIN);
  return c.cl > 1 ? c.cl * resident_clusters(fn, c.cl, THREADS, c.smem)
                  : device_info().sms * resident_blocks_per_sm(fn, THREADS, c.smem);
}

// The plan for (BN, CL): the deepest ring (fewest CTAs per SM) with which the whole grid is
// resident at once (N = 4096: 128 CTAs, one per SM; N = 11008: 344 CTAs, three per SM, 8 stages).
// Two W boxes go out before the PDL wait (rung 11 v4's measured choice at M > 16).
Cfg15 plan(int M, int N, int bn, int cl, bool splitm) {
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const Cfg15 c = make_cfg(M, N, bn, cl, cps, 2, splitm);
    if (c.grid * c.mtiles <= resident(c)) return c;
  }
  return make_cfg(M, N, bn, cl, MAX_CPS, 2, splitm);  // N too large for one wave: 4-per-SM rings
}

// The strip width the rung runs: the narrowest multiple of 8 (from 32) whose strips fit one per SM
// in one wave, no clusters: N = 4096 -> 32 (128 CTAs), N = 11008 -> 88 (126 CTAs), N = 8192 ->
// 64; past 132 x 128 columns, 128-row strips several per SM. Measured (H200, session 21,
// results/h200/dev/s21/): at N = 11008 88-row strips against 32-row strips at three per SM
// 28.8 / 24.6 against 31.7 / 28.2 us at M = 64, 28.8 / 24.4 against 28.8 / 26.2 at M = 32 (single /
// graph); wider or narrower strips than one per SM slower (96: 115 CTAs, 29.5 / 27.0; 80: 138
// CTAs, two waves, 33.9 / 37.0). Clusters multicasting the activation box and split-M pairs
// multicasting W slower on every decode shape (rows 130-145).
int strip_of(int N) {
  const int sms = device_info().sms;
  for (int bn = 32; bn < 128; bn += 8)
    if (ceil_div(N, bn) <= sms) return bn;
  return 128;
}

Cfg15 choose(int M, int N, int bn, int cl, bool splitm = false) {
  static PlanCache<std::tuple<int, int, int, int, int, bool>, Cfg15> cache;
  const int mp = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  return cache.get(std::make_tuple(device_info().id, mp, N, bn, cl, splitm),
                   [&] { return plan(M, N, bn, cl, splitm); });
}
Cfg15 choose(int M, int N) { return choose(M, N, strip_of(N), 1); }

void launch_cfg(const GemmBf16Args& a, const Cfg15& cf, cudaStream_t s) {
  KL_REQUIRE(cf.stages % 2 == 0 && cf.stages >= 4, "rung 15: ring depth " << cf.stages << " (even, >= 4)");
  with_kernel(cf, [&](auto k) {
    using Kn = decltype(k);
    // Box rows: the activation part / W part one CTA loads.
    constexpr int a_rows = Kn::SPLITM ? Kn::MP : Kn::MP / Kn::CL;
    constexpr int w_rows = Kn::SPLITM ? Kn::BN / 2 : Kn::BN;
    const CUtensorMap tA = make_tensor_map_bf16_2d(a.A, a.M, a.K, a.K, a_rows, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
    const CUtensorMap tW = make_tensor_map_bf16_2d(a.W, a.N, a.K, a.K, w_rows, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
    opt_in_smem(Kn::fn(), SMEM_OPTIN);
    // Programmatic dependent launch only on created streams (pdl.cuh).
    pdl_launch_cluster(k15<Kn::MP, Kn::BN, Kn::CL, Kn::LANES, Kn::SPLITM>, dim3(cf.grid, cf.mtiles), dim3(THREADS), cf.smem,
                       s, pdl_stream(s), Kn::CL > 1 ? Kn::CL : 0, tA, tW, a.C, a.M, a.N, a.K,
                       cf.stages, cf.wpre);
  });
}

}  // namespace

std::string supports_15(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.M < 1 || a.M > 64) return "decode rung takes 1 <= M <= 64";
  if (a.N < 1 || a.K < 1) return "N, K must be >= 1";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16)) return "A and W must be 16-byte aligned";
  if (!aligned(a.C, 4)) return "C must be 4-byte aligned (bf16 pairs)";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

void launch_15(const GemmBf16Args& a, cudaStream_t s) { launch_cfg(a, choose(a.M, a.N), s); }

void launch_15_forced(const GemmBf16Args& a, int cps, int wpre, cudaStream_t s) {
  launch_cfg(a, make_cfg(a.M, a.N, strip_of(a.N), 1, cps, wpre), s);
}

void launch_15_strip(const GemmBf16Args& a, int bn, int cl, bool splitm, cudaStream_t s) {
  KL_REQUIRE(bn % 8 == 0 && bn >= 32 && bn <= 128, "rung 15: strip of " << bn << " rows");
  KL_REQUIRE(cl == 1 || cl == 2 || cl == 4, "rung 15: cluster of " << cl);
  KL_REQUIRE(!splitm || cl == 2, "rung 15: split-M runs in pairs");
  launch_cfg(a, choose(a.M, a.N, bn, cl, splitm), s);
}

void launch_15_variant(const GemmBf16Args& a, int which, cudaStream_t s) {
  switch (which) {
    case 1: return launch_15_strip(a, 32, 2, false, s);  // multicast pairs
    case 2: {                                      // one producer lane
      Cfg15 c = choose(a.M, a.N, 32, 1);
      c.lanes = 1;
      return launch_cfg(a, c, s);
    }
    case 3: {  // the plan with its ring cut to a multiple of 4 (session 20's rounding)
      Cfg15 c = choose(a.M, a.N);
      c.stages = c.stages / 4 * 4;
      return launch_cfg(a, c, s);
    }
    default: throw BadArgument("rung 15: no variant " + std::to_string(which));
  }
}

// ---- rung 16: rung 15's kernel over 64-row tiles of any M (small prefill shapes)
namespace {
// Strips: the narrowest multiple of 8 (from 32) whose tiles (strips x 64-row tiles of M) fit one
// CTA per SM; 128 rows when none does (then the plan's ring for several CTAs per SM, in waves).
int strip_of_16(int M, int N) {
  const int sms = device_info().sms, mt = ceil_div(M, 64);
  for (int bn = 32; bn < 128; bn += 8)
    if (static_cast<long long>(ceil_div(N, bn)) * mt <= sms) return bn;
  return 128;
}
// pairs (experiment row 78): clusters of two CTAs on one strip and two neighbouring 64-row tiles,
// each loading half of every W box and multicasting it (W crosses from L2 once per pair).
Cfg15 cfg_16(int M, int N, int bn, int cps, bool pairs) {
  if (pairs) bn = std::min(128, ceil_div(bn, 32) * 32);  // W halves of whole swizzle atoms
  Cfg15 c = make_cfg(64, N, bn, 1, cps, 2);
  c.mtiles = ceil_div(M, 64);
  if (pairs) c.splitm = true, c.cl = 2, c.grid *= 2, c.mtiles = ceil_div(c.mtiles, 2);
  return c;
}
Cfg15 plan_16(int M, int N, bool pairs) {
  const int bn = strip_of_16(M, N);
  for (int cps = 1; cps <= MAX_CPS; ++cps) {
    const Cfg15 c = cfg_16(M, N, bn, cps, pairs);
    if (c.grid * c.mtiles <= resident(c)) return c;
  }
  // More tiles than one wave holds: the ring for two CTAs per SM (a 4+-stage ring at 128 rows).
  return cfg_16(M, N, bn, 2, pairs);
}
Cfg15 choose_16(int M, int N, bool pairs = false) {
  static PlanCache<std::tuple<int, int, int, bool>, Cfg15> cache;
  return cache.get(std::make_tuple(device_info().id, M, N, pairs), [&] { return plan_16(M, N, pairs); });
}
}  // namespace

std::string supports_16(const GemmBf16Args& a, const DeviceInfo& d) {
  std::string why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.M < 1 || a.N < 1 || a.K < 1) return "M, N, K must be >= 1";
  if (a.M > (65535 * 64)) return "M must be <= 65535 x 64 (grid.y tiles of 64 rows)";
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16)) return "A and W must be 16-byte aligned";
  if (!aligned(a.C, 4)) return "C must be 4-byte aligned (bf16 pairs)";
  if (d.smem_optin < SMEM_OPTIN) return "needs " + std::to_string(SMEM_OPTIN) + " B of shared memory";
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}

void launch_16(const GemmBf16Args& a, cudaStream_t s) { launch_cfg(a, choose_16(a.M, a.N), s); }
void launch_16_pairs(const GemmBf16Args& a, cudaStream_t s) { launch_cfg(a, choose_16(a.M, a.N, true), s); }

std::string describe_16(int M, int N) {
  const Cfg15 c = choose_16(M, N);
  return "BN=" + std::to_string(c.bn) + " tiles=" + std::to_string(c.grid) + "x" + std::to_string(c.mtiles) +
         " CTAs/SM=" + std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " smem=" + std::to_string(c.smem);
}

std::string describe_15(int M, int N) {
  const Cfg15 c = choose(M, N);
  return "MP=" + std::to_string(c.mp) + " BN=" + std::to_string(c.bn) + " CL=" + std::to_string(c.cl) + " CTAs/SM=" +
         std::to_string(c.cps) + " stages=" + std::to_string(c.stages) + " wpre=" +
         std::to_string(c.wpre) + " grid=" + std::to_string(c.grid) + " smem=" + std::to_string(c.smem);
}

}  // namespace hopper_gemm
}  // namespace kl
