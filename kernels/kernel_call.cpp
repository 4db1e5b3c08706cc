#include "kernel_call.hpp"

#include <cmath>

namespace simtrain {

std::string to_string(Kernel kernel) {
  switch (kernel) {
    case Kernel::gemm: return "gemm";
    case Kernel::attention_forward: return "attention_forward";
    case Kernel::attention_backward: return "attention_backward";
    case Kernel::layernorm_forward: return "layernorm_forward";
    case Kernel::layernorm_backward: return "layernorm_backward";
    case Kernel::rmsnorm_forward: return "rmsnorm_forward";
    case Kernel::rmsnorm_backward: return "rmsnorm_backward";
    case Kernel::gelu_forward: return "gelu_forward";
    case Kernel::gelu_backward: return "gelu_backward";
    case Kernel::swiglu_forward: return "swiglu_forward";
    case Kernel::swiglu_backward: return "swiglu_backward";
    case Kernel::cross_entropy_forward: return "cross_entropy_forward";
    case Kernel::cross_entropy_backward: return "cross_entropy_backward";
    case Kernel::adamw: return "adamw";
    case Kernel::embedding_forward: return "embedding_forward";
    case Kernel::embedding_backward: return "embedding_backward";
    case Kernel::elementwise: return "elementwise";
  }
  return "?";
}

KernelContext kernel_context(const Scenario& scenario) {
  const ModelConfig& model = scenario.model;
  const int64_t tp = scenario.parallel.tensor;
  return {.hidden = model.hidden_size,
          .vocab_shard = (model.vocab_size + tp - 1) / tp,
          .rms_norm = model.rms_norm,
          .embedding_tables = model.learned_position_embeddings ? 2 : 1};
}

std::string KernelCall::description() const {
  std::string text = to_string(kernel) + " ";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? "x" : "") + std::to_string(sizes[i]);
  return text + " " + to_string(dtype);
}

namespace {

int64_t rows_of(int64_t elements, int64_t width) { return (elements + width - 1) / width; }

}  // namespace

KernelCall kernel_call(const Op& op, Dtype dtype, const KernelContext& context) {
  const Dtype io = op_dtype(op, dtype);
  const bool backward = op.name.ends_with("_grad");
  const std::string base = backward ? op.name.substr(0, op.name.size() - 5) : op.name;
  auto call = [&](Kernel forward, Kernel backward_kernel, std::vector<int64_t> sizes) {
    return KernelCall{backward ? backward_kernel : forward, io, std::move(sizes)};
  };
  switch (op.op_class) {
    case OpClass::gemm: return {Kernel::gemm, io, op.shape};
    case OpClass::attention: return call(Kernel::attention_forward, Kernel::attention_backward, op.shape);
    case OpClass::optimizer:
      if (op.name == "adam") return {Kernel::adamw, io, {op.shape.at(0)}};
      break;  // the step's other passes: copies, a norm, a memset, timed by their bytes
    case OpClass::memory_bound: break;
  }
  const int64_t elements = op.shape.at(0);
  if (base == "ln1" || base == "ln2" || base == "final_norm") {
    const std::vector<int64_t> rows = {rows_of(elements, context.hidden), context.hidden};
    return context.rms_norm ? call(Kernel::rmsnorm_forward, Kernel::rmsnorm_backward, rows)
                            : call(Kernel::layernorm_forward, Kernel::layernorm_backward, rows);
  }
  if (base == "gelu") return call(Kernel::gelu_forward, Kernel::gelu_backward, {elements});
  if (base == "swiglu") return call(Kernel::swiglu_forward, Kernel::swiglu_backward, {elements});
  if (base == "cross_entropy")
    return call(Kernel::cross_entropy_forward, Kernel::cross_entropy_backward,
                {rows_of(elements, context.vocab_shard), context.vocab_shard});
  if (op.name == "embedding" || op.name == "embedding_wgrad")
    return {op.name == "embedding" ? Kernel::embedding_forward : Kernel::embedding_backward, io,
            {rows_of(elements, context.hidden), context.hidden, context.vocab_shard, context.embedding_tables}};
  return {Kernel::elementwise, io, {std::llround(op.bytes)}};
}

std::map<std::string, KernelCall> rank_kernel_calls(const Program& program, int rank, Dtype dtype,
                                                    const KernelContext& context) {
  std::map<std::string, KernelCall> calls;
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    if (!is_compute(t.kind) || t.work < 0) continue;
    for (const Op& op : program.works[t.work].ops) {
      KernelCall call = kernel_call(op, dtype, context);
      calls.try_emplace(call.description(), std::move(call));
    }
  }
  return calls;
}

}  // namespace simtrain
