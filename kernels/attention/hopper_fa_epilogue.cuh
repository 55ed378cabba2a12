// kernels/attention/hopper_fa_epilogue.cuh — the end of one work item of the sm_90a attention
// kernel (hopper_fa.cuh): O / l of a consumer warpgroup's 64 rows, in bf16, into O's
// [B*Hkv, rows, D] view. A rung's configuration names one as `using Epilogue = ...`:
//   RegisterEpilogue  each thread stores its two rows' pairs straight from the wgmma accumulator
//   TmaStoreEpilogue  the warpgroup stages its rows in shared memory, one thread stores them by TMA
// Both: store<C>(p, sO, o, l, grow, m0, c, bh, warp, lane) per item (o: the accumulator of rows
// grow[0], grow[1]; l: the full row sums, OnlineSoftmax::finalize), finish() after the last.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attention/hopper_fa_config.cuh"
#include "common/gemm_tile.cuh"
#include "common/hopper.cuh"
#include "common/mma.cuh"

namespace kl {
namespace hattn {

// 1 / l of a row (0 for a row that saw no key: the padding rows of a last tile).
__device__ __forceinline__ float inv_row_sum(float l) { return l > 0.f ? 1.f / l : 0.f; }

// 4-byte pairs per thread from the accumulator layout: each warp instruction writes 16 bytes of 8
// rows, half of each 32-byte sector. Rows past p.rows are the last tile's padding and are skipped.
struct RegisterEpilogue {
  static constexpr bool kStaged = false;  // no shared-memory staging tile
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C>
  static __device__ __forceinline__ void store(const Params& p, uint8_t*, const float (&o)[C::D / 2],
                                               const float (&l)[2], const int (&grow)[2], int, int,
                                               int bh, int, int lane) {
    const int col0 = 2 * (lane & 3);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (grow[h] >= p.rows) continue;  // padding rows of the last tile (TMA read zeros)
      const float inv = inv_row_sum(l[h]);
      __nv_bfloat16* orow = p.O + (size_t(bh) * p.rows + grow[h]) * C::D;
#pragma unroll
      for (int j = 0; j < C::D / 8; ++j)
        *reinterpret_cast<uint32_t*>(orow + 8 * j + col0) =
            pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
  }
  static __device__ __forceinline__ void finish() {}
#endif
};

// The warpgroup writes its 64 rows into its rows of the staging tile sO (Q's layout: D/64 panels of
// BM rows x 128 bytes, 128-byte swizzle, conflict-free for the accumulator's pairs), and one thread
// stores each panel's 64 x 64 box with a TMA store (p.tmO; rows past p.rows are clipped) and does
// not wait for it. The next item's store first waits until that store has read the tile, long
// done by then. Named barrier 3 + c (128 threads; ping-pong uses 1 and 2).
struct TmaStoreEpilogue {
  static constexpr bool kStaged = true;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  template <class C>
  static __device__ __forceinline__ void store(const Params& p, uint8_t* sO, const float (&o)[C::D / 2],
                                               const float (&l)[2], const int (&)[2], int m0, int c,
                                               int bh, int warp, int lane) {
    const bool issuer = threadIdx.x % 128 == 0;
    // A literal id where one consumer warpgroup is all there is: ptxas then reserves 4 hardware
    // barriers, not all 16 (a variable id takes every one).
    const int bar = C::kConsumers > 1 ? 3 + c : 3;
    if (issuer) tma_store_wait_read<0>();  // the previous item's store has read the tile
    named_barrier_sync(bar, 128);
    uint8_t* rows = sO + c * (64 * 128);  // this warpgroup's 64 rows in every panel
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float inv = inv_row_sum(l[h]);
      const int r = warp * 16 + lane / 4 + 8 * h;
      uint8_t* lane_rows = rows + (lane & 3) * 4;
#pragma unroll
      for (int j = 0; j < C::D / 8; ++j)  // columns 8j + 2 (lane & 3): panel j / 8, chunk j % 8
        *reinterpret_cast<uint32_t*>(lane_rows + (j / 8) * (C::BM * 128) + swz128_offset(r, j % 8)) =
            pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
    fence_proxy_async_smem();  // the st.shared before the TMA (async proxy) reads them
    named_barrier_sync(bar, 128);
    if (issuer) {
#pragma unroll
      for (int pn = 0; pn < C::kPanels; ++pn)
        tma_store_3d(&p.tmO, rows + pn * (C::BM * 128), pn * 64, m0 + c * 64, bh);
      tma_store_commit();
    }
  }
  // The tile must stay until the last store has read it (the CTA's shared memory goes at exit).
  static __device__ __forceinline__ void finish() {
    if (threadIdx.x % 128 == 0) tma_store_wait_read<0>();
  }
#endif
};

}  // namespace hattn
}  // namespace kl
