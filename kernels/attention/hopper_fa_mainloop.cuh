// kernels/attention/hopper_fa_mainloop.cuh — the per-KV-tile work of the sm_90a attention kernel
// (hopper_fa.cuh): which key tiles an item visits (tile_range), the TMA loads into the K/V ring
// (KvLoads) and the two wgmma products of a tile (TileMma).
//
// Shared memory (every tile base 1024-byte aligned; "panel" = 64 columns = 128-byte rows):
//   sQ [kQBuffers][D/64][BM][64], sK/sV [kStages][D/64][BN][64], sO [D/64][BM][64] (staged
//   epilogues only), then the mbarriers.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "attention/hopper_fa_config.cuh"
#include "attention/hopper_fa_softmax.cuh"
#include "common/hopper.cuh"
#include "common/hopper_attn.cuh"
#include "common/mma.cuh"

namespace kl {
namespace hattn {

// The KV range one work item (a BM-row tile of one (b, kv head)) visits: key tiles [t0, t0 + n).
struct TileRange {
  int m0, n, t0, mask_from;
};
template <class C>
__device__ __forceinline__ TileRange tile_range(const Params& p, int m_blk) {
  TileRange r;
  r.m0 = m_blk * C::BM;
  const int diag = p.Skv - p.Sq;  // query qpos sees keys <= qpos + diag (causal)
  // Rows of one tile may straddle two heads (Sq % BM != 0): then the tile's qpos range is
  // conservatively [0, Sq).
  const int last_row = min(r.m0 + C::BM, p.rows) - 1;
  int qmin = 0, qmax = p.Sq - 1;
  if (r.m0 / p.Sq == last_row / p.Sq) {
    qmin = r.m0 % p.Sq;
    qmax = last_row % p.Sq;
  }
  const int kv_end = p.causal ? min(p.Skv, qmax + diag + 1) : p.Skv;
  const int n_tiles = (kv_end + C::BN - 1) / C::BN;
  r.t0 = 0;
  r.n = n_tiles;
  // First tile with a key some row of the tile must not see (causal) or past Skv: tiles before it
  // skip the mask.
  r.mask_from = min(p.causal ? (qmin + diag + 1) / C::BN : INT_MAX, p.Skv / C::BN);
  return r;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int N>
__device__ __forceinline__ void wg_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc) {
  if constexpr (N == 64) wgmma_ss_m64n64k16(d, da, db, acc);
  else if constexpr (N == 128) wgmma_ss_m64n128k16(d, da, db, acc);
  else wgmma_ss_m64n176k16(d, da, db, acc);
}
template <int N>
__device__ __forceinline__ void wg_rs_t(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (N == 64) wgmma_rs_m64n64k16_tnspb(d, a, db, 1);
  else wgmma_rs_m64n128k16_tnspb(d, a, db, 1);
}

// The two wgmma products of one KV tile for one consumer warpgroup (64 rows), the mma.sync
// recompute of S, and the S accumulator -> P A-fragment conversion.
template <class C>
struct TileMma {
  // S = Q_wg K_t^T: D/16 k-steps. K-step kk lives in panel kk/4 at byte offset (kk%4)*32 inside the
  // 128-byte swizzled rows (the hardware applies the XOR on the final address). One descriptor per
  // operand is built; each k-step adds its byte offset / 16 to the start-address field (bits 0-13:
  // shared addresses stay below 256 KB, so the add never carries out of it), as the GEMM rungs do.
  static __device__ __forceinline__ void qk(float (&s)[C::BN / 2], const uint8_t* q_wg,
                                            const uint8_t* k_stage) {
    const uint64_t da0 = make_smem_desc_sw128(q_wg), db0 = make_smem_desc_sw128(k_stage);
#pragma unroll
    for (int kk = 0; kk < C::D / 16; ++kk) {
      const int panel = kk / 4, off = (kk % 4) * 32;
      const uint64_t da = da0 + ((panel * (C::BM * 128) + off) >> 4);
      const uint64_t db = db0 + ((panel * (C::BN * 128) + off) >> 4);
      wg_ss<C::BN>(s, da, db, kk > 0);  // kk == 0 overwrites: no zeroing of s needed
    }
  }
  // O += P V_t: BN/16 k-steps over keys; step kk starts at key row 16*kk (16 * 128 bytes, stays
  // 1024-aligned); the D/64 panels of V are LBO = BN*128 bytes apart.
  static __device__ __forceinline__ void pv(float (&o)[C::D / 2],
                                            const uint32_t (&pf)[C::BN / 16][4],
                                            const uint8_t* v_stage) {
    const uint64_t db0 = make_smem_desc_sw128_mn(v_stage, C::BN * 128);
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk) wg_rs_t<C::D>(o, pf[kk], db0 + ((kk * 16 * 128) >> 4));
  }

  // S again, for the fallback of OnlineSoftmax::stale_step: Q_wg K^T for this warp's 16 rows, with
  // mma.sync from the shared tiles (a wgmma in a branch would make ptxas serialize every wgmma of
  // the kernel). The m16n8k16 accumulator of key block j is exactly s[4j..4j+3] of the wgmma m64nBN
  // layout (rows g and g+8 of the warp's 16, columns 2(t%4), +1), so S lands where the wgmma put
  // it. Both tiles are 128B-swizzled panels: 16-byte chunk c of row r sits at c ^ (r & 7).
  static __device__ __forceinline__ void qk_mma_sync(float (&s)[C::BN / 2], const uint8_t* q_wg,
                                                     const uint8_t* k_stage, int warp, int lane) {
    // ldmatrix x4 rows: A = Q rows 0-7 / 8-15 (lane bit 3) x k chunk +0 / +1 (lane bit 4);
    // B = keys +0-7 / +8-15 (lane bit 4) x k chunk +0 / +1 (lane bit 3).
    const int qr = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, qc = lane >> 4;
    const int kr = ((lane >> 4) << 3) + (lane & 7), kc = (lane >> 3) & 1;
    // 32-bit shared-window addresses (a generic pointer costs two registers; BN = 176 runs at 240).
    const uint32_t qrow = smem_u32(q_wg) + qr * 128;
    // key 16 jp + kr: + 2048 jp, swizzle kr & 7
    const uint32_t krow = smem_u32(k_stage) + kr * 128;
#pragma unroll  // s is indexed by jp: a rolled loop would put it in local memory
    for (int jp = 0; jp < C::BN / 16; ++jp) {
      float* d0 = &s[8 * jp];
      float* d1 = &s[8 * jp + 4];
#pragma unroll
      for (int e = 0; e < 4; ++e) d0[e] = d1[e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < C::D / 16; ++kk) {
        // k-step kk reads chunk 2 kk + {qc, kc}: panel kk / 4, swizzled 16-byte column in the panel
        uint32_t a[4], b0[2], b1[2];
        ldsm_x4(a[0], a[1], a[2], a[3],
                qrow + (kk / 4) * (C::BM * 128) + (((2 * (kk % 4) + qc) ^ (qr & 7)) << 4));
        ldsm_x4(b0[0], b0[1], b1[0], b1[1],
                krow + jp * 2048 + (kk / 4) * (C::BN * 128) +
                    (((2 * (kk % 4) + kc) ^ (kr & 7)) << 4));
        mma_bf16_16816(*reinterpret_cast<float(*)[4]>(d0), a, b0);
        mma_bf16_16816(*reinterpret_cast<float(*)[4]>(d1), a, b1);
      }
    }
  }

  // fp32 P (S accumulator layout) -> bf16 A fragments: k-block kk (keys 16kk..16kk+15) is
  // accumulator groups j = 2kk (cols +0..7) and 2kk+1 (cols +8..15): {a0,a1,a2,a3} = {(r, c), (r+8,
  // c), (r, c+8), (r+8, c+8)} = consecutive pairs s[8kk + 0..7].
  static __device__ __forceinline__ void pack_p(const float (&s)[C::BN / 2],
                                                uint32_t (&pf)[C::BN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) pf[kk][i] = pack_bf16x2(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
  }
};

// TMA loads into the K/V ring: one thread issues them after arrive.expect_tx on the slot's full
// barrier.
template <class C>
struct KvLoads {
  // One K (or V) tile t into ring slot `stage` (D/64 panel boxes), completing on `full`.
  static __device__ __forceinline__ void tile(const CUtensorMap* tm, uint8_t* base, uint64_t* full,
                                              int stage, int t, int bh) {
    mbar_arrive_expect_tx(full, C::kKVBytes);  // full box bytes, OOB zero-fill included
#pragma unroll
    for (int pn = 0; pn < C::kPanels; ++pn)
      tma_load_3d(base + (stage * C::kPanels + pn) * (C::BN * 128), tm, full, pn * 64, t * C::BN,
                  bh);
  }
  static __device__ __forceinline__ void kv(const Params& p, uint8_t* sK, uint8_t* sV,
                                            uint64_t* k_full, uint64_t* v_full, int stage, int t,
                                            int bh) {
    tile(&p.tmK, sK, &k_full[stage], stage, t, bh);
    tile(&p.tmV, sV, &v_full[stage], stage, t, bh);
  }
};

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// The K/V ring in shared memory: kStages slots of K and of V, each with a full barrier (the TMA
// bytes landed) and an empty barrier (every consumer warp has read it; producer warpgroup only).
// K and V slots are released separately: K(t) as soon as S(t) = QK^T retired, V(t) after
// P(t)V(t). With the overlapped loop V(t) is held until the middle of iteration t+1; a shared K/V
// release made the producer's K(t+2) wait for it, which with 2 stages left no tile of lookahead.
struct KvRing {
  uint8_t* sK;
  uint8_t* sV;
  uint64_t* k_full;
  uint64_t* v_full;
  uint64_t* k_empty;
  uint64_t* v_empty;
};

// ------------------------------------------------------------------------------ who loads K/V
// A rung's configuration names one as `using Producer = ...`.

// No producer: thread 0 of the consumers issues Q and the first kStages tiles of an item, then
// refills a stage after the whole CTA has finished with it (a __syncthreads per tile).
struct ThreadZeroLoads {
  static constexpr bool kWarpgroup = false;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C>
  static __device__ __forceinline__ void item_start(const Params& p, uint8_t* sQ, uint64_t* q_full,
                                                    const KvRing& ring, int n, int m0, int t0,
                                                    int bh) {
    if (threadIdx.x == 0 && n > 0) {
      mbar_arrive_expect_tx(q_full, C::kQBytes);
      for (int pn = 0; pn < C::kPanels; ++pn)
        tma_load_3d(sQ + pn * (C::BM * 128), &p.tmQ, q_full, pn * 64, m0, bh);
      for (int i = 0; i < min(n, C::kStages); ++i)
        KvLoads<C>::kv(p, ring.sK, ring.sV, ring.k_full, ring.v_full, i, t0 + i, bh);
    }
  }
  // K(t) of the slot was read: nothing to signal (the refill waits for V as well).
  static __device__ __forceinline__ void k_read(const KvRing&, int, int) {}
  // Tile i (key tile t) of the item is done: every warpgroup's wgmma has read the stage, so
  // thread 0 refills it with tile t + kStages.
  template <class C>
  static __device__ __forceinline__ void kv_read(const Params& p, const KvRing& ring, int stage,
                                                 int i, int n, int t, int bh, int) {
    __syncthreads();  // every warpgroup's wgmma has read this stage
    if (threadIdx.x == 0 && i + C::kStages < n)
      KvLoads<C>::kv(p, ring.sK, ring.sV, ring.k_full, ring.v_full, stage, t + C::kStages, bh);
  }
#endif
};

// A producer warpgroup: one of its threads streams each item's Q, then runs ahead through the
// K/V ring, gated by the empty barriers; setmaxnreg moves registers to the consumers.
struct ProducerWarpgroup {
  static constexpr bool kWarpgroup = true;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C, class Scheduler>
  static __device__ __forceinline__ void run(const Params& p, const Scheduler& sched, uint8_t* sQ,
                                             uint64_t* q_full, const KvRing& ring) {
    if constexpr (C::kSplitRegs) setmaxnreg_dec<C::kProducerRegs>();
    if (threadIdx.x == 0) {
      tma_prefetch_desc(&p.tmK);
      tma_prefetch_desc(&p.tmV);
      int it = 0, items = 0;  // ring position and items done, continued across items
      int w = blockIdx.x;
      while (true) {
        int bh, m_blk;
        if (!sched.producer_item(p, w, bh, m_blk)) break;
        const TileRange tr = tile_range<C>(p, m_blk);
        if (tr.n > 0) {  // (always: every row sees key 0)
          sched.publish(items, w);
          const int qb = sched.q_buffer(items);
          mbar_arrive_expect_tx(&q_full[qb], C::kQBytes);
          for (int pn = 0; pn < C::kPanels; ++pn)
            tma_load_3d(sQ + qb * C::kQBytes + pn * (C::BM * 128), &p.tmQ, &q_full[qb], pn * 64, tr.m0, bh);
          for (int i = 0; i < tr.n; ++i, ++it) {
            const int stage = it % C::kStages;
            const uint32_t ph = ((it / C::kStages) & 1) ^ 1;
            // Reuse of a slot waits for the consumers' release of its previous round (K and V
            // separately). Watchdog only here: in the consumers its clock/trap path made ptxas
            // spill and serialize the wgmmas. A consumer stuck on a full barrier (bad
            // transaction count) stalls its releases, so this wait traps too.
            if (it >= C::kStages) mbar_wait_watchdog(&ring.k_empty[stage], ph);
            KvLoads<C>::tile(&p.tmK, ring.sK, &ring.k_full[stage], stage, tr.t0 + i, bh);
            if (it >= C::kStages) mbar_wait_watchdog(&ring.v_empty[stage], ph);
            KvLoads<C>::tile(&p.tmV, ring.sV, &ring.v_full[stage], stage, tr.t0 + i, bh);
          }
          ++items;
        }
        if (!sched.next(w)) break;
      }
      sched.producer_done(items);
    }
  }
  template <class C>
  static __device__ __forceinline__ void item_start(const Params&, uint8_t*, uint64_t*,
                                                    const KvRing&, int, int, int, int) {}
  // K(t) read: the producer may refill its slot now (one arrival per consumer warp).
  static __device__ __forceinline__ void k_read(const KvRing& ring, int stage, int lane) {
    __syncwarp();
    if (lane == 0) mbar_arrive(&ring.k_empty[stage]);
  }
  template <class C>
  static __device__ __forceinline__ void kv_read(const Params&, const KvRing& ring, int stage, int,
                                                 int, int, int, int lane) {
    __syncwarp();
    if (lane == 0) mbar_arrive(&ring.v_empty[stage]);
  }
#endif
};

// ------------------------------------------------------- the consumer warpgroups' wgmma issue
// A rung's configuration names one as `using WarpgroupTurns = ...`. Per item, a warpgroup of the
// overlapped loop issues n + 1 batches of wgmma (S(0); then S(i) with P(i-1)V(i-1); then
// P(n-1)V(n-1)), each between begin() and end(n + 1).

// The warpgroups issue whenever they are ready.
struct NoTurns {
  static constexpr bool kPingpong = false;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __device__ __forceinline__ NoTurns(int) {}
  __device__ __forceinline__ void item_start(int) {}
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void end(int) {}
#endif
};

// Ping-pong: the two consumer warpgroups take turns at the tensor cores. Before each batch of
// wgmma issues a warpgroup waits on its named barrier (id 1 + c, 256 threads: its own 128 + the
// other's 128 arrivals); after issuing it arrives on the other's. So warpgroup A's softmax runs
// while B's products run, and vice versa. Warpgroup 1 pre-arrives once so that warpgroup 0
// starts, and skips its last arrival: each barrier then sees exactly n + 1 sync/arrive pairs per
// item (so items chain without extra state).
struct PingpongTurns {
  static constexpr bool kPingpong = true;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  int c;          // this consumer warpgroup
  int batch = 0;  // batches issued in this item
  __device__ __forceinline__ PingpongTurns(int wg) : c(wg) {}
  __device__ __forceinline__ void item_start(int n) {
    if (c == 1 && n > 0) named_barrier_arrive(1 + 0, 256);
  }
  __device__ __forceinline__ void begin() { named_barrier_sync(1 + c, 256); }
  __device__ __forceinline__ void end(int n_batches) {
    if (!(c == 1 && batch == n_batches - 1)) named_barrier_arrive(1 + (1 - c), 256);
    ++batch;
  }
#endif
};

// -------------------------------------------------------------- the consumers' loop over tiles
// A rung's configuration names one as `using Mainloop = ...`. run() computes one item's O
// (unnormalized) and softmax state over key tiles [t0, t0 + n), n > 0; `it` is the ring
// position of its first tile.

// S, softmax and P V of a tile in series (the tensor cores idle during the softmax).
struct SerialMainloop {
  static constexpr bool kOverlap = false;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C, class Producer, class Scheduler, class Turns>
  static __device__ __forceinline__ void run(
      const Params& p, const KvRing& ring, const Scheduler& sched, Turns&, const uint8_t* q_wg,
      int qb, int it, int n, int t0, int mask_from, const int (&lim)[2], int bh, int, int lane,
      float (&o)[C::D / 2], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
      float (&s)[C::BN / 2], uint32_t (&pf)[C::BN / 16][4]) {
    using Softmax = OnlineSoftmax<C::BN, C::D>;
    using Mma = TileMma<C>;
    for (int i = 0; i < n; ++i) {
      const int stage = (it + i) % C::kStages;
      const uint32_t ph = ((it + i) / C::kStages) & 1;
      const int t = t0 + i;
      mbar_wait(&ring.k_full[stage], ph);
      wgmma_fence();
      Mma::qk(s, q_wg, ring.sK + stage * C::kKVBytes);
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(s);
      Producer::k_read(ring, stage, lane);
      Softmax::step(s, m_run, l_run, alpha, t >= mask_from, t * C::BN, lim, p.Skv, p.scale_log2,
                    lane);
      Softmax::rescale_o(o, alpha);
      Mma::pack_p(s, pf);
      mbar_wait(&ring.v_full[stage], ph);
      wgmma_fence();  // o and pf were written by ordinary instructions
      Mma::pv(o, pf, ring.sV + stage * C::kKVBytes);
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(o);
      wgmma_fence_operands_u32(pf);
      Producer::template kv_read<C>(p, ring, stage, i, n, t, bh, lane);
    }
    sched.release_q(qb);  // every S of this item retired: its Q tile may be refilled
  }
#endif
};

// Intra-warpgroup overlap: S(i) = QK_i^T runs on the tensor cores while P(i-1)V(i-1) is queued
// behind it; the softmax of S(i) then overlaps the P(i-1)V(i-1) wgmma. P(i-1)'s registers live
// until that wgmma retires. Unmasked tiles take the stale-max softmax where C::kStale.
struct OverlappedMainloop {
  static constexpr bool kOverlap = true;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C, class Producer, class Scheduler, class Turns>
  static __device__ __forceinline__ void run(
      const Params& p, const KvRing& ring, const Scheduler& sched, Turns& turns,
      const uint8_t* q_wg, int qb, int it, int n, int t0, int mask_from, const int (&lim)[2], int,
      int warp, int lane, float (&o)[C::D / 2], float (&m_run)[2], float (&l_run)[2],
      float (&alpha)[2], float (&s)[C::BN / 2], uint32_t (&pf)[C::BN / 16][4]) {
    using Softmax = OnlineSoftmax<C::BN, C::D>;
    using Mma = TileMma<C>;
    const int stage0 = it % C::kStages;
    mbar_wait(&ring.k_full[stage0], (it / C::kStages) & 1);
    turns.begin();
    wgmma_fence();
    Mma::qk(s, q_wg, ring.sK + stage0 * C::kKVBytes);
    wgmma_commit();
    turns.end(n + 1);
    wgmma_wait<0>();
    wgmma_fence_operands(s);
    __syncwarp();
    if (lane == 0) mbar_arrive(&ring.k_empty[stage0]);
    Softmax::step(s, m_run, l_run, alpha, t0 >= mask_from, t0 * C::BN, lim, p.Skv, p.scale_log2,
                  lane);
    Mma::pack_p(s, pf);  // o is still 0: no rescale
    for (int i = 1; i < n; ++i) {
      const int stage = (it + i) % C::kStages, pstage = (it + i - 1) % C::kStages;
      const int t = t0 + i;
      mbar_wait(&ring.k_full[stage], ((it + i) / C::kStages) & 1);
      mbar_wait(&ring.v_full[pstage], ((it + i - 1) / C::kStages) & 1);
      turns.begin();
      wgmma_fence();
      Mma::qk(s, q_wg, ring.sK + stage * C::kKVBytes);
      wgmma_commit();
      Mma::pv(o, pf, ring.sV + pstage * C::kKVBytes);
      wgmma_commit();
      turns.end(n + 1);
      wgmma_wait<1>();  // S(i) done, P(i-1)V(i-1) may still run
      wgmma_fence_operands(s);
      if (C::kStale && t < mask_from && Softmax::stale_step(s, m_run, l_run, p.scale_log2)) {
        alpha[0] = alpha[1] = 1.f;  // the max did not move: O needs no rescale
      } else {
        if (C::kStale && t < mask_from)  // a P overflowed the stale max: S again from smem
          Mma::qk_mma_sync(s, q_wg, ring.sK + stage * C::kKVBytes, warp, lane);
        Softmax::step(s, m_run, l_run, alpha, t >= mask_from, t * C::BN, lim, p.Skv,
                      p.scale_log2, lane);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&ring.k_empty[stage]);  // K(i) read (by the fallback too)
      // Keep the softmax before the wait for P(i-1)V(i-1): ptxas otherwise hoists that wait
      // into the middle of the masking code (seen in the SASS) and the overlap is lost. The
      // wait depends (by a branch) on l, which depends on every exp2 of the tile.
      wgmma_fence_operands(s);
      wgmma_fence_operands(l_run);
      wgmma_fence_operands(alpha);
      wgmma_wait0_after(l_run[0] + l_run[1]);
      wgmma_fence_operands(o);
      wgmma_fence_operands_u32(pf);  // pf stays live (unclobbered) until the PV retired
      __syncwarp();
      if (lane == 0) mbar_arrive(&ring.v_empty[pstage]);
      Softmax::rescale_o(o, alpha);
      Mma::pack_p(s, pf);
    }
    sched.release_q(qb);  // every S of this item retired: its Q tile may be refilled
    const int lstage = (it + n - 1) % C::kStages;
    mbar_wait(&ring.v_full[lstage], ((it + n - 1) / C::kStages) & 1);
    turns.begin();
    wgmma_fence();
    Mma::pv(o, pf, ring.sV + lstage * C::kKVBytes);
    wgmma_commit();
    turns.end(n + 1);
    wgmma_wait<0>();
    wgmma_fence_operands(o);
    __syncwarp();
    if (lane == 0) mbar_arrive(&ring.v_empty[lstage]);
  }
#endif
};

}  // namespace hattn
}  // namespace kl
