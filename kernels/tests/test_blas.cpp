// The live host backend's OpenBLAS kernels against the CPU references, within
// float rounding (the references accumulate in double).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "blas/attention.hpp"
#include "blas/gemm.hpp"
#include "reference/attention.hpp"
#include "reference/gemm.hpp"

namespace simtrain {
namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(n);
  for (float& v : values) v = uniform(generator);
  return values;
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance,
                  const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], tolerance) << what << " at " << i;
}

TEST(BlasGemm, EqualsTheReference) {
  const int64_t m = 37, n = 53, k = 301;  // no size a multiple of a BLAS block
  const std::vector<float> x = random_values(m * k, 1), w = random_values(n * k, 2);
  std::vector<float> y(m * n, -1);  // overwritten
  blas::gemm(x.data(), w.data(), y.data(), m, n, k);
  expect_close(y, reference::gemm(x, w, m, n, k), 1e-4, "y");
}

// Sequences shorter than a block, of whole blocks and with a partial last block.
class BlasAttention : public ::testing::TestWithParam<int64_t> {};

TEST_P(BlasAttention, ForwardAndBackwardEqualTheReference) {
  const AttentionShape shape{2, 3, GetParam(), 16};
  const size_t n = size_t(shape.elements()), rows = size_t(shape.rows());
  const std::vector<float> q = random_values(n, 3), k = random_values(n, 4), v = random_values(n, 5),
                           dout = random_values(n, 6);
  const reference::AttentionForward expected = reference::attention_forward(q, k, v, shape);
  std::vector<float> out(n, -1), lse(rows, -1);
  blas::attention_forward(q.data(), k.data(), v.data(), out.data(), lse.data(), shape);
  expect_close(out, expected.out, 1e-5, "out");
  expect_close(lse, expected.lse, 1e-5, "lse");

  const reference::AttentionGradients gradients =
      reference::attention_backward(q, k, v, expected.out, dout, expected.lse, shape);
  std::vector<float> dq(n, -1), dk(n, -1), dv(n, -1);
  blas::attention_backward(q.data(), k.data(), v.data(), expected.out.data(), dout.data(), expected.lse.data(),
                           dq.data(), dk.data(), dv.data(), shape);
  expect_close(dq, gradients.dq, 1e-4, "dq");
  expect_close(dk, gradients.dk, 1e-4, "dk");
  expect_close(dv, gradients.dv, 1e-4, "dv");
}

INSTANTIATE_TEST_SUITE_P(Sequences, BlasAttention, ::testing::Values(1, 5, 128, 256, 300));

}  // namespace
}  // namespace simtrain
