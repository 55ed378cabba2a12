// kernels/common/dsmem.cuh — thread-block-cluster helpers for sm_90+ (Hopper and consumer
// Blackwell both have clusters and distributed shared memory; nothing here needs sm_90a).
//
//   cluster_ctarank()           this block's rank in its cluster (%cluster_ctarank).
//   cluster_sync()              barrier.cluster arrive.release + wait.acquire: every thread of every
//                               block of the cluster must call it (it is .aligned: call it from
//                               converged code). Shared-memory writes before it are visible to the
//                               other blocks' DSMEM reads after it.
//   dsmem_ld_f32(p, rank)       reads the float at the same shared-memory offset as `p` in block
//                               `rank` of this cluster (mapa + ld.shared::cluster).
//
// A block must not exit while a peer may still read its shared memory: end a DSMEM exchange with a
// second cluster_sync(). On targets below sm_90 (and the host pass) the bodies trap / are empty;
// launchers check cc >= 9.0 in supports().
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace kl {

__device__ __forceinline__ uint32_t cluster_ctarank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  return 0;
#endif
}

__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ float dsmem_ld_f32(const float* p, uint32_t rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(p)), remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  __trap();
  return 0.0f;
#endif
}

}  // namespace kl
