// kernels/attention/hopper_fa_scheduler.cuh — which work items (a BM-row tile of one (b, kv head))
// a CTA of the sm_90a attention kernel (hopper_fa.cuh) computes, and in what order, and how many
// Q tiles shared memory holds. A rung's configuration names one: `using Scheduler =
// BlockOrderScheduler;` (rungs 04-07), `HeaviestFirstScheduler` (08, 10) or `DoubleQScheduler`
// (12-14).
//
// The kernel asks a scheduler, constructed over the Q barriers and the item slot in shared memory:
//   host      grid(p, kv_head_bytes, slots)     the grid (slots: SMs x CTAs per SM); sets the
//                                               persistent fields of Params
//   producer  producer_item(p, w, bh, m_blk)    item of ticket w (false: no more work);
//             publish(items, w)                 before the item's Q load: hand w to the consumers
//             next(w)                           the next ticket (false: one item per CTA)
//             producer_done(items)              after the last item
//   consumer  consumer_item(p, items, bh, m_blk)  the next item (false: no more work)
//             ring_position(it)                 the K/V ring position, as the loop should see it
//             wait_q()                          Q of the item is in shared memory
//             release_q(qb)                     every S of the item retired: Q tile qb may be refilled
//   both      q_buffer(items)                   the Q tile (0 .. kQBuffers - 1) of the items-th item
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "attention/hopper_fa_config.cuh"
#include "common/hopper.cuh"
#include "common/hopper_attn.cuh"

namespace kl {
namespace hattn {

// Tile counter of the persistent rungs: [0] next ticket (after the first gridDim.x, which are
// blockIdx.x), [1] CTAs done. The last CTA to finish resets both, so every launch starts at 0.
// One counter per translation unit (rung file): two launches of the same rung must not run
// concurrently on different streams (the bench and tests use one stream).
static __device__ int g_fa_tile_ctr[2];

// One item per CTA. Grid (m tiles, B*Hkv): m varies fastest, so the CTAs resident at one time
// share the K/V of a few heads in L2.
struct BlockOrderScheduler {
  static constexpr bool kPersistent = false;
  static constexpr int kQBuffers = 1;
  uint64_t* q_full;
  uint64_t* q_empty;
  volatile int* item_slot;

  static dim3 grid(Params& p, long long /*kv_head_bytes*/, int /*slots*/) {
    return dim3(p.m_tiles, p.BH, 1);
  }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __device__ __forceinline__ bool producer_item(const Params&, int, int& bh, int& m_blk) const {
    bh = blockIdx.y, m_blk = blockIdx.x;
    return true;
  }
  __device__ __forceinline__ void publish(int, int) const {}
  __device__ __forceinline__ bool next(int&) const { return false; }
  __device__ __forceinline__ void producer_done(int) const {}
  __device__ __forceinline__ bool consumer_item(const Params&, int, int& bh, int& m_blk) const {
    bh = blockIdx.y, m_blk = blockIdx.x;
    return true;
  }
  __device__ __forceinline__ int ring_position(int it) const { return it; }
  __device__ __forceinline__ int q_buffer(int) const { return 0; }
  __device__ __forceinline__ void wait_q() const { mbar_wait(q_full, 0); }
  __device__ __forceinline__ void release_q(int) const {}
#endif
};

// Persistent CTAs (one per SM, or two for a configuration that fits twice) take items from
// g_fa_tile_ctr, heaviest first. The producer thread takes a ticket, waits on q_empty until every
// consumer has retired the previous item's last S = QK^T, writes the ticket into the item slot and
// loads the item's Q on q_full (the arrive publishes the slot); the consumers read the slot after
// q_full. After the last item the producer
// writes -1 and completes q_full without a transaction.
struct HeaviestFirstScheduler {
  static constexpr bool kPersistent = true;
  static constexpr int kQBuffers = 1;
  static constexpr int kL2GroupMB = 8;  // a head group's K/V fit in this much L2
  uint64_t* q_full;
  uint64_t* q_empty;
  volatile int* item_slot;

  // One CTA per resident slot (`slots`: SMs times the configuration's CTAs per SM); items
  // m_tiles * BH, heads grouped so that a group's K and V (Skv * D * 2 B * 2 = kv_head_bytes) fit
  // in kL2GroupMB MB of L2.
  static dim3 grid(Params& p, long long kv_head_bytes, int slots) {
    p.work = p.m_tiles * p.BH;
    p.hgroup = int(std::max<long long>(
        1, std::min<long long>(p.BH, ((long long)kL2GroupMB << 20) / kv_head_bytes)));
    return dim3(std::min(p.work, slots), 1, 1);
  }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // Work item w -> (bh, m tile). Heads go in groups of p.hgroup (their K/V fit in kL2GroupMB of
  // L2); inside a group the heaviest row tiles of every head come first (causal: m descending;
  // heads fastest), so the greedy tile counter is longest-processing-time first and the light
  // tiles fill the tail.
  static __device__ __forceinline__ void item(const Params& p, int w, int& bh, int& m_blk) {
    const int per_group = p.hgroup * p.m_tiles;
    const int g = w / per_group;
    const int r = w - g * per_group;
    const int hg = min(p.hgroup, p.BH - g * p.hgroup);  // the last group may be smaller
    const int level = r / hg;
    bh = g * p.hgroup + (r - level * hg);
    m_blk = p.causal ? p.m_tiles - 1 - level : level;
  }
  __device__ __forceinline__ bool producer_item(const Params& p, int w, int& bh, int& m_blk) const {
    if (w >= p.work) return false;
    item(p, w, bh, m_blk);
    return true;
  }
  // sQ and the item slot are reused: wait until every consumer warp has retired its last
  // S = QK^T of the previous item (it has read the slot long before).
  __device__ __forceinline__ void publish(int items, int w) const {
    if (items > 0) mbar_wait_watchdog(q_empty, (items - 1) & 1);
    *item_slot = w;  // published by the arrive (release) of the Q load
  }
  __device__ __forceinline__ bool next(int& w) const {
    w = int(gridDim.x) + atomicAdd(&g_fa_tile_ctr[0], 1);
    return true;
  }
  __device__ __forceinline__ void producer_done(int items) const {
    if (items > 0) mbar_wait_watchdog(q_empty, (items - 1) & 1);
    *item_slot = -1;  // end of work: completes q_full's next phase without a transaction
    mbar_arrive(q_full);
    count_done();
  }
  // This CTA takes no more tickets; the last CTA to get here resets the counter.
  static __device__ __forceinline__ void count_done() {
    if (atomicAdd(&g_fa_tile_ctr[1], 1) == int(gridDim.x) - 1) {
      atomicExch(&g_fa_tile_ctr[0], 0);
      atomicExch(&g_fa_tile_ctr[1], 0);
    }
  }
  __device__ __forceinline__ bool consumer_item(const Params& p, int items, int& bh,
                                                int& m_blk) const {
    mbar_wait(q_full, items & 1);
    // The item comes from shared memory, so ptxas treated it, n and the ring position `it` (n
    // summed over items) as per-thread values and ran the loop's stage arithmetic and K/V wgmma
    // descriptors in vector registers: 64-bit adds and an R2UR pair before every HGMMA, more
    // SASS instructions per KV tile than rung 07's loop. redux.sync writes a uniform register
    // (the values are warp-uniform anyway): no R2UR.
    const int w = __reduce_max_sync(0xffffffffu, *item_slot);
    if (w < 0) return false;
    item(p, w, bh, m_blk);
    return true;
  }
  __device__ __forceinline__ int ring_position(int it) const {
    return int(__reduce_max_sync(0xffffffffu, unsigned(it)));  // see consumer_item
  }
  __device__ __forceinline__ int q_buffer(int) const { return 0; }
  __device__ __forceinline__ void wait_q() const {}  // consumer_item waited on q_full
  // Every consumer thread arrives (release), not one lane per warp after __syncwarp: each thread
  // read *item_slot, and its own arrive orders that read before the producer's next write of the
  // slot. (The one-lane form is ordered too, through __syncwarp and cumulativity, but
  // compute-sanitizer racecheck reported it as a hazard.)
  __device__ __forceinline__ void release_q(int) const { mbar_arrive(q_empty); }
#endif
};

// HeaviestFirstScheduler's items and order over two Q tiles used in turn: item k (of this CTA)
// goes to tile k % 2, with its own q_full / q_empty / item slot, so the producer publishes item
// k + 1 and loads its Q while the consumers still run item k (it waits only until item k - 1 has
// retired its last S). Phases: the j-th use of a tile is item 2j + b, completing phase j & 1.
struct DoubleQScheduler : HeaviestFirstScheduler {
  static constexpr int kQBuffers = 2;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // Tile items % 2 is free once item items - 2 retired its last S (its consumers read the slot
  // long before).
  __device__ __forceinline__ void publish(int items, int w) const {
    const int b = items & 1;
    if (items >= 2) mbar_wait_watchdog(&q_empty[b], ((items - 2) >> 1) & 1);
    item_slot[b] = w;  // published by the arrive (release) of the Q load
  }
  __device__ __forceinline__ void producer_done(int items) const {
    const int b = items & 1;
    if (items >= 2) mbar_wait_watchdog(&q_empty[b], ((items - 2) >> 1) & 1);
    item_slot[b] = -1;  // end of work: completes q_full[b]'s next phase without a transaction
    mbar_arrive(&q_full[b]);
    count_done();
  }
  __device__ __forceinline__ bool consumer_item(const Params& p, int items, int& bh,
                                                int& m_blk) const {
    const int b = q_buffer(items);
    mbar_wait(&q_full[b], (items >> 1) & 1);
    const int w = __reduce_max_sync(0xffffffffu, item_slot[b]);  // uniform: see the parent
    if (w < 0) return false;
    item(p, w, bh, m_blk);
    return true;
  }
  // Uniform (redux.sync) so that Q's wgmma descriptors stay on the uniform datapath.
  __device__ __forceinline__ int q_buffer(int items) const {
    return int(__reduce_max_sync(0xffffffffu, unsigned(items & 1)));
  }
  __device__ __forceinline__ void release_q(int qb) const { mbar_arrive(&q_empty[qb]); }
#endif
};

}  // namespace hattn
}  // namespace kl
