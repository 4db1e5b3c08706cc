// The live host backend's kernels (OpenBLAS GEMMs and attention, GELU)
// against the CPU references, within float rounding (the references
// accumulate in double).
#include <gtest/gtest.h>

#include <vector>

#include "host/attention.hpp"
#include "host/gelu.hpp"
#include "host/gemm.hpp"
#include "reference/activations.hpp"
#include "reference/attention.hpp"
#include "reference/gemm.hpp"
#include "random_values.hpp"

namespace simtrain {
namespace {

using kernel_tests::random_values;

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance,
                  const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], tolerance) << what << " at " << i;
}

TEST(HostGemm, EqualsTheReference) {
  const int64_t m = 37, n = 53, k = 301;  // no size a multiple of a BLAS block
  const std::vector<float> x = random_values(m * k, 1), w = random_values(n * k, 2);
  std::vector<float> y(m * n, -1);  // overwritten
  host::gemm(x.data(), w.data(), y.data(), m, n, k);
  expect_close(y, reference::gemm(x, w, m, n, k), 1e-4, "y");
}

TEST(HostGelu, EqualsTheReferenceFromTheOriginToSaturation) {
  std::vector<float> x = random_values(10000, 7);
  for (float& v : x) v *= 12;  // past the tanh approximation's clamp at 7.9
  x.insert(x.end(), {0.f, -0.f, 1e-20f, -30.f, 30.f, 7.9f, -7.9f});
  const std::vector<float> dy = random_values(x.size(), 8);
  std::vector<float> y(x.size()), dx(x.size());
  host::gelu_forward(x.data(), y.data(), int64_t(x.size()));
  host::gelu_backward(dy.data(), x.data(), dx.data(), int64_t(x.size()));
  expect_close(y, reference::gelu_forward(x), 1e-5, "y");
  expect_close(dx, reference::gelu_backward(dy, x), 1e-5, "dx");
}

// Sequences shorter than a block, of whole blocks and with a partial last block.
class HostAttention : public ::testing::TestWithParam<int64_t> {};

TEST_P(HostAttention, ForwardAndBackwardEqualTheReference) {
  const AttentionShape shape{2, 3, GetParam(), 16};
  const size_t n = size_t(shape.elements()), rows = size_t(shape.rows());
  const std::vector<float> q = random_values(n, 3), k = random_values(n, 4), v = random_values(n, 5),
                           dout = random_values(n, 6);
  const reference::AttentionForward expected = reference::attention_forward(q, k, v, shape);
  std::vector<float> out(n, -1), lse(rows, -1);
  host::attention_forward(q.data(), k.data(), v.data(), out.data(), lse.data(), shape);
  expect_close(out, expected.out, 1e-5, "out");
  expect_close(lse, expected.lse, 1e-5, "lse");

  const reference::AttentionGradients gradients =
      reference::attention_backward(q, k, v, expected.out, dout, expected.lse, shape);
  std::vector<float> dq(n, -1), dk(n, -1), dv(n, -1);
  host::attention_backward(q.data(), k.data(), v.data(), expected.out.data(), dout.data(), expected.lse.data(),
                           dq.data(), dk.data(), dv.data(), shape);
  expect_close(dq, gradients.dq, 1e-4, "dq");
  expect_close(dk, gradients.dk, 1e-4, "dk");
  expect_close(dv, gradients.dv, 1e-4, "dv");
}

INSTANTIATE_TEST_SUITE_P(Sequences, HostAttention, ::testing::Values(1, 5, 128, 256, 300));

}  // namespace
}  // namespace simtrain
