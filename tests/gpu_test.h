// tests/gpu_test.h — what every GPU test starts with.
//
// KL_REQUIRE_GPU() skips the test, visibly and with the reason, when no CUDA device is usable
// (no driver, no device). On a machine with a GPU the test always runs.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "kernels/common/check.h"
#include "kernels/common/device.h"

#define KL_REQUIRE_GPU()                                                 \
  do {                                                                   \
    std::string kl_why_ = ::kl::gpu_unavailable_reason();               \
    if (!kl_why_.empty()) GTEST_SKIP() << "no usable GPU: " << kl_why_; \
  } while (0)

namespace kl::test {

// cudaDeviceSynchronize with a watchdog: a barrier-phase or flag bug deadlocks a kernel forever;
// rather than hang the whole ctest run, name what was running and exit.
inline void sync_or_die(const std::string& what) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = cudaStreamQuery(0);
    if (e != cudaErrorNotReady) {
      KL_CHECK(e);
      KL_CHECK(cudaDeviceSynchronize());
      return;
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) {
      std::fprintf(stderr, "\nHANG: %s did not finish in 20 s (mbarrier phase, arrival count or flag?)\n",
                   what.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace kl::test
