// kernels/common/cp_async4.cuh — 4-byte cp.async (global -> shared, one float), for loaders that
// transpose while they copy: each element goes to its own shared address, so the copy can scatter
// a row-major tile into a column-major (k-major) shared layout without passing through registers.
// sm_80+. The 16-byte form and commit/wait are in mma.cuh.
#pragma once
#include "common/mma.cuh"

namespace kl {

// 4-byte global -> shared copy, cached in L1 (.ca: the other lanes of the sector follow at once).
// pred false: the source is not read and the 4 destination bytes are zero-filled (src-size 0).
__device__ __forceinline__ void cp_async_4(uint32_t smem_addr, const void* gmem, bool pred = true) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(pred ? 4 : 0));
}

// 16-byte form of cp_async_16 (mma.cuh) taking the shared address as a 32-bit value, so a loader
// can keep one base and add constant offsets instead of converting a pointer per copy.
__device__ __forceinline__ void cp_async_16_u32(uint32_t smem_addr, const void* gmem,
                                                bool pred = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(pred ? 16 : 0));
}

}  // namespace kl
