// The step report: the text and the JSON report say the same things, each
// starts with what was simulated (after --set), means are means, and with
// free communication no time is called exposed communication.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

#include "sim/base/text_format.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/step/report.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using nlohmann::json;
using testing::HasSubstr;

constexpr double GiB = 1024.0 * 1024 * 1024;

struct Reports {
  std::string text;
  json report;  // the --report file
};

class ReportTest : public testing::Test {
protected:
  std::string path(const std::string& name) const { return (temporary_.path() / name).string(); }

  // `simtrain simulate` of a built-in scenario or a scenario file, with `extra` arguments.
  Reports simulate_cli(const std::string& scenario, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"simulate", scenario, "--quiet", "--report", path("report.json"), "--force"};  // each call replaces it
    args.insert(args.end(), extra.begin(), extra.end());
    const fixtures::CliResult r = fixtures::run_simtrain(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return {r.out, fixtures::read_json(path("report.json"))};
  }

  std::string write_scenario(const json& document) const {
    std::ofstream(path("scenario.json")) << document.dump(2);
    return path("scenario.json");
  }

  fixtures::TemporaryDirectory temporary_{"report"};
};

// TP 2 x PP 2 x DP 2, interleaved, with every option the header names set away from its default.
json every_parallelism() {
  json document = fixtures::scenario_json(2, 2, 2, 8, "interleaved_1f1b", 2, 4);
  document["parallelism"]["zero_stage"] = 1;
  document["parallelism"]["sequence_parallel"] = true;
  document["parallelism"]["overlap_grad_reduce"] = true;
  document["training"]["recompute_granularity"] = "selective";
  return document;
}

// The line of `text` that starts with `label`, matched against `pattern`: its groups.
std::vector<std::string> figures_on_line(const std::string& text, const std::string& label,
                                         const std::string& pattern) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(label + " ")) continue;
    std::smatch match;
    if (!std::regex_match(line, match, std::regex(label + " +" + pattern))) {
      ADD_FAILURE() << "'" << line << "' does not match " << pattern;
      return {};
    }
    return {match.begin() + 1, match.end()};
  }
  ADD_FAILURE() << "no line '" << label << "' in\n" << text;
  return {};
}

bool has_line(const std::string& text, const std::string& label) {
  return text.starts_with(label + " ") || text.find("\n" + label + " ") != std::string::npos;
}

// Rows of the per-stage table, each as its figures.
std::vector<std::vector<std::string>> stage_rows(const std::string& text) {
  const std::regex row(R"( *(\d+)  ((?:[\d.]+ ms +)+)([\d.]+) GiB)"), column(R"(([\d.]+) ms)");
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("stage  compute")) in_table = true;
    else if (line.empty()) in_table = false;
    else if (std::smatch match; in_table && std::regex_match(line, match, row)) {
      std::vector<std::string> figures = {match[1]};  // the stage, every column in ms, the memory in GiB
      const std::string columns = match[2];
      for (std::sregex_iterator it(columns.begin(), columns.end(), column), end; it != end; ++it)
        figures.push_back((*it)[1]);
      figures.push_back(match[3]);
      rows.push_back(figures);
    }
    else if (in_table) ADD_FAILURE() << "not a stage row: " << line;
  }
  return rows;
}

std::string ms(const json& seconds) { return format("%.1f", seconds.get<double>() * 1e3); }
std::string percent(const json& fraction) { return format("%.1f", fraction.get<double>() * 100); }
std::string gib(const json& bytes, const char* pattern = "%.1f") { return format(pattern, bytes.get<double>() / GiB); }
std::string integer(const json& value) { return std::to_string(value.get<long long>()); }
std::string on_off(const json& flag) { return flag.get<bool>() ? "on" : "off"; }

void expect_same_summary(const std::string& text, const json& scenario) {
  const json& model = scenario["model"];
  const std::vector<std::string> m =
      figures_on_line(text, "model", R"((\S+): (\d+) layers, hidden size (\d+), ([\d.,]+)( [MB])? parameters)");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], model["name"]);
  EXPECT_EQ(m[1], integer(model["num_hidden_layers"]));
  EXPECT_EQ(m[2], integer(model["hidden_size"]));
  const double parameters = model["parameters"];
  EXPECT_EQ(m[3], m[4] == " B" ? format("%.1f", parameters / 1e9)
                  : m[4] == " M" ? format("%.1f", parameters / 1e6)
                                 : with_commas(parameters));

  const std::vector<std::string> c = figures_on_line(text, "cluster", R"((\d+) x (\S+), topology (\S+))");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], integer(scenario["cluster"]["num_gpus"]));
  EXPECT_EQ(c[1], scenario["cluster"]["gpu"]);
  EXPECT_EQ(c[2], scenario["cluster"]["topology"]);

  const json& p = scenario["parallelism"];
  const std::vector<std::string> l = figures_on_line(
      text, "parallelism",
      R"(TP (\d+) x PP (\d+) x DP (\d+)(?: x (\d+) virtual stages)?, schedule (\S+), ZeRO stage (\d), sequence parallel (on|off))");
  ASSERT_EQ(l.size(), 7u);
  EXPECT_EQ(l[0], integer(p["tensor_model_parallel_size"]));
  EXPECT_EQ(l[1], integer(p["pipeline_model_parallel_size"]));
  EXPECT_EQ(l[2], integer(p["data_parallel_size"]));
  EXPECT_EQ(l[3].empty() ? "1" : l[3], integer(p["virtual_stages"]));
  EXPECT_EQ(l[4], p["schedule"]);
  EXPECT_EQ(l[5], integer(p["zero_stage"]));
  EXPECT_EQ(l[6], on_off(p["sequence_parallel"]));

  const json& t = scenario["training"];
  const std::vector<std::string> b = figures_on_line(
      text, "batch", R"(micro-batch size (\d+), (\d+) micro-batches per pipeline \(global batch (\d+), sequence length (\d+)\))");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], integer(t["micro_batch_size"]));
  EXPECT_EQ(b[1], integer(t["micro_batches"]));
  EXPECT_EQ(b[2], integer(t["global_batch_size"]));
  EXPECT_EQ(b[3], integer(t["seq_length"]));
  EXPECT_EQ(figures_on_line(text, "training", R"((\S+), recompute (\S+))"),
            (std::vector<std::string>{t["dtype"], t["recompute_granularity"]}));
}

void expect_same_speed(const std::string& text, const json& j) {
  EXPECT_EQ(figures_on_line(text, "step time", R"(([\d.]+) s)"), std::vector<std::string>{format("%.4f", j["step_time_s"])});
  EXPECT_EQ(figures_on_line(text, "throughput", R"(([\d,]+) tokens/s)"),
            std::vector<std::string>{with_commas(j["tokens_per_s"])});
  EXPECT_EQ(figures_on_line(text, "achieved", R"(([\d.]+) TFLOP/s per GPU \(([\d.]+) with recompute\))"),
            (std::vector<std::string>{format("%.1f", j["model_tflops_per_gpu"]),
                                      format("%.1f", j["hardware_tflops_per_gpu"])}));
  EXPECT_EQ(figures_on_line(text, "MFU", R"(([\d.]+) %  \(.*\))"), std::vector<std::string>{percent(j["mfu"])});
  EXPECT_EQ(figures_on_line(text, "pipeline bubble", R"(([\d.]+) % of the step \(.*idle / compute = ([\d.]+) %\))"),
            (std::vector<std::string>{percent(j["bubble"]["fraction_of_step"]), percent(j["bubble"]["over_compute"])}));
  EXPECT_FALSE(has_line(text, "JOB STOPPED"));
  EXPECT_EQ(j["stopped"], false);
}

// The dimensions the report gives figures of, in its order: TP, PP, DP, and EP and CP where the job has them.
std::vector<std::string> reported_dimensions(const json& j) {
  std::vector<std::string> dims;
  for (const std::string dim : {"tp", "ep", "cp", "pp", "dp"})
    if (j["mean_time_split"].contains("exposed_" + dim + "_s")) dims.push_back(dim);
  return dims;
}

// "TP ([\d.]+) ms, PP ([\d.]+) ms, DP ([\d.]+) ms": one figure of `unit` per dimension.
std::string per_dimension_pattern(const std::vector<std::string>& dims, const std::string& unit) {
  std::string pattern;
  for (const std::string& dim : dims) {
    std::string label = dim;
    for (char& c : label) c = static_cast<char>(std::toupper(c));
    pattern += (pattern.empty() ? "" : ", ") + label + " ([\\d.]+) " + unit;
  }
  return pattern;
}

void expect_same_communication(const std::string& text, const json& j) {
  const std::vector<std::string> dims = reported_dimensions(j);
  const json& mean = j["mean_time_split"];
  std::vector<std::string> exposed_ms;
  for (const std::string& dim : dims) exposed_ms.push_back(ms(mean["exposed_" + dim + "_s"]));
  EXPECT_EQ(figures_on_line(text, "exposed comm", per_dimension_pattern(dims, "ms") + R"(  \(.*\))"), exposed_ms);
  const json& comm = j["communication"];
  auto ratios = [&](const json& r) {
    std::vector<std::string> figures;
    for (const std::string& dim : dims) figures.push_back(percent(r[dim]));
    return figures;
  };
  EXPECT_EQ(figures_on_line(text, "comm / compute", per_dimension_pattern(dims, "%") + R"(  \(.*\))"),
            ratios(comm["comm_over_compute"]));
  std::vector<std::string> exposed = ratios(comm["exposed_over_compute"]);
  exposed.push_back(integer(comm["most_exposed_rank"]));
  exposed.push_back(percent(comm["most_exposed_over_compute"]));
  EXPECT_EQ(figures_on_line(text, "exposed / compute",
                            per_dimension_pattern(dims, "%") + R"(  \(most: rank (\d+), ([\d.]+) %\))"),
            exposed);
  if (comm["ranks_over_warning"] == 0) {
    EXPECT_FALSE(has_line(text, "WARNING"));
  } else {
    EXPECT_EQ(figures_on_line(text, "WARNING",
                              R"(exposed communication exceeds (\d+) % of compute on (\d+) of (\d+) ranks \(most: rank (\d+), ([\d.]+) %\))"),
              (std::vector<std::string>{format("%.0f", comm["warning_fraction"].get<double>() * 100),
                                        integer(comm["ranks_over_warning"]), std::to_string(comm["ranks"].size()),
                                        integer(comm["most_exposed_rank"]), percent(comm["most_exposed_over_compute"])}));
  }
  const json& links = comm["busiest_links"];
  if (links.empty()) {
    EXPECT_FALSE(has_line(text, "busiest links"));
    return;
  }
  std::string expected;
  for (size_t i = 0; i < links.size() && i < 4; ++i)
    expected += (i ? ", " : "") + links[i]["link"].get<std::string>() + " " + percent(links[i]["utilisation"]) + " %";
  EXPECT_EQ(figures_on_line(text, "busiest links", R"((.*)  \(bytes carried / \(bandwidth x step time\)\))"),
            std::vector<std::string>{expected});
}

void expect_same_memory(const std::string& text, const json& j) {
  const std::vector<std::string> total =
      figures_on_line(text, "memory per GPU", R"(([\d.]+) GiB of (\d+) GiB  (fits|OUT OF MEMORY) \(peak: stage (\d+)\))");
  ASSERT_EQ(total.size(), 4u);
  EXPECT_EQ(total[0], gib(j["memory"]["peak_bytes"]));
  EXPECT_EQ(total[1], gib(j["memory"]["gpu_bytes"], "%.0f"));
  EXPECT_EQ(total[2], j["memory"]["out_of_memory"].get<bool>() ? "OUT OF MEMORY" : "fits");
  const json& peak = j["stages"][std::stoi(total[3])]["memory"];
  EXPECT_EQ(peak["total_bytes"], j["memory"]["peak_bytes"]);
  EXPECT_EQ(figures_on_line(text, "",
                            R"(weights ([\d.]+) GiB, gradients ([\d.]+), optimizer ([\d.]+), activations ([\d.]+), reserve ([\d.]+) \((\d+) micro-batch chunks in flight\))"),
            (std::vector<std::string>{gib(peak["weights_bytes"]), gib(peak["gradients_bytes"]),
                                      gib(peak["optimizer_bytes"]), gib(peak["activations_bytes"]), gib(peak["reserve_bytes"]),
                                      integer(peak["peak_in_flight_microbatches"])}));
}

void expect_same_stages(const std::string& text, const json& j) {
  const std::vector<std::vector<std::string>> rows = stage_rows(text);
  ASSERT_EQ(rows.size(), j["stages"].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& stage = j["stages"][i];
    const json& time = stage["time"];
    std::vector<std::string> expected = {integer(stage["pipeline_rank"]), ms(time["compute_s"])};
    for (const std::string& dim : reported_dimensions(j)) expected.push_back(ms(time["exposed_" + dim + "_s"]));
    expected.push_back(ms(time["idle_s"]));
    // Where some stage's GPU waited for its host (0.1 ms or more as printed), that part of idle.
    if (text.find("idle         host-bound   memory") != std::string::npos)
      expected.push_back(ms(stage["host_wait_s"]));
    expected.push_back(gib(stage["memory"]["total_bytes"]));
    EXPECT_EQ(rows[i], expected) << "stage " << i;
  }
}

void expect_same_bookkeeping(const std::string& text, const json& j) {
  std::string sources;
  for (const auto& [op_class, by_source] : j["compute_time_sources"].items()) {
    sources += " " + op_class + " (";
    bool first = true;
    for (const auto& [source, count] : by_source.items())
      sources += (first ? "" : ", ") + with_commas(count.get<double>()) + " " + source, first = false;
    sources += ")";
  }
  EXPECT_THAT(text, HasSubstr("\ncompute times from:" + sources + "\n"));
  const json& s = j["simulation"];
  EXPECT_EQ(figures_on_line(text, "simulated",
                            R"(([\d,]+) tasks \(([\d,]+) by actors in ([\d,]+) of ([\d,]+) data-parallel replicas, one per class of equivalent ones\), ([\d,]+) network flows, ([\d,]+) closed-form collectives, in [\d.]+ s)"),
            (std::vector<std::string>{with_commas(s["tasks"]), with_commas(s["simulated_tasks"]),
                                      with_commas(s["simulated_replicas"]), with_commas(s["data_parallel_replicas"]),
                                      with_commas(s["flows"]), with_commas(s["closed_form_collectives"])}));
}

void expect_text_agrees_with_json(const Reports& r) {
  ASSERT_TRUE(r.text.starts_with("simtrain: " + r.report["scenario"]["name"].get<std::string>() + "\n")) << r.text;
  expect_same_summary(r.text, r.report["scenario"]);
  expect_same_speed(r.text, r.report);
  expect_same_communication(r.text, r.report);
  expect_same_memory(r.text, r.report);
  expect_same_stages(r.text, r.report);
  expect_same_bookkeeping(r.text, r.report);
}

TEST_F(ReportTest, TextAndJsonAgreeOnEveryFigureTheyBothShow) {
  {
    SCOPED_TRACE("tiny-4gpu: TP 2 x PP 2");
    expect_text_agrees_with_json(simulate_cli("tiny-4gpu"));
  }
  {
    SCOPED_TRACE("TP 2 x PP 2 x DP 2 interleaved, ZeRO 1, selective recompute, sequence parallel");
    expect_text_agrees_with_json(simulate_cli(write_scenario(every_parallelism())));
  }
  {
    SCOPED_TRACE("megatron-1.7b-32xa100 with free communication");
    expect_text_agrees_with_json(simulate_cli("megatron-1.7b-32xa100", {"--free-communication"}));
  }
  {
    SCOPED_TRACE("qwen3-30b-a3b-16xh100 shrunk to 4 layers: EP 8");
    const Reports r = simulate_cli("qwen3-30b-a3b-16xh100", {"--set", "num_hidden_layers=4", "--set",
                                                             "num_virtual_stages_per_pipeline_rank=2", "--set",
                                                             "global_batch_size=32"});
    EXPECT_THAT(r.text, testing::HasSubstr("EP exposed"));
    expect_same_communication(r.text, r.report);  // the summary's expert and CP lines are not parsed here
    expect_same_stages(r.text, r.report);
  }
  {
    SCOPED_TRACE("qwen3-30b-a3b-16xh100 as shipped: its hosts keep the GPUs waiting");
    const Reports r = simulate_cli("qwen3-30b-a3b-16xh100");
    EXPECT_THAT(r.text, testing::HasSubstr("idle         host-bound   memory"));
    expect_same_stages(r.text, r.report);
  }
  {
    SCOPED_TRACE("tiny-4gpu as TP 2 x CP 2");
    const Reports r = simulate_cli("tiny-4gpu", {"--set", "pipeline_model_parallel_size=1", "--set",
                                                 "context_parallel_size=2"});
    EXPECT_THAT(r.text, testing::HasSubstr("CP exposed"));
    expect_same_communication(r.text, r.report);
    expect_same_stages(r.text, r.report);
  }
}

TEST_F(ReportTest, MeanTimeSplitIsTheMeanOverStagesOfEveryFigure) {
  for (const std::string& scenario : {std::string("tiny-4gpu"), write_scenario(every_parallelism())}) {
    const json j = simulate_cli(scenario).report;
    const json& stages = j["stages"];
    for (const auto& [key, mean] : j["mean_time_split"].items()) {
      double sum = 0;
      for (const json& stage : stages) sum += stage["time"][key].get<double>();
      EXPECT_NEAR(mean.get<double>(), sum / stages.size(), 1e-15) << scenario << " " << key;
    }
    // TP 2 on every stage: each stage has TP communication, so its mean does too.
    EXPECT_GT(j["mean_time_split"]["tp_s"].get<double>(), 0) << scenario;
    EXPECT_GE(j["mean_time_split"]["tp_s"].get<double>(), j["mean_time_split"]["exposed_tp_s"].get<double>());
  }
}

TEST_F(ReportTest, ScenarioDescriptionComesFirstAndShowsTheOverrides) {
  const Reports r = simulate_cli("tiny-4gpu", {"--set", "cluster.gpu=A100-80GB", "--set", "micro_batch_size=2",
                                               "--set", "global_batch_size=16", "--set", "recompute_granularity=full",
                                               "--set", "zero_stage=2", "--set", "sequence_parallel=true"});
  EXPECT_THAT(r.text, HasSubstr("\ncluster               4 x A100-80GB, topology dgx-h100-superpod\n"));
  EXPECT_THAT(r.text, HasSubstr("\nparallelism           TP 2 x PP 2 x DP 1, schedule 1f1b, ZeRO stage 2, "
                                "sequence parallel on\n"));
  EXPECT_THAT(r.text, HasSubstr("\nbatch                 micro-batch size 2, 8 micro-batches per pipeline (global "
                                "batch 16, sequence length 1024)\n"));
  EXPECT_THAT(r.text, HasSubstr("\ntraining              bf16, recompute full\n"));
  // The description precedes every figure.
  EXPECT_LT(r.text.find("\ntraining "), r.text.find("\nstep time "));
  EXPECT_TRUE(fixtures::read_text(path("report.json")).starts_with("{\n  \"scenario\": {\n    \"name\": \"tiny-4gpu\",\n"));
  const json& scenario = r.report["scenario"];
  EXPECT_EQ(scenario["cluster"]["gpu"], "A100-80GB");
  EXPECT_EQ(scenario["training"]["micro_batch_size"], 2);
  EXPECT_EQ(scenario["training"]["micro_batches"], 8);
  EXPECT_EQ(scenario["training"]["global_batch_size"], 16);
  EXPECT_EQ(scenario["training"]["recompute_granularity"], "full");
  EXPECT_EQ(scenario["parallelism"]["zero_stage"], 2);
  EXPECT_EQ(scenario["parallelism"]["sequence_parallel"], true);
  expect_text_agrees_with_json(r);
}

// Waiting for a peer (a pipeline neighbour, the tied-embedding partner, a
// slower replica) is idle time: with free communication nothing is exposed.
void expect_no_communication_time(const StepReport& r) {
  std::vector<TimeSplit> splits = r.ranks;
  for (const StageFigures& stage : r.stages) splits.push_back(stage.time);
  splits.push_back(r.mean_split);
  for (const TimeSplit& t : splits) {
    EXPECT_EQ(t.exposed_seconds(), 0);
    EXPECT_EQ(t.tp_seconds + t.ep_seconds + t.cp_seconds + t.pp_seconds + t.dp_seconds, 0);
    EXPECT_GT(t.compute_seconds, 0);
    EXPECT_NEAR(t.compute_seconds + t.idle_seconds, r.step_seconds, 1e-12 * r.step_seconds);
  }
  for (const CommRatios& ratios : {r.comm_over_compute, r.exposed_over_compute})
    EXPECT_EQ(ratios.tp + ratios.ep + ratios.cp + ratios.pp + ratios.dp, 0);
  EXPECT_EQ(r.most_exposed_over_compute, 0);
  EXPECT_EQ(r.ranks_over_warning, 0);
}

TEST(FreeCommunication, EveryExposedFigureIsZeroAndTheStepIsComputePlusIdle) {
  json zero_bubble = fixtures::scenario_json(1, 2, 2, 8, "zb_h1");
  zero_bubble["parallelism"]["dp_sync"] = "parameter_server";
  json deep_pipeline = fixtures::scenario_json(1, 4, 2, 8, "1f1b");
  deep_pipeline["parallelism"]["zero_stage"] = 1;
  const std::vector<std::pair<std::string, Scenario>> scenarios = {
      {"tiny-4gpu (tied embeddings, TP 2 x PP 2)", load_scenario("tiny-4gpu")},
      {"megatron-1.7b-32xa100", load_scenario("megatron-1.7b-32xa100")},
      {"TP 2 x PP 2 x DP 2 interleaved", fixtures::scenario_from(every_parallelism())},
      // Its batches send to one neighbour and receive from the other: waiting for the second is idle.
      {"PP 4 interleaved", load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/gui/examples/pp4-interleaved.json")},
      {"PP 4 x DP 2, ZeRO 1", fixtures::scenario_from(deep_pipeline)},
      {"ZB-H1, PP 2 x DP 2 through a parameter server", fixtures::scenario_from(zero_bubble)}};
  ASSERT_TRUE(scenarios.front().second.model.tie_word_embeddings);
  ReplayOptions free;
  free.free_communication = true;
  for (const auto& [name, scenario] : scenarios) {
    SCOPED_TRACE(name);
    const StepReport r = simulate(scenario, free).report;
    expect_no_communication_time(r);
    if (scenario.parallel.pipeline > 1) EXPECT_GT(r.mean_split.idle_seconds, 0);  // the bubble is still there
  }
}

// Ranks reading another rank's stored list run its works: the compute time
// sources count every rank's ops all the same.
TEST(ComputeTimeSources, CountEveryRanksOps) {
  const Simulation sim = simulate(fixtures::scenario_from(every_parallelism()));
  ASSERT_LT(sim.program.tasks.stored_tasks(), sim.program.tasks.size());  // some ranks read translated
  long long ops = 0;
  for (const Task& t : sim.program.tasks)
    if (t.work >= 0) ops += static_cast<long long>(sim.program.works[t.work].ops.size());
  long long counted = 0;
  for (const auto& [op_class, by_source] : sim.report.time_sources)
    for (const auto& [source, count] : by_source) counted += count;
  EXPECT_EQ(counted, ops);
}

// TP ranks of one lane run at the same times: the report splits one and
// gives the others its split, which is each one's own.
TEST(RankSplits, EveryRanksSplitIsItsOwn) {
  const Simulation sim = simulate(fixtures::scenario_from(every_parallelism()));
  const StepReport& r = sim.report;
  ASSERT_EQ(r.ranks.size(), static_cast<size_t>(sim.program.world_size));
  auto figures = [](const TimeSplit& t) {
    return std::tuple(t.compute_seconds, t.exposed_tp_seconds, t.exposed_ep_seconds, t.exposed_cp_seconds,
                      t.exposed_pp_seconds, t.exposed_dp_seconds, t.idle_seconds, t.tp_seconds, t.ep_seconds,
                      t.cp_seconds, t.pp_seconds, t.dp_seconds);
  };
  for (int rank = 0; rank < sim.program.world_size; ++rank)
    EXPECT_EQ(figures(r.ranks[rank]), figures(split_rank_time(sim.program, sim.timeline, rank, r.step_seconds)))
        << "rank " << rank;
}

}  // namespace
}  // namespace simtrain
