// kernels/common/reduce.cuh — warp and "group of G threads" reductions for the row kernels
// (rmsnorm, softmax, ...), fp32.
//
//   warp_sum / warp_max            butterfly (xor) shuffles over `Width` lanes (a power of two <= 32);
//                                  every lane of the Width-lane segment gets the result.
//   group_reduce<G>(v, op, smem)   a reduction over G consecutive threads of a 1-D block
//                                  (group g = threadIdx.x / G), every thread of the group gets the
//                                  result. G <= 32: shuffles only, no barrier, smem unused (pass
//                                  nullptr). G > 32 (multiple of 32): each warp reduces by shuffles,
//                                  lane 0 writes its partial to smem, one __syncthreads(), then every
//                                  thread of the group reads its group's G/32 partials IN THE SAME
//                                  ORDER (so all threads agree bit-for-bit and the result is
//                                  deterministic), then a second __syncthreads() so the caller may
//                                  call again with the same smem at once.
//   group_reduce_rt(v, op, smem, G)  the same with G chosen at run time (G = 32, 64, ..., 1024).
//   block_reduce(v, op, smem)      the whole block is one group (block per row).
//
// Requirements (G > 32): blockDim.x is a multiple of G, EVERY thread of the block calls it (it has
// __syncthreads(); keep the call out of divergent code — threads with no work pass the identity),
// and smem holds group_reduce_smem_floats(blockDim.x) floats ( = blockDim.x / 32 ).
#pragma once
#include <cuda_runtime.h>

namespace kl {

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  static __device__ __forceinline__ float identity() { return 0.0f; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  static __device__ __forceinline__ float identity() { return -__int_as_float(0x7f800000); }  // -inf
};

// Butterfly over `Width` lanes: after log2(Width) xor steps every lane holds op over its segment.
template <int Width = 32, class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0,
                "Width must be a power of two <= 32");
#pragma unroll
  for (int o = Width / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o, Width));
  return v;
}
template <int Width = 32>
__device__ __forceinline__ float warp_sum(float v) { return warp_reduce<Width>(v, SumOp{}); }
template <int Width = 32>
__device__ __forceinline__ float warp_max(float v) { return warp_reduce<Width>(v, MaxOp{}); }

// Floats of shared memory group_reduce needs for a block of `block_threads` threads.
__host__ __device__ constexpr int group_reduce_smem_floats(int block_threads) {
  return block_threads / 32;
}

// Reduction over the G consecutive threads [g*G, g*G+G) of a 1-D block; see the file comment.
template <int G, class Op>
__device__ __forceinline__ float group_reduce(float v, Op op, float* smem) {
  static_assert(G >= 1 && ((G <= 32 && (G & (G - 1)) == 0) || (G % 32 == 0 && G <= 1024)),
                "G must be a power of two <= 32 or a multiple of 32 up to 1024");
  if constexpr (G <= 32) {
    return warp_reduce<G>(v, op);
  } else {
    constexpr int kWarps = G / 32;                 // warps per group
    v = warp_reduce<32>(v, op);                    // every lane holds its warp's partial
    const int warp = threadIdx.x >> 5;             // warp index in the block
    if ((threadIdx.x & 31) == 0) smem[warp] = v;   // partial of warp `warp`
    __syncthreads();
    const float* part = smem + (warp / kWarps) * kWarps;  // this group's kWarps partials
    float r = part[0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) r = op(r, part[i]);  // same order in every thread
    __syncthreads();  // everyone has read: smem may be reused by the next call
    return r;
  }
}
template <int G>
__device__ __forceinline__ float group_sum(float v, float* smem) {
  return group_reduce<G>(v, SumOp{}, smem);
}
template <int G>
__device__ __forceinline__ float group_max(float v, float* smem) {
  return group_reduce<G>(v, MaxOp{}, smem);
}

// Run-time group size: the same as group_reduce<G> with G = `group` (32, 64, ..., 1024 and a divisor
// of blockDim.x), for kernels whose group size is picked at launch. Same barrier / smem rules.
template <class Op>
__device__ __forceinline__ float group_reduce_rt(float v, Op op, float* smem, int group) {
  v = warp_reduce<32>(v, op);
  if (group <= 32) return v;
  const int warp = threadIdx.x >> 5, gwarps = group >> 5;
  if ((threadIdx.x & 31) == 0) smem[warp] = v;
  __syncthreads();
  const float* part = smem + (warp / gwarps) * gwarps;
  float r = part[0];
  for (int i = 1; i < gwarps; ++i) r = op(r, part[i]);
  __syncthreads();
  return r;
}

// Run-time-sized variant for "block per row" kernels: all blockDim.x threads (a multiple of 32,
// <= 1024) reduce together. Same barrier rules as group_reduce with G = blockDim.x; smem holds
// blockDim.x / 32 floats.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float* smem) {
  v = warp_reduce<32>(v, op);
  const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) smem[warp] = v;
  __syncthreads();
  float r = smem[0];
  for (int i = 1; i < nwarps; ++i) r = op(r, smem[i]);
  __syncthreads();
  return r;
}

}  // namespace kl
