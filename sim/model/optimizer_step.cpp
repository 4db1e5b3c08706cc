#include "sim/model/optimizer_step.hpp"

#include <cmath>
#include <string>

namespace simtrain {

namespace {

constexpr double kMainGradBytes = 4;     // fp32 main gradients
constexpr double kMasterWeightBytes = 4;  // fp32 master weights
constexpr double kModelWeightBytes = 2;   // bf16 model weights
constexpr double kAdamBytes = 28;         // master weight, gradient, m, v read (16); master, m, v written (12)
constexpr double kAdamFlopsPerParameter = 12;

Op pass(std::string name, double elements, double bytes_per_element, double flops_per_element = 0) {
  return {std::move(name), OpClass::optimizer, {std::llround(elements)}, flops_per_element * elements,
          bytes_per_element * elements};
}

}  // namespace

std::vector<Op> optimizer_step_ops(const OptimizerStep& step) {
  const double updated = step.updated_parameters;
  std::vector<Op> ops;
  if (step.grad_bytes_per_parameter < kMainGradBytes)
    ops.push_back(pass("main_grad_cast", updated, step.grad_bytes_per_parameter + kMainGradBytes));
  ops.push_back(pass("grad_norm", updated, kMainGradBytes));
  ops.push_back(pass("adam", updated, kAdamBytes, kAdamFlopsPerParameter));
  ops.push_back(pass("params_copy", updated, kMasterWeightBytes + kModelWeightBytes));
  ops.push_back(pass("zero_grad", step.gradient_parameters, step.grad_bytes_per_parameter));
  return ops;
}

}  // namespace simtrain
