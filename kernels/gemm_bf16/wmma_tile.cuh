// kernels/gemm_bf16/wmma_tile.cuh — what the WMMA rungs (00-02) share: fragment types and the
// epilogue (fp32 accumulator fragment -> per-warp 16x16 shared scratch -> bf16 with bounds; the
// accumulator's register layout is opaque in the WMMA API, so it has to go through memory).
#pragma once
#include <cuda_bf16.h>
#include <mma.h>

namespace kl::gemm_bf16_detail::wmma_tile {

namespace w = nvcuda::wmma;
using FragA = w::fragment<w::matrix_a, 16, 16, 16, __nv_bfloat16, w::row_major>;
// B = W^T: W is [N][K] with k contiguous, i.e. B is column-major with leading dimension K.
using FragB = w::fragment<w::matrix_b, 16, 16, 16, __nv_bfloat16, w::col_major>;
using FragC = w::fragment<w::accumulator, 16, 16, 16, float>;

// Stores a warp's FM x FN fragments (fragment (i, j) at rows row0 + 16i, cols col0 + 16j) as bf16.
// `scratch`: 256 floats private to this warp. Elements past M / N are not written.
template <int FM, int FN>
__device__ __forceinline__ void store_bf16(FragC (&acc)[FM][FN], float* scratch,
                                           __nv_bfloat16* __restrict__ C, int M, int N, int row0,
                                           int col0) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const int r = row0 + 16 * i, c = col0 + 16 * j;
      if (r >= M || c >= N) continue;  // warp-uniform
      w::store_matrix_sync(scratch, acc[i][j], 16, w::mem_row_major);
      __syncwarp();
      // Lane handles 8 consecutive elements = 4 bf16 pairs of one row half (N % 8 == 0).
      const int rr = lane >> 1, cc = (lane & 1) * 8;
      if (r + rr < M && c + cc < N) {
        const float* s = scratch + rr * 16 + cc;
        __nv_bfloat162 v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) v[q] = __floats2bfloat162_rn(s[2 * q], s[2 * q + 1]);
        *reinterpret_cast<uint4*>(C + static_cast<size_t>(r + rr) * N + c + cc) =
            *reinterpret_cast<const uint4*>(v);
      }
      __syncwarp();  // scratch reused by the next fragment
    }
}

}  // namespace kl::gemm_bf16_detail::wmma_tile
