// kernels/attention/hopper_fa_epilogue.cuh — the end of one work item of the sm_90a attention
// kernel (hopper_fa.cuh): O / l of a consumer thread's two rows, in bf16, straight from the wgmma
// accumulator into O's [B*Hkv, rows, D] view.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attention/hopper_fa_config.cuh"
#include "common/mma.cuh"

namespace kl {
namespace hattn {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int D>
struct OutputEpilogue {
  // o: the O accumulator (rows h = 0, 1 of the thread: packed rows grow[h] of item bh); l: the
  // full row sums (OnlineSoftmax::finalize). Rows past p.rows are the last tile's padding.
  static __device__ __forceinline__ void store(const Params& p, const float (&o)[D / 2],
                                               const float (&l)[2], const int (&grow)[2], int bh,
                                               int lane) {
    const int col0 = 2 * (lane & 3);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (grow[h] >= p.rows) continue;  // padding rows of the last tile (TMA read zeros)
      const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
      __nv_bfloat16* orow = p.O + (size_t(bh) * p.rows + grow[h]) * D;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(orow + 8 * j + col0) =
            pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
  }
};

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace hattn
}  // namespace kl
