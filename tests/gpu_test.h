// tests/gpu_test.h — what every GPU test starts with.
//
// KL_REQUIRE_GPU() skips the test, visibly and with the reason, when no CUDA device is usable
// (no driver, no device). On a machine with a GPU the test always runs.
#pragma once
#include <gtest/gtest.h>

#include "kernels/common/device.h"

#define KL_REQUIRE_GPU()                                                 \
  do {                                                                   \
    std::string kl_why_ = ::kl::gpu_unavailable_reason();               \
    if (!kl_why_.empty()) GTEST_SKIP() << "no usable GPU: " << kl_why_; \
  } while (0)
