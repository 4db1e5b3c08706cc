#include "sim/scenario/megatron_arguments.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/text_format.hpp"
#include "sim/scenario/host_settings.hpp"
#include "sim/scenario/moe_layer_pattern.hpp"

namespace simtrain {

const std::vector<std::string> kIgnoredMegatronFlags = {
    // data and tokenizer files, the data loader (its workers run beside the step)
    "--data-path", "--train-data-path", "--valid-data-path", "--test-data-path", "--data-cache-path", "--split",
    "--mock-data", "--num-workers", "--tokenizer-model", "--tiktoken-*", "--no-create-attention-mask-in-dataloader",
    "--no-mmap-bin-files", "--dataloader-type", "--num-dataset-builder-threads",
    // checkpoints: what is saved and loaded, where, in which format, written how
    "--save*", "--load*", "--ckpt-*", "--no-ckpt-*", "--no-save-*", "--no-load-*", "--use-checkpoint-args",
    "--finetune", "--use-dist-ckpt", "--dist-ckpt-*", "--async-save", "--use-persistent-ckpt-worker",
    "--auto-detect-ckpt-format",
    // logging, profiling, evaluation (but --log-num-zeros-in-grad and --log-params-norm: value_rules)
    "--log-*", "--no-log-*", "--logging-level", "--tensorboard-*", "--wandb-*", "--timing-log-*", "--profile*",
    "--eval-*", "--moe-per-layer-logging",
    // learning rate, optimizer hyper-parameters, loss scaling, initialisation, run length
    "--lr*", "--min-lr", "--decoupled-*", "--weight-decay*", "--start-weight-decay", "--end-weight-decay", "--adam-*",
    "--loss-scale*", "--initial-loss-scale", "--min-loss-scale", "--hysteresis", "--init-method-std", "--seed",
    "--init-model-with-meta-device", "--train-iters", "--train-samples", "--exit-*", "--step-batch-size-schedule",
    "--rampup-batch-size",
    // numerics that cost the same whatever their value (the rotary frequencies are computed once and cached)
    "--rotary-base", "--rotary-percent", "--rope-type", "--use-rope-scaling",
    "--rope-scaling-factor", "--apply-layernorm-1p", "--norm-epsilon", "--fp8-amax-history-len",
    "--fp8-amax-compute-algo", "--fp8-margin",
    // read only by Megatron's own attention (--transformer-impl local, not simulated), not by Transformer Engine's
    "--no-masked-softmax-fusion", "--attention-softmax-in-fp32",
    // read only by the ModelOpt model builder, which a run uses when it loads a ModelOpt checkpoint or teacher
    "--export-force-local-attention", "--enable-gpt-oss",
    // process setup
    "--distributed-backend", "--distributed-timeout-minutes", "--use-mcore-models"};

namespace {

// The flags that set a scenario field, and whether each takes a value.
const std::map<std::string, bool> kKnownTakesValue = {
    {"--num-layers", true}, {"--hidden-size", true}, {"--num-attention-heads", true}, {"--ffn-hidden-size", true},
    {"--group-query-attention", false}, {"--num-query-groups", true}, {"--kv-channels", true},
    {"--swiglu", false}, {"--normalization", true}, {"--disable-bias-linear", false},
    {"--position-embedding-type", true}, {"--max-position-embeddings", true},
    {"--untie-embeddings-and-output-weights", false}, {"--vocab-size", true},
    {"--make-vocab-size-divisible-by", true}, {"--tokenizer-type", true}, {"--vocab-file", true},
    {"--merge-file", true}, {"--seq-length", true}, {"--micro-batch-size", true}, {"--global-batch-size", true},
    {"--bf16", false}, {"--fp16", false}, {"--fp8-format", true}, {"--fp8-recipe", true},
    {"--fp4-format", true}, {"--fp4-recipe", true}, {"--fp8-param-gather", false},
    {"--hidden-dropout", true}, {"--attention-dropout", true},
    {"--recompute-activations", false}, {"--recompute-granularity", true}, {"--recompute-method", true},
    {"--recompute-num-layers", true}, {"--recompute-modules", true}, {"--checkpoint-activations", false},
    {"--activations-checkpoint-method", true}, {"--activations-checkpoint-num-layers", true},
    {"--attention-backend", true}, {"--use-flash-attn", false}, {"--tensor-model-parallel-size", true},
    {"--pipeline-model-parallel-size", true}, {"--num-layers-per-virtual-pipeline-stage", true},
    {"--virtual-pipeline-model-parallel-size", true}, {"--decoder-first-pipeline-num-layers", true},
    {"--decoder-last-pipeline-num-layers", true}, {"--account-for-embedding-in-pipeline-split", false},
    {"--account-for-loss-in-pipeline-split", false}, {"--pipeline-model-parallel-layout", true},
    {"--sequence-parallel", false}, {"--tp-comm-overlap", false}, {"--context-parallel-size", true},
    {"--cp-comm-type", true},
    {"--expert-model-parallel-size", true},
    {"--num-experts", true}, {"--moe-router-topk", true}, {"--moe-ffn-hidden-size", true},
    {"--moe-shared-expert-intermediate-size", true}, {"--expert-tensor-parallel-size", true},
    {"--moe-token-dispatcher-type", true}, {"--moe-enable-deepep", false}, {"--moe-flex-dispatcher-backend", true},
    {"--moe-flex-dispatcher-num-sms", true}, {"--moe-deepep-num-sms", true}, {"--moe-hybridep-num-sms", true},
    {"--no-async-tensor-model-parallel-allreduce", false},
    {"--async-tensor-model-parallel-allreduce", false}, {"--overlap-moe-expert-parallel-comm", false}, {"--moe-layer-freq", true},
    // what simtrain simulates: the experts' GEMMs grouped, the tokens permuted in one pass
    {"--moe-grouped-gemm", false}, {"--moe-permute-fusion", false},
    // what the host launches (the scenario's software section)
    {"--moe-router-fusion", false}, {"--moe-aux-loss-coeff", true}, {"--moe-router-force-load-balancing", false},
    {"--no-bias-swiglu-fusion", false}, {"--no-bias-gelu-fusion", false}, {"--no-bias-dropout-fusion", false},
    {"--cross-entropy-loss-fusion", false}, {"--cross-entropy-fusion-impl", true}, {"--cuda-graph-impl", true},
    {"--cuda-graph-scope", true},
    {"--use-distributed-optimizer", false}, {"--overlap-grad-reduce", false},
    {"--overlap-param-gather", false}, {"--grad-reduce-in-bf16", false}, {"--ddp-bucket-size", true},
    {"--DDP-impl", true}, {"--hierarchical-context-parallel-sizes", true}};

// Of those, the ones taking a list of values (argparse's nargs='+'), kept space-separated.
const std::vector<std::string> kListFlags = {"--hierarchical-context-parallel-sizes", "--recompute-modules",
                                             "--cuda-graph-scope"};

// Flags only Megatron-LM of 2021 had: it ran attention unfused (no FlashAttention yet).
const std::vector<std::string> kFlagsOf2021 = {"--DDP-impl", "--checkpoint-activations",
                                               "--activations-checkpoint-method",
                                               "--activations-checkpoint-num-layers"};

constexpr int64_t kGpt2Vocabulary = 50257;  // GPT-2's BPE: what --vocab-file + --merge-file name by default

// Megatron's flag for a scenario field of the same name: --decoder-first-pipeline-num-layers.
std::string flag_of(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return "--" + field;
}

bool is_ignored(const std::string& flag) {
  return std::any_of(kIgnoredMegatronFlags.begin(), kIgnoredMegatronFlags.end(), [&](const std::string& pattern) {
    return pattern.ends_with('*') ? flag.starts_with(pattern.substr(0, pattern.size() - 1)) : flag == pattern;
  });
}

void add_once(std::vector<std::string>& list, const std::string& flag) {
  if (std::find(list.begin(), list.end(), flag) == list.end()) list.push_back(flag);
}

// The flags given, each with its value ("" for a switch, a list's values
// space-separated; the last one given counts, as in argparse), and the
// others than the known ones in the order they first appear.
class Arguments {
public:
  Arguments(const std::vector<std::string>& all_words, const std::string& source) : source_(source) {
    // The launcher's words (torchrun ... pretrain_gpt.py) are not the script's, nor the end of
    // options `--` (from-megatron's own, before the arguments).
    auto script =
        std::find_if(all_words.rbegin(), all_words.rend(), [](const std::string& w) { return w.ends_with(".py"); });
    std::copy_if(script.base(), all_words.end(), std::back_inserter(words_), [](const std::string& w) { return w != "--"; });
    for (size_t i = 0; i < words_.size(); ++i) {
      std::string flag = words_[i];
      if (!flag.starts_with("--"))
        throw InputError(source_, "", "'" + flag + "': a value without a flag before it");
      std::optional<std::string> inline_value;
      if (const size_t equals = flag.find('='); equals != std::string::npos)
        inline_value = flag.substr(equals + 1), flag.resize(equals);
      const auto known = kKnownTakesValue.find(flag);
      if (known == kKnownTakesValue.end()) {
        add_once(others_, flag);
        std::string value = inline_value.value_or("");
        while (!inline_value && i + 1 < words_.size() && !words_[i + 1].starts_with("--"))
          value += (value.empty() ? "" : " ") + words_[++i];
        given_[flag] = value;
        continue;
      }
      if (!known->second) {
        if (inline_value || (i + 1 < words_.size() && !words_[i + 1].starts_with("--")))
          throw InputError(source_, flag, "takes no value, got '" + (inline_value ? *inline_value : words_[i + 1]) + "'");
        given_[flag] = "";
      } else if (inline_value) {
        given_[flag] = *inline_value;
      } else {
        if (i + 1 >= words_.size() || words_[i + 1].starts_with("--")) throw InputError(source_, flag, "expects a value");
        given_[flag] = words_[++i];
        if (std::find(kListFlags.begin(), kListFlags.end(), flag) != kListFlags.end())
          while (i + 1 < words_.size() && !words_[i + 1].starts_with("--")) given_[flag] += " " + words_[++i];
      }
    }
  }

  const std::vector<std::string>& words() const { return words_; }
  const std::vector<std::string>& others() const { return others_; }
  bool has(const std::string& flag) const { return given_.count(flag) > 0; }
  std::optional<std::string> text(const std::string& flag) const {
    const auto found = given_.find(flag);
    return found == given_.end() ? std::nullopt : std::optional<std::string>(found->second);
  }
  std::optional<int64_t> integer(const std::string& flag, int64_t at_least = 1) const {
    const std::optional<std::string> value = text(flag);
    if (!value) return std::nullopt;
    return integer_of(flag, *value, at_least);
  }
  // A list flag's values.
  std::optional<std::vector<std::string>> words(const std::string& flag) const {
    const std::optional<std::string> value = text(flag);
    if (!value) return std::nullopt;
    std::vector<std::string> values;
    for (size_t start = 0; start < value->size();) {
      const size_t end = std::min(value->find(' ', start), value->size());
      values.push_back(value->substr(start, end - start));
      start = end + 1;
    }
    return values;
  }
  // A list flag's integers.
  std::optional<std::vector<int64_t>> integers(const std::string& flag) const {
    const std::optional<std::vector<std::string>> values = words(flag);
    if (!values) return std::nullopt;
    std::vector<int64_t> numbers;
    for (const std::string& word : *values) numbers.push_back(integer_of(flag, word, 1));
    return numbers;
  }
  int64_t integer_of(const std::string& flag, const std::string& word, int64_t at_least) const {
    int64_t number = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), number);
    if (error != std::errc() || end != word.data() + word.size())
      throw InputError(source_, flag, "expected an integer, got '" + word + "'");
    if (number < at_least || number > limits::max_integer)
      throw InputError(source_, flag, "must be between " + std::to_string(at_least) + " and " +
                                          std::to_string(limits::max_integer) + ", got " + word);
    return number;
  }
  // A probability: a number from 0 to 1.
  std::optional<double> fraction(const std::string& flag) const {
    const std::optional<std::string> value = text(flag);
    if (!value) return std::nullopt;
    double number = -1;
    const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), number);
    if (error != std::errc() || end != value->data() + value->size() || number < 0 || number > 1)
      throw InputError(source_, flag, "expected a number from 0 to 1, got '" + *value + "'");
    return number;
  }
  int64_t required_integer(const std::string& flag) const {
    if (const std::optional<int64_t> value = integer(flag)) return *value;
    throw InputError(source_, flag, "missing: a scenario needs it");
  }
  std::optional<std::string> choice(const std::string& flag, const std::vector<std::string>& choices) const {
    const std::optional<std::string> value = text(flag);
    if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
      throw InputError(source_, flag, "expected one of " + joined(choices) + ", got '" + *value + "'");
    }
    return value;
  }
  [[noreturn]] void refuse(const std::string& flag, const std::string& why) const {
    throw InputError(source_, flag + (text(flag) && !text(flag)->empty() ? " " + *text(flag) : ""), why);
  }

private:
  std::string source_;
  std::vector<std::string> words_, others_;
  std::map<std::string, std::string> given_;
};

// Whether every number of a flag's values is 0.
bool all_zero(const std::string& values) {
  std::istringstream in(values);
  double number = 0;
  while (in >> number)
    if (number != 0) return false;
  return in.eof();
}

// Flags that change nothing at some values (or beside some other flags) and
// something simtrain does not simulate at others. Checked before kIgnoredMegatronFlags.
struct ValueRule {
  std::string flag;
  std::function<bool(const Arguments&)> changes_nothing;
};

const std::vector<ValueRule>& value_rules() {
  static const std::vector<ValueRule> rules = {
      // Megatron-LM's default, Transformer Engine's layers: the ones simtrain's cost model prices (TE's
      // linears, fp8 and userbuffers, flash or fused attention). Megatron's own layers (local) are not simulated.
      {"--transformer-impl", [](const Arguments& a) { return a.text("--transformer-impl") == "transformer_engine"; }},
      // The default, and the optimizer step simtrain prices.
      {"--optimizer", [](const Arguments& a) { return a.text("--optimizer") == "adam"; }},
      // A loss-based type computes its loss only with --moe-aux-loss-coeff above 0 (router.py), named
      // then; sinkhorn routes otherwise.
      {"--moe-router-load-balancing-type",
       [](const Arguments& a) {
         const std::vector<std::string> types = *a.words("--moe-router-load-balancing-type");
         return std::all_of(types.begin(), types.end(), [](const std::string& type) {
           return type == "aux_loss" || type == "seq_aux_loss" || type == "global_aux_loss" || type == "none";
         });
       }},
      // Any positive threshold costs the same; 0 skips the gradients' norm and its all-reduce.
      {"--clip-grad", [](const Arguments& a) { return !all_zero(*a.text("--clip-grad")); }},
      // Megatron-LM sets it itself for bf16, and clears it for --grad-reduce-in-bf16 (arguments.py).
      {"--accumulate-allreduce-grads-in-fp32", [](const Arguments& a) { return a.has("--bf16"); }},
      // Only learned absolute positions have a table to leave out.
      {"--no-position-embedding",
       [](const Arguments& a) { return a.text("--position-embedding-type").value_or("learned_absolute") != "learned_absolute"; }},
      // Work every step: every gradient's zeros counted (the optimizer's count_zeros), the parameters'
      // norm all-reduced (training.py: "BLOCKS the training loop").
      {"--log-num-zeros-in-grad", [](const Arguments&) { return false; }},
      {"--log-params-norm", [](const Arguments&) { return false; }}};
  return rules;
}

// The flags that set no scenario field: ignored, or not simulated.
void sort_others(const Arguments& a, MegatronScenario& result) {
  for (const std::string& flag : a.others()) {
    const auto rule = std::find_if(value_rules().begin(), value_rules().end(),
                                   [&](const ValueRule& r) { return r.flag == flag; });
    const bool ignored = rule != value_rules().end() ? rule->changes_nothing(a) : is_ignored(flag);
    (ignored ? result.ignored : result.not_simulated).push_back(flag);
  }
}

// Megatron-LM's defaults where a flag is absent: arguments.py.
int64_t ffn_hidden_size(const Arguments& a, int64_t hidden) {
  if (const auto ffn = a.integer("--ffn-hidden-size")) return *ffn;
  return a.has("--swiglu") ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
}

// The tokenizer's vocabulary padded as Megatron pads it: to a multiple of
// --make-vocab-size-divisible-by (128) x TP.
int64_t padded_vocabulary(const Arguments& a, int64_t tp, std::vector<std::string>& notes) {
  std::optional<int64_t> vocabulary = a.integer("--vocab-size");
  if (!vocabulary) {
    const std::string tokenizer = a.text("--tokenizer-type").value_or("GPT2BPETokenizer");
    if (tokenizer != "GPT2BPETokenizer" || !a.has("--vocab-file"))
      a.refuse("--vocab-size", "missing: the vocabulary of tokenizer " + tokenizer +
                                   " is not in the arguments; add --vocab-size N (its vocabulary)");
    vocabulary = kGpt2Vocabulary;
    notes.push_back("vocabulary: GPT-2's BPE (--vocab-file with --merge-file), 50257 tokens");
  }
  const int64_t multiple = a.integer("--make-vocab-size-divisible-by").value_or(128) * tp;
  const int64_t padded = (*vocabulary + multiple - 1) / multiple * multiple;
  if (padded != *vocabulary)
    notes.push_back("vocabulary padded from " + std::to_string(*vocabulary) + " to " + std::to_string(padded) +
                    ", a multiple of " + std::to_string(multiple) + " (--make-vocab-size-divisible-by x TP)");
  return padded;
}

// training.dtype, fp8_recipe and fp4_recipe (Megatron's --fp4-format e2m1
// runs Transformer Engine's NVFP4BlockScaling, the --fp4-recipe nvfp4 default).
void precision(const Arguments& a, nlohmann::ordered_json& training) {
  if (a.has("--bf16") && a.has("--fp16")) a.refuse("--fp16", "--bf16 given too: give one");
  if (!a.has("--bf16") && !a.has("--fp16"))
    a.refuse("--bf16", "missing: fp32 training (neither --bf16 nor --fp16) is not simulated");
  training["dtype"] = a.has("--bf16") ? "bf16" : "fp16";
  if (a.choice("--fp8-format", {"e4m3", "hybrid"})) training["dtype"] = "fp8";
  if (const auto recipe = a.text("--fp8-recipe")) {
    if (!a.has("--fp8-format")) a.refuse("--fp8-recipe", "is for fp8 training: --fp8-format missing");
    if (*recipe != "delayed" && *recipe != "tensorwise" && *recipe != "mxfp8")
      a.refuse("--fp8-recipe", "only delayed, tensorwise and mxfp8 scaling are simulated");
    training["fp8_recipe"] = *recipe;
  }
  if (a.choice("--fp4-format", {"e2m1"})) {
    if (a.has("--fp8-format")) a.refuse("--fp4-format", "--fp8-format given too: Megatron-LM takes one");
    training["dtype"] = "fp4";
  }
  if (a.has("--fp8-param-gather")) {
    if (!a.has("--fp8-format")) a.refuse("--fp8-param-gather", "is for fp8 training: --fp8-format missing");
    training["fp8_param_gather"] = true;
  }
  if (const auto recipe = a.text("--fp4-recipe")) {
    if (!a.has("--fp4-format")) a.refuse("--fp4-recipe", "is for fp4 training: --fp4-format missing");
    if (*recipe != "nvfp4") a.refuse("--fp4-recipe", "only nvfp4 is simulated");
    training["fp4_recipe"] = *recipe;
  }
}

// training.recompute_granularity: Megatron recomputes all layers (full),
// the attention core (selective) or nothing; with full, `--recompute-method
// block` recomputes the first --recompute-num-layers of each pipeline chunk.
void recompute(const Arguments& a, nlohmann::ordered_json& training, std::vector<std::string>& notes) {
  const bool old_full = a.has("--checkpoint-activations") || a.has("--activations-checkpoint-method");
  std::optional<std::string> granularity = a.choice("--recompute-granularity", {"full", "selective"});
  if (a.has("--recompute-activations")) {
    if (granularity && *granularity != "selective")
      a.refuse("--recompute-activations", "is selective recompute; --recompute-granularity says full");
    granularity = "selective";
  }
  if (old_full) {
    if (granularity && *granularity != "full")
      a.refuse("--recompute-granularity",
               "but --checkpoint-activations or --activations-checkpoint-method recompute whole layers");
    granularity = "full";
  }
  training["recompute_granularity"] = granularity.value_or("none");
  if (const std::optional<std::vector<std::string>> modules = a.words("--recompute-modules")) {
    if (granularity == "selective") {
      training["recompute_modules"] = *modules;
    } else {
      notes.push_back("--recompute-modules without selective recompute: no effect, as in Megatron-LM");
    }
  }
  if (granularity != "full") return;
  const std::string method_flag = a.has("--recompute-method") ? "--recompute-method" : "--activations-checkpoint-method";
  const std::string count_flag =
      a.has("--recompute-num-layers") ? "--recompute-num-layers" : "--activations-checkpoint-num-layers";
  const std::optional<std::string> method = a.choice(method_flag, {"uniform", "block"});
  if (!method) notes.push_back("full recompute without --recompute-method: uniform (every layer recomputed)");
  const int64_t count = a.integer(count_flag).value_or(1);
  if (method == "block") {
    training["recompute_method"] = "block";
    training["recompute_num_layers"] = count;
  } else if (count > 1) {
    notes.push_back("uniform recompute in groups of " + std::to_string(count) +
                    " layers: each layer recomputed from its own input (the same recompute; Megatron-LM keeps one "
                    "input per group, fewer bytes)");
  }
}

// The scenario the known flags say.
// The flex dispatcher's flags and the checks Megatron-Core's TransformerConfig
// makes of them (NVIDIA/Megatron-LM d98e8a64, transformer_config.py
// __post_init__): --moe-enable-deepep (deprecated) needs flex and picks
// deepep; --moe-deepep-num-sms and --moe-hybridep-num-sms (deprecated) stand
// for --moe-flex-dispatcher-num-sms where that is not given, and must agree
// where both are.
void map_flex_dispatcher(const Arguments& a, nlohmann::ordered_json& parallelism, std::vector<std::string>& notes) {
  const bool flex = a.text("--moe-token-dispatcher-type") == "flex";
  std::optional<std::string> backend = a.text("--moe-flex-dispatcher-backend");
  if (a.has("--moe-enable-deepep")) {
    if (!flex)
      a.refuse("--moe-enable-deepep", "DeepEP backend is only supported with flex token dispatcher (Megatron-Core)");
    if (backend == "hybridep")
      a.refuse("--moe-enable-deepep",
               "only one backend is supported for flex token dispatcher, got hybridep too (Megatron-Core)");
    backend = "deepep";
  }
  if (backend == "ncclep" && !flex)
    a.refuse("--moe-flex-dispatcher-backend", "ncclep requires --moe-token-dispatcher-type flex (Megatron-Core)");
  std::optional<int64_t> sms = a.integer("--moe-flex-dispatcher-num-sms");
  const std::optional<int64_t> deepep_sms = a.integer("--moe-deepep-num-sms"),
                               hybridep_sms = a.integer("--moe-hybridep-num-sms");
  if (!sms && deepep_sms && hybridep_sms && *deepep_sms != *hybridep_sms)
    a.refuse("--moe-hybridep-num-sms", "conflicts with --moe-deepep-num-sms (" + std::to_string(*deepep_sms) +
                                           "); set a single --moe-flex-dispatcher-num-sms instead (Megatron-Core)");
  if (!sms) sms = deepep_sms ? deepep_sms : hybridep_sms;
  if (!flex) {
    for (const char* flag : {"--moe-flex-dispatcher-backend", "--moe-flex-dispatcher-num-sms", "--moe-deepep-num-sms",
                             "--moe-hybridep-num-sms"})
      if (a.has(flag)) notes.push_back(std::string(flag) + " without --moe-token-dispatcher-type flex: no effect");
    return;
  }
  if (backend) parallelism["moe_flex_dispatcher_backend"] = *backend;
  if (sms) parallelism["moe_flex_dispatcher_num_sms"] = *sms;
}

nlohmann::ordered_json scenario_document(const Arguments& a, const MegatronCluster& cluster, const std::string& source,
                                         std::vector<std::string>& notes) {
  const int64_t layers = a.required_integer("--num-layers"), hidden = a.required_integer("--hidden-size"),
                heads = a.required_integer("--num-attention-heads");
  const int64_t tp = a.integer("--tensor-model-parallel-size").value_or(1),
                pp = a.integer("--pipeline-model-parallel-size").value_or(1),
                cp = a.integer("--context-parallel-size").value_or(1);
  const std::string sizes = cp > 1 ? "TP x PP x CP" : "TP x PP";
  if (cluster.num_gpus % (tp * pp * cp) != 0)
    throw InputError("--num-gpus", "", std::to_string(cluster.num_gpus) + " is not a multiple of " + sizes + " = " +
                                           std::to_string(tp * pp * cp));
  const int64_t dp = cluster.num_gpus / (tp * pp * cp);

  nlohmann::ordered_json model;
  model["hidden_size"] = hidden;
  model["num_hidden_layers"] = layers;
  model["num_attention_heads"] = heads;
  if (a.has("--group-query-attention"))
    model["num_key_value_heads"] = a.integer("--num-query-groups").value_or(1);
  else if (a.has("--num-query-groups"))
    notes.push_back("--num-query-groups without --group-query-attention: no effect, as in Megatron-LM");
  if (const auto channels = a.integer("--kv-channels"); channels && *channels * heads != hidden)
    model["head_dim"] = *channels;
  model["intermediate_size"] = ffn_hidden_size(a, hidden);
  model["vocab_size"] = padded_vocabulary(a, tp, notes);
  const std::string positions =
      a.choice("--position-embedding-type", {"learned_absolute", "rope"}).value_or("learned_absolute");
  const int64_t seq = a.required_integer("--seq-length");
  if (positions == "learned_absolute")
    model["max_position_embeddings"] = a.integer("--max-position-embeddings").value_or(seq);
  model["hidden_act"] = a.has("--swiglu") ? "swiglu" : "gelu";
  const bool rms = a.choice("--normalization", {"LayerNorm", "RMSNorm"}) == "RMSNorm";
  model["norm"] = rms ? "rmsnorm" : "layernorm";
  model["linear_bias"] = !a.has("--disable-bias-linear");
  model["position_embedding"] = positions == "rope" ? "rotary" : "learned";
  model["tie_word_embeddings"] = !a.has("--untie-embeddings-and-output-weights");
  // Megatron-LM's defaults are simtrain's (0.1); the masks are held only where the rate is above 0.
  if (const auto rate = a.fraction("--hidden-dropout")) model["hidden_dropout"] = *rate;
  if (const auto rate = a.fraction("--attention-dropout")) model["attention_dropout"] = *rate;
  if (const auto experts = a.integer("--num-experts")) {
    model["num_experts"] = *experts;
    // --moe-layer-freq's dense layers, as Qwen's mlp_only_layers lists them.
    const std::vector<bool> moe = moe_layer_pattern(a.text("--moe-layer-freq").value_or("1"), layers, source, "--moe-layer-freq");
    std::vector<int64_t> dense_layers;
    for (int64_t layer = 0; layer < layers; ++layer)
      if (!moe[layer]) dense_layers.push_back(layer);
    if (!dense_layers.empty()) model["mlp_only_layers"] = dense_layers;
    model["num_experts_per_tok"] = a.integer("--moe-router-topk").value_or(2);
    model["moe_intermediate_size"] = a.integer("--moe-ffn-hidden-size").value_or(model["intermediate_size"].get<int64_t>());
    if (!a.has("--moe-grouped-gemm"))
      notes.push_back("the routed experts' GEMMs timed as one grouped GEMM (without --moe-grouped-gemm Megatron-LM "
                      "runs one expert after another: its launches are counted so, its GEMMs' time is not)");
    if (const auto shared = a.integer("--moe-shared-expert-intermediate-size"))
      model["shared_expert_intermediate_size"] = *shared;
  }

  nlohmann::ordered_json parallelism;
  parallelism["tensor_model_parallel_size"] = tp;
  parallelism["pipeline_model_parallel_size"] = pp;
  if (a.has("--num-layers-per-virtual-pipeline-stage") && a.has("--virtual-pipeline-model-parallel-size"))
    a.refuse("--num-layers-per-virtual-pipeline-stage", "--virtual-pipeline-model-parallel-size given too: give one");
  if (const auto per_stage = a.integer("--num-layers-per-virtual-pipeline-stage"))
    parallelism["num_layers_per_virtual_pipeline_stage"] = *per_stage;
  if (const auto virtual_stages = a.integer("--virtual-pipeline-model-parallel-size"))
    parallelism["num_virtual_stages_per_pipeline_rank"] = *virtual_stages;
  for (const std::string field : {"decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"})
    if (const auto count = a.integer(flag_of(field))) parallelism[field] = *count;
  for (const std::string field : {"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"})
    if (a.has(flag_of(field))) parallelism[field] = true;
  if (const auto layout = a.text("--pipeline-model-parallel-layout"))
    parallelism["pipeline_model_parallel_layout"] = *layout;
  if (a.has("--sequence-parallel")) {
    if (tp > 1)
      parallelism["sequence_parallel"] = true;
    else
      notes.push_back("--sequence-parallel with TP 1: off, as Megatron-LM turns it off");
  }
  if (cp > 1) parallelism["context_parallel_size"] = cp;
  if (const auto type = a.choice("--cp-comm-type", {"p2p", "all_gather", "a2a", "a2a+p2p"})) {
    if (cp > 1)
      parallelism["cp_comm_type"] = *type;
    else
      notes.push_back("--cp-comm-type with --context-parallel-size 1: no effect");
  }
  // Megatron-LM reads it only with a2a+p2p; the scenario refuses it otherwise, naming its field.
  if (const auto sizes = a.integers("--hierarchical-context-parallel-sizes"); sizes && cp > 1)
    parallelism["hierarchical_context_parallel_sizes"] = *sizes;
  for (const std::string field : {"expert_model_parallel_size", "expert_tensor_parallel_size"})
    if (const auto size = a.integer(flag_of(field))) parallelism[field] = *size;
  if (const auto dispatcher = a.text("--moe-token-dispatcher-type")) parallelism["moe_token_dispatcher_type"] = *dispatcher;
  map_flex_dispatcher(a, parallelism, notes);
  if (a.has("--overlap-moe-expert-parallel-comm")) parallelism["overlap_moe_expert_parallel_comm"] = true;
  // --async-tensor-model-parallel-allreduce: the opt-in of August 2021, the default since.
  if (a.has("--no-async-tensor-model-parallel-allreduce")) parallelism["async_tensor_model_parallel_allreduce"] = false;
  if (a.has("--tp-comm-overlap")) {
    if (tp > 1)
      parallelism["tp_comm_overlap"] = true;
    else
      notes.push_back("--tp-comm-overlap with TP 1: off, as Megatron-LM turns it off");
  }
  if (a.has("--use-distributed-optimizer")) parallelism["zero_stage"] = 1;
  if (const auto bucket = a.integer("--ddp-bucket-size")) parallelism["ddp_bucket_size"] = *bucket;
  const std::optional<std::string> ddp = a.choice("--DDP-impl", {"local", "torch"});
  if (ddp == "torch")
    notes.push_back("--DDP-impl torch: PyTorch DDP reduces the gradients during the last micro-batch's backward "
                    "(overlap_grad_reduce)");
  if (a.has("--overlap-grad-reduce") || ddp == "torch") parallelism["overlap_grad_reduce"] = true;
  if (a.has("--overlap-param-gather")) parallelism["overlap_param_gather"] = true;
  if (a.has("--grad-reduce-in-bf16")) parallelism["grad_reduce_in_bf16"] = true;

  nlohmann::ordered_json training;
  training["seq_length"] = seq;
  const int64_t micro = a.integer("--micro-batch-size").value_or(1);
  training["micro_batch_size"] = micro;
  training["global_batch_size"] = a.integer("--global-batch-size").value_or(micro * dp);
  precision(a, training);
  recompute(a, training, notes);
  const std::optional<std::string> backend =
      a.choice("--attention-backend", {"auto", "flash", "fused", "unfused", "local"});
  bool flash = !backend || *backend == "auto" || *backend == "flash" || *backend == "fused";
  if (!backend && !a.has("--use-flash-attn"))
    for (const std::string& flag : kFlagsOf2021)
      if (a.has(flag)) {
        notes.push_back(flag + " is of Megatron-LM of 2021, before FlashAttention: attention unfused");
        if (tp > 1 && !a.has("--no-async-tensor-model-parallel-allreduce") &&
            !a.has("--async-tensor-model-parallel-allreduce"))
          notes.push_back("the TP input gradients all-reduced beside the weight gradients, Megatron-LM's default "
                          "since September 2021; before, they blocked: --set "
                          "async_tensor_model_parallel_allreduce=false");
        flash = false;
        break;
      }
  training["flash_attention"] = flash;

  // What the host launches: Megatron-LM's command-line defaults (arguments.py), which turn the
  // bias-activation and bias-dropout fusions on where TransformerConfig's own defaults leave them off.
  nlohmann::ordered_json software;
  const HostSettings defaults;
  auto set = [&](const char* key, auto value, auto default_value) {
    if (value != default_value) software[key] = value;
  };
  if (model.contains("num_experts")) {
    set("moe_permute_fusion", a.has("--moe-permute-fusion"), defaults.moe_permute_fusion);
    set("moe_router_fusion", a.has("--moe-router-fusion"), defaults.moe_router_fusion);
    set("moe_grouped_gemm", a.has("--moe-grouped-gemm"), defaults.moe_grouped_gemm);
    set("moe_aux_loss",
        !all_zero(a.text("--moe-aux-loss-coeff").value_or("0")) && a.text("--moe-router-load-balancing-type") != "none",
        defaults.moe_aux_loss);
    set("moe_router_force_load_balancing", a.has("--moe-router-force-load-balancing"),
        defaults.moe_router_force_load_balancing);
  }
  set("bias_activation_fusion", !a.has(a.has("--swiglu") ? "--no-bias-swiglu-fusion" : "--no-bias-gelu-fusion"),
      defaults.bias_activation_fusion);
  set("bias_dropout_fusion", !a.has("--no-bias-dropout-fusion"), defaults.bias_dropout_fusion);
  set("te_cross_entropy",
      a.has("--cross-entropy-loss-fusion") && a.choice("--cross-entropy-fusion-impl", {"native", "te"}) == "te",
      defaults.te_cross_entropy);
  if (const auto impl = a.choice("--cuda-graph-impl", cuda_graph_implementations()); impl && *impl != "none")
    software["cuda_graph_impl"] = *impl;
  if (const auto scopes = a.words("--cuda-graph-scope")) software["cuda_graph_scope"] = *scopes;

  nlohmann::ordered_json d;
  std::string line;
  for (const std::string& w : a.words()) line += (line.empty() ? "" : " ") + w;
  d["description"] = "From the Megatron-LM arguments: " + line;
  d["model"] = model;
  d["training"] = training;
  d["parallelism"] = parallelism;
  d["cluster"] = {{"gpu", cluster.gpu}, {"num_gpus", cluster.num_gpus}, {"topology", cluster.topology}};
  if (!software.empty()) d["software"] = software;
  return d;
}

}  // namespace

MegatronScenario megatron_scenario(const std::vector<std::string>& words, const MegatronCluster& cluster,
                                   const std::string& source) {
  const Arguments a(words, source);
  MegatronScenario result;
  sort_others(a, result);
  try {
    result.document = scenario_document(a, cluster, source, result.notes);
  } catch (const InputError& e) {
    // Said too, so that one try names everything a line needs changed.
    if (result.not_simulated.empty()) throw;
    throw InputError(e.file(), e.field(), e.reason() + "; not simulated either: " + joined(result.not_simulated));
  }
  return result;
}

}  // namespace simtrain
