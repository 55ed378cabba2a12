// tests/test_gpu_sgemm_fuzz.cu — seeded random shapes for the fp32 GEMM (the fuzz sweep of
// tests/fuzz_util.h): M, N, K from 1 up (1s, primes, tile widths 8..256 and one either side),
// skinny M on 1 shape in 5, M x N up to 2^19 and M x N x K up to 2^25 (the CPU double product checks
// every element), A, B and C misaligned by 1..3 floats on 1 shape in 5 (each its own offset). Every
// rung that accepts the shape and the entry point (any M, N, K > 0, any alignment) are compared
// element by element with sgemm_reference(), with test_gpu_sgemm.cu's tolerance.
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kl/check.h"
#include "kl/sgemm.h"
#include "tests/fuzz_util.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;

constexpr long long kMaxMN = 1LL << 19, kMaxMNK = 1LL << 25;
constexpr double kSeconds = 12;

// test_gpu_sgemm.cu's tolerance: fp32 accumulation over K plus a relative term.
double tol(int K, double ref) { return 1e-5 + 2e-6 * K + 1e-4 * std::fabs(ref); }

// One device allocation of n floats starting `off` floats in.
struct DevFloats {
  float* base = nullptr;
  int off = 0;
  DevFloats(size_t n, int o) : off(o) { KL_CHECK(cudaMalloc(&base, 4 * (n + o + 1))); }
  ~DevFloats() { cudaFree(base); }
  DevFloats(const DevFloats&) = delete;
  DevFloats& operator=(const DevFloats&) = delete;
  float* ptr() const { return base + off; }
};

TEST(SgemmFuzz, EveryRungAndEntryPoint) {
  KL_REQUIRE_GPU();
  const DeviceInfo& d = device_info();
  fuzz::Run run("sgemm", kSeconds, fuzz::rung_labels(sgemm_rungs()));
  const std::vector<long long> edges = fuzz::with_pow2({d.sms, 96, 192, 300}, 4096);
  while (run.next()) {
    auto& g = run.rng();
    long long M = fuzz::chance(g, 0.2) ? fuzz::dim(g, 1, 16, {4, 8}) : fuzz::dim(g, 1, 2048, edges);
    long long N = fuzz::dim(g, 1, std::max(1LL, std::min(4096LL, kMaxMN / M)), edges);
    long long K = fuzz::dim(g, 1, std::max(1LL, std::min(8192LL, kMaxMNK / (M * N))), edges);
    // 1 in 4 shapes a whole number of the tiled rungs' (03-07) 128 x 128 tiles, K a multiple of 32.
    const bool tiled = fuzz::chance(g, 0.25);
    if (tiled) {
      M = (M + 127) / 128 * 128;
      N = std::max(128LL, std::min(N, kMaxMN / M) / 128 * 128);
      K = std::max(32LL, std::min(K, kMaxMNK / (M * N)) / 32 * 32);
    }
    int off[3] = {0, 0, 0};
    if (!tiled && fuzz::chance(g, 0.2))
      for (int& o : off) o = static_cast<int>(fuzz::uniform(g, 0, 3));
    std::ostringstream sh;
    sh << "M=" << M << ",N=" << N << ",K=" << K;
    if (off[0] || off[1] || off[2]) sh << " offsets " << off[0] << "," << off[1] << "," << off[2];
    run.set_shape(sh.str());

    std::mt19937_64 dg(run.data_seed());
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> A(size_t(M) * K), B(size_t(K) * N);
    for (auto& x : A) x = u(dg);
    for (auto& x : B) x = u(dg);
    std::vector<double> ref(size_t(M) * N);
    sgemm_reference(A.data(), B.data(), ref.data(), int(M), int(N), int(K));
    DevFloats dA(A.size(), off[0]), dB(B.size(), off[1]), dC(ref.size(), off[2]);
    KL_CHECK(cudaMemcpy(dA.ptr(), A.data(), 4 * A.size(), cudaMemcpyHostToDevice));
    KL_CHECK(cudaMemcpy(dB.ptr(), B.data(), 4 * B.size(), cudaMemcpyHostToDevice));
    const SgemmArgs a{dA.ptr(), dB.ptr(), dC.ptr(), int(M), int(N), int(K)};
    auto poison = [&] { KL_CHECK(cudaMemset(dC.base, 0xFF, 4 * (ref.size() + dC.off + 1))); };  // NaN
    fuzz::every_rung_and_entry(run, sgemm_rungs(), sgemm, a, poison, [&] {
      std::vector<float> got(ref.size());
      KL_CHECK(cudaMemcpy(got.data(), dC.ptr(), 4 * got.size(), cudaMemcpyDeviceToHost));
      size_t bad = 0;
      std::ostringstream s;
      for (size_t k = 0; k < got.size(); ++k)
        if (!(std::fabs(got[k] - ref[k]) <= tol(int(K), ref[k]))) {
          if (bad < 4) s << " C[" << k / N << "," << k % N << "]=" << got[k] << " want " << ref[k] << ";";
          ++bad;
        }
      if (!bad) return std::string();
      return std::to_string(bad) + " of " + std::to_string(got.size()) + " elements wrong:" + s.str();
    });
  }
}

}  // namespace
