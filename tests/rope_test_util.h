// tests/rope_test_util.h — one RoPE problem on the device for the GPU tests (test_gpu_rope.cu and
// test_gpu_rope_fuzz.cu): random bf16 qkv, the positions, outputs filled with a sentinel, the CPU
// double reference, and the check of either layout.
//
// The check of the attention layout compares q_out ([B, Hq, S, D]) with the reference, every cache
// row that a token's position names with the rotated k (tolerance) and the copied v (bit for bit),
// and every other cache row with the sentinel bits (untouched, bit for bit). Tolerance: the output's
// one rounding to bf16 (half an ulp: 2^-8 relative) plus 2e-5 absolute: the angle is
// within 2^-21 rad of the exact one, so a kernel whose angle is an fp32 product pos * inv_freq
// (off by up to pos * 2^-24 rad) fails it at positions near 2^17.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "common/parallel.h"
#include "kl/check.h"
#include "kl/dtype.h"
#include "kl/rope.h"
#include "tests/gpu_test.h"

namespace kl::rope_test {

constexpr unsigned char kSentinelByte = 0xA5;  // bf16 0xA5A5: a small negative number, not a NaN
constexpr uint16_t kSentinel = 0xA5A5;

inline bench::Tolerance tolerance() { return bench::Tolerance{2e-5, 1.0 / 256, 4e-3}; }

// Owning device bytes; `offset` elements of bf16 (2 bytes each) skipped at the start.
struct DevBytes {
  void* base = nullptr;
  size_t bytes = 0;
  int offset = 0;
  DevBytes() = default;
  DevBytes(size_t n, int off) : bytes(n), offset(off) {
    if (n) KL_CHECK(cudaMalloc(&base, n + 2 * off + 16));
  }
  ~DevBytes() {
    if (base) cudaFree(base);
  }
  DevBytes(const DevBytes&) = delete;
  DevBytes& operator=(const DevBytes&) = delete;
  void* ptr() const { return base ? static_cast<char*>(base) + 2 * offset : nullptr; }
  void fill(unsigned char byte) const {
    if (base) KL_CHECK(cudaMemset(base, byte, bytes + 2 * offset + 16));
  }
};

struct Shape {
  int B = 1, S = 1, Hq = 1, Hkv = 1, D = 64, L = 0;
  float theta = 500000.f;
  RopeLayout layout = RopeLayout::tokens;
  int off_in = 0, off_out = 0;  // elements of misalignment: qkv; every output
  std::string str() const {
    std::ostringstream s;
    s << (layout == RopeLayout::tokens ? "tokens" : "attention") << " B=" << B << ",S=" << S << ",Hq=" << Hq
      << ",Hkv=" << Hkv << ",D=" << D;
    if (layout == RopeLayout::attention) s << ",L=" << L;
    if (theta != 500000.f) s << " theta " << theta;
    if (off_in || off_out) s << " offsets " << off_in << "," << off_out;
    return s.str();
  }
  long long T() const { return static_cast<long long>(B) * S; }
  long long row() const { return static_cast<long long>(Hq + 2 * Hkv) * D; }
  long long cache_elems() const { return static_cast<long long>(B) * Hkv * L * D; }
};

// Positions of a prefill: sequence b's tokens at start_b + s (start_b drawn so that they fit in
// [0, L), or from `first` upward in the tokens layout).
inline std::vector<int> prefill_positions(const Shape& sh, std::mt19937_64& g, int first = 0) {
  std::vector<int> pos(sh.T());
  for (int b = 0; b < sh.B; ++b) {
    int start = first;
    if (sh.layout == RopeLayout::attention)
      start = static_cast<int>(std::uniform_int_distribution<int>(0, sh.L - sh.S)(g));
    for (int s = 0; s < sh.S; ++s) pos[static_cast<size_t>(b) * sh.S + s] = start + s;
  }
  return pos;
}

class Problem {
 public:
  Problem(const Shape& sh, std::vector<int> positions, uint64_t seed)
      : sh_(sh), pos_(std::move(positions)) {
    const long long T = sh.T();
    const size_t n = static_cast<size_t>(T * sh.row());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    bits_.resize(n);
    hqkv_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      bits_[i] = float_to_bf16_bits(u(rng));
      hqkv_[i] = bf16_bits_to_float(bits_[i]);
    }
    qkv_ = std::make_unique<DevBytes>(2 * n, sh.off_in);
    posd_ = std::make_unique<DevBytes>(4 * pos_.size(), 0);
    if (n) KL_CHECK(cudaMemcpy(qkv_->ptr(), bits_.data(), 2 * n, cudaMemcpyHostToDevice));
    if (T) KL_CHECK(cudaMemcpy(posd_->ptr(), pos_.data(), 4 * pos_.size(), cudaMemcpyHostToDevice));
    const size_t nq = static_cast<size_t>(T) * sh.Hq * sh.D, nk = static_cast<size_t>(T) * sh.Hkv * sh.D;
    q_ = std::make_unique<DevBytes>(2 * nq, sh.off_out);
    if (sh.layout == RopeLayout::tokens) {
      k_ = std::make_unique<DevBytes>(2 * nk, sh.off_out);
    } else {
      kc_ = std::make_unique<DevBytes>(2 * static_cast<size_t>(sh.cache_elems()), sh.off_out);
      vc_ = std::make_unique<DevBytes>(2 * static_cast<size_t>(sh.cache_elems()), sh.off_out);
    }
    reset();
    qref_.resize(nq);
    kref_.resize(nk);
    parallel_for(T, [&](long long t0, long long t1) {
      rope_reference(hqkv_.data(), pos_.data(), t0, t1, sh.Hq, sh.Hkv, sh.D, sh.theta, qref_.data(), kref_.data());
    }, 64);
  }

  RopeArgs args() const {
    RopeArgs a;
    a.qkv = qkv_->ptr();
    a.pos = static_cast<const int*>(posd_->ptr());
    a.B = sh_.B;
    a.S = sh_.S;
    a.Hq = sh_.Hq;
    a.Hkv = sh_.Hkv;
    a.D = sh_.D;
    a.theta = sh_.theta;
    a.layout = sh_.layout;
    a.q_out = q_->ptr();
    if (k_) a.k_out = k_->ptr();
    if (kc_) {
      a.k_cache = kc_->ptr();
      a.v_cache = vc_->ptr();
      a.L = sh_.L;
    }
    return a;
  }

  // Every output byte (and the slack around it) back to the sentinel.
  void reset() const {
    for (const auto* d : {q_.get(), k_.get(), kc_.get(), vc_.get()})
      if (d) d->fill(kSentinelByte);
  }

  // True when no output byte changed since reset() (a refused launch wrote nothing).
  bool untouched() const {
    for (const auto* d : {q_.get(), k_.get(), kc_.get(), vc_.get()}) {
      if (!d || !d->base) continue;
      std::vector<unsigned char> h(d->bytes + 2 * d->offset + 16);
      KL_CHECK(cudaMemcpy(h.data(), d->base, h.size(), cudaMemcpyDeviceToHost));
      for (unsigned char c : h)
        if (c != kSentinelByte) return false;
    }
    return true;
  }

  // The outputs of the last launch against the reference (synchronizes the device first).
  ::testing::AssertionResult check(const std::string& what) const {
    KL_CHECK(cudaDeviceSynchronize());
    const long long T = sh_.T();
    const int D = sh_.D;
    const bench::Tolerance tol = tolerance();
    if (sh_.layout == RopeLayout::tokens) {
      std::vector<float> got = bench::download_as_float(q_->ptr(), qref_.size(), DType::bf16);
      const std::vector<float> gk = bench::download_as_float(k_->ptr(), kref_.size(), DType::bf16);
      got.insert(got.end(), gk.begin(), gk.end());
      std::vector<double> ref = qref_;
      ref.insert(ref.end(), kref_.begin(), kref_.end());
      const size_t nq = qref_.size();
      return test::check_close(got, ref, tol, what + " q, k", [&](size_t i) {
        const bool q = i < nq;
        const size_t j = q ? i : i - nq, H = q ? sh_.Hq : sh_.Hkv;
        std::ostringstream s;
        s << (q ? "q" : "k") << " token " << j / (H * D) << " head " << j / D % H << " d " << j % D
          << " pos " << pos_[j / (H * D)];
        return s.str();
      });
    }
    // q in [B, Hq, S, D].
    std::vector<float> got = bench::download_as_float(q_->ptr(), qref_.size(), DType::bf16);
    std::vector<double> ref(qref_.size());
    for (long long t = 0; t < T; ++t)
      for (int h = 0; h < sh_.Hq; ++h) {
        const long long b = t / sh_.S, s = t % sh_.S;
        for (int d = 0; d < D; ++d)
          ref[((b * sh_.Hq + h) * sh_.S + s) * D + d] = qref_[(t * sh_.Hq + h) * D + d];
      }
    ::testing::AssertionResult qr = test::check_close(got, ref, tol, what + " q_out [B, Hq, S, D]");
    if (!qr) return qr;
    // The caches: rows named by a position hold k (rotated) and v (copied); the rest the sentinel.
    const size_t nc = static_cast<size_t>(sh_.cache_elems());
    std::vector<uint16_t> kc(nc), vc(nc);
    KL_CHECK(cudaMemcpy(kc.data(), kc_->ptr(), 2 * nc, cudaMemcpyDeviceToHost));
    KL_CHECK(cudaMemcpy(vc.data(), vc_->ptr(), 2 * nc, cudaMemcpyDeviceToHost));
    std::vector<long long> owner(static_cast<size_t>(sh_.B) * sh_.L, -1);
    for (long long t = 0; t < T; ++t) {
      const int p = pos_[t];
      if (p >= 0 && p < sh_.L) owner[(t / sh_.S) * sh_.L + p] = t;
    }
    std::vector<float> kgot;
    std::vector<double> kref;
    long long touched = 0, v_wrong = 0, rows_written = 0;
    std::string first_bad;
    for (int b = 0; b < sh_.B; ++b)
      for (int h = 0; h < sh_.Hkv; ++h)
        for (int r = 0; r < sh_.L; ++r) {
          const size_t base = ((static_cast<size_t>(b) * sh_.Hkv + h) * sh_.L + r) * D;
          const long long t = owner[static_cast<size_t>(b) * sh_.L + r];
          for (int d = 0; d < D; ++d) {
            if (t < 0) {
              if (kc[base + d] != kSentinel || vc[base + d] != kSentinel) {
                if (!touched++) first_bad = "b " + std::to_string(b) + " h " + std::to_string(h) + " row " +
                                            std::to_string(r) + " d " + std::to_string(d);
              }
              continue;
            }
            kgot.push_back(bf16_bits_to_float(kc[base + d]));
            kref.push_back(kref_[(t * sh_.Hkv + h) * D + d]);
            const uint16_t want = bits_[t * sh_.row() + static_cast<long long>(sh_.Hq + sh_.Hkv + h) * D + d];
            if (vc[base + d] != want) {
              if (!v_wrong++) first_bad = "v of token " + std::to_string(t) + " h " + std::to_string(h) + " d " +
                                          std::to_string(d);
            }
          }
          rows_written += t >= 0;
        }
    if (touched)
      return ::testing::AssertionFailure() << what << ": " << touched
                                           << " cache elements of rows no position names were written (first at "
                                           << first_bad << ")";
    if (v_wrong)
      return ::testing::AssertionFailure() << what << ": " << v_wrong << " v cache elements differ from v (first: "
                                           << first_bad << ")";
    if (kgot.empty()) return ::testing::AssertionSuccess();  // no position in [0, L)
    return test::check_close(kgot, kref, tol, what + " k_cache rows (" + std::to_string(rows_written) + ")");
  }

  const Shape& shape() const { return sh_; }

 private:
  Shape sh_;
  std::vector<int> pos_;
  std::vector<uint16_t> bits_;
  std::vector<float> hqkv_;
  std::vector<double> qref_, kref_;
  std::unique_ptr<DevBytes> qkv_, posd_, q_, k_, kc_, vc_;
};

}  // namespace kl::rope_test
