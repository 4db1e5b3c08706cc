#pragma once
// CPU reference of the fused AdamW step: fp32 master weights, moments and
// gradients updated in place; the weights the next step computes with are
// the master weights rounded to bf16 or fp16 (by the caller).
#include <vector>

#include "kernel_math.hpp"

namespace simtrain::reference {

void adamw(std::vector<float>& param, std::vector<float>& m, std::vector<float>& v, const std::vector<float>& grad,
           const math::AdamWConfig& config);

}  // namespace simtrain::reference
