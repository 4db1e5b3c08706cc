// The host backend's compute (live/cpu_kernel.hpp): every kernel runs at
// small sizes, holds the bytes it says it needs, and
// refuses sizes it cannot run.
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "cpu_kernel.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

std::vector<KernelCall> small_calls() {
  return {
      {Kernel::gemm, Dtype::bf16, {3, 5, 7}},
      {Kernel::gemm, Dtype::fp8, {4, 4, 4}},
      {Kernel::attention_forward, Dtype::bf16, {1, 2, 5, 4}},
      {Kernel::attention_backward, Dtype::fp16, {2, 1, 3, 8}},
      {Kernel::layernorm_forward, Dtype::bf16, {3, 16}},
      {Kernel::layernorm_backward, Dtype::bf16, {3, 16}},
      {Kernel::rmsnorm_forward, Dtype::bf16, {4, 8}},
      {Kernel::rmsnorm_backward, Dtype::bf16, {4, 8}},
      {Kernel::gelu_forward, Dtype::bf16, {33}},
      {Kernel::gelu_backward, Dtype::bf16, {33}},
      {Kernel::swiglu_forward, Dtype::bf16, {17}},
      {Kernel::swiglu_backward, Dtype::bf16, {17}},
      {Kernel::cross_entropy_forward, Dtype::bf16, {6, 50}},
      {Kernel::cross_entropy_backward, Dtype::bf16, {6, 50}},
      {Kernel::adamw, Dtype::bf16, {100}},
      {Kernel::embedding_forward, Dtype::bf16, {8, 16, 40, 1}},
      {Kernel::embedding_forward, Dtype::bf16, {8, 16, 40, 2}},
      {Kernel::embedding_backward, Dtype::bf16, {8, 16, 40, 1}},
      {Kernel::embedding_backward, Dtype::bf16, {8, 16, 40, 2}},
      {Kernel::elementwise, Dtype::bf16, {1000}},
      {Kernel::elementwise, Dtype::bf16, {1}},
  };
}

}  // namespace

TEST(CpuKernel, EveryKernelRunsAndHoldsWhatItSaysItNeeds) {
  std::set<Kernel> covered;
  for (const KernelCall& call : small_calls()) {
    SCOPED_TRACE(call.description());
    const double needed = CpuKernel::bytes_needed(call);
    CpuKernel kernel(call);
    EXPECT_EQ(kernel.bytes(), needed);
    EXPECT_GT(needed, 0);
    kernel.run();
    kernel.run();  // launches repeat on the same buffers
    EXPECT_EQ(kernel.bytes(), needed) << "a launch changed the buffers' sizes";
    covered.insert(call.kernel);
  }
  EXPECT_EQ(covered.size(), size_t(Kernel::elementwise) + 1) << "a Kernel without a case here";
}

TEST(CpuKernel, BytesAreTheCallsBuffersAsFloats) {
  // x[M][K], w[N][K], y[M][N]
  EXPECT_EQ(CpuKernel::bytes_needed({Kernel::gemm, Dtype::bf16, {2, 3, 4}}), 4.0 * (8 + 12 + 6));
  // logits, loss, lse as floats; targets as ints
  EXPECT_EQ(CpuKernel::bytes_needed({Kernel::cross_entropy_forward, Dtype::bf16, {2, 10}}), 4.0 * (20 + 2 + 2 + 2));
  // the byte stream holds the call's bytes, rounded up to whole floats per half
  EXPECT_EQ(CpuKernel::bytes_needed({Kernel::elementwise, Dtype::bf16, {1 << 20}}), double(1 << 20));
  EXPECT_EQ(CpuKernel::bytes_needed({Kernel::elementwise, Dtype::bf16, {10}}), 16.0);
}

TEST(CpuKernel, SizesOfALargeCallAreCountedWithoutAllocating) {
  // 2^40 elements per operand: far beyond this machine, counted all the same.
  const KernelCall huge{Kernel::gemm, Dtype::bf16, {1 << 20, 1 << 20, 1 << 20}};
  EXPECT_EQ(CpuKernel::bytes_needed(huge), 3 * 4.0 * double(int64_t(1) << 40));
}

TEST(CpuKernel, RefusesSizesItCannotRun) {
  const std::vector<KernelCall> bad = {
      {Kernel::gemm, Dtype::bf16, {2, 3}},
      {Kernel::gemm, Dtype::bf16, {2, 0, 4}},
      {Kernel::gemm, Dtype::bf16, {1, 1, int64_t(1) << 31}},  // beyond BLAS's int sizes
      {Kernel::attention_forward, Dtype::bf16, {1, 1, -1, 4}},
      {Kernel::elementwise, Dtype::bf16, {}},
      {Kernel::embedding_forward, Dtype::bf16, {8, 16, 40, 3}},
      {Kernel::cross_entropy_forward, Dtype::bf16, {1, int64_t(1) << 40}},
      {Kernel::gemm, Dtype::bf16, {int64_t(1) << 40, 1, int64_t(1) << 40}},
  };
  for (const KernelCall& call : bad) {
    SCOPED_TRACE(call.description());
    EXPECT_THROW(CpuKernel::bytes_needed(call), std::invalid_argument);
    EXPECT_THROW(CpuKernel{call}, std::invalid_argument);
  }
}

TEST(CpuKernel, EveryOpOfAProgramMapsToACallItCanSize) {
  // Llama-like (RMSNorm, SwiGLU) and GPT-like (LayerNorm, GELU, learned positions).
  nlohmann::json gpt = fixtures::scenario_json(2, 2, 1, 4, "1f1b");
  nlohmann::json llama = gpt;
  llama["model"]["model_type"] = "llama";
  llama["model"]["hidden_act"] = "silu";
  llama["model"]["intermediate_size"] = 1376;
  for (const nlohmann::json& document : {gpt, llama}) {
    const Scenario scenario = parse_scenario(document, "test", ".");
    const Program program = build_program(scenario, build_workload(scenario));
    const KernelContext context = kernel_context(scenario);
    std::set<std::string> seen;
    for (const Work& work : program.works)
      for (const Op& op : work.ops) {
        const KernelCall call = kernel_call(op, scenario.training.dtype, context);
        seen.insert(call.description());
        EXPECT_GT(CpuKernel::bytes_needed(call), 0) << call.description();
      }
    EXPECT_GT(seen.size(), 10u);
  }
}
