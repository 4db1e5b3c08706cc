// The fused causal attention against the CPU reference, forward and backward,
// in bf16 and fp16, at sequence lengths that do and do not fill the tiles.
#include "attention.hpp"
#include "gpu_test_support.hpp"
#include "reference/attention.hpp"

namespace simtrain::testing_gpu {
namespace {

template <typename T>
class Attention : public GpuTest {
protected:
  void check(const AttentionShape& shape) {
    const int64_t n = shape.elements();
    const std::vector<float> q = rounded<T>(random_values(n, 1, -2, 2)), k = rounded<T>(random_values(n, 2, -2, 2)),
                             v = rounded<T>(random_values(n, 3)), dout = rounded<T>(random_values(n, 4));
    const reference::AttentionForward forward = reference::attention_forward(q, k, v, shape);
    // The backward of both sides starts from the same saved tensors: the output as T holds it.
    const std::vector<float> out = rounded<T>(forward.out);
    const reference::AttentionGradients grads = reference::attention_backward(q, k, v, out, dout, forward.lse, shape);

    const auto q_d = upload<T>(q), k_d = upload<T>(k), v_d = upload<T>(v), out_ref_d = upload<T>(out),
               dout_d = upload<T>(dout);
    const cuda::DeviceBuffer<float> lse_ref_d(forward.lse);
    cuda::DeviceBuffer<T> out_d(n), dq_d(n), dk_d(n), dv_d(n);
    cuda::DeviceBuffer<float> lse_d(shape.rows());
    cuda::DeviceBuffer<std::byte> workspace(cuda::attention_backward_workspace_bytes(shape));
    cuda::attention_forward(q_d.get(), k_d.get(), v_d.get(), out_d.get(), lse_d.get(), shape, 0);
    cuda::attention_backward(q_d.get(), k_d.get(), v_d.get(), out_ref_d.get(), dout_d.get(), lse_ref_d.get(),
                             dq_d.get(), dk_d.get(), dv_d.get(), workspace.get(), shape, 0);
    synchronize();
    expect_close(download(out_d), forward.out, tolerance<T>(), "out");
    expect_close(lse_d.to_host(), forward.lse, kFp32Tolerance, "lse");
    // dq and dk sum dS x (k or q) over the keys, with dS = P (dP - D): dP and D
    // are each a sum of head_dim products dO x V that cancel exactly where a row
    // sees one key (P = 1, D = dP): there fp32 rounding is all that is left.
    const double largest_dout = largest_magnitude(dout), largest_v = largest_magnitude(v);
    const double term = largest_dout * largest_v / std::sqrt(double(shape.head_dim));  // softmax scale 1/sqrt(d)
    const CancellingTerms dp_minus_d{double(shape.head_dim), term};
    expect_close(download(dq_d), grads.dq, tolerance<T>(), "dq",
                 {dp_minus_d.terms, dp_minus_d.term_size * largest_magnitude(k)});
    expect_close(download(dk_d), grads.dk, tolerance<T>(), "dk",
                 {dp_minus_d.terms, dp_minus_d.term_size * largest_magnitude(q)});
    expect_close(download(dv_d), grads.dv, tolerance<T>(), "dv");
  }
};
using ElementTypes = ::testing::Types<__nv_bfloat16, __half>;
TYPED_TEST_SUITE(Attention, ElementTypes);

TYPED_TEST(Attention, OneToken) { this->check({1, 1, 1, 64}); }
TYPED_TEST(Attention, FullTiles) { this->check({2, 3, 64, 128}); }
TYPED_TEST(Attention, PartialTiles) { this->check({1, 2, 77, 80}); }

}  // namespace
}  // namespace simtrain::testing_gpu
