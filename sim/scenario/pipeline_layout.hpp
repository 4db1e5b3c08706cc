#pragma once
// Which transformer layers each pipeline stage and virtual stage (model
// chunk) holds, as Megatron-LM assigns them: the parallelism fields that say
// it (Megatron's options, and simtrain's pipeline_layers), the rules
// Megatron checks them by, and the layer count of every model stage.
//
// Megatron orders model stages chunk-major: stage = chunk x p + pipeline
// rank holds the layers after those of every earlier stage
// (transformer_layer.py get_transformer_layer_offset), so the counts alone
// place every layer.
#include <cstdint>
#include <string>

#include "sim/base/json_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Reads the layout fields of a parallelism section (p.pipeline read before);
// sets p.virtual_stages where it follows from the fields alone
// (num_virtual_stages_per_pipeline_rank, pipeline_model_parallel_layout).
// Throws InputError naming `file`.
void parse_pipeline_layout(JsonFields& fields, const std::string& file, ParallelConfig& p);

// Whether the fields interleave: any of the three ways of giving virtual
// stages (one layout stage per rank gives none).
bool gives_virtual_stages(const ParallelConfig& p);

// Checks the fields against each other and the model's `num_layers` as
// Megatron-LM does, then sets p.virtual_stages and p.stage_layers. Throws
// InputError naming `file`, the field and the reason.
void resolve_pipeline_layout(int64_t num_layers, ParallelConfig& p, const std::string& file);

}  // namespace simtrain
