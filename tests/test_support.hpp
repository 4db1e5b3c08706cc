#pragma once
// Small scenarios and topologies built in code, shared by the test suites.
#include <string>

#include <nlohmann/json.hpp>

#include "scenario.hpp"

namespace simtrain::fixtures {

// A GPT-style model of `layers` layers on tp x pp x dp GPUs of a DGX H100 topology.
inline nlohmann::json scenario_json(int tp, int pp, int dp, int layers, const std::string& schedule,
                                    int layers_per_virtual_stage = 0, int micro_batches = 8) {
  nlohmann::json parallelism = {{"tensor_model_parallel_size", tp},
                                {"pipeline_model_parallel_size", pp},
                                {"schedule", schedule}};
  if (layers_per_virtual_stage) parallelism["num_layers_per_virtual_pipeline_stage"] = layers_per_virtual_stage;
  return {{"name", "test"},
          {"model",
           {{"hidden_size", 512},
            {"num_hidden_layers", layers},
            {"num_attention_heads", 8},
            {"vocab_size", 4096},
            {"max_position_embeddings", 512}}},
          {"training", {{"seq_length", 512}, {"micro_batch_size", 1}, {"global_batch_size", micro_batches * dp}}},
          {"parallelism", parallelism},
          {"cluster", {{"gpu", "H100-SXM"}, {"num_gpus", tp * pp * dp}, {"topology", "dgx-h100-superpod"}}}};
}

inline Scenario scenario_from(const nlohmann::json& document) { return parse_scenario(document, "test.json", "."); }

}  // namespace simtrain::fixtures
