// tests/test_cpu_swiglu.cpp — the SwiGLU CPU reference on hand-checked values, the byte/FLOP
// formulas, and argument refusals that need no GPU (the entry point checks before launching).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kl/swiglu.h"

namespace {

using namespace kl;

TEST(SwigluCpu, HandCheckedValues) {
  // silu(g) * u = g * sigmoid(g) * u.
  const std::vector<float> g = {0.f, 1.f, -1.f, 2.f, 100.f, -100.f, -1000.f};
  const std::vector<float> u = {5.f, 2.f, 3.f, -1.f, 0.5f, 1.f, 1.f};
  std::vector<double> y(g.size());
  swiglu_reference(g.data(), u.data(), y.data(), g.size());
  EXPECT_EQ(y[0], 0.0);
  EXPECT_NEAR(y[1], 2.0 * 0.7310585786300049, 1e-15);   // sigmoid(1) = 0.73105857863
  EXPECT_NEAR(y[2], -3.0 * 0.2689414213699951, 1e-15);  // sigmoid(-1) = 0.26894142137
  EXPECT_NEAR(y[3], -2.0 * 0.8807970779778823, 1e-15);  // sigmoid(2) = 0.88079707798
  EXPECT_NEAR(y[4], 50.0, 1e-12);                        // sigmoid(100) = 1 - 3.7e-44
  EXPECT_NEAR(y[5], -100.0 * std::exp(-100.0), 1e-50);  // ~ -3.7e-42, no overflow trouble
  EXPECT_TRUE(std::isfinite(y[6]));                      // exp(1000) = inf -> -1000/inf = -0
  EXPECT_EQ(y[6], 0.0);
}

TEST(SwigluCpu, Formulas) {
  EXPECT_DOUBLE_EQ(swiglu_bytes(16384, 8192, DType::bf16), 3.0 * 16384 * 8192 * 2);
  EXPECT_DOUBLE_EQ(swiglu_bytes(4096, 14336, DType::f32), 3.0 * 4096 * 14336 * 4);
  EXPECT_DOUBLE_EQ(swiglu_flops(2, 3), 30.0);
}

TEST(SwigluCpu, ArgumentChecks) {
  SwigluArgs a;
  int dummy[4];
  a.g = a.u = dummy;
  a.y = dummy + 1;
  a.rows = 1;
  a.cols = 4;
  EXPECT_EQ(swiglu_check_args(a), "");
  a.cols = 0;
  EXPECT_NE(swiglu_check_args(a), "");
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  a.cols = 4;
  a.rows = -1;
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  a.rows = 1;
  a.y = dummy;  // in place (g == y)
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  a.y = nullptr;
  EXPECT_THROW(swiglu(a, 0), BadArgument);
  // Pointers off the element grid and an unknown dtype.
  a.y = dummy + 1;
  a.g = reinterpret_cast<const char*>(dummy) + 2;
  EXPECT_NE(swiglu_check_args(a).find("element size"), std::string::npos);  // f32
  a.dtype = DType::bf16;
  EXPECT_EQ(swiglu_check_args(a), "");
  a.dtype = static_cast<DType>(7);
  EXPECT_NE(swiglu_check_args(a).find("dtype"), std::string::npos);
  EXPECT_THROW(swiglu(a, 0), BadArgument);
}

TEST(SwigluCpu, TableIsALadder) {
  const auto& t = swiglu_rungs();
  ASSERT_GE(t.size(), 4u);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].number, static_cast<int>(i));
    EXPECT_NE(std::string(t[i].name), "");
    EXPECT_NE(std::string(t[i].change), "");
  }
}

}  // namespace
