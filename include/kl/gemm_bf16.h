// include/kl/gemm_bf16.h — the bf16 tensor-core GEMM family: arguments, rung table, entry.
//
// C[M,N] = A[M,K] * W[N,K]^T — the nn.Linear layout (activations times weights stored out x in),
// bf16 in, fp32 accumulate, bf16 out, all row-major and contiguous.
// Rungs 00-04 (part 1, sm_80+) live in NN_*.cu here; the sm_90a rungs (part 2) are appended to the
// table by gemm_bf16_append_hopper_rungs(), defined in hopper_rungs.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <vector>

#include "kl/registry.h"

namespace kl {

struct GemmBf16Args {
  const __nv_bfloat16* A = nullptr;  // [M, K]
  const __nv_bfloat16* W = nullptr;  // [N, K]
  __nv_bfloat16* C = nullptr;        // [M, N]
  int M = 0, N = 0, K = 0;
  // Scratch for rungs that need it (Stream-K partials and flags). Caller-owned, reused across
  // launches, never cleared between them; size from gemm_bf16_workspace_bytes(). A rung that needs
  // more than it is given says so through supports().
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Every rung, in ladder order (part 1, then the Hopper rungs).
const std::vector<Rung<GemmBf16Args>>& gemm_bf16_rungs();
// Part 2 hook: appends the sm_90a rungs (defined in hopper_rungs.cu).
void gemm_bf16_append_hopper_rungs(std::vector<Rung<GemmBf16Args>>& table);
// Workspace the largest-need rung wants for this shape (0 if none).
size_t gemm_bf16_workspace_bytes(int M, int N, int K, const DeviceInfo& d);

// The entry point: picks the best supported rung for the shape and launches it. Throws
// kl::BadArgument (no launch) for anything it cannot compute: N or K not a multiple of 8,
// misaligned pointers, too small a workspace.
// Stream contract (programmatic dependent launch, sm_90a rungs 08, 11, 12, 15, 16 on created
// streams): a launch may start while the previous kernel of the stream drains. A, C and the
// workspace are touched only after that kernel has completed (rung 16: W too); W is treated as
// weights by the decode rungs 11 and 15 (M <= 64), which may start reading it before then, so W must not be written by a kernel that may still
// be running on the stream (synchronize, or use the legacy default stream, where PDL is off).
void gemm_bf16(const GemmBf16Args& args, cudaStream_t stream);
// The rung gemm_bf16() would launch (for the bench's "auto" row), or nullptr.
const Rung<GemmBf16Args>* gemm_bf16_pick(const GemmBf16Args& args, const DeviceInfo& d);
// "" when the arguments describe a GEMM at all (M, N, K in 1 .. 2^31 - 513, so that tile counts and
// k-block offsets stay inside int; A, W and C set and 2-byte aligned), else why not. Every rung's
// supports() starts with this; gemm_bf16() throws on it.
std::string gemm_bf16_check_args(const GemmBf16Args& args);

}  // namespace kl
