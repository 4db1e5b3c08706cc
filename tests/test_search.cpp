// simtrain search against brute force on a small model and cluster: the
// configurations it simulates are exactly those that fit (less needless
// recompute), its best is the best of all, its lower bound never exceeds a
// simulated step; output identical across --jobs and MPI ranks; the Pareto
// SVG is well-formed XML.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/search/search.hpp"
#include "sim/search/search_decision.hpp"
#include "sim/search/search_report.hpp"
#include "sim/search/step_bound.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using fixtures::read_text;
using nlohmann::json;
using testing::HasSubstr;

// 8 GPUs of 6 GiB (so that some strategies do not fit) for a 12-layer GPT.
json small_scenario() {
  json doc = fixtures::scenario_json(1, 1, 8, 12, "1f1b");
  doc["model"]["hidden_size"] = 1024;
  doc["model"]["num_attention_heads"] = 16;
  doc["model"]["vocab_size"] = 32000;
  doc["model"]["max_position_embeddings"] = 2048;
  doc["training"] = {{"seq_length", 2048}, {"global_batch_size", 32}};
  doc["cluster"]["gpu"] = {{"name", "small"}, {"peak_bf16_tflops", 400}, {"hbm_GBps", 2000}, {"memory_GiB", 2.5},
                           {"sm_count", 132},   {"tensor_clock_MHz", 1830}, {"sustained_tensor_clock_MHz", 1649}};
  doc["cluster"]["price_per_gpu_hour"] = 2.0;
  doc["cluster"]["memory_reserve_GiB"] = 0;  // a toy GPU sized for the tensors alone
  doc["parallelism"] = json::object();
  return doc;
}

// The grid of these tests: everything else fixed.
std::vector<Dimension> small_grid() {
  return {{"tensor_model_parallel_size", {1, 2, 4}},
          {"pipeline_model_parallel_size", {1, 2, 4}},
          {"virtual_stages", {1}},
          {"micro_batch_size", {1, 2}},
          {"schedule", {"1f1b"}},
          {"zero_stage", {0, 1}},
          {"recompute_granularity", {"none", "full"}},
          {"sequence_parallel", {false}}};
}

SearchRequest small_request(int top) {
  SearchRequest r;
  r.base = fixtures::scenario_from(small_scenario());
  r.base_dir = ".";
  r.dimensions = small_grid();
  r.top = top;
  r.round_size = 4;
  return r;
}

struct BruteForce {
  std::map<std::string, double> fitting;  // configuration -> step seconds
  int out_of_memory = 0;
  int invalid = 0;
};

std::string describe(const Scenario& s) {
  return std::to_string(s.parallel.tensor) + "/" + std::to_string(s.parallel.pipeline) + "/" +
         std::to_string(s.training.micro_batch_size) + "/" + std::to_string(s.parallel.zero_stage) + "/" +
         to_string(s.training.recompute);
}

// Every configuration of the grid, simulated.
const BruteForce& brute_force() {
  static const BruteForce result = [] {
    BruteForce b;
    for (int tp : {1, 2, 4})
      for (int pp : {1, 2, 4})
        for (int mbs : {1, 2})
          for (int zero : {0, 1})
            for (const char* recompute : {"none", "full"}) {
              json doc = small_scenario();
              doc["parallelism"] = {{"tensor_model_parallel_size", tp}, {"pipeline_model_parallel_size", pp}};
              if (8 / (tp * pp) > 1) doc["parallelism"]["zero_stage"] = zero;
              else if (zero) continue;  // the same configuration as zero 0
              doc["training"]["micro_batch_size"] = mbs;
              doc["training"]["recompute_granularity"] = recompute;
              Scenario s;
              try {
                s = fixtures::scenario_from(doc);
              } catch (const InputError&) {
                ++b.invalid;
                continue;
              }
              const StepReport r = simulate(s).report;
              if (r.out_of_memory)
                ++b.out_of_memory;
              else
                b.fitting[describe(s)] = r.step_seconds;
            }
    return b;
  }();
  return result;
}

TEST(Search, SimulatesExactlyTheConfigurationsThatFit) {
  const SearchResult result = run_search(small_request(0), local_simulator(2));
  const BruteForce& b = brute_force();
  ASSERT_GT(b.out_of_memory, 0);
  ASSERT_GT(b.fitting.size(), 4u);
  EXPECT_EQ(result.counts.out_of_memory, b.out_of_memory);
  EXPECT_EQ(result.counts.invalid, b.invalid);
  EXPECT_EQ(result.counts.bounded, 0);
  // Simulated: what fits, less full recompute where none fits too.
  std::set<std::string> expected, simulated;
  for (const auto& [config, seconds] : b.fitting)
    if (!(config.ends_with("full") && b.fitting.count(config.substr(0, config.size() - 4) + "none"))) expected.insert(config);
  for (const SearchRow& row : result.rows) {
    simulated.insert(describe(row.scenario));
    EXPECT_NEAR(row.figures.step_seconds, b.fitting.at(describe(row.scenario)), 1e-12) << describe(row.scenario);
  }
  EXPECT_EQ(simulated, expected);
  EXPECT_EQ(result.counts.dominated, static_cast<long long>(b.fitting.size() - expected.size()));
  EXPECT_EQ(result.counts.enumerated, result.counts.duplicates + result.counts.invalid + result.counts.out_of_memory +
                                          result.counts.dominated + result.counts.simulated);
}

TEST(Search, BestEqualsTheBestOfEveryConfigurationAndBoundingSkipsSome) {
  const SearchResult result = run_search(small_request(1), local_simulator(2));
  double best = 1e300;
  for (const auto& [config, seconds] : brute_force().fitting) best = std::min(best, seconds);
  ASSERT_FALSE(result.rows.empty());
  EXPECT_DOUBLE_EQ(result.rows.front().figures.step_seconds, best);
  EXPECT_GT(result.counts.bounded, 0);
  for (size_t i = 1; i < result.rows.size(); ++i) EXPECT_LE(result.rows[i - 1].objective, result.rows[i].objective);
}

TEST(Search, RanksByCostAcrossClusterSizesAndKeepsTheParetoFront) {
  SearchRequest request = small_request(3);
  request.gpu_counts = {4, 8};
  request.objective = Objective::cost;
  const SearchResult result = run_search(request, local_simulator(2));
  EXPECT_EQ(result.cost_unit, "USD");
  ASSERT_GE(result.rows.size(), 3u);
  for (size_t i = 1; i < result.rows.size(); ++i) EXPECT_LE(result.rows[i - 1].cost, result.rows[i].cost);
  // The front: no configuration is both faster and cheaper than one of it.
  const SearchResult all = [&] {
    SearchRequest r = request;
    r.top = 0;
    return run_search(r, local_simulator(2));
  }();
  std::vector<std::pair<double, double>> front;
  for (int i : result.pareto) front.push_back({result.rows[i].seconds_to_train, result.rows[i].cost});
  std::vector<std::pair<double, double>> expected;
  for (int i : all.pareto) expected.push_back({all.rows[i].seconds_to_train, all.rows[i].cost});
  EXPECT_EQ(front, expected);
  for (int i : result.pareto)
    for (const SearchRow& r : all.rows)
      EXPECT_FALSE(r.seconds_to_train < result.rows[i].seconds_to_train && r.cost < result.rows[i].cost);
}

TEST(Search, LowerBoundNeverExceedsTheSimulatedStep) {
  const json variants[] = {json::object(),
                           {{"zero_stage", 1}},
                           {{"overlap_grad_reduce", true}, {"overlap_p2p_communication", true}},
                           {{"dp_compression_ratio", 4}},
                           {{"dp_sync", "tree"}},
                           {{"sequence_parallel", true}},
                           {{"sequence_parallel", true}, {"tp_comm_overlap", true}}};
  for (const std::string& schedule : {"gpipe", "1f1b", "zb_h1", "interleaved_1f1b"})
    for (int tp : {1, 4})
      for (const json& variant : variants) {
        json doc = fixtures::scenario_json(tp, 2, 16 / (2 * tp), 8, schedule, schedule == "interleaved_1f1b" ? 2 : 0);
        doc["parallelism"].update(variant);
        const Scenario s = fixtures::scenario_from(doc);
        const Workload w = build_workload(s);
        const double bound = step_lower_bound_seconds(s, w, *make_cost_model(s));
        const double step = simulate(s).timeline.step_seconds;
        EXPECT_GT(bound, 0.6 * step) << schedule << " tp" << tp << " " << variant;  // tight enough to prune
        EXPECT_LE(bound, step) << schedule << " tp" << tp << " " << variant;
      }
  // Block recompute: the recomputed layers' recompute, the others' none.
  for (const std::string& schedule : {"1f1b", "interleaved_1f1b"}) {
    json doc = fixtures::scenario_json(1, 2, 8, 8, schedule, schedule == "interleaved_1f1b" ? 2 : 0);
    doc["training"].update({{"recompute_granularity", "full"}, {"recompute_method", "block"}, {"recompute_num_layers", 1}});
    const Scenario s = fixtures::scenario_from(doc);
    const double bound = step_lower_bound_seconds(s, build_workload(s), *make_cost_model(s));
    const double step = simulate(s).timeline.step_seconds;
    EXPECT_GT(bound, 0.6 * step) << schedule;
    EXPECT_LE(bound, step) << schedule;
  }
}

TEST(Search, VariesAnyScenarioFieldSuchAsTheBucketSize) {
  SearchRequest request = small_request(0);
  request.dimensions = {{"tensor_model_parallel_size", {2}},        {"pipeline_model_parallel_size", {1}},
                        {"virtual_stages", {1}},                    {"micro_batch_size", {1}},
                        {"schedule", {"1f1b"}},
                        {"zero_stage", {0}},                        {"recompute_granularity", {"full"}},
                        {"sequence_parallel", {false}},             {"ddp_bucket_size", {1000000, 40000000}},
                        {"dp_sync", {"ring", "parameter_server"}}, {"parameter_servers", {1, 2}}};
  const SearchResult result = run_search(request, local_simulator(2));
  EXPECT_EQ(result.columns, (std::vector<std::string>{"ddp_bucket_size", "dp_sync", "parameter_servers"}));
  // ring x 2 buckets, parameter_server x 2 buckets x 2 server counts.
  EXPECT_EQ(result.rows.size(), 6u);
  EXPECT_EQ(result.counts.duplicates, 2);
  EXPECT_THAT(to_text(result, 0), HasSubstr("ps x2"));
}

// A scenario overlapping TP communication (which needs SP): the grid's
// points without SP run without the overlap instead of being refused, and
// those with SP keep it.
TEST(Search, PointsWithoutSequenceParallelismDropTheTpOverlap) {
  SearchRequest request = small_request(0);
  json doc = small_scenario();
  doc["parallelism"] = {{"sequence_parallel", true}, {"tp_comm_overlap", true}};
  request.base = fixtures::scenario_from(doc);
  request.dimensions = {{"tensor_model_parallel_size", {1, 2}}, {"pipeline_model_parallel_size", {1}},
                        {"virtual_stages", {1}},                {"micro_batch_size", {1}},
                        {"schedule", {"1f1b"}},                 {"zero_stage", {1}},
                        {"recompute_granularity", {"full"}},    {"sequence_parallel", {false, true}}};
  const SearchResult result = run_search(request, local_simulator(2));
  EXPECT_EQ(result.counts.invalid, 0);
  EXPECT_EQ(result.counts.duplicates, 1);  // TP 1: SP does not apply
  ASSERT_EQ(result.rows.size(), 3u);
  for (const SearchRow& row : result.rows) {
    const ParallelConfig& p = row.scenario.parallel;
    EXPECT_EQ(p.tp_comm_overlap, p.sequence_parallel) << p.tensor;
  }
}

// The grid's full recompute recomputes every layer: a scenario's block
// recompute (its first N layers of each stage) is its own configuration's,
// and no grid point is refused for it.
TEST(Search, TheGridsFullRecomputeIsEveryLayersWhateverTheScenarios) {
  SearchRequest request = small_request(0);
  json doc = small_scenario();
  doc["training"]["recompute_granularity"] = "full";
  doc["training"]["recompute_method"] = "block";
  doc["training"]["recompute_num_layers"] = 2;
  doc["cluster"]["gpu"]["memory_GiB"] = 8;  // the 10 layers keeping their activations fit
  request.base = fixtures::scenario_from(doc);
  request.dimensions = {{"tensor_model_parallel_size", {1}}, {"pipeline_model_parallel_size", {1}},
                        {"virtual_stages", {1}},             {"micro_batch_size", {1}},
                        {"schedule", {"1f1b"}},              {"zero_stage", {1}},
                        {"recompute_granularity", {"full"}}};
  const SearchResult result = run_search(request, local_simulator(2));
  EXPECT_EQ(result.counts.invalid, 0);
  EXPECT_EQ(result.baseline_absent, "");
  int baselines = 0, full_grid_points = 0;
  for (const SearchRow& row : result.rows) {
    EXPECT_EQ(row.scenario.training.recompute_block_layers, row.baseline ? 2 : 0) << to_string(row.scenario.training.recompute);
    baselines += row.baseline;
    full_grid_points += !row.baseline && row.scenario.training.recompute == Recompute::full;
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_EQ(full_grid_points, 1);

  // A scenario naming selective recompute's module: the grid's points of every recompute are valid.
  json modules = small_scenario();
  modules["training"].update({{"recompute_granularity", "selective"}, {"recompute_modules", {"core_attn"}}});
  modules["cluster"]["gpu"]["memory_GiB"] = 8;
  SearchRequest of_modules = request;
  of_modules.base = fixtures::scenario_from(modules);
  of_modules.dimensions.back() = {"recompute_granularity", {"none", "selective", "full"}};
  EXPECT_EQ(run_search(of_modules, local_simulator(2)).counts.invalid, 0);

  // Varying the layers block recompute recomputes: each point its own.
  request.dimensions.push_back({"recompute_num_layers", {4, 12}});
  const SearchResult varied = run_search(request, local_simulator(2));
  EXPECT_EQ(varied.counts.invalid, 0);
  std::set<int64_t> layers;
  for (const SearchRow& row : varied.rows) layers.insert(row.scenario.training.recompute_block_layers);
  EXPECT_EQ(layers, (std::set<int64_t>{2, 4, 12}));
}

// Figures made up by the test: the step `seconds_of(scenario)`.
BatchSimulator made_up(std::function<double(const Scenario&)> seconds_of) {
  return [seconds_of](const std::vector<const Scenario*>& batch, const std::function<void()>& on_done) {
    std::vector<StepFigures> figures;
    for (const Scenario* s : batch) {
      StepFigures f;
      f.step_seconds = seconds_of(*s);
      f.tokens_per_second = static_cast<double>(s->training.global_batch_size * s->training.seq_length) / f.step_seconds;
      figures.push_back(f);
      if (on_done) on_done();
    }
    return figures;
  };
}

SearchRequest tp_and_zero_request() {
  SearchRequest request = small_request(0);
  request.dimensions = {{"tensor_model_parallel_size", {1, 2, 4}}, {"pipeline_model_parallel_size", {1}},
                        {"virtual_stages", {1}},                   {"micro_batch_size", {1}},
                        {"zero_stage", {0, 1}},                    {"recompute_granularity", {"full"}},
                        {"sequence_parallel", {false}}};
  request.base = fixtures::scenario_from([] {
    json doc = small_scenario();
    doc["training"]["recompute_granularity"] = "full";
    doc["parallelism"]["tensor_model_parallel_size"] = 2;  // with TP 1, only ZeRO 1 fits
    return doc;
  }());
  return request;
}

TEST(Search, VariesExpertParallelismForAModelWithExperts) {
  const std::vector<Dimension> dense = default_dimensions(fixtures::scenario_from(small_scenario()));
  EXPECT_TRUE(std::none_of(dense.begin(), dense.end(),
                           [](const Dimension& d) { return d.key == "expert_model_parallel_size"; }));
  json doc = small_scenario();
  doc["model"]["num_experts"] = 8;
  doc["model"]["num_experts_per_tok"] = 2;
  doc["model"]["moe_intermediate_size"] = 512;
  doc["training"]["recompute_granularity"] = "full";
  SearchRequest request = small_request(0);
  request.base = fixtures::scenario_from(doc);
  const std::vector<Dimension> defaults = default_dimensions(request.base);
  ASSERT_EQ(defaults.back().key, "expert_model_parallel_size");
  EXPECT_EQ(defaults.back().values, (std::vector<json>{1, 2, 4, 8}));
  request.dimensions = {{"tensor_model_parallel_size", {1}}, {"pipeline_model_parallel_size", {1}},
                        {"virtual_stages", {1}},              {"micro_batch_size", {1}},
                        {"zero_stage", {1}},                  {"recompute_granularity", {"full"}},
                        {"sequence_parallel", {false}}};
  const SearchResult result = run_search(request, made_up([](const Scenario& s) {
    return 1.0 + 0.1 * static_cast<double>(s.parallel.expert);
  }));
  std::set<int64_t> expert_sizes;
  for (const SearchRow& row : result.rows) expert_sizes.insert(row.scenario.parallel.expert);
  EXPECT_EQ(expert_sizes, (std::set<int64_t>{1, 2, 4, 8}));  // DP 8: every power of two up to the 8 experts
  EXPECT_THAT(to_text(result, 0), testing::ContainsRegex("compression  ep  step ms"));
  EXPECT_THAT(decision_text(result), HasSubstr("Best for time: TP1 PP1 DP8 EP1, micro-batch 1"));
}

TEST(SearchText, ZeroTwinsShareALineAndRowsWithinTheTieShareARank) {
  // TP 2 and 4 within 1 % of each other, TP 1 (only ZeRO 1 fits) well behind; ZeRO changes nothing.
  const SearchResult result = run_search(tp_and_zero_request(), made_up([](const Scenario& s) {
    return s.parallel.tensor == 2 ? 1.0 : s.parallel.tensor == 4 ? 1.005 : 1.5;
  }));
  ASSERT_EQ(result.rows.size(), 5u);  // the scenario's own (TP 2, ZeRO 0) is the grid's row
  EXPECT_THAT(decision_text(result),
              testing::StartsWith("Best for time: TP2 PP1 DP4, micro-batch 1, ZeRO 0/1, recompute full: 1,000.0 ms per "
                                  "step, 67.8 USD per 1B tokens; it is the scenario's own configuration. 1 other "
                                  "configuration is within 1 % of it (ranked 1=)."));
  const std::vector<TableLine> lines = table_lines(result, 0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rank, "1=");
  EXPECT_EQ(lines[1].rank, "1=");
  EXPECT_EQ(lines[2].rank, "5");
  EXPECT_EQ(lines[0].rows.size(), 2u);
  EXPECT_EQ(lines[1].rows.size(), 2u);
  EXPECT_EQ(result.rows[lines[2].rows[0]].scenario.parallel.tensor, 1);
  // One line per pair, its ZeRO stages listed; the scenario's marked.
  const std::string text = to_text(result, 0);
  EXPECT_THAT(text, testing::ContainsRegex("\n +1=  small +8 +2 +1 +4 +1 +1 +- +0,1 +full [^\n]* 1,000.0 [^\n]* the scenario's own\n"));
  EXPECT_THAT(text, testing::ContainsRegex("\n +1=  small +8 +4 +1 +2 +1 +1 +- +0,1 +full [^\n]* 1,005.0 "));
  EXPECT_THAT(text, testing::ContainsRegex("\n +5  small +8 +1 +1 +8 +1 +1 +- +1 +full [^\n]* 1,500.0 "));
}

TEST(SearchText, TheScenariosOwnConfigurationIsRankedEvenOffTheGridAndBelowTheTop) {
  SearchRequest request = tp_and_zero_request();
  request.base = fixtures::scenario_from([] {
    json doc = small_scenario();
    doc["training"]["recompute_granularity"] = "full";
    doc["training"]["micro_batch_size"] = 2;  // not a grid value
    doc["parallelism"]["tensor_model_parallel_size"] = 2;
    return doc;
  }());
  request.top = 1;
  const SearchResult result = run_search(request, made_up([](const Scenario& s) {
    return s.training.micro_batch_size == 2 ? 3.0 : 1.0 + 0.1 * static_cast<double>(s.parallel.tensor);
  }));
  const auto own = std::find_if(result.rows.begin(), result.rows.end(), [](const SearchRow& r) { return r.baseline; });
  ASSERT_NE(own, result.rows.end());
  EXPECT_EQ(own->scenario.training.micro_batch_size, 2);
  EXPECT_EQ(own, result.rows.end() - 1);
  EXPECT_THAT(decision_text(result), HasSubstr("63.3 % faster than the scenario's own TP2 PP1 DP4, micro-batch 2, ZeRO 0, "
                                               "recompute full: 3,000.0 ms per step"));
  EXPECT_THAT(to_text(result, 1),
              testing::ContainsRegex("\n\\.\\.\\.\n +6  small [^\n]* 3,000.0 [^\n]* the scenario's own\n"));
}

TEST(SearchText, SaysWhyTheScenariosOwnConfigurationIsNotRanked) {
  SearchRequest request = tp_and_zero_request();
  request.base = fixtures::scenario_from(small_scenario());  // no recompute: does not fit in 2.5 GiB
  const SearchResult result = run_search(request, made_up([](const Scenario&) { return 1.0; }));
  EXPECT_THAT(result.baseline_absent, testing::StartsWith("it does not fit in memory ("));
  EXPECT_THAT(decision_text(result), HasSubstr("The scenario's own configuration is not ranked: it does not fit in memory ("));
  EXPECT_FALSE(std::any_of(result.rows.begin(), result.rows.end(), [](const SearchRow& r) { return r.baseline; }));
}

TEST(SearchText, StepTimesGetTheDecimalsThatTellRowsApart) {
  const SearchResult result = run_search(tp_and_zero_request(), made_up([](const Scenario& s) {
    return 1.0 + 1e-6 * static_cast<double>(s.parallel.tensor);  // 1.001, 1.002 and 1.004 ms apart
  }));
  const std::string text = to_text(result, 0);
  EXPECT_THAT(text, HasSubstr(" 1,000.001 "));
  EXPECT_THAT(text, HasSubstr(" 1,000.002 "));
  EXPECT_THAT(text, HasSubstr(" 1,000.004 "));
}

class SearchCli : public testing::Test {
protected:
  void SetUp() override { std::ofstream(path("scenario.json")) << small_scenario().dump(2); }
  std::string path(const std::string& name) const { return (temporary_.path() / name).string(); }
  std::vector<std::string> search_args() const {
    return {"search",         path("scenario.json"), "--gpus",   "4,8",
            "--vary",         "tensor_model_parallel_size=1,2",   "--vary",   "pipeline_model_parallel_size=1,2",
            "--vary",         "recompute_granularity=full",        "--set",    "micro_batch_size=1",
            "--set",          "schedule=1f1b",                     "--set",    "sequence_parallel=false",
            "--vary",         "virtual_stages=1",                  "--top",    "3",
            "--objective",    "cost",                              "--quiet"};
  }

  fixtures::TemporaryDirectory temporary_{"search"};
};

TEST_F(SearchCli, OutputIsTheSameForOneAndTwoJobs) {
  std::vector<std::string> outputs;
  for (const std::string jobs : {"1", "2"}) {
    std::vector<std::string> args = search_args();
    args.insert(args.end(), {"--jobs", jobs, "--csv", path("s" + jobs + ".csv"), "--json", path("s" + jobs + ".json"),
                             "--pareto-svg", path("s" + jobs + ".svg")});
    const fixtures::CliResult r = fixtures::run_simtrain(args);
    ASSERT_EQ(r.code, 0) << r.err;
    outputs.push_back(r.out);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_THAT(outputs[0], HasSubstr("ranked by cost"));
  EXPECT_THAT(outputs[0], HasSubstr("Pareto front"));
  for (const char* ext : {".csv", ".json", ".svg"}) EXPECT_EQ(read_text(path(std::string("s1") + ext)), read_text(path(std::string("s2") + ext)));
  EXPECT_EQ(fixtures::read_json(path("s1.json"))["counts"]["simulated"], fixtures::read_json(path("s1.json"))["rows"].size());
}

// A tiny XML well-formedness check: tags nest and close, attributes are quoted.
bool well_formed_xml(const std::string& text, int& elements) {
  std::vector<std::string> open;
  elements = 0;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '<') {
      if (text[i] == '&' && text.find(';', i) == std::string::npos) return false;
      ++i;
      continue;
    }
    const size_t end = text.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = text.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?")) continue;
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (std::count(tag.begin(), tag.end(), '"') % 2) return false;
    ++elements;
    if (!tag.ends_with("/")) open.push_back(name);
  }
  return open.empty();
}

TEST_F(SearchCli, ParetoSvgIsWellFormedWithUnitsOnItsAxes) {
  std::vector<std::string> args = search_args();
  args.insert(args.end(), {"--pareto-svg", path("front.svg")});
  const fixtures::CliResult r = fixtures::run_simtrain(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = read_text(path("front.svg"));
  int elements = 0;
  EXPECT_TRUE(well_formed_xml(svg, elements));
  EXPECT_GT(elements, 10);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("(hours)"));
  EXPECT_THAT(svg, HasSubstr("(USD)"));
  EXPECT_THAT(svg, HasSubstr("<polyline"));
}

TEST_F(SearchCli, BadOptionsAreInputErrors) {
  std::vector<std::string> args = search_args();
  args.insert(args.end(), {"--vary", "zero_stage"});
  const fixtures::CliResult r = fixtures::run_simtrain(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--vary zero_stage: expected key=value"));
  std::vector<std::string> tie = search_args();
  tie.insert(tie.end(), {"--tie", "150"});
  const fixtures::CliResult t = fixtures::run_simtrain(tie);
  EXPECT_EQ(t.code, 2);
  EXPECT_THAT(t.err, HasSubstr("--tie"));
}

TEST_F(SearchCli, MpiRanksGatherTheSameTableAsOneProcess) {
#ifndef SIMTRAIN_MPIEXEC
  GTEST_SKIP() << "simtrain was built without MPI (install libopenmpi-dev and reconfigure)";
#else
  if (const std::string missing = fixtures::mpirun_missing(); !missing.empty()) GTEST_SKIP() << missing;
  const fixtures::CliResult single = fixtures::run_simtrain(search_args());
  ASSERT_EQ(single.code, 0) << single.err;
  const fixtures::CliResult mpi = fixtures::run_mpi_simtrain(3, search_args(), temporary_.path());
  ASSERT_EQ(mpi.code, 0) << mpi.err;
  EXPECT_EQ(mpi.out, single.out);
#endif
}

}  // namespace
}  // namespace simtrain
