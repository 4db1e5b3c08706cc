#pragma once
// Which kernel of this directory times a Workload op (sim/model/workload.hpp), and
// with what sizes. Plain C++: the profiler plans with it on any machine.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/model/workload.hpp"

namespace simtrain {

enum class Kernel {
  gemm,
  attention_forward,
  attention_backward,
  layernorm_forward,
  layernorm_backward,
  rmsnorm_forward,
  rmsnorm_backward,
  gelu_forward,
  gelu_backward,
  swiglu_forward,
  swiglu_backward,
  cross_entropy_forward,
  cross_entropy_backward,
  adamw,
  embedding_forward,
  embedding_backward,
  elementwise,  // ops without a kernel of their own (dropout, bias-add, softmax, ...): their bytes, streamed
};
std::string to_string(Kernel kernel);

// What an op's shape does not say: the row widths and variants of the
// scenario's model, as one tensor-parallel rank sees them.
struct KernelContext {
  int64_t hidden = 0;       // row width of the norms and of the embedding
  int64_t vocab_shard = 0;  // row width of the cross-entropy, rows of the embedding table
  bool rms_norm = false;
  int embedding_tables = 1;  // 2 with a learned position table
};
KernelContext kernel_context(const Scenario& scenario);

struct KernelCall {
  Kernel kernel = Kernel::elementwise;
  Dtype dtype = Dtype::bf16;  // of the kernel's inputs: op_dtype (fp8 only for the linears' GEMMs of fp8 training)
  // gemm: {M, N, K}; attention: {batch, heads, seq, head_dim}; norms and
  // cross-entropy: {rows, row width}; gelu, swiglu: {output elements};
  // adamw: {parameters}; embedding: {tokens, hidden, table rows, tables};
  // elementwise: {bytes read + written}.
  std::vector<int64_t> sizes;

  std::string description() const;  // "gemm 2048x4608x12288 bf16"
};

KernelCall kernel_call(const Op& op, Dtype dtype, const KernelContext& context);

// The distinct calls of a rank's compute tasks, by description(): what a
// live backend prepares once and launches for every op that makes it.
std::map<std::string, KernelCall> rank_kernel_calls(const Program& program, int rank, Dtype dtype,
                                                    const KernelContext& context);

}  // namespace simtrain
