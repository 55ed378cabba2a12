// kernels/swiglu/swiglu_impl.cuh — device code shared by the SwiGLU rungs (family-private).
//
// silu_mul():        the fp32 math of one element (common/silu.cuh).
// swiglu_tail():     the < kVec elements past the last whole 16-byte vector, done by block 0.
// swiglu_vectors<>(): K 16-byte vectors of g and u per thread, all loads issued before any math
//                    (2K independent 16-byte loads in flight per thread), block-strided so every
//                    warp instruction touches 512 contiguous bytes.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/silu.cuh"
#include "common/vec.cuh"
#include "kl/swiglu.h"

namespace kl::swiglu_detail {

constexpr int kThreads = 256;  // threads per block for every rung (8 warps; occupancy 8 blocks/SM)

// Rung 01's launch, programmatic-dependent when `pdl` (rung 06).
void swiglu_vec128_run(const SwigluArgs& a, cudaStream_t s, bool pdl);

using kl::silu_mul;  // common/silu.cuh

// Elements [nvec * kVec, n) — fewer than one vector — computed with scalar code by block 0.
template <DType D>
__device__ __forceinline__ void swiglu_tail(const typename Elem<D>::T* g,
                                            const typename Elem<D>::T* u, typename Elem<D>::T* y,
                                            long long n) {
  constexpr int V = Elem<D>::kVec;
  const long long first = n / V * V;
  if (blockIdx.x == 0 && threadIdx.x < n - first) {
    const long long i = first + threadIdx.x;
    Elem<D>::store(y, i, silu_mul(Elem<D>::load(g, i), Elem<D>::load(u, i)));
  }
}

// Vectors [base, base + K * kThreads) of the flat stream (vector v = elements [v*kVec, v*kVec+kVec)),
// thread t taking base + k * kThreads + t for k < K. Loads of all K vectors of both inputs go out
// before the first multiply, so each thread has 2 * K * 16 bytes in flight.
template <DType D, int K, Ld L, St S>
__device__ __forceinline__ void swiglu_vectors(const typename Elem<D>::T* __restrict__ g,
                                               const typename Elem<D>::T* __restrict__ u,
                                               typename Elem<D>::T* __restrict__ y,
                                               long long base, long long nvec) {
  constexpr int V = Elem<D>::kVec;
  uint4 gv[K], uv[K];  // raw 16-byte payloads: K vectors of each input
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long v = base + static_cast<long long>(k) * kThreads + threadIdx.x;
    if (v < nvec) {
      gv[k] = ld16<L>(g + v * V);
      uv[k] = ld16<L>(u + v * V);
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long v = base + static_cast<long long>(k) * kThreads + threadIdx.x;
    if (v < nvec) {
      float gf[V], uf[V];
      Elem<D>::unpack(gv[k], gf);
      Elem<D>::unpack(uv[k], uf);
#pragma unroll
      for (int j = 0; j < V; ++j) gf[j] = silu_mul(gf[j], uf[j]);
      st16<S>(y + v * V, Elem<D>::pack(gf));
    }
  }
}

// supports() for the vector rungs: all three pointers must be 16-byte aligned (the flat stream
// needs no condition on cols: a ragged end is the scalar tail).
inline std::string vector_supports(const SwigluArgs& a) {
  std::string why = swiglu_check_args(a);
  if (!why.empty()) return why;
  if (!aligned(a.g, 16) || !aligned(a.u, 16) || !aligned(a.y, 16))
    return "g, u and y must be 16-byte aligned for 128-bit accesses";
  return "";
}

inline long long numel(const SwigluArgs& a) { return static_cast<long long>(a.rows) * a.cols; }

}  // namespace kl::swiglu_detail
