// tests/test_gpu_pdl_chain.cu — the row-op rungs that launch programmatic-dependent (rmsnorm 09,
// add_rmsnorm 06, swiglu 06, rope 03) read their input only after the kernel before them ends.
//
// On a created stream, a producer kernel releases its dependents at once (griddepcontrol.
// launch_dependents), sleeps, then copies the rung's input into place over a poisoned buffer; the
// rung follows it on the stream. A rung that read before griddepcontrol.wait would see the poison
// (bf16 0xFFFF is a NaN) and differ from the same rung run after a synchronized copy, which is the
// expected output, bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/gpu_sleep.cuh"
#include "common/pdl.cuh"
#include "kl/check.h"
#include "kl/rmsnorm.h"
#include "kl/rope.h"
#include "kl/swiglu.h"
#include "tests/gpu_test.h"

namespace {

using namespace kl;

constexpr unsigned long long kSleepNs = 200000;  // the producer's delay before it writes

__global__ void late_copy_kernel(const uint4* src, uint4* dst, long long n16) {
  pdl_trigger();  // the rung after this kernel may start now
  bench::sleep_ns(kSleepNs);
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

using bench::DeviceBuffer;

// Random bf16 values in [-2, 2) in every element of b.
void fill_random(const DeviceBuffer& b, uint64_t seed) { bench::fill_uniform(b.ptr, b.bytes / 2, DType::bf16, seed, -2.f, 2.f); }

std::vector<unsigned char> host_bytes(const DeviceBuffer& b) {
  std::vector<unsigned char> h(b.bytes);
  KL_CHECK(cudaMemcpy(h.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
  return h;
}

// Runs `launch` on stream s twice: after the input `in` was copied from `staging` and the device
// synchronized (the expected run), and right behind late_copy_kernel writing `in` (the chained
// run). `reset` puts every other buffer back before each run. Returns the bytes of `out` per run.
void expect_chain_waits(const std::string& what, const DeviceBuffer& staging, const DeviceBuffer& in,
                        const DeviceBuffer& out, const std::function<void()>& reset,
                        const std::function<void(cudaStream_t)>& launch) {
  SCOPED_TRACE(what);
  ASSERT_EQ(staging.bytes, in.bytes);
  ASSERT_EQ(in.bytes % 16, 0u);
  const bench::Stream s;
  ASSERT_TRUE(pdl_stream(s));
  std::vector<unsigned char> want, got;
  for (int chained = 0; chained < 2; ++chained) {
    KL_CHECK(cudaMemset(out.ptr, 0, out.bytes));
    reset();
    bench::poison(in.ptr, in.bytes);
    KL_CHECK(cudaDeviceSynchronize());
    if (chained) {
      late_copy_kernel<<<8, 128, 0, s>>>(staging.as<const uint4>(), in.as<uint4>(),
                                         static_cast<long long>(in.bytes / 16));
      KL_CHECK_LAUNCH();
    } else {
      KL_CHECK(cudaMemcpy(in.ptr, staging.ptr, in.bytes, cudaMemcpyDeviceToDevice));
      KL_CHECK(cudaDeviceSynchronize());
    }
    launch(s);
    KL_CHECK(cudaStreamSynchronize(s));
    (chained ? got : want) = host_bytes(out);
  }
  ASSERT_EQ(want.size(), got.size());
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += want[i] != got[i];
  EXPECT_EQ(differ, 0u) << "bytes of the output that differ when the rung follows its producer";
}

// The rung named "pdl" of a family's table (the test fails, not crashes, when it is missing).
template <class Args>
const Rung<Args>& pdl_rung(const std::vector<Rung<Args>>& t) {
  const Rung<Args>* r = find_rung(t, "pdl");
  KL_REQUIRE(r, "no rung named pdl");
  return *r;
}

TEST(PdlChain, RmsnormWaitsForItsProducer) {
  KL_REQUIRE_GPU();
  const auto& r = pdl_rung(rmsnorm_rungs());
  for (int rows : {1, 64, 3000}) {
    const int cols = 4096;
    const size_t n = static_cast<size_t>(rows) * cols;
    DeviceBuffer staging(2 * n), x(2 * n), w(2 * cols), y(2 * n);
    fill_random(staging, 1 + rows);
    fill_random(w, 2);
    RmsnormArgs a{x.ptr, w.ptr, y.ptr, rows, cols, 1e-5f, DType::bf16};
    ASSERT_EQ(r.supports(a, device_info()), "");
    expect_chain_waits("rmsnorm rows=" + std::to_string(rows), staging, x, y, [] {},
                       [&](cudaStream_t s) { r.launch(a, s); });
  }
}

TEST(PdlChain, AddRmsnormWaitsForItsProducer) {
  KL_REQUIRE_GPU();
  const auto& r = pdl_rung(add_rmsnorm_rungs());
  for (int rows : {1, 16, 2048}) {
    const int cols = 4096;
    const size_t n = static_cast<size_t>(rows) * cols;
    DeviceBuffer staging(2 * n), x(2 * n), w(2 * cols), y(2 * n), r0(2 * n), res(2 * n);
    fill_random(staging, 3 + rows);
    fill_random(w, 4);
    fill_random(r0, 5);
    AddRmsnormArgs a{res.ptr, x.ptr, w.ptr, y.ptr, rows, cols, 1e-5f, DType::bf16};
    ASSERT_EQ(r.supports(a, device_info()), "");
    const auto reset = [&] { KL_CHECK(cudaMemcpy(res.ptr, r0.ptr, res.bytes, cudaMemcpyDeviceToDevice)); };
    const auto launch = [&](cudaStream_t s) { r.launch(a, s); };
    expect_chain_waits("add_rmsnorm y rows=" + std::to_string(rows), staging, x, y, reset, launch);
    expect_chain_waits("add_rmsnorm r rows=" + std::to_string(rows), staging, x, res, reset, launch);
  }
}

TEST(PdlChain, SwigluWaitsForItsProducer) {
  KL_REQUIRE_GPU();
  const auto& r = pdl_rung(swiglu_rungs());
  for (int rows : {1, 64, 1000}) {
    const int cols = 14336;
    const size_t n = static_cast<size_t>(rows) * cols;
    DeviceBuffer staging(2 * n), g(2 * n), u(2 * n), y(2 * n);
    fill_random(staging, 6 + rows);
    fill_random(u, 7);
    SwigluArgs a;
    a.g = g.ptr;
    a.u = u.ptr;
    a.y = y.ptr;
    a.rows = rows;
    a.cols = cols;
    a.dtype = DType::bf16;
    ASSERT_EQ(r.supports(a, device_info()), "");
    expect_chain_waits("swiglu rows=" + std::to_string(rows), staging, g, y, [] {},
                       [&](cudaStream_t s) { r.launch(a, s); });
  }
}

TEST(PdlChain, RopeWaitsForItsProducer) {
  KL_REQUIRE_GPU();
  const auto& r = pdl_rung(rope_rungs());
  const int B = 4, S = 1, Hq = 32, Hkv = 8, D = 128, L = 64;
  const size_t T = static_cast<size_t>(B) * S, row = static_cast<size_t>(Hq + 2 * Hkv) * D;
  const size_t cache = static_cast<size_t>(B) * Hkv * L * D;
  DeviceBuffer staging(2 * T * row), qkv(2 * T * row), q(2 * T * Hq * D), kc(2 * cache), vc(2 * cache), k0(2 * cache),
      pos(4 * T);
  fill_random(staging, 8);
  fill_random(k0, 9);
  const std::vector<int> hpos = {0, 7, 33, 63};
  KL_CHECK(cudaMemcpy(pos.ptr, hpos.data(), 4 * T, cudaMemcpyHostToDevice));
  RopeArgs a;
  a.qkv = qkv.ptr;
  a.pos = pos.as<const int>();
  a.B = B;
  a.S = S;
  a.Hq = Hq;
  a.Hkv = Hkv;
  a.D = D;
  a.layout = RopeLayout::attention;
  a.q_out = q.ptr;
  a.k_cache = kc.ptr;
  a.v_cache = vc.ptr;
  a.L = L;
  ASSERT_EQ(r.supports(a, device_info()), "");
  const auto reset = [&] {
    KL_CHECK(cudaMemcpy(kc.ptr, k0.ptr, kc.bytes, cudaMemcpyDeviceToDevice));
    KL_CHECK(cudaMemcpy(vc.ptr, k0.ptr, vc.bytes, cudaMemcpyDeviceToDevice));
  };
  const auto launch = [&](cudaStream_t s) { r.launch(a, s); };
  expect_chain_waits("rope q", staging, qkv, q, reset, launch);
  expect_chain_waits("rope k cache", staging, qkv, kc, reset, launch);
  expect_chain_waits("rope v cache", staging, qkv, vc, reset, launch);
}

}  // namespace
