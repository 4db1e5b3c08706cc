#pragma once
// A scenario from a Megatron-LM launch line: the arguments of pretrain_gpt.py
// (as shell_words splits them) and the cluster they run on. Flags fall in
// three kinds (README "From a Megatron-LM launch line"):
// - known: they set a scenario field (TP, PP, virtual stages, sequence
//   parallelism, batch, sequence length, recompute, model sizes, precision,
//   the distributed optimizer, overlaps); values are checked as Megatron-LM
//   checks them, and what cannot be simulated (context or expert
//   parallelism above 1, experts, fp32, recomputing some layers only) is
//   refused, naming the flag;
// - ignored: flags that do not change the step time (data, tokenizer files,
//   checkpoints, logging, evaluation, learning rate and the optimizer's
//   hyper-parameters, initialisation, dropout rates, process setup), listed
//   in kIgnoredMegatronFlags, and flags at a value that changes nothing
//   (`--transformer-impl transformer_engine`, Megatron-LM's default and the
//   layers simtrain's cost model prices; `--clip-grad` above 0; ...);
// - not simulated: every other flag, or value (`--transformer-impl local`,
//   `--clip-grad 0`, `--log-num-zeros-in-grad`), returned for the caller to
//   refuse or warn about.
// Words before the script (`torchrun ... pretrain_gpt.py`) are skipped, and
// the end of options `--`.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

struct MegatronCluster {
  std::string gpu, topology;
  int64_t num_gpus = 0;
};

struct MegatronScenario {
  nlohmann::ordered_json document;         // the scenario, as scenario files are written
  std::vector<std::string> ignored;        // the ignored flags given, in order
  std::vector<std::string> not_simulated;  // the other unknown flags given, in order
  std::vector<std::string> notes;          // what was assumed where the flags do not say
};

// Flag names, or prefixes ending in '*', that do not change the step time
// whatever their value (those that do at some values are ruled on apart).
extern const std::vector<std::string> kIgnoredMegatronFlags;

// `source` names the arguments in messages. Throws InputError naming the
// flag for a missing or bad value and for what is not simulated; the message
// also names the flags not simulated, if any.
MegatronScenario megatron_scenario(const std::vector<std::string>& words, const MegatronCluster& cluster,
                                   const std::string& source);

}  // namespace simtrain
