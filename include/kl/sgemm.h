// include/kl/sgemm.h — the fp32 GEMM family: arguments, rung table, entry point, CPU reference.
//
// C[M,N] = A[M,K] * B[K,N], fp32 in / fp32 accumulate / fp32 out, all row-major and contiguous
// (lda = K, ldb = N, ldc = N). The reference is cuBLAS SGEMM with TF32 off (bench/cublas_ref.h).
// The table (rung number, name, the one change) is written once, in sgemm.cu.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kl/registry.h"

namespace kl {

struct SgemmArgs {
  const float* A = nullptr;  // [M, K] row-major
  const float* B = nullptr;  // [K, N] row-major
  float* C = nullptr;        // [M, N] row-major
  int M = 0, N = 0, K = 0;
};

// Every rung, in ladder order.
const std::vector<Rung<SgemmArgs>>& sgemm_rungs();

// The entry point: any M, N, K from 1 to 2^31 - 513 and any float pointers (4-byte aligned). Picks
// the best supported rung for the shape and launches it on `stream` (never synchronizes). Throws
// kl::BadArgument, before any launch, on anything else.
void sgemm(const SgemmArgs& args, cudaStream_t stream);
// The rung sgemm() would launch (the bench's "auto" row), or nullptr if none can.
const Rung<SgemmArgs>* sgemm_pick(const SgemmArgs& args, const DeviceInfo& d);

// "" when the arguments describe a GEMM at all (dims in 1 .. 2^31 - 513, pointers set and 4-byte
// aligned), else why not. Every rung's supports() starts with this; sgemm() throws on it.
std::string sgemm_check_args(const SgemmArgs& a);

// CPU references (double accumulation over the fp32 inputs; reference.cpp).
// One entry C[i,j].
double sgemm_reference_at(const float* A, const float* B, int M, int N, int K, int i, int j);
// The whole product into C[M*N] (small shapes only: O(MNK) on one core).
void sgemm_reference(const float* A, const float* B, double* C, int M, int N, int K);

}  // namespace kl
