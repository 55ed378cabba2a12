// kernels/gemm_bf16/hopper_gemm.cuh — pieces shared by the sm_90a rungs (05+): the launcher-facing
// declarations hopper_rungs.cu puts in the table, the host-side checks and tensor maps, and the
// device-side epilogue / tile order helpers. Device code needs sm_90a (see common/hopper.cuh).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "common/hopper.cuh"
#include "common/tma.h"
#include "common/vec.cuh"
#include "kl/gemm_bf16.h"

namespace kl {
namespace hopper_gemm {

constexpr int kBK = 64;  // K per stage: one 128-byte swizzle atom row of bf16 (64 x 2 B)
constexpr int kCSub = 64 * 64 * 2;  // one 64 x 64 bf16 TMA-store box (128B-swizzled), 8 KB
// Boxes of staging per consumer warpgroup that tma_store_epilogue<PASSES, NCOL> writes: every box of
// a pass (NCOL / 64 / PASSES), or with a 64-column box per pass over several passes, two boxes used
// in turn.
template <int PASSES, int NCOL = 256>
constexpr int epilogue_boxes() { return PASSES > 1 && NCOL / PASSES == 64 ? 2 : NCOL / 64 / PASSES; }

// The configurations of the persistent 128 x kBN kernels (tma_store_gemm.cuh, cluster_gemm.cuh,
// rung 14's): the tile width, the depth of the 48 KB load ring and the passes of the TMA-store epilogue
// (tma_store_epilogue below), which set the C staging that must fit beside the ring.
struct ThreeStages {  // rungs 08, 09: 3 stages + 64 KB of staging, the 64 x 256 block in one pass
  static constexpr int kStages = 3;
  static constexpr int kEpiloguePasses = 1;
  static constexpr int kBN = 256;
};
struct FourStages {  // rungs 12, 13, 14, 21: 4 stages + 32 KB of staging, four 64 x 64 passes
  static constexpr int kStages = 4;
  static constexpr int kEpiloguePasses = 4;
  static constexpr int kBN = 256;
};
// Rungs 19 (tma_store_gemm.cuh) and 20 (cluster_gemm.cuh): 128 x 64 tiles, each consumer warpgroup an m64n64 block; a
// 24 KB stage, so 8 stages, and one 64 x 64 staging box per warpgroup, stored in one pass.
struct NarrowTiles {
  static constexpr int kStages = 8;
  static constexpr int kEpiloguePasses = 1;
  static constexpr int kBN = 64;
};

// ---- per-rung entry points (defined in NN_*.cu, collected by hopper_rungs.cu)
std::string gemm_bf16_tma_wgmma_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_tma_wgmma_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_warp_specialized_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_warp_specialized_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_persistent_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_persistent_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_tma_store_epilogue_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_tma_store_epilogue_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_cluster_multicast_supports(const GemmBf16Args& a, const DeviceInfo& d);  // cluster multicast
void gemm_bf16_cluster_multicast_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_decode_stream_supports(const GemmBf16Args& a, const DeviceInfo& d);  // decode (M <= 64)
void gemm_bf16_decode_stream_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_decode_tma_splitk_supports(const GemmBf16Args& a, const DeviceInfo& d);  // decode, TMA ring + split-K
void gemm_bf16_decode_tma_splitk_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_decode_tma_splitk_describe(int M, int N, int K);  // the launch configuration rung 11 picks
// Rung 11 with (T = m16 W tiles per CTA, S = K split / cluster size, ring sized for ring_mode CTAs
// per SM: 1 or 2, pfx = W boxes prefetched into L2 past the ring) forced: the tests' way to run
// every configuration.
void gemm_bf16_decode_tma_splitk_launch_forced(const GemmBf16Args& a, int T, int S, int ring_mode, int pfx, cudaStream_t s);
// Rung 11's grid (CTAs) for a shape, as its plan launches it.
int gemm_bf16_decode_tma_splitk_grid(int M, int N, int K);
// ... and for gemm_bf16_decode_tma_splitk_launch_forced's configuration.
int gemm_bf16_decode_tma_splitk_grid_forced(int M, int N, int K, int T, int S, int ring_mode);
std::string gemm_bf16_four_stages_supports(const GemmBf16Args& a, const DeviceInfo& d);  // 08 + 4-stage ring
void gemm_bf16_four_stages_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_cluster_multicast_4stage_supports(const GemmBf16Args& a, const DeviceInfo& d);  // 12 + 2x1 multicast
void gemm_bf16_cluster_multicast_4stage_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_stream_k_tail_supports(const GemmBf16Args& a, const DeviceInfo& d);  // 12 + Stream-K tail
void gemm_bf16_stream_k_tail_launch(const GemmBf16Args& a, cudaStream_t s);
// Rung 14 with its schedule forced: mode +1 = Stream-K part on (whenever there are tiles), -1 = off
// (rung 12's schedule), +2 = one-tile variant on, 0 = the model (= the rung's supports / launch).
// For the tests.
std::string gemm_bf16_stream_k_tail_supports_forced(const GemmBf16Args& a, const DeviceInfo& d, int mode);
void gemm_bf16_stream_k_tail_launch_forced(const GemmBf16Args& a, cudaStream_t s, int mode);
// Workspace rung 14 needs for this shape (its plan, or the Stream-K part forced on: the larger).
size_t gemm_bf16_stream_k_tail_workspace_bytes(int M, int N, int K, const DeviceInfo& d);
// Rung 14's plan for a shape on `sms` SMs, in words (tests print it for the doc).
std::string gemm_bf16_stream_k_tail_describe(int M, int N, int K, int sms, int mode);
std::string gemm_bf16_decode_no_split_supports(const GemmBf16Args& a, const DeviceInfo& d);  // decode, no K split
void gemm_bf16_decode_no_split_launch(const GemmBf16Args& a, cudaStream_t s);
// Rung 15 with its ring sized for `cps` CTAs per SM (1..4) and `wpre` W boxes requested before
// griddepcontrol.wait: the tests' way to run other plans.
void gemm_bf16_decode_no_split_launch_forced(const GemmBf16Args& a, int cps, int wpre, cudaStream_t s);
std::string gemm_bf16_decode_no_split_describe(int M, int N);  // the plan rung 15 launches (tests print it for the doc)
// Rung 16 (small_tiles): rung 15's kernel over 64-row tiles of any M (grid.y), strips as narrow as
// one CTA per SM allows: small prefill shapes, where 128x256 tiles leave most SMs idle.
std::string gemm_bf16_small_tiles_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_small_tiles_launch(const GemmBf16Args& a, cudaStream_t s);
std::string gemm_bf16_small_tiles_describe(int M, int N);
// Rung 15 with one of its choices undone (the tests): 1 multicast pairs (2-CTA clusters sharing
// the activation box), 2 one producer lane, 3 the ring cut to a multiple of 4.
void gemm_bf16_decode_no_split_launch_variant(const GemmBf16Args& a, int which, cudaStream_t s);
// Rung 15 with its strip width forced to bn W rows per CTA (a multiple of 8 from 32 to 128; clusters
// and pairs: 32, 64, 96, 128) in clusters of cl CTAs (1, 2, 4) sharing the activation box by
// multicast, or (splitm, cl = 2) pairs sharing one strip, each taking half of M and multicasting
// half of every W box; the ring as the plan sizes it (the tests).
void gemm_bf16_decode_no_split_launch_strip(const GemmBf16Args& a, int bn, int cl, bool splitm, cudaStream_t s);
// Rung 16 in clusters of two CTAs sharing one strip over two neighbouring 64-row tiles, W boxes
// multicast (the tests).
void gemm_bf16_small_tiles_launch_pairs(const GemmBf16Args& a, cudaStream_t s);
// Rung 18 (pingpong): rung 12 with each consumer warpgroup on whole 128x128 tiles of its own, the
// two mainloops taking turns on the tensor cores (pingpong_gemm.cuh).
std::string gemm_bf16_pingpong_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_pingpong_launch(const GemmBf16Args& a, cudaStream_t s);
// Rung 19 (narrow_tiles): rung 12's kernel over 128 x 64 tiles (NarrowTiles): small GEMMs.
std::string gemm_bf16_narrow_tiles_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_narrow_tiles_launch(const GemmBf16Args& a, cudaStream_t s);
// Rung 20 (pair_along_n): rung 19's tiles in 2-CTA clusters along N sharing A by multicast.
std::string gemm_bf16_pair_along_n_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_pair_along_n_launch(const GemmBf16Args& a, cudaStream_t s);
// Rung 21 (wide_pair_along_n): rung 13's 128 x 256 tiles in 2-CTA clusters along N.
std::string gemm_bf16_wide_pair_along_n_supports(const GemmBf16Args& a, const DeviceInfo& d);
void gemm_bf16_wide_pair_along_n_launch(const GemmBf16Args& a, cudaStream_t s);

// ---- host helpers (inline: tiny, shared by every Hopper launcher)
// Shape/alignment/arch conditions common to the TMA rungs. TMA needs 16-byte row strides (K and N
// multiples of 8) and 16-byte aligned bases; M, N, K need not be multiples of the tile (TMA
// zero-fills loads out of bounds, epilogues are bounded or clipped).
inline std::string tma_gemm_supports(const GemmBf16Args& a, const DeviceInfo& d, size_t smem) {
  std::string why = gemm_bf16_check_args(a);
  if (why.empty()) why = require_sm90a(d);
  if (!why.empty()) return why;
  if (a.N % 8 || a.K % 8) return "N and K must be multiples of 8 (16-byte TMA row strides)";
  if (!aligned(a.A, 16) || !aligned(a.W, 16) || !aligned(a.C, 16))
    return "A, W, C must be 16-byte aligned";
  if ((long long)smem > d.smem_optin)
    return "needs " + std::to_string(smem) + " B of shared memory, device allows " +
           std::to_string(d.smem_optin);
  if (!tma_available()) return "TMA unavailable (driver lacks cuTensorMapEncodeTiled)";
  return "";
}
// A [M,K] and W [N,K] as K-major boxes of 64 x rows, 128-byte swizzle (what the wgmma
// descriptors in hopper.cuh expect).
inline CUtensorMap map_operand(const __nv_bfloat16* p, int rows, int K, int box_rows) {
  return make_tensor_map_bf16_2d(p, rows, K, K, box_rows, kBK, CU_TENSOR_MAP_SWIZZLE_128B);
}
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) once per (kernel, device): later launches make
// no extra API call, so they stay cheap and capturable.
inline void opt_in_smem(const void* fn, size_t bytes) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  int dev = 0;
  KL_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert({fn, dev}).second)
    KL_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}
// A launch plan per key (device, shape class), computed once (the decode rungs' searches and
// occupancy queries): later launches make no search and no CUDA call, so they stay capturable.
template <class Key, class Plan>
class PlanCache {
 public:
  template <class Make>
  Plan get(const Key& key, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    const Plan p = make();  // outside the lock: make() may query the device
    std::lock_guard<std::mutex> lock(mu_);
    plans_.emplace(key, p);
    return p;
  }

 private:
  std::mutex mu_;
  std::map<Key, Plan> plans_;
};
__host__ __device__ inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Rounds a dynamic-smem pointer up to 1024 bytes (128B-swizzle atoms must be 1024-aligned so the
// descriptor base offset is 0 and TMA's swizzle phase matches wgmma's and ldmatrix's addressing).
__device__ __forceinline__ uint8_t* align1024(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Bounded register epilogue for a 64 x BN wgmma accumulator (warpgroup-local thread index
// `t128`): row = 16*warp + lane/4 (+8), col = 8j + 2*(lane%4). N is even, so col < N means the
// bf16 pair fits; rows/cols past M/N (ragged tiles) are skipped.
template <int BN>
__device__ __forceinline__ void store_acc_bounded(const float (&acc)[BN / 2], __nv_bfloat16* C,
                                                  int M, int N, int row0, int col0, int t128) {
  const int warp = t128 / 32, lane = t128 % 32;
  const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = col0 + j * 8 + (lane % 4) * 2;
    if (c < N) {
      if (r < M)
        *reinterpret_cast<__nv_bfloat162*>(C + (size_t)r * N + c) =
            __floats2bfloat162_rn(acc[4 * j + 0], acc[4 * j + 1]);
      if (r + 8 < M)
        *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(r + 8) * N + c) =
            __floats2bfloat162_rn(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

// The residual step of the decoder layer's down projection, on the same accumulator layout: each
// value is rounded to bf16 (as a stored GEMM output is), then R [M, N] (bf16, row stride N, 4-byte
// aligned pairs) is added in fp32; the caller's store rounds once more, so C = bf16(R + bf16(acc))
// is what a GEMM followed by a residual-add kernel writes. Entries past M or N are left unchanged
// (never stored).
template <int BN>
__device__ __forceinline__ void add_residual_bounded(float (&acc)[BN / 2], const __nv_bfloat16* R, int M,
                                                     int N, int row0, int col0, int t128) {
  const int warp = t128 / 32, lane = t128 % 32;
  const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = col0 + j * 8 + (lane % 4) * 2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (c < N && r + 8 * h < M) {
        const float2 v =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(R + (size_t)(r + 8 * h) * N + c));
        using Bf16 = Elem<DType::bf16>;
        acc[4 * j + 2 * h] = Bf16::round(acc[4 * j + 2 * h]) + v.x;
        acc[4 * j + 2 * h + 1] = Bf16::round(acc[4 * j + 2 * h + 1]) + v.y;
      }
    }
  }
}

__device__ __forceinline__ uint32_t pack_bf16x2_hp(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// A consumer warpgroup's mainloop over `n` k-blocks of one 128 x BN tile (BN = 256: rungs 07, 08,
// 09, 12, 13, 14; 64: rung 19): per k-block, wait for the stage (full[s], phase (it / STAGES) & 1),
// four wgmma m64nBNk16 on rows 64*cw.. of the A stage and the whole W stage, then keep one wgmma group
// in flight (wait<1>) and free the stage the previous group read; after the loop drain it and
// free the last stage. `it` counts k-blocks across the CTA's tiles exactly as the producer does
// (slot it % STAGES). `release(bar)` frees a stage: one mbarrier arrive per consumer warp (lane 0),
// on this CTA (mbar_arrive) or on both CTAs of a cluster. acc holds zeros or partial sums on entry;
// the wgmma_fence orders those register writes before the first wgmma.
template <int STAGES, int A_BYTES, int B_BYTES, int BN = 256, class Release>
__device__ __forceinline__ void consume_k_blocks(float (&acc)[BN / 2], uint8_t* sA, uint8_t* sB,
                                                 uint64_t* full, uint64_t* empty, int n, int& it,
                                                 int cw, int lane, Release release) {
  for (int kb = 0; kb < n; ++kb, ++it) {
    const int s = it % STAGES;
    mbar_wait(&full[s], (it / STAGES) & 1);
    const uint64_t da = make_smem_desc_sw128(sA + s * A_BYTES + cw * 64 * 128);
    const uint64_t db = make_smem_desc_sw128(sB + s * B_BYTES);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) wgmma_ss_m64nk16<BN>(acc, da + 2 * kk, db + 2 * kk);
    wgmma_commit();
    wgmma_wait<1>();  // the group of k-block kb - 1 has finished reading its stage
    if (kb > 0 && lane == 0) release(&empty[(it - 1) % STAGES]);
  }
  wgmma_wait<0>();
  if (lane == 0) release(&empty[(it - 1) % STAGES]);  // the tile's last stage
}

// The TMA-store epilogue of rungs 08, 09 (PASSES = 1), 12, 13, 14, 21 (PASSES = 4) and the layer's
// gate/up kernel (PASSES = 2, NCOL = 128: tma_store_gemm.cuh, GateUpSwigluC). A consumer
// warpgroup's 64 x NCOL fp32 block (the m64n256 accumulator, or the first NCOL / 2 of its registers
// where a fused epilogue has reduced it: NCOL = 128) goes to bf16, then by stmatrix.x4 into its
// 128B-swizzled staging boxes (`myC`: epilogue_boxes<PASSES, NCOL>() boxes of 64 x 64, kCSub bytes each;
// conflict-free), and leaves by TMA store (one bulk group per pass), in PASSES passes of
// NCOL / PASSES columns: all of it at once, or one 64-column box per pass, two boxes used in turn.
// TMA clips rows and columns past M and N, so ragged tiles need no predicates beyond skipping
// boxes that start outside C. The stores complete while the warpgroup runs its next tile.
// Proxy rule relied on: stmatrix (generic proxy) -> fence.proxy.async.shared::cta in every writing
// thread -> bar.sync among the 128 writers -> TMA store (async proxy) reads the boxes; a box is
// rewritten only after cp.async.bulk.wait_group.read (0, or 1 with a box per pass: see BUSY) by the
// thread that committed its stores, followed by bar.sync (the wait is for the TMA engine to READ
// the smem, not for the global write).
// (r0, c0) = the block's first row and column in C; named barrier 1 + cw is the warpgroup's.
template <int PASSES, int NCOL = 256>
__device__ __forceinline__ void tma_store_epilogue(const float (&acc)[NCOL / 2], uint8_t* myC,
                                                   const CUtensorMap* tmC, int M, int N, int r0,
                                                   int c0, int cw, int t128) {
  constexpr int COLS = NCOL / PASSES;  // columns per pass
  constexpr bool BOX_PER_PASS = COLS == 64;
  static_assert(PASSES == 1 || BOX_PER_PASS, "every box in one pass or one box per pass");
  static_assert(NCOL % 64 == 0 && NCOL <= 256, "whole 64-column boxes, at most four");
  // One pass: it fills every box of myC, so it waits until ALL earlier stores have read them
  // (wait_group.read 0). A box per pass, two boxes used in turn: a pass waits only for the store
  // of two passes back (wait_group.read 1: the previous pass's may still read).
  constexpr int BUSY = BOX_PER_PASS && PASSES > 1 ? 1 : 0;
  const int warp = t128 / 32, lane = t128 % 32;
  // stmatrix.x4 #j2 covers n8 chunks j = 2*j2, 2*j2+1 of this warp's 16 rows. Lane l gives the
  // row address of matrix l/8: matrix m = rows 8*(m&1).., chunk j + (m>>1).
  const int m = lane / 8;
  const int row = warp * 16 + (m & 1) * 8 + (lane % 8);  // 0..63 within the warpgroup block
#pragma unroll
  for (int h = 0; h < PASSES; ++h) {
    // The stores that last used this pass's boxes (the last tile's, or this tile's earlier
    // passes) must have finished READING them before they are overwritten.
    if (t128 == 0) tma_store_wait_read<BUSY>();
    named_barrier_sync(1 + cw, 128);
    uint8_t* const cbuf = myC + (BUSY ? (h & 1) * kCSub : 0);
#pragma unroll
    for (int j2 = h * (COLS / 16); j2 < (h + 1) * (COLS / 16); ++j2) {
      const int j = 2 * j2;
      const int col = 8 * (j + (m >> 1)) - h * COLS;  // column within this pass
      const int box = col / 64, chunk = (col % 64) / 8;
      uint8_t* p = cbuf + box * kCSub + row * 128 + ((chunk ^ (row & 7)) << 4);  // 128B swizzle
      stmatrix_x4(p, pack_bf16x2_hp(acc[4 * j + 0], acc[4 * j + 1]),
                  pack_bf16x2_hp(acc[4 * j + 2], acc[4 * j + 3]),
                  pack_bf16x2_hp(acc[4 * j + 4], acc[4 * j + 5]),
                  pack_bf16x2_hp(acc[4 * j + 6], acc[4 * j + 7]));
    }
    fence_proxy_async_smem();  // generic smem writes -> visible to the TMA (async proxy)
    named_barrier_sync(1 + cw, 128);
    if (t128 == 0) {
      if (r0 < M) {
#pragma unroll
        for (int b = 0; b < COLS / 64; ++b) {
          const int c = c0 + h * COLS + b * 64;
          if (c < N) tma_store_2d(tmC, cbuf + b * kCSub, c, r0);
        }
      }
      // One group per pass even when it holds no store (a box past M or N): wait_group.read BUSY
      // counts groups by position, so skipping an empty commit would let the store of two
      // passes back still be reading this pass's box.
      tma_store_commit();
    }
  }
}

// Grouped ("swizzled") tile order for persistent grids: walks kGroup M-tiles down a column of
// N-tiles before moving right, so concurrently running CTAs share A rows and W columns in L2.
template <int kGroup>
__device__ __forceinline__ void grouped_tile(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroup * tiles_n;
  const int g = t / per_group;
  const int first_m = g * kGroup;
  const int gm = min(tiles_m - first_m, kGroup);  // last group may be short
  const int in = t % per_group;
  tm = first_m + in % gm;
  tn = in / gm;
}
#endif

}  // namespace hopper_gemm
}  // namespace kl
