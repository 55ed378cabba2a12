// kernels/common/ktrace.cuh — the clock of the opt-in in-kernel timelines (cmake -DKL_DEC_TRACE=ON:
// attention rung 03's kernels/attention/dec_trace.cuh, gemm_bf16 rung 11's marks; read back by
// tools/dec_trace.cu and tools/gemm_trace.cu). Nothing includes it in a default build.
#pragma once

namespace kl {

// %globaltimer in ns (a global clock: comparable across SMs; its update step is coarser than a
// cycle, the tools print the smallest step they saw).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");  // "memory": not moved across loads/stores
  return t;
}

}  // namespace kl
