#include "megatron_command.hpp"

#include <filesystem>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/option_checks.hpp"
#include "sim/base/output_files.hpp"
#include "sim/base/shell_words.hpp"
#include "sim/base/text_format.hpp"
#include "sim/scenario/megatron_arguments.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

MegatronCommand::MegatronCommand(CLI::App& app) {
  command_ = app.add_subcommand("from-megatron", "write a scenario from a Megatron-LM launch line (pretrain_gpt.py's arguments)");
  // A quoted line starting with "--" reaches CLI11 as an unknown option: the extras are the line too.
  command_->allow_extras();
  command_->add_option("arguments", arguments_, "pretrain_gpt.py's arguments, quoted as one string (or after --)");
  command_->add_option("--gpu", gpu_, "a built-in GPU (simtrain list)")->required();
  command_->add_option("--topology", topology_, "a built-in topology or a topology JSON file")->required();
  command_->add_option("--num-gpus", num_gpus_, "GPUs of the job (Megatron's world size)")
      ->required()
      ->check(between(1, double(limits::max_gpus)));
  command_->add_option("--out", out_path_, "the scenario JSON file; - (the default) for standard output");
  command_->add_flag("--ignore-unknown", ignore_unknown_,
                     "write the scenario without the flags it does not simulate (warned about) instead of refusing");
  force_.add_to(*command_);
}

void MegatronCommand::run(std::ostream& out, std::ostream& err) const {
  OutputFiles outputs(out, force_.existing_files());
  outputs.add("--out", out_path_);
  std::string line;
  for (const std::vector<std::string>& part : {arguments_, command_->remaining()})
    for (const std::string& word : part) line += (line.empty() ? "" : " ") + word;
  if (line.empty()) throw InputError("from-megatron", "", "no Megatron-LM arguments given");
  const std::string source = "the Megatron-LM arguments";
  const MegatronScenario converted =
      megatron_scenario(shell_words(line, source), MegatronCluster{gpu_, topology_, num_gpus_}, source);
  if (!converted.not_simulated.empty() && !ignore_unknown_)
    throw InputError(source, "",
                     "flags that may change the step time and are not simulated: " + joined(converted.not_simulated) +
                         " (--ignore-unknown writes the scenario without them)");
  std::ostream& text = outputs.writes_standard_output() ? err : out;
  if (!converted.not_simulated.empty())
    text << "warning: not simulated, left out: " << joined(converted.not_simulated) << "\n";
  if (!converted.ignored.empty()) text << "ignored (no effect on step time): " << joined(converted.ignored) << "\n";
  for (const std::string& note : converted.notes) text << "assumed: " << note << "\n";
  // Loaded as `simulate` will load it: relative paths from the output's folder.
  const std::filesystem::path folder = out_path_ == "-" ? "." : std::filesystem::path(out_path_).parent_path();
  const Scenario scenario =
      parse_scenario(converted.document, "the generated scenario", folder.empty() ? "." : folder.string());
  outputs.refuse_inputs(scenario.files_read);
  outputs.write({{"--out", [&](std::ostream& o) { o << converted.document.dump(2) << "\n"; }}});
  if (out_path_ != "-") text << "wrote " << out_path_ << "\n";
}

}  // namespace simtrain
