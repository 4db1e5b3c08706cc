// Structural laws of every generated Program: ids, transfers that pair up,
// collectives that match across a group, and FLOPs that add up to the step's.
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "sim/base/limits.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/timeline.hpp"
#include "sim/scenario/scenario_limits.hpp"
#include "program_laws.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

struct Config {
  std::string schedule;
  int tp, pp, dp, layers_per_virtual_stage, zero;
  std::string recompute;
  bool sequence_parallel;
  // An uneven layout: more parallelism fields, the model's layers, micro-batches.
  nlohmann::json layout = nlohmann::json::object();
  int layers = 8, micro_batches = 8;
};

std::string describe(const Config& c) {
  return c.schedule + " tp" + std::to_string(c.tp) + " pp" + std::to_string(c.pp) + " dp" + std::to_string(c.dp) +
         " vl" + std::to_string(c.layers_per_virtual_stage) + " zero" + std::to_string(c.zero) + " " + c.recompute +
         (c.sequence_parallel ? " sp" : "") + (c.layout.empty() ? "" : " " + c.layout.dump());
}

// Interleaved layouts whose chunks hold unequal layers (sim/scenario/pipeline_layout.hpp),
// empty chunks among them.
void add_uneven_interleaved_layouts(std::vector<Config>& configs) {
  auto add = [&](int tp, int pp, int dp, int layers, int micro_batches, nlohmann::json layout, int zero = 1) {
    Config c{"interleaved_1f1b", tp, pp, dp, 0, zero, "none", false, std::move(layout), layers, micro_batches};
    configs.push_back(c);
  };
  // 10 + 2 over 2 ranks, 3 chunks of 2: chunk (0, 0) and (1, 2) hold 1.
  add(2, 2, 2, 10, 8,
      {{"num_virtual_stages_per_pipeline_rank", 3}, {"account_for_embedding_in_pipeline_split", true},
       {"account_for_loss_in_pipeline_split", true}});
  // The embedding alone on stage 0, an empty stage, the loss alone on the last.
  add(1, 4, 2, 10, 8, {{"pipeline_model_parallel_layout", "E|ttt|tt||t|ttt|t|L"}}, 0);
  add(2, 3, 1, 14, 6,
      {{"decoder_first_pipeline_num_layers", 2}, {"decoder_last_pipeline_num_layers", 4},
       {"num_virtual_stages_per_pipeline_rank", 2}},
      3);
  add(1, 4, 2, 19, 8, {{"pipeline_layers", {1, 3, 2, 4, 2, 3, 3, 1}}, {"num_virtual_stages_per_pipeline_rank", 2}}, 2);
}

std::vector<Config> grid() {
  std::vector<Config> configs;
  for (const std::string schedule : {"gpipe", "1f1b", "zb_h1"})
    for (int tp : {1, 2})
      for (int pp : {1, 2, 4})
        for (int dp : {1, 2})
          configs.push_back({schedule, tp, pp, dp, 0, (tp + pp + dp) % 4, tp == 2 ? "selective" : "full", tp == 2});
  for (int pp : {2, 4})
    for (int layers : {1, 2}) configs.push_back({"interleaved_1f1b", 2, pp, 2, layers, 1, "none", true});
  // Block recompute: the first layer of each model stage recomputed, the others kept.
  for (const std::string schedule : {"1f1b", "zb_h1"}) configs.push_back({schedule, 2, 2, 2, 0, 1, "block", true});
  configs.push_back({"interleaved_1f1b", 1, 2, 2, 2, 0, "block", false});
  // Selective recompute of the attention core and the MLP (and its TP collectives).
  configs.push_back({"1f1b", 2, 2, 2, 0, 1, "selective+mlp", true});
  add_uneven_interleaved_layouts(configs);
  return configs;
}

Scenario scenario_for(const Config& c) {
  nlohmann::json doc =
      fixtures::scenario_json(c.tp, c.pp, c.dp, c.layers, c.schedule, c.layers_per_virtual_stage, c.micro_batches);
  doc["parallelism"].update(c.layout);
  doc["parallelism"]["zero_stage"] = c.zero;
  doc["parallelism"]["sequence_parallel"] = c.sequence_parallel;
  if (c.recompute == "block")
    doc["training"].update({{"recompute_granularity", "full"}, {"recompute_method", "block"}, {"recompute_num_layers", 1}});
  else if (c.recompute == "selective+mlp")
    doc["training"].update({{"recompute_granularity", "selective"}, {"recompute_modules", {"core_attn", "mlp"}}});
  else
    doc["training"]["recompute_granularity"] = c.recompute;
  return fixtures::scenario_from(doc);
}

}  // namespace

TEST(Program, TasksAreIndexedAndEveryRankListsItsOwn) {
  for (const Config& c : grid()) {
    const Scenario s = scenario_for(c);
    const Program p = build_program(s, build_workload(s));
    SCOPED_TRACE(describe(c));
    ASSERT_EQ(p.world_size, c.tp * c.pp * c.dp);
    size_t listed = 0;
    for (int rank = 0; rank < p.world_size; ++rank) {
      for (int id : p.rank_tasks(rank)) {
        ASSERT_EQ(p.tasks[id].id, id);
        ASSERT_EQ(p.tasks[id].rank, rank);
        for (int dep : p.deps(id)) ASSERT_TRUE(dep >= 0 && dep < static_cast<int>(p.tasks.size()) && dep != id);
      }
      listed += p.rank_tasks(rank).size();
    }
    EXPECT_EQ(listed, p.tasks.size());
  }
}

TEST(Program, EverySendPairsWithOneReceiveOfTheSameSize) {
  for (const Config& c : grid()) {
    const Scenario s = scenario_for(c);
    SCOPED_TRACE(describe(c));
    fixtures::expect_every_send_pairs_with_one_receive_of_the_same_size(build_program(s, build_workload(s)));
  }
}

// More model stages (4098) than a transfer's lookup key once had room for (4096).
TEST(Program, TransfersPairUpBeyond4096Stages) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(1, 2, 2, 4098, "interleaved_1f1b", 1, 2));
  ASSERT_EQ(s.virtual_stages(), 2049);
  fixtures::expect_every_send_pairs_with_one_receive_of_the_same_size(build_program(s, build_workload(s)));
}

// The estimate check_limits refuses a scenario by bounds what is built.
TEST(Program, EstimatedTasksBoundTheProgram) {
  std::vector<Scenario> scenarios;
  for (const Config& c : grid()) scenarios.push_back(scenario_for(c));
  nlohmann::json bucket_per_layer = fixtures::scenario_json(2, 2, 2, 8, "1f1b");
  bucket_per_layer["parallelism"]["ddp_bucket_size"] = 1;
  bucket_per_layer["parallelism"]["overlap_grad_reduce"] = true;
  bucket_per_layer["parallelism"]["zero_stage"] = 1;
  scenarios.push_back(fixtures::scenario_from(bucket_per_layer));
  scenarios.push_back(load_scenario("megatron-18.4b-256xa100"));
  for (const Scenario& s : scenarios) {
    const double tasks = static_cast<double>(build_program(s, build_workload(s)).tasks.size());
    SCOPED_TRACE(s.document.dump());
    EXPECT_GE(estimated_tasks(s), tasks);
    EXPECT_LE(estimated_tasks(s), 4 * tasks);
  }
}

// limits::program_bytes_per_task, which check_limits multiplies the
// estimated tasks by, bounds what each task of a built Program takes: its
// share of the task table and its TaskTiming.
TEST(Program, BytesPerTaskWithinTheLimitsConstant) {
  const Scenario scenarios[] = {load_scenario("tiny-4gpu"),
                                load_scenario("gpt3-175b-1024xh100", {"cluster.num_gpus=64"})};  // DP 1
  for (const Scenario& s : scenarios) {
    const Program program = build_program(s, build_workload(s));
    const double tasks = static_cast<double>(program.tasks.size());
    const double bytes_per_task = static_cast<double>(program.tasks.bytes()) / tasks + sizeof(TaskTiming);
    SCOPED_TRACE(s.name + ": " + std::to_string(bytes_per_task) + " bytes per task");
    EXPECT_LE(bytes_per_task, limits::program_bytes_per_task);
  }
}

TEST(Program, MembersOfAGroupIssueTheSameCollectivesInTheSameOrder) {
  for (const Config& c : grid()) {
    const Scenario s = scenario_for(c);
    const Program p = build_program(s, build_workload(s));
    SCOPED_TRACE(describe(c));
    fixtures::expect_group_members_issue_the_same_collectives(p);
  }
}

TEST(Program, ComputeFlopsAddUpToTheStepsFlops) {
  for (const Config& c : grid()) {
    const Scenario s = scenario_for(c);
    const Workload w = build_workload(s);
    const Program p = build_program(s, w);
    SCOPED_TRACE(describe(c));
    double flops = 0;
    for (const Task& t : p.tasks)
      if (t.work >= 0 && t.kind != TaskKind::OPT) flops += p.works[t.work].flops();
    EXPECT_NEAR(flops / w.hardware_flops_per_step, 1.0, 1e-9);
  }
}

TEST(Program, EachMicrobatchRunsForwardOnceAndBackwardOverEveryLayer) {
  for (const Config& c : grid()) {
    const Scenario s = scenario_for(c);
    const Program p = build_program(s, build_workload(s));
    SCOPED_TRACE(describe(c));
    const Workload w = build_workload(s);
    std::map<std::tuple<int, int, int>, int> forwards, backwards, backward_layers;  // (rank, stage, mb)
    for (const Task& t : p.tasks) {
      if (t.kind == TaskKind::F) forwards[{t.rank, t.stage, t.microbatch}] += 1;
      if (t.kind == TaskKind::B) backwards[{t.rank, t.stage, t.microbatch}] += 1;  // the grid splits no backward into buckets
      if (t.kind == TaskKind::B) backward_layers[{t.rank, t.stage, t.microbatch}] += t.layer_end - t.layer_begin;
    }
    const int stages = c.pp * static_cast<int>(s.virtual_stages());
    ASSERT_EQ(w.stage_layers.size(), static_cast<size_t>(stages));
    EXPECT_EQ(forwards.size(), static_cast<size_t>(p.world_size / c.pp * stages * p.micro_batches));
    for (const auto& [key, count] : forwards) {
      EXPECT_EQ(count, 1);
      EXPECT_EQ(backwards[key], 1);
      EXPECT_EQ(backward_layers[key], w.stage_layers[std::get<1>(key)]);
    }
  }
}

TEST(Program, ShortNamesReadLikeTheSchedule) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(2, 2, 1, 4, "1f1b"));
  const Program p = build_program(s, build_workload(s));
  std::vector<std::string> names;
  for (int id : p.rank_tasks(0)) names.push_back(task_name(p, p.tasks[id]));
  EXPECT_EQ(names[0], "s0 F mb0");
  EXPECT_EQ(names[1], "allreduce tp0 512KiB x5");
  EXPECT_EQ(names[2], "send act s0->s1 mb0 256KiB");
  EXPECT_EQ(task_name(p, p.tasks[p.rank_tasks(2)[0]]), "recv act s0->s1 mb0");
}
