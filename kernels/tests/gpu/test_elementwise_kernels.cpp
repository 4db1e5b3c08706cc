// Norms, activations, cross-entropy, AdamW, embedding and the byte-streaming
// stand-in, each against its CPU reference, in bf16 and fp16.
#include "activations.hpp"
#include "adamw.hpp"
#include "cross_entropy.hpp"
#include "elementwise.hpp"
#include "embedding.hpp"
#include "gpu_test_support.hpp"
#include "norms.hpp"
#include "reference/activations.hpp"
#include "reference/adamw.hpp"
#include "reference/cross_entropy.hpp"
#include "reference/embedding.hpp"
#include "reference/norms.hpp"

namespace simtrain::testing_gpu {
namespace {

template <typename T>
class ElementwiseKernels : public GpuTest {};
using ElementTypes = ::testing::Types<__nv_bfloat16, __half>;
TYPED_TEST_SUITE(ElementwiseKernels, ElementTypes);

TYPED_TEST(ElementwiseKernels, LayerNorm) {
  using T = TypeParam;
  const int64_t rows = 7, cols = 1000;  // cols not a multiple of the block
  const std::vector<float> x = rounded<T>(random_values(rows * cols, 1, -2, 3)), gamma = rounded<T>(random_values(cols, 2)),
                           beta = rounded<T>(random_values(cols, 3)), dy = rounded<T>(random_values(rows * cols, 4));
  const reference::NormForward forward = reference::layernorm_forward(x, gamma, beta, rows, cols);
  const reference::NormGradients backward = reference::layernorm_backward(dy, x, gamma, forward, rows, cols);

  auto x_d = upload<T>(x), gamma_d = upload<T>(gamma), beta_d = upload<T>(beta), dy_d = upload<T>(dy);
  cuda::DeviceBuffer<T> y_d(rows * cols), dx_d(rows * cols);
  cuda::DeviceBuffer<float> mean_d(rows), rstd_d(rows), dgamma_d(cols), dbeta_d(cols);
  cuda::layernorm_forward(x_d.get(), gamma_d.get(), beta_d.get(), y_d.get(), mean_d.get(), rstd_d.get(), rows, cols, 0);
  const cuda::DeviceBuffer<float> saved_mean(forward.mean), saved_rstd(forward.rstd);
  cuda::layernorm_backward(dy_d.get(), x_d.get(), gamma_d.get(), saved_mean.get(), saved_rstd.get(), dx_d.get(),
                           dgamma_d.get(), dbeta_d.get(), rows, cols, 0);
  synchronize();
  expect_close(download(y_d), forward.y, tolerance<T>(), "y");
  expect_close(mean_d.to_host(), forward.mean, kFp32Tolerance, "mean");
  expect_close(rstd_d.to_host(), forward.rstd, kFp32Tolerance, "rstd");
  expect_close(download(dx_d), backward.dx, tolerance<T>(), "dx");
  expect_close(dgamma_d.to_host(), backward.dgamma, kFp32Tolerance, "dgamma");
  expect_close(dbeta_d.to_host(), backward.dbeta, kFp32Tolerance, "dbeta");
}

TYPED_TEST(ElementwiseKernels, RmsNorm) {
  using T = TypeParam;
  const int64_t rows = 5, cols = 4096;
  const std::vector<float> x = rounded<T>(random_values(rows * cols, 5)), gamma = rounded<T>(random_values(cols, 6)),
                           dy = rounded<T>(random_values(rows * cols, 7));
  const reference::NormForward forward = reference::rmsnorm_forward(x, gamma, rows, cols);
  const reference::NormGradients backward = reference::rmsnorm_backward(dy, x, gamma, forward, rows, cols);

  auto x_d = upload<T>(x), gamma_d = upload<T>(gamma), dy_d = upload<T>(dy);
  cuda::DeviceBuffer<T> y_d(rows * cols), dx_d(rows * cols);
  cuda::DeviceBuffer<float> rstd_d(rows), dgamma_d(cols);
  cuda::rmsnorm_forward(x_d.get(), gamma_d.get(), y_d.get(), rstd_d.get(), rows, cols, 0);
  const cuda::DeviceBuffer<float> saved_rstd(forward.rstd);
  cuda::rmsnorm_backward(dy_d.get(), x_d.get(), gamma_d.get(), saved_rstd.get(), dx_d.get(), dgamma_d.get(), rows, cols, 0);
  synchronize();
  expect_close(download(y_d), forward.y, tolerance<T>(), "y");
  expect_close(rstd_d.to_host(), forward.rstd, kFp32Tolerance, "rstd");
  expect_close(download(dx_d), backward.dx, tolerance<T>(), "dx");
  expect_close(dgamma_d.to_host(), backward.dgamma, kFp32Tolerance, "dgamma");
}

TYPED_TEST(ElementwiseKernels, Gelu) {
  using T = TypeParam;
  const int64_t n = 100003;
  const std::vector<float> x = rounded<T>(random_values(n, 8, -4, 4)), dy = rounded<T>(random_values(n, 9));
  auto x_d = upload<T>(x), dy_d = upload<T>(dy);
  cuda::DeviceBuffer<T> y_d(n), dx_d(n);
  cuda::gelu_forward(x_d.get(), y_d.get(), n, 0);
  cuda::gelu_backward(dy_d.get(), x_d.get(), dx_d.get(), n, 0);
  synchronize();
  expect_close(download(y_d), reference::gelu_forward(x), tolerance<T>(), "y");
  expect_close(download(dx_d), reference::gelu_backward(dy, x), tolerance<T>(), "dx");
}

TYPED_TEST(ElementwiseKernels, Swiglu) {
  using T = TypeParam;
  const int64_t n = 65537;
  const std::vector<float> gate = rounded<T>(random_values(n, 10, -4, 4)), up = rounded<T>(random_values(n, 11)),
                           dy = rounded<T>(random_values(n, 12));
  auto gate_d = upload<T>(gate), up_d = upload<T>(up), dy_d = upload<T>(dy);
  cuda::DeviceBuffer<T> y_d(n), dgate_d(n), dup_d(n);
  cuda::swiglu_forward(gate_d.get(), up_d.get(), y_d.get(), n, 0);
  cuda::swiglu_backward(dy_d.get(), gate_d.get(), up_d.get(), dgate_d.get(), dup_d.get(), n, 0);
  synchronize();
  const reference::SwigluGradients grads = reference::swiglu_backward(dy, gate, up);
  expect_close(download(y_d), reference::swiglu_forward(gate, up), tolerance<T>(), "y");
  expect_close(download(dgate_d), grads.dgate, tolerance<T>(), "dgate");
  expect_close(download(dup_d), grads.dup, tolerance<T>(), "dup");
}

TYPED_TEST(ElementwiseKernels, AdamW) {
  using T = TypeParam;
  const int64_t n = 10007;
  std::vector<float> param = random_values(n, 13), m = random_values(n, 14, -1e-2f, 1e-2f),
                     v = random_values(n, 15, 0, 1e-4f);
  const std::vector<float> grad = random_values(n, 16, -1e-2f, 1e-2f);
  const math::AdamWConfig config{.step = 3};
  cuda::DeviceBuffer<float> param_d(param), m_d(m), v_d(v), grad_d(grad);
  cuda::DeviceBuffer<T> weight_d(n);
  cuda::adamw(param_d.get(), m_d.get(), v_d.get(), grad_d.get(), weight_d.get(), n, config, 0);
  synchronize();
  reference::adamw(param, m, v, grad, config);
  expect_close(param_d.to_host(), param, kFp32Tolerance, "param");
  expect_close(m_d.to_host(), m, kFp32Tolerance, "m");
  expect_close(v_d.to_host(), v, kFp32Tolerance, "v");
  expect_close(download(weight_d), param, tolerance<T>(), "weight");
}

TYPED_TEST(ElementwiseKernels, Embedding) {
  using T = TypeParam;
  const int64_t tokens = 300, hidden = 320, rows = 50;  // many tokens share a row: atomics add up
  const std::vector<float> table = rounded<T>(random_values(rows * hidden, 17)),
                           positions = rounded<T>(random_values(tokens * hidden, 18)),
                           dout = rounded<T>(random_values(tokens * hidden, 19));
  std::vector<int> ids(tokens), position_ids(tokens);
  for (int64_t t = 0; t < tokens; ++t) ids[t] = int((t * 7) % rows), position_ids[t] = int(t);
  auto table_d = upload<T>(table), positions_d = upload<T>(positions), dout_d = upload<T>(dout);
  const cuda::DeviceBuffer<int> ids_d(ids), position_ids_d(position_ids);
  cuda::DeviceBuffer<T> out_d(tokens * hidden);
  cuda::DeviceBuffer<float> dtable_d(std::vector<float>(rows * hidden)), dpositions_d(std::vector<float>(tokens * hidden));
  cuda::embedding_forward(table_d.get(), ids_d.get(), positions_d.get(), position_ids_d.get(), out_d.get(), tokens,
                          hidden, 0);
  cuda::embedding_backward(dout_d.get(), ids_d.get(), position_ids_d.get(), dtable_d.get(), dpositions_d.get(), tokens,
                           hidden, 0);
  synchronize();
  std::vector<float> dtable(rows * hidden), dpositions(tokens * hidden);
  reference::embedding_backward(dout, ids, position_ids, dtable, dpositions, hidden);
  expect_close(download(out_d), reference::embedding_forward(table, ids, positions, position_ids, hidden),
               tolerance<T>(), "out");
  expect_close(dtable_d.to_host(), dtable, kFp32Tolerance, "dtable");
  expect_close(dpositions_d.to_host(), dpositions, kFp32Tolerance, "dpositions");
}

class Fp32Kernels : public GpuTest {};

TEST_F(Fp32Kernels, CrossEntropy) {
  const int64_t rows = 9, vocab = 5003;
  const std::vector<float> logits = random_values(rows * vocab, 20, -8, 8), dloss = random_values(rows, 21);
  std::vector<int> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = int((r * 977) % vocab);
  const reference::CrossEntropyForward forward = reference::cross_entropy_forward(logits, targets, rows, vocab);
  const cuda::DeviceBuffer<float> logits_d(logits), dloss_d(dloss), saved_lse(forward.lse);
  const cuda::DeviceBuffer<int> targets_d(targets);
  cuda::DeviceBuffer<float> loss_d(rows), lse_d(rows), dlogits_d(rows * vocab);
  cuda::cross_entropy_forward(logits_d.get(), targets_d.get(), loss_d.get(), lse_d.get(), rows, vocab, 0);
  cuda::cross_entropy_backward(logits_d.get(), targets_d.get(), saved_lse.get(), dloss_d.get(), dlogits_d.get(), rows,
                               vocab, 0);
  synchronize();
  expect_close(loss_d.to_host(), forward.loss, kFp32Tolerance, "loss");
  expect_close(lse_d.to_host(), forward.lse, kFp32Tolerance, "lse");
  expect_close(dlogits_d.to_host(),
               reference::cross_entropy_backward(logits, targets, forward.lse, dloss, rows, vocab), kFp32Tolerance,
               "dlogits");
}

TEST_F(Fp32Kernels, StreamBytesCopiesScaled) {
  const int64_t bytes = 1 << 20;
  const int64_t vectors = cuda::stream_vectors(bytes);
  EXPECT_EQ(vectors * 16 * 2, bytes);  // half read, half written
  const std::vector<float> in = random_values(4 * vectors, 22);
  const cuda::DeviceBuffer<float> in_d(in);
  cuda::DeviceBuffer<float> out_d(4 * vectors);
  cuda::stream_bytes(reinterpret_cast<const float4*>(in_d.get()), reinterpret_cast<float4*>(out_d.get()), vectors,
                     0.5f, 0);
  synchronize();
  std::vector<float> expected = in;
  for (float& v : expected) v *= 0.5f;
  expect_close(out_d.to_host(), expected, 0, "out");
}

}  // namespace
}  // namespace simtrain::testing_gpu
