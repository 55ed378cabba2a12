// kernels/common/hopper_attn.cuh — sm_90a pieces the attention ladder needs beyond hopper.cuh:
// the P*V product (A = P from registers, B = V [keys][D] "N-major": imm-trans-b = 1) and the
// shared-memory descriptor for such an N-major operand in the 128-byte swizzle layout TMA writes.
//
// PTX ISA, "Shared Memory Matrix Layout" / "Leading/Stride dimension byte offset", MN-major with a
// swizzle: LBO = offset from one (swizzle bytes / 16) = 8 sixteen-byte groups along N (i.e. one
// 64-element, 128-byte column panel) to the next panel; SBO = offset from one group of 8 rows along
// K (8 x 128 B = 1024 B) to the next. With V stored as panels [D/64][keys][64] (each panel written
// by one TMA box with SWIZZLE_128B), LBO = keys_per_tile * 128 bytes and SBO = 1024.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

#include "common/hopper.cuh"

namespace kl {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Descriptor of an N-major (transposed) operand: 128-byte swizzle, start 1024-byte aligned
// (base offset 0), `panel_bytes` from one 64-wide N panel to the next (LBO).
__device__ __forceinline__ uint64_t make_smem_desc_sw128_mn(const void* smem, uint32_t panel_bytes) {
  uint64_t addr = hp_smem_u32(smem);
  uint64_t d = 0;
  d |= (addr & 0x3FFFFull) >> 4;                    // start address, 14 bits
  d |= uint64_t((panel_bytes >> 4) & 0x3FFF) << 16;  // LBO: next 64-wide N panel
  d |= uint64_t(1024 >> 4) << 32;                   // SBO: next 8 rows along K
  d |= uint64_t(1) << 62;                           // 128B swizzle
  return d;
}

// D[64 x 64] (+)= A[64 x 16] * B[16 x 64], A from registers, B N-major in shared memory
// (imm-trans-b = 1): B is stored [k][n] (row k holds n contiguous), as V [keys][D] is for P * V.
__device__ __forceinline__ void wgmma_rs_m64n64k16_tnspb(float (&d)[32], const uint32_t (&a)[4],
                                                        uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d)
      : "memory");
}

// D[64 x 128] (+)= A[64 x 16] * B[16 x 128], A from registers, B N-major in shared memory
// (imm-trans-b = 1): B is stored [k][n] (row k holds n contiguous), as V [keys][D] is for P * V.
__device__ __forceinline__ void wgmma_rs_m64n128k16_tnspb(float (&d)[64], const uint32_t (&a)[4],
                                                        uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d)
      : "memory");
}

// D[64 x 176] (+)= A[64 x 16] * B[176 x 16]^T, both K-major in shared memory (same conventions as
// hopper.cuh's wgmma_ss_m64n128k16). For the non-causal 128 x 176 tile of rung 10: N only has to be
// a multiple of 8 (PTX ISA, wgmma shapes), and 176 keys x 128 B = 22 KB is still 1024-aligned.
__device__ __forceinline__ void wgmma_ss_m64n176k16(float (&d)[88], uint64_t desc_a, uint64_t desc_b,
                                                   int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
}

// Keeps the compiler from reusing (or moving) the registers of A fragments [K][4] that an in-flight
// wgmma still reads: call after wgmma_wait<> that retires the wgmma reading them.
template <int K>
__device__ __forceinline__ void wgmma_fence_operands_u32(uint32_t (&a)[K][4]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[k][i])::"memory");
}

// mbar_wait with a watchdog: after ~10 s (2e10 clock64 cycles at ~2 GHz) it traps, so a wrong
// transaction count or parity fails the launch (cudaErrorLaunchFailure) instead of hanging the
// test run. Only the slow path (try_wait returned false) reads the clock. (No printf: a call in
// the kernel made ptxas spill; use it off the wgmma path, e.g. in the producer.)
__device__ __forceinline__ void mbar_wait_watchdog(uint64_t* bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const long long start = clock64();
  while (!mbar_try_wait(bar, parity)) {
    if (clock64() - start > 20000000000LL) __trap();
  }
}

// bar.arrive on a named barrier (no wait): the other side of named_barrier_sync (hopper.cuh).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// wgmma_wait<0> that ptxas cannot hoist above the computation of `v`: the wait sits in both arms
// of a branch on v (the arms differ in text so the front end cannot merge them back into one
// unconditional wait). Used to keep work scheduled between wgmma_wait<1> and wgmma_wait<0>.
__device__ __forceinline__ void wgmma_wait0_after(float v) {
  if (__float_as_uint(v) != 0x7fffffffu) {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  } else {
    asm volatile("wgmma.wait_group.sync.aligned 0; // (same wait, other arm)\n" ::: "memory");
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace kl
