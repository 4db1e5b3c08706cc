#pragma once
// The optimizer step as the training software runs it: the passes over the
// parameters a rank updates (its shard under ZeRO) and over the gradient
// buffer it holds, one memory-bound op each.
#include <vector>

#include "sim/model/workload.hpp"

namespace simtrain {

struct OptimizerStep {
  double updated_parameters = 0;   // the fp32 master weights the rank's Adam updates
  double gradient_parameters = 0;  // the gradient buffer the rank holds (its shard under ZeRO-2/3)
  double grad_bytes_per_parameter = 4;
};

// In the order they run (Megatron-Core at d98e8a6, optimizer/optimizer.py
// prepare_grads, step, step_with_ready_grads; distributed/
// distributed_data_parallel.py zero_grad_buffer; the 2022 Megatron-LM of
// Korthikanti et al. runs the same passes, optimizer/optimizer.py at b49349ec):
//   main_grad_cast  with 16-bit gradients, each shard copied to fp32 main grads
//                   (`shard_model_grad.float()`): reads 2, writes 4 bytes a parameter;
//   grad_norm       the clip's norm, multi_tensor_l2norm over the main grads: reads 4;
//   adam            fused Adam: master weight, gradient, m, v read, master, m, v written: 28;
//   params_copy     master weights copied to the bf16 model weights: reads 4, writes 2;
//   zero_grad       the gradient buffer zeroed for the next step's accumulation (done at
//                   the next step's start, before its first forward): writes its bytes.
// Not counted: the clip's multi_tensor_scale, which runs only on steps whose
// gradient norm exceeds clip_grad (clip_grads.py clip_grad_by_total_norm_fp32);
// the norm's all-reduce of one number; the gradients' scaling by 1 / DP before
// their reduction where the collective does not average (a pass of its own
// in start_grad_sync; 2022's code ran it even at DP 1).
std::vector<Op> optimizer_step_ops(const OptimizerStep& step);

}  // namespace simtrain
