// tests/test_cpu_softmax.cpp — the softmax CPU reference on hand-checked rows, including the
// special values every rung must match: -inf entries, the all -inf row (documented: all zeros),
// values near FLT_MAX; the byte formula; argument refusals that need no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/fake_device.h"
#include "kl/softmax.h"

namespace {

using namespace kl;
const float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<double> ref(const std::vector<float>& x, long long rows) {
  std::vector<double> y(x.size());
  softmax_reference(x.data(), y.data(), rows, static_cast<long long>(x.size()) / rows);
  return y;
}

TEST(SoftmaxCpu, HandCheckedRows) {
  auto y = ref({0.f, 0.f}, 1);
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  // [1, 2, 3]: e^-2, e^-1, 1 over their sum 1.5032147244080551.
  y = ref({1.f, 2.f, 3.f}, 1);
  EXPECT_NEAR(y[0], 0.09003057317038046, 1e-15);
  EXPECT_NEAR(y[1], 0.24472847105479767, 1e-15);
  EXPECT_NEAR(y[2], 0.6652409557748219, 1e-15);
  // Two rows are independent.
  y = ref({1.f, 2.f, 3.f, 0.f, 0.f, 0.f}, 2);
  EXPECT_NEAR(y[2], 0.6652409557748219, 1e-15);
  EXPECT_NEAR(y[3], 1.0 / 3.0, 1e-15);
}

TEST(SoftmaxCpu, NegativeInfinity) {
  auto y = ref({kNegInf, 0.f, kNegInf, 0.f}, 1);
  EXPECT_EQ(y[0], 0.0);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  EXPECT_EQ(y[2], 0.0);
  // The all -inf row: all zeros (documented in softmax.h and docs/softmax.md), not NaN.
  y = ref({kNegInf, kNegInf, kNegInf, 1.f, 1.f, 1.f}, 2);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(y[j], 0.0);
  for (int j = 3; j < 6; ++j) EXPECT_NEAR(y[j], 1.0 / 3.0, 1e-15);
}

TEST(SoftmaxCpu, HugeValues) {
  // FLT_MAX-scale inputs: the max is subtracted first, so nothing overflows.
  auto y = ref({3e38f, 3e38f, -3e38f, 1e4f}, 1);
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  EXPECT_EQ(y[2], 0.0);
  EXPECT_EQ(y[3], 0.0);
  y = ref({1e4f, 1e4f - 1.f}, 1);
  EXPECT_NEAR(y[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
}

TEST(SoftmaxCpu, RowsSumToOne) {
  std::vector<float> x(5 * 37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 23) - 11.f;
  auto y = ref(x, 5);
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int j = 0; j < 37; ++j) s += y[r * 37 + j];
    EXPECT_NEAR(s, 1.0, 1e-14);
  }
}

TEST(SoftmaxCpu, FormulasAndChecks) {
  EXPECT_DOUBLE_EQ(softmax_bytes(16384, 8192, DType::bf16), 2.0 * 16384 * 8192 * 2);
  int buf[8];
  SoftmaxArgs a;
  a.x = buf;
  a.y = buf + 4;
  a.rows = 1;
  a.cols = 4;
  EXPECT_EQ(softmax_check_args(a), "");
  a.y = buf;  // in place
  EXPECT_THROW(softmax(a, 0), BadArgument);
  a.y = buf + 4;
  a.cols = 0;
  EXPECT_THROW(softmax(a, 0), BadArgument);
  a.cols = 4;
  a.x = nullptr;
  EXPECT_THROW(softmax(a, 0), BadArgument);
  // Pointers off the element grid, an unknown dtype, rows longer than the column loops can count.
  a.x = reinterpret_cast<const char*>(buf) + 2;
  EXPECT_NE(softmax_check_args(a).find("element size"), std::string::npos);  // f32
  a.dtype = DType::bf16;
  EXPECT_EQ(softmax_check_args(a), "");
  a.x = buf;
  a.dtype = static_cast<DType>(7);
  EXPECT_NE(softmax_check_args(a).find("dtype"), std::string::npos);
  a.dtype = DType::bf16;
  a.cols = 0x7fffffff - 100;
  EXPECT_NE(softmax_check_args(a).find("at most"), std::string::npos);
  for (const auto& r : softmax_rungs())
    EXPECT_NE(r.supports(a, kl::test::fake_h200()), "") << r.name;
}

TEST(SoftmaxCpu, TableIsALadder) {
  const auto& t = softmax_rungs();
  ASSERT_GE(t.size(), 4u);
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].number, static_cast<int>(i));
}

}  // namespace
