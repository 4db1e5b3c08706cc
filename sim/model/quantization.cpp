#include "sim/model/quantization.hpp"

#include <cmath>

namespace simtrain {

namespace {

constexpr double kBf16Bytes = 2;
constexpr double kScaleBytes = 1;  // E8M0 (mxfp8) or E4M3 (nvfp4)

Op memory_bound(const std::string& name, int64_t elements, double bytes_per_element) {
  return {name, OpClass::memory_bound, {elements}, 0, double(elements) * bytes_per_element};
}

}  // namespace

double LinearQuantization::copy_bytes_per_element() const {
  return data_bytes + (block_elements > 0 ? kScaleBytes / block_elements : 0);
}

// Transformer Engine's recipes (transformer_engine/common/recipe/__init__.py):
// Float8 delayed and current (tensorwise) scaling, MXFP8BlockScaling (32-element
// blocks, E8M0 scales), NVFP4BlockScaling (16-element blocks, E4M3 scales and
// a per-tensor fp32 scale from the tensor's amax). Under the block-scaled
// recipes TE's norm writes bf16 and its quantizer casts it (the fused
// norm-and-cast kernels are delayed scaling's, and cuDNN's MXFP8 one only
// where NVTE_NORM_FWD_USE_CUDNN asks for it: pytorch/csrc/extensions/normalization.cpp).
LinearQuantization linear_quantization(const TrainingConfig& training) {
  if (training.dtype == Dtype::fp4) return {Dtype::fp4, 0.5, 16, ScaleSource::amax_kernel, false};
  if (training.dtype != Dtype::fp8) return {training.dtype, dtype_bytes(training.dtype), 0, ScaleSource::amax_history};
  switch (training.fp8_recipe) {
    case Fp8Recipe::delayed: return {Dtype::fp8, 1, 0, ScaleSource::amax_history, true};
    case Fp8Recipe::tensorwise: return {Dtype::fp8, 1, 0, ScaleSource::amax_read_first, false};
    case Fp8Recipe::mxfp8: return {Dtype::fp8, 1, 32, ScaleSource::block, false};
  }
  return {};
}

// One kernel reads the tensor (twice where tensorwise scaling reads its amax
// first) and writes both copies: TE's cast-transpose (fp8), its MXFP8
// quantize with row-wise and column-wise usage, and for nvfp4
// nvte_quantize_with_hadamard_transform, which writes the row-wise copy and
// the column-wise one of the random-Hadamard-transformed tensor (16x16
// blocks, wgrad's operands) with stochastic rounding for gradients; nvfp4
// runs nvte_hadamard_transform_amax before it, one more read for the amaxes
// of the tensor and of its transform (pytorch/csrc/quantizer.cpp,
// NVFP4Quantizer::quantize_impl). Weights skip the transform and take 16x16
// scales (fp4_quant_fwd_weight), stored as one per 16 elements of each copy:
// the same bytes. Scale tensors are padded to 128 x 4 tiles for cuBLAS, left out here.
std::vector<Op> cast_ops(const LinearQuantization& quantization, const std::string& name, int64_t elements,
                         double source_bytes) {
  const double written = 2 * quantization.copy_bytes_per_element();
  std::vector<Op> ops;
  if (quantization.scale_source == ScaleSource::amax_kernel)
    ops.push_back(memory_bound(name + "_amax", elements, source_bytes));
  const double reads = quantization.scale_source == ScaleSource::amax_read_first ? 2 : 1;
  ops.push_back(memory_bound(name, elements, reads * source_bytes + written));
  return ops;
}

std::vector<Op> weight_cast_ops(const LinearQuantization& quantization, double weights) {
  // Delayed scaling takes the weights' scale from their amax history, as it does every tensor's.
  return cast_ops(quantization, to_string(quantization.gemm_dtype) + "_weight_cast", std::llround(weights), kBf16Bytes);
}

}  // namespace simtrain
