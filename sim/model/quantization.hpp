#pragma once
// How Transformer Engine quantizes the operands of the layers' linears in
// fp8 and fp4 training, recipe by recipe: what one quantized copy of a
// tensor costs (data and scales), the kernels that cast a bf16 tensor into
// the two copies its two GEMMs read, and the weights' cast once a step.
// The formats (docs/scenario-format.md, "Low-precision training"):
// - delayed and tensorwise fp8: E4M3 data, one fp32 scale per tensor;
// - mxfp8: E4M3 data, one E8M0 scale byte per 32 consecutive elements, along
//   the row (row-wise copy) or the column (column-wise copy);
// - nvfp4: E2M1 data (half a byte), one E4M3 scale byte per 16 consecutive
//   elements and one fp32 scale per tensor.
// Block scales run along one dimension, so a transposed copy cannot reuse
// them: a block-scaled cast writes both copies from the bf16 tensor.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/workload.hpp"

namespace simtrain {

// Where a cast's scale comes from.
enum class ScaleSource {
  amax_history,      // delayed: the tensor's past amaxes; the cast records its own
  amax_read_first,   // tensorwise: the cast reads the tensor twice, for its amax and to cast it
  amax_kernel,       // nvfp4: a kernel of its own reduces the per-tensor amax before the cast
  block,             // mxfp8: each block's scale from the block itself, inside the cast
};

struct LinearQuantization {
  Dtype gemm_dtype = Dtype::bf16;  // fp8 or fp4; otherwise the linears are not quantized
  double data_bytes = 0;           // per element: 1 (E4M3), 0.5 (E2M1)
  int block_elements = 0;          // elements sharing one scale byte: 32 (mxfp8), 16 (nvfp4); 0: per tensor
  ScaleSource scale_source = ScaleSource::amax_history;
  // Delayed scaling's norm writes its output quantized (row-wise only), so the
  // linear after it needs no cast, and its weight gradient a transpose.
  bool norm_quantizes = false;
  bool quantized() const { return gemm_dtype == Dtype::fp8 || gemm_dtype == Dtype::fp4; }
  // One copy (row-wise or column-wise) per element: data and its block scales.
  double copy_bytes_per_element() const;
};

// The recipe of the scenario's training precision.
LinearQuantization linear_quantization(const TrainingConfig& training);

// The kernels that cast `elements` of a tensor held at `source_bytes` per
// element into a row-wise and a column-wise copy, named `name` ("<name>_amax"
// for nvfp4's amax kernel before it).
std::vector<Op> cast_ops(const LinearQuantization& quantization, const std::string& name, int64_t elements,
                         double source_bytes);

// The cast of `weights` bf16 weights once a step, both copies (the forward
// GEMM reads the row-wise one, the input-gradient GEMM the column-wise one).
std::vector<Op> weight_cast_ops(const LinearQuantization& quantization, double weights);

}  // namespace simtrain
