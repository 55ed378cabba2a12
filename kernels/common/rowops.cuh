// kernels/common/rowops.cuh — the split cluster barrier (added by the softmax work; sm_90+, which
// both 90a and 120 are). Complements common/dsmem.cuh (cluster_ctarank, cluster_sync,
// dsmem_ld_f32), which it includes.
//
//   cluster_arrive()   barrier.cluster.arrive.release.aligned: "my shared-memory writes / my DSMEM
//                      reads so far are done" — does not wait.
//   cluster_wait()     barrier.cluster.wait.acquire.aligned: waits until every thread of every CTA
//                      of the cluster has arrived.
// Use: after the last remote read of a DSMEM exchange, cluster_arrive(); do independent work (the
// stores); cluster_wait() before exit, so no CTA frees its shared memory while a peer still reads
// it — the tail of a cluster_sync() without stalling the stores. Every thread of every CTA must
// call both, from converged code.
#pragma once
#include <cuda_runtime.h>

#include "dsmem.cuh"

namespace kl {

__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

}  // namespace kl
