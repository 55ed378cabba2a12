// examples/consumer/main.cpp — calls kl::gemm_bf16 (C = A W^T) and kl::attention (causal, GQA) from
// a program of its own, checks a sample of the outputs against a CPU computation, and prints what
// the entry points picked. Exit 0: validated; 1: a wrong answer or an error; 77: no GPU (built only).
#include <kl/attention.h>
#include <kl/check.h>
#include <kl/device.h>
#include <kl/dtype.h>
#include <kl/gemm_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

std::vector<uint16_t> random_bf16(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = kl::float_to_bf16_bits(u(rng));
  return v;
}

float f(uint16_t b) { return kl::bf16_bits_to_float(b); }

template <class T>
T* to_device(const std::vector<T>& h) {
  void* d = nullptr;
  KL_CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
  KL_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(d);
}

std::vector<uint16_t> to_host(const void* d, size_t n) {
  std::vector<uint16_t> h(n);
  KL_CHECK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

bool near(double got, double want, double tol, const char* what, int row, int col) {
  if (std::fabs(got - want) <= tol * (1.0 + std::fabs(want))) return true;
  std::printf("%s: row %d col %d: got %.5f, want %.5f\n", what, row, col, got, want);
  return false;
}

// C = A W^T for M x N x K, checked on every 7th row.
bool run_gemm(std::mt19937& rng, cudaStream_t s) {
  const int M = 256, N = 512, K = 1024;
  auto A = random_bf16(size_t(M) * K, 1.f, rng), W = random_bf16(size_t(N) * K, 0.05f, rng);
  kl::GemmBf16Args a;
  a.A = reinterpret_cast<const __nv_bfloat16*>(to_device(A));
  a.W = reinterpret_cast<const __nv_bfloat16*>(to_device(W));
  KL_CHECK(cudaMalloc(reinterpret_cast<void**>(&a.C), size_t(M) * N * 2));
  a.M = M, a.N = N, a.K = K;
  a.workspace_bytes = kl::gemm_bf16_workspace_bytes(M, N, K, kl::device_info());
  if (a.workspace_bytes) KL_CHECK(cudaMalloc(&a.workspace, a.workspace_bytes));
  kl::gemm_bf16(a, s);  // picks the rung, checks the arguments, launches; no sync
  KL_CHECK(cudaStreamSynchronize(s));
  std::printf("gemm_bf16 %dx%dx%d: rung %s\n", M, N, K, kl::gemm_bf16_pick(a, kl::device_info())->name);
  auto C = to_host(a.C, size_t(M) * N);
  bool ok = true;
  for (int i = 0; i < M && ok; i += 7)
    for (int j = 0; j < N && ok; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) acc += double(f(A[size_t(i) * K + k])) * f(W[size_t(j) * K + k]);
      ok = near(f(C[size_t(i) * N + j]), acc, 2e-2, "gemm_bf16", i, j);
    }
  for (const void* p : {static_cast<const void*>(a.A), static_cast<const void*>(a.W), static_cast<const void*>(a.C),
                        static_cast<const void*>(a.workspace)})
    KL_CHECK(cudaFree(const_cast<void*>(p)));
  return ok;
}

// Causal GQA attention, B=1, Hq=8, Hkv=2, Sq=Skv=384, D=128, checked on a sample of rows.
bool run_attention(std::mt19937& rng, cudaStream_t s) {
  const int B = 1, Hq = 8, Hkv = 2, S = 384, D = 128;
  auto Q = random_bf16(size_t(B) * Hq * S * D, 1.f, rng), Kh = random_bf16(size_t(B) * Hkv * S * D, 1.f, rng),
       V = random_bf16(size_t(B) * Hkv * S * D, 1.f, rng);
  kl::AttentionArgs a;
  a.Q = reinterpret_cast<const __nv_bfloat16*>(to_device(Q));
  a.K = reinterpret_cast<const __nv_bfloat16*>(to_device(Kh));
  a.V = reinterpret_cast<const __nv_bfloat16*>(to_device(V));
  KL_CHECK(cudaMalloc(reinterpret_cast<void**>(&a.O), Q.size() * 2));
  a.B = B, a.Hq = Hq, a.Hkv = Hkv, a.Sq = S, a.Skv = S, a.D = D, a.causal = true;
  a.workspace_bytes = kl::attention_workspace_bytes(a, kl::device_info());
  if (a.workspace_bytes) {  // zeroed once before first use, then reused as the kernels leave it
    KL_CHECK(cudaMalloc(&a.workspace, a.workspace_bytes));
    KL_CHECK(cudaMemset(a.workspace, 0, a.workspace_bytes));
  }
  kl::attention(a, s);
  KL_CHECK(cudaStreamSynchronize(s));
  std::printf("attention B=%d Hq=%d Hkv=%d S=%d D=%d causal: rung %s\n", B, Hq, Hkv, S, D,
              kl::attention_pick(a, kl::device_info())->name);
  auto O = to_host(a.O, Q.size());
  bool ok = true;
  const double scale = 1.0 / std::sqrt(double(D));
  for (int h = 0; h < Hq && ok; ++h)
    for (int i : {0, 1, 127, 200, S - 1}) {
      const int kvh = h / (Hq / Hkv);
      const uint16_t* q = &Q[(size_t(h) * S + i) * D];
      std::vector<double> p(i + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(f(q[d])) * f(Kh[(size_t(kvh) * S + j) * D + d]);
        p[j] = dot * scale, mx = std::max(mx, p[j]);
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int d = 0; d < D && ok; ++d) {
        double o = 0;
        for (int j = 0; j <= i; ++j) o += p[j] * f(V[(size_t(kvh) * S + j) * D + d]);
        ok = near(f(O[(size_t(h) * S + i) * D + d]), o / sum, 2e-2, "attention", h * S + i, d);
      }
      if (!ok) break;
    }
  for (const void* p : {static_cast<const void*>(a.Q), static_cast<const void*>(a.K), static_cast<const void*>(a.V),
                        static_cast<const void*>(a.O), static_cast<const void*>(a.workspace)})
    KL_CHECK(cudaFree(const_cast<void*>(p)));
  return ok;
}

}  // namespace

int main() {
  const std::string no_gpu = kl::gpu_unavailable_reason();
  if (!no_gpu.empty()) {
    std::printf("consumer: built; not run: %s\n", no_gpu.c_str());
    return 77;
  }
  try {
    std::mt19937 rng(1234);
    cudaStream_t s;
    KL_CHECK(cudaStreamCreate(&s));
    const bool ok = run_gemm(rng, s) && run_attention(rng, s);
    KL_CHECK(cudaStreamDestroy(s));
    std::printf("consumer: %s\n", ok ? "validated" : "WRONG ANSWER");
    return ok ? 0 : 1;
  } catch (const kl::BadArgument& e) {
    std::printf("consumer: refused: %s\n", e.what());
  } catch (const std::exception& e) {
    std::printf("consumer: error: %s\n", e.what());
  }
  return 1;
}
