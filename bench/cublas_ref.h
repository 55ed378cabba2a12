// bench/cublas_ref.h — cuBLAS as the reference implementation (timed in the same run as the rungs,
// and used to validate them). One handle per process, created on first use (outside timed loops).
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

namespace kl::bench {

// Throws kl::CudaError with the cuBLAS status name.
void cublas_check(cublasStatus_t s, const char* what, const char* file, int line);
#define KL_CUBLAS(call) ::kl::bench::cublas_check((call), #call, __FILE__, __LINE__)

// The process's handle (math mode: pedantic, so SGEMM stays true fp32 with TF32 off), with a
// 32 MiB workspace set, bound to `stream` on each call.
cublasHandle_t cublas_handle(cudaStream_t stream);

// fp32 row-major C[M,N] = A[M,K] * B[K,N], TF32 off.
void cublas_sgemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t s);

// bf16 C[M,N] = A[M,K] * W[N,K]^T (nn.Linear layout), fp32 accumulation, bf16 out.
void cublas_gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* W, __nv_bfloat16* C, int M,
                      int N, int K, cudaStream_t s);
// Same product with fp32 output (a finer reference for validation).
void cublas_gemm_bf16_f32out(const __nv_bfloat16* A, const __nv_bfloat16* W, float* C, int M,
                             int N, int K, cudaStream_t s);

}  // namespace kl::bench
