#pragma once
// Megatron-LM's --pipeline-model-parallel-layout string: model stages split
// by '|', each a run of unit letters (E embedding, t transformer layer, L
// loss, m multi-token prediction); "x*n" and "(...)*n" repeat, commas are
// cosmetic. "Et*3|(tt|)*2,tL" is [Ettt][tt][tt][tL].
#include <string>
#include <vector>

namespace simtrain {

// The stages of `layout`, each the letters it holds (possibly none), in
// Megatron's order: stage = virtual stage x pipeline size + pipeline rank.
// Expands as PipelineParallelLayerLayout.parse_str_to_list does: one pass
// over "(...)*n" (no nesting), then one over "x*n". Letters are not checked.
// Throws InputError naming `file` and `field` where the expansion would
// exceed limits::max_layout_chars.
std::vector<std::string> layout_stages(const std::string& layout, const std::string& file, const std::string& field);

}  // namespace simtrain
