// kernels/sgemm/reference.cpp — CPU double references for the sgemm tests and the bench's check of
// cuBLAS itself. Products of fp32 inputs are exact in double; the sum is double-rounded only.
#include "kl/sgemm.h"

namespace kl {

double sgemm_reference_at(const float* A, const float* B, int M, int N, int K, int i, int j) {
  (void)M;
  double acc = 0.0;
  for (int k = 0; k < K; ++k)
    acc += static_cast<double>(A[static_cast<size_t>(i) * K + k]) *
           static_cast<double>(B[static_cast<size_t>(k) * N + j]);
  return acc;
}

void sgemm_reference(const float* A, const float* B, double* C, int M, int N, int K) {
  // i-k-j order: streams rows of B, fine for the small shapes the tests use.
  for (int i = 0; i < M; ++i) {
    double* c = C + static_cast<size_t>(i) * N;
    for (int j = 0; j < N; ++j) c[j] = 0.0;
    for (int k = 0; k < K; ++k) {
      const double a = A[static_cast<size_t>(i) * K + k];
      const float* b = B + static_cast<size_t>(k) * N;
      for (int j = 0; j < N; ++j) c[j] += a * static_cast<double>(b[j]);
    }
  }
}

}  // namespace kl
