// kernels/attention/dec_trace.cuh — opt-in in-kernel timeline of the split-KV decode step (rung 03's
// decode_kernel and dec::finish, decode_split.cuh), for tools/dec_trace.cu.
//
// Off by default: without KL_DEC_TRACE the marks below expand to nothing and the kernels compile to
// the same SASS. With it (cmake -DKL_DEC_TRACE=ON), consumer thread 0 of block b < kDecTraceBlocks
// writes %globaltimer (ns) into g_trace[b][slot]:
//   e0 after pdl_wait           e1 first K/V tile landed     e2 KV loop done (stages drained)
//   e3 4-warp smem merge stored  e4 partial (or O) stored (+ fence + barrier unless merging)
//   e5 flag released / (merger) the other flags acquired   e6 merge done (merging blocks only)
//   slot 7: blockIdx.x, | 1u << 31 when the block merged the tile.
// A slot left at 0 (the host clears the array before a launch) was not reached. Rung 09 calls
// dec::finish too, so it records e3-e6 and slot 7 into its own copy (the array is static: one per
// translation unit); attn03_trace_dump() reads rung 03's.
#pragma once

#ifdef KL_DEC_TRACE
#include "attention/attention_internal.h"
#include "common/ktrace.cuh"

namespace kl {
namespace dec {

static __device__ unsigned long long g_trace[kDecTraceBlocks][kDecTraceSlots];

// `tid`: the consumer thread index (rung 09's producer warp never records).
__device__ __forceinline__ void trace_mark(int slot, int tid) {
  if (tid == 0 && blockIdx.x < kDecTraceBlocks) g_trace[blockIdx.x][slot] = globaltimer_ns();
}

__device__ __forceinline__ void trace_tag(bool merged, int tid) {
  if (tid == 0 && blockIdx.x < kDecTraceBlocks) g_trace[blockIdx.x][7] = blockIdx.x | (merged ? 1ull << 31 : 0ull);
}

}  // namespace dec
}  // namespace kl

#define KL_DEC_MARK(slot, tid) ::kl::dec::trace_mark((slot), (tid))
#define KL_DEC_TAG(merged, tid) ::kl::dec::trace_tag((merged), (tid))
#else
#define KL_DEC_MARK(slot, tid) ((void)0)
#define KL_DEC_TAG(merged, tid) ((void)0)
#endif
