// tests/rowops_test_util.h — small device-buffer and comparison helpers shared by the swiglu and
// softmax GPU tests (host values in, rounded to the storage type, misaligned when asked).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kl/check.h"
#include "kl/dtype.h"
#include "tests/gpu_test.h"

namespace kl::rowops_test {

// A device tensor of n elements of type t starting `offset` elements into its allocation
// (offset 1 makes the pointer only 2/4-byte aligned).
struct DevTensor {
  void* base = nullptr;
  size_t n = 0;
  DType t = DType::f32;
  int offset = 0;
  DevTensor(size_t count, DType type, int off = 0) : n(count), t(type), offset(off) {
    KL_CHECK(cudaMalloc(&base, (n + off + 1) * dtype_size(t)));
    poison();
  }
  ~DevTensor() { cudaFree(base); }
  DevTensor(const DevTensor&) = delete;
  DevTensor& operator=(const DevTensor&) = delete;
  void* ptr() const { return static_cast<char*>(base) + offset * dtype_size(t); }
  void poison() { KL_CHECK(cudaMemset(base, 0xFF, (n + offset + 1) * dtype_size(t))); }
  // Uploads v (rounded to t); returns the values the GPU holds, as floats.
  std::vector<float> upload(const std::vector<float>& v) {
    std::vector<float> held(v.size());
    if (t == DType::f32) {
      held = v;
      KL_CHECK(cudaMemcpy(ptr(), v.data(), 4 * v.size(), cudaMemcpyHostToDevice));
    } else {
      std::vector<uint16_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        b[i] = float_to_bf16_bits(v[i]);
        held[i] = bf16_bits_to_float(b[i]);
      }
      KL_CHECK(cudaMemcpy(ptr(), b.data(), 2 * b.size(), cudaMemcpyHostToDevice));
    }
    return held;
  }
  std::vector<float> download() const { return bench::download_as_float(ptr(), n, t); }
};

inline std::vector<float> random_values(size_t n, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Full comparison with the bench's per-dtype tolerance (element bound and relative-L2 gate, through
// the shared kl::test::verdict); on failure names the worst (row, col).
inline ::testing::AssertionResult close(const std::vector<float>& got,
                                        const std::vector<double>& ref, DType t, int cols,
                                        const std::string& what) {
  const bench::Tolerance tol = bench::default_tolerance(t);
  return test::check_close(got.data(), ref.data(), got.size(), tol, what, [cols](size_t i) {
    return "row " + std::to_string(i / cols) + " col " + std::to_string(i % cols);
  });
}

}  // namespace kl::rowops_test
