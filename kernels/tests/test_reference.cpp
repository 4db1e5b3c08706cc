// The CPU references against hand-computed values, and each backward against
// finite differences of its forward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "reference/activations.hpp"
#include "reference/adamw.hpp"
#include "reference/attention.hpp"
#include "reference/cross_entropy.hpp"
#include "reference/embedding.hpp"
#include "reference/gemm.hpp"
#include "reference/norms.hpp"
#include "random_values.hpp"

namespace simtrain::reference {
namespace {

void expect_values(const std::vector<float>& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

using kernel_tests::random_values;

double weighted_sum(const std::vector<float>& values, const std::vector<float>& weights) {
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) sum += double(values[i]) * weights[i];
  return sum;
}

// Central differences of loss() with respect to every element of `input`.
std::vector<double> numeric_gradient(std::vector<float>& input, const std::function<double()>& loss) {
  constexpr float step = 1e-2f;
  std::vector<double> gradient(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    const float saved = input[i];
    input[i] = saved + step;
    const double up = loss();
    input[i] = saved - step;
    const double down = loss();
    input[i] = saved;
    gradient[i] = (up - down) / (2.0 * step);
  }
  return gradient;
}

TEST(ReferenceGemm, TwoByTwo) {
  // x = [[1, 2], [3, 4]]; w (as [out][in]) = [[5, 6], [7, 8]]: y = x w^T.
  expect_values(gemm({1, 2, 3, 4}, {5, 6, 7, 8}, 2, 2, 2), {17, 23, 39, 53}, 0);
  expect_values(gemm({1, 2, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, 1, 4, 3), {1, 2, 3, 6}, 0);
}

TEST(ReferenceAttention, OneTokenReturnsItsValue) {
  const AttentionShape shape{1, 1, 1, 2};
  const AttentionForward result = attention_forward({1, 0}, {2, 0}, {3, 4}, shape);
  expect_values(result.out, {3, 4}, 0);
  expect_values(result.lse, {2 / std::sqrt(2.0)}, 1e-6);  // the one scaled score
}

TEST(ReferenceAttention, SecondTokenMixesBothValues) {
  // head_dim 1 (scale 1): token 1 scores keys 0 and ln 3 against q = 1, so
  // attends 1/4 and 3/4; token 0 sees only itself (causal).
  const AttentionShape shape{1, 1, 2, 1};
  const AttentionForward result = attention_forward({5, 1}, {0, float(std::log(3.0))}, {4, 8}, shape);
  expect_values(result.out, {4, 0.25 * 4 + 0.75 * 8}, 1e-6);
  expect_values(result.lse, {0, std::log(4.0)}, 1e-6);
}

TEST(ReferenceAttention, BackwardMatchesFiniteDifferences) {
  const AttentionShape shape{1, 2, 5, 4};
  std::vector<float> q = random_values(shape.elements(), 1), k = random_values(shape.elements(), 2),
                     v = random_values(shape.elements(), 3);
  const std::vector<float> dout = random_values(shape.elements(), 4);
  const AttentionForward forward = attention_forward(q, k, v, shape);
  const AttentionGradients grads = attention_backward(q, k, v, forward.out, dout, forward.lse, shape);
  const auto loss = [&] { return weighted_sum(attention_forward(q, k, v, shape).out, dout); };
  expect_values(grads.dq, numeric_gradient(q, loss), 2e-3);
  expect_values(grads.dk, numeric_gradient(k, loss), 2e-3);
  expect_values(grads.dv, numeric_gradient(v, loss), 2e-3);
}

TEST(ReferenceNorms, LayerNormOfAKnownVector) {
  // mean 2.5, variance 1.25.
  const double r = 1 / std::sqrt(1.25 + kNormEpsilon);
  const NormForward plain = layernorm_forward({1, 2, 3, 4}, {1, 1, 1, 1}, {0, 0, 0, 0}, 1, 4);
  expect_values(plain.y, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-6);
  expect_values(plain.mean, {2.5}, 0);
  expect_values(plain.rstd, {r}, 1e-6);
  const NormForward affine = layernorm_forward({1, 2, 3, 4}, {2, 2, 2, 2}, {1, 0, 0, -1}, 1, 4);
  expect_values(affine.y, {1 - 3 * r, -r, r, 3 * r - 1}, 1e-6);
}

TEST(ReferenceNorms, RmsNormOfAKnownVector) {
  const double r = 1 / std::sqrt(7.5 + kNormEpsilon);  // mean square of 1, 2, 3, 4
  const NormForward result = rmsnorm_forward({1, 2, 3, 4}, {1, 1, 1, 2}, 1, 4);
  expect_values(result.y, {r, 2 * r, 3 * r, 8 * r}, 1e-6);
  expect_values(result.rstd, {r}, 1e-6);
}

TEST(ReferenceNorms, BackwardsMatchFiniteDifferences) {
  const int64_t rows = 3, cols = 6;
  std::vector<float> x = random_values(rows * cols, 5), gamma = random_values(cols, 6), beta = random_values(cols, 7);
  const std::vector<float> dy = random_values(rows * cols, 8);
  const NormGradients layer = layernorm_backward(dy, x, gamma, layernorm_forward(x, gamma, beta, rows, cols), rows, cols);
  const auto layer_loss = [&] { return weighted_sum(layernorm_forward(x, gamma, beta, rows, cols).y, dy); };
  expect_values(layer.dx, numeric_gradient(x, layer_loss), 2e-3);
  expect_values(layer.dgamma, numeric_gradient(gamma, layer_loss), 2e-3);
  expect_values(layer.dbeta, numeric_gradient(beta, layer_loss), 2e-3);

  const NormGradients rms = rmsnorm_backward(dy, x, gamma, rmsnorm_forward(x, gamma, rows, cols), rows, cols);
  const auto rms_loss = [&] { return weighted_sum(rmsnorm_forward(x, gamma, rows, cols).y, dy); };
  expect_values(rms.dx, numeric_gradient(x, rms_loss), 2e-3);
  expect_values(rms.dgamma, numeric_gradient(gamma, rms_loss), 2e-3);
}

TEST(ReferenceActivations, GeluKnownValues) {
  // PyTorch's gelu(approximate="tanh").
  expect_values(gelu_forward({0, 1, -1, 2, -3}), {0, 0.8411920, -0.1588080, 1.9545977, -0.0036374}, 1e-6);
}

TEST(ReferenceActivations, SwigluKnownValues) {
  // silu(1) = 1 / (1 + e^-1) = 0.7310586; silu(0) = 0; silu(-2) = -2 / (1 + e^2).
  expect_values(swiglu_forward({1, 0, -2}, {2, 5, 1}), {2 * 0.7310586, 0, -2 / (1 + std::exp(2.0))}, 1e-6);
}

TEST(ReferenceActivations, BackwardsMatchFiniteDifferences) {
  std::vector<float> x = random_values(8, 9), up = random_values(8, 10);
  const std::vector<float> dy = random_values(8, 11);
  expect_values(gelu_backward(dy, x), numeric_gradient(x, [&] { return weighted_sum(gelu_forward(x), dy); }), 1e-3);
  const SwigluGradients grads = swiglu_backward(dy, x, up);
  const auto loss = [&] { return weighted_sum(swiglu_forward(x, up), dy); };
  expect_values(grads.dgate, numeric_gradient(x, loss), 1e-3);
  expect_values(grads.dup, numeric_gradient(up, loss), 1e-3);
}

TEST(ReferenceCrossEntropy, KnownLogits) {
  // Uniform logits over 4 words: ln 4. Logits 1, 2, 3 with target 0: ln(e + e^2 + e^3) - 1.
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const CrossEntropyForward uniform = cross_entropy_forward({0, 0, 0, 0}, {2}, 1, 4);
  expect_values(uniform.loss, {std::log(4.0)}, 1e-6);
  const CrossEntropyForward rising = cross_entropy_forward({1, 2, 3}, {0}, 1, 3);
  expect_values(rising.lse, {lse}, 1e-6);
  expect_values(rising.loss, {lse - 1}, 1e-6);
  // softmax - onehot, times dloss.
  expect_values(cross_entropy_backward({0, 0, 0, 0}, {2}, uniform.lse, {2}, 1, 4), {0.5, 0.5, -1.5, 0.5}, 1e-6);
}

TEST(ReferenceAdamW, TwoStepsFollowTheFormula) {
  const math::AdamWConfig first{.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f,
                                .step = 1};
  std::vector<float> param = {1}, m = {0}, v = {0};
  adamw(param, m, v, {0.5}, first);
  // decay: 1 - 0.1 * 0.01 = 0.999; m = 0.05, v = 0.00025; bias-corrected 0.5 and 0.25: step 0.1 * 0.5 / 0.5.
  // Tolerances allow for 0.9 and 0.999 not being exact in float.
  expect_values(m, {0.05}, 1e-7);
  expect_values(v, {0.00025}, 1e-8);
  expect_values(param, {0.899}, 1e-6);
  math::AdamWConfig second = first;
  second.step = 2;
  adamw(param, m, v, {0.5}, second);
  // m = 0.095, v = 0.00049975, corrected again to 0.5 and 0.25: 0.899 * 0.999 - 0.1.
  expect_values(m, {0.095}, 1e-7);
  expect_values(v, {0.00049975}, 1e-8);
  expect_values(param, {0.899 * 0.999 - 0.1}, 1e-6);
}

TEST(ReferenceEmbedding, LookupAndScatterAdd) {
  const std::vector<float> table = {1, 2, 3, 4, 5, 6}, positions = {10, 20, 30, 40, 50, 60};
  expect_values(embedding_forward(table, {2, 0, 2}, {}, {}, 2), {5, 6, 1, 2, 5, 6}, 0);
  expect_values(embedding_forward(table, {2, 0, 2}, positions, {0, 1, 2}, 2), {15, 26, 31, 42, 55, 66}, 0);
  std::vector<float> dtable(6), dpositions(6);
  embedding_backward({1, 2, 3, 4, 5, 6}, {2, 0, 2}, {0, 1, 2}, dtable, dpositions, 2);
  expect_values(dtable, {3, 4, 0, 0, 6, 8}, 0);  // token 0 and 2 both land in row 2
  expect_values(dpositions, {1, 2, 3, 4, 5, 6}, 0);
}

}  // namespace
}  // namespace simtrain::reference
