// kernels/gemm_bf16/pingpong_gemm.cuh — family-private: the pieces of rung 18 (ping-pong consumer
// warpgroups) that rung 12's kernel does not have: the tile and ring sizes, the ordered pair of
// named barriers that makes the two consumers' mainloops take turns, a consumer's mainloop over a
// whole 128 x 128 tile, and that tile's TMA-store epilogue. The kernel is in 18_pingpong.cu.
#pragma once
#include "gemm_bf16/hopper_gemm.cuh"

namespace kl {
namespace hopper_gemm {
namespace pingpong {

// A consumer warpgroup's tile: 128 x 128 (two m64n128 accumulators, 128 fp32 a thread, as rung
// 12's m64n256), so a stage is a 128-row A box and a 128-row W box of 64 columns.
constexpr int BM = 128, BN = 128, BK = kBK, THREADS = 384, GROUP = 8;
constexpr int STAGES = 6;
constexpr int WARPS_PER_CONSUMER = 4;   // empty[s] counts one arrive per warp of the stage's consumer
constexpr int A_BYTES = BM * BK * 2;    // 16 KB
constexpr int B_BYTES = BN * BK * 2;    // 16 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int C_BYTES = 2 * kCSub;      // per consumer: two 64 x 64 staging boxes used in turn
// Named barriers: 0 is __syncthreads; kEpilogueBar + c is consumer c's (128 threads) in the
// epilogue; kTurnBar + c is consumer c's turn (256 threads: c waits, the other arrives).
constexpr int kEpilogueBar = 1, kTurnBar = 3;
static_assert(BM == 2 * 64 && BN == 2 * 64, "two m64 halves, two 64-wide store boxes");

constexpr size_t smem_bytes() { return 1024 + STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8; }
static_assert(smem_bytes() <= 227 * 1024, "fits the sm_90 opt-in limit");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// bar.arrive: counts this warp's threads towards named barrier `id` of `threads` without waiting.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The ordered pair. Consumer c waits for its turn before its mainloop of any tile but its first and
// hands the turn to the other consumer once it has issued that mainloop's last wgmma. Every wait
// has exactly one matching arrive: the other consumer arrives after tile j - 1, and arrives only
// when a tile j exists, so no barrier is left half-arrived at exit. A consumer cannot arrive twice
// on one barrier before its partner's wait: its next arrive follows its own next wait.
__device__ __forceinline__ void wait_turn(int c) { named_barrier_sync(kTurnBar + c, 256); }
__device__ __forceinline__ void pass_turn(int c) { named_barrier_arrive(kTurnBar + (c ^ 1), 256); }

// One consumer's mainloop over the n k-blocks of a 128 x 128 tile, at ring positions it .. it+n-1
// (slot it % STAGES, phase (it / STAGES) & 1): per k-block wait full[s], eight m64n128k16 wgmma
// (rows 0-63 and 64-127 of the A stage, each against the whole W stage), commit, keep one group in
// flight (wait_group 1) and free the stage the previous group read. Returns with the tile's last
// group in flight and its stage held: the caller passes the turn first, then pingpong_drain.
__device__ __forceinline__ void pingpong_mainloop(float (&acc)[2][64], uint8_t* sA, uint8_t* sB,
                                                  uint64_t* full, uint64_t* empty, int n, int it,
                                                  int lane) {
  for (int kb = 0; kb < n; ++kb) {
    const int pos = it + kb, s = pos % STAGES;
    mbar_wait(&full[s], (pos / STAGES) & 1);
    const uint64_t da0 = make_smem_desc_sw128(sA + s * A_BYTES);
    const uint64_t da1 = make_smem_desc_sw128(sA + s * A_BYTES + 64 * 128);
    const uint64_t db = make_smem_desc_sw128(sB + s * B_BYTES);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      wgmma_ss_m64n128k16(acc[0], da0 + 2 * kk, db + 2 * kk, 1);
      wgmma_ss_m64n128k16(acc[1], da1 + 2 * kk, db + 2 * kk, 1);
    }
    wgmma_commit();
    wgmma_wait<1>();  // the group of k-block kb - 1 has finished reading its stage
    if (kb > 0 && lane == 0) mbar_arrive(&empty[(pos - 1) % STAGES]);
  }
}
// The tile's last group: wait for it, then free its stage (position `last`).
__device__ __forceinline__ void pingpong_drain(uint64_t* empty, int last, int lane) {
  wgmma_wait<0>();
  if (lane == 0) mbar_arrive(&empty[last % STAGES]);
}

// The TMA-store epilogue of a 128 x 128 tile held as two m64n128 accumulators: four passes of one
// 64 x 64 box (pass p: rows 64 (p / 2).., columns 64 (p % 2)..) through the consumer's two staging
// boxes `myC` used in turn, by the rules of tma_store_epilogue<4> (hopper_gemm.cuh): before a box
// is rewritten the committing thread waits wait_group.read 1 (only the store of the pass before,
// which used the other box, may still read) and the warpgroup syncs; stmatrix.x4 into the 128B
// swizzle, fence.proxy.async by every writer, sync, one thread stores and commits one group per
// pass, empty when the box starts past M or N (wait_group counts groups by position). TMA clips
// the rows and columns past M and N. (r0, c0) = the tile's first row and column; bar its barrier.
__device__ __forceinline__ void pingpong_store_epilogue(const float (&acc)[2][64], uint8_t* myC,
                                                        const CUtensorMap* tmC, int M, int N,
                                                        int r0, int c0, int bar, int t128) {
  const int warp = t128 / 32, lane = t128 % 32;
  // stmatrix.x4 #j2 of a pass covers n8 column groups 2 j2, 2 j2 + 1 of the box, this warp's 16
  // rows; lane l gives the row address of matrix l / 8: rows 8 (m & 1).., group 2 j2 + (m >> 1).
  const int m = lane / 8;
  const int row = warp * 16 + (m & 1) * 8 + (lane % 8);  // 0..63 within the half
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int h = p / 2, q = p % 2;  // row half, column box
    if (t128 == 0) tma_store_wait_read<1>();
    named_barrier_sync(bar, 128);
    uint8_t* const box = myC + q * kCSub;
#pragma unroll
    for (int j2 = 0; j2 < 4; ++j2) {
      const int j = 8 * q + 2 * j2;  // the half's n8 column group (m64n128: d[4j..4j+3])
      const int chunk = 2 * j2 + (m >> 1);
      uint8_t* ptr = box + row * 128 + ((chunk ^ (row & 7)) << 4);  // 128B swizzle
      stmatrix_x4(ptr, pack_bf16x2_hp(acc[h][4 * j + 0], acc[h][4 * j + 1]),
                  pack_bf16x2_hp(acc[h][4 * j + 2], acc[h][4 * j + 3]),
                  pack_bf16x2_hp(acc[h][4 * j + 4], acc[h][4 * j + 5]),
                  pack_bf16x2_hp(acc[h][4 * j + 6], acc[h][4 * j + 7]));
    }
    fence_proxy_async_smem();
    named_barrier_sync(bar, 128);
    if (t128 == 0) {
      const int r = r0 + 64 * h, c = c0 + 64 * q;
      if (r < M && c < N) tma_store_2d(tmC, box, c, r);
      tma_store_commit();
    }
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace pingpong
}  // namespace hopper_gemm
}  // namespace kl
