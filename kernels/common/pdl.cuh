// kernels/common/pdl.cuh — programmatic dependent launch (PDL, sm_90 and newer), shared by every
// kernel that uses it (attention decode and combine, the bf16 decode GEMM).
//
// A grid launched with pdl_attribute() may start its CTAs while the previous grid of the stream
// drains: once every CTA of that grid has called pdl_trigger() (or exited). pdl_wait() blocks the
// calling thread until every prerequisite grid has completed and its memory is visible. Data no
// kernel that may still be running produces (weights: the previous grid may itself have triggered
// before waiting on ITS predecessor) may be read before pdl_wait(); anything such a kernel may
// produce or read (activations, partials, the output) only after. Below sm_90 both are no-ops, and a
// launch without the attribute makes pdl_wait() return at once (stream order already holds).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "kl/check.h"

namespace kl {

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Whether a launch on stream s may carry pdl_attribute(): only created streams (the legacy default
// stream keeps its implicit synchronization with other streams).
inline bool pdl_stream(cudaStream_t s) {
  return s != nullptr && s != cudaStreamLegacy && s != cudaStreamPerThread;
}

// The launch attribute that makes a cudaLaunchKernelEx launch programmatic-dependent.
inline cudaLaunchAttribute pdl_attribute() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

// Launches kernel<<<grid, block, smem, st>>>(args...) in clusters of `cluster` CTAs along x (0: no
// cluster attribute; 1: the attribute with clusters of one), programmatic-dependent when `pdl`
// (the caller decides: compute capability, stream kind, a template switch), checked.
template <class... KArgs, class... Args>
void pdl_launch_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                        bool pdl, int cluster, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (cluster > 0) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl) attr[n++] = pdl_attribute();
  cfg.attrs = attr;
  cfg.numAttrs = n;
  KL_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
  KL_CHECK_LAUNCH();
}

// The same without clusters.
template <class... KArgs, class... Args>
void pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                bool pdl, Args&&... args) {
  pdl_launch_cluster(kernel, grid, block, smem, st, pdl, 0, std::forward<Args>(args)...);
}

}  // namespace kl
