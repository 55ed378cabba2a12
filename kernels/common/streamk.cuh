// kernels/common/streamk.cuh — the pieces of a deterministic, reset-free Stream-K fixup shared by
// the Stream-K GEMM rungs (gemm_bf16 rung 04 on mma.sync, rung 14 on wgmma).
//
// Scheme: the flattened (tile, k-block) units of the
// Stream-K tiles are cut into G contiguous ranges, CTA c taking [range_begin(c), range_begin(c+1)).
// A split tile is owned by the CTA whose range holds its k-block 0; every other piece is the FIRST
// segment of its CTA's range, so a CTA produces at most one fp32 partial (workspace slot c, flag c).
// A peer stores its partial, fences, and release-stores the launch's epoch into flag c; the owner
// acquires flags c+1 .. holder(last unit of the tile) == epoch, resets them to 0, and adds the
// partials in that order (K order): the same bits on every launch. Nothing is cleared between
// launches: a flag only counts when it holds this launch's epoch (host counter, never 0), and every
// consumed flag is reset by its owner (so a replayed CUDA graph, same epoch, still waits afresh).
// Deadlock freedom: the G Stream-K CTAs are all resident at once, a CTA waits only on higher-numbered CTAs'
// first segments, which never wait, and a pending flag is raised before its CTA waits.
//
// Workspace layout (common to every rung that uses this header, so one workspace can serve all of
// them): [flag region: streamk_flag_bytes(sms)][partials ...]. The flag region's size and offset do
// not depend on the shape or the rung, so flags are never overlapped by another rung's partials.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>

namespace kl {

// Most CTAs per SM any Stream-K rung runs (sizes the flag region: one flag per Stream-K CTA).
constexpr int kStreamkMaxCtasPerSm = 4;

// Bytes of the flag region at the start of a Stream-K workspace (256-byte multiple: the partials
// after it stay 256-byte aligned).
inline size_t streamk_flag_bytes(int sms) {
  return (static_cast<size_t>(sms) * kStreamkMaxCtasPerSm * sizeof(unsigned) + 255) / 256 * 256;
}

// This launch's epoch: a process-wide counter shared by the Stream-K rungs, never 0 (0 = "consumed
// or never written").
inline unsigned streamk_next_epoch() {
  static std::atomic<unsigned> epoch{0};
  unsigned e = ++epoch;
  if (e == 0) e = ++epoch;
  return e;
}

// First unit of CTA c's range: floor(c * units / G) (ranges differ by at most one unit).
__host__ __device__ __forceinline__ int streamk_range_begin(int c, int units, int G) {
  return static_cast<int>(static_cast<long long>(c) * units / G);
}

// The CTA whose range holds `unit` (0 <= unit < units): the floor guess unit * G / units never
// overshoots (range_begin(guess) <= unit), then step forward to the exact one.
__host__ __device__ __forceinline__ int streamk_range_holder(int unit, int units, int G) {
  int c = static_cast<int>(static_cast<long long>(unit) * G / units);
  while (c + 1 < G && streamk_range_begin(c + 1, units, G) <= unit) ++c;
  return c;
}

// Flag accesses (sm_70+ PTX).
__device__ __forceinline__ unsigned streamk_ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void streamk_st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

}  // namespace kl
