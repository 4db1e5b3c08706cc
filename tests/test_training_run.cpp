// Long runs: Young/Daly intervals, the run model's accounting, failures that
// stop the job or only degrade it, checkpoints through the storage model.
#include <atomic>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/longrun/checkpoint_interval.hpp"
#include "sim/longrun/train.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

RunModel simple_model() {
  RunModel m;
  m.step_seconds = 10;
  m.degraded_step_seconds = 12;
  m.checkpoint_write_seconds = 30;
  m.checkpoint_read_seconds = 20;
  m.steps = 2000;
  m.checkpoint_every_steps = 50;
  m.reliability.repair_hours = 1;
  m.reliability.detection_seconds = 60;
  m.reliability.reschedule_seconds = 120;
  m.gpus = 64;
  m.price_per_gpu_hour = 2;
  return m;
}

double mean_goodput(const RunModel& m, int runs) {
  double total = 0;
  for (int seed = 0; seed < runs; ++seed) total += simulate_run(m, 1000 + seed).goodput();
  return total / runs;
}

}  // namespace

TEST(CheckpointInterval, MatchesDalysPublishedExamples) {
  const nlohmann::json table = fixtures::read_json(SIMTRAIN_VALIDATION_DIR "/checkpointing.json");
  for (const auto& row : table["daly_examples_delta_5min"]) {
    const double minutes = daly_interval_seconds(5 * 60, row["M_hours"].get<double>() * 3600) / 60;
    EXPECT_NEAR(minutes, row["T_opt_min"].get<double>(), 0.05) << "M = " << row["M_hours"] << " h";
  }
  EXPECT_DOUBLE_EQ(daly_interval_seconds(100, 40), 40);  // checkpoint longer than 2 M: M itself
  EXPECT_DOUBLE_EQ(young_interval_seconds(8, 100), 40);
}

TEST(TrainingRun, WithoutFailuresTheRunIsStepsPlusCheckpoints) {
  RunModel m = simple_model();
  const RunResult r = simulate_run(m, 1);
  EXPECT_DOUBLE_EQ(r.wall_seconds, 2000 * 10.0 + 40 * 30.0);
  EXPECT_EQ(r.checkpoints, 40);
  EXPECT_EQ(r.restarts, 0);
  EXPECT_DOUBLE_EQ(r.cost, 64 * r.wall_seconds / 3600 * 2);
  m.steps = 2001;  // the last checkpoint comes at the end
  EXPECT_DOUBLE_EQ(simulate_run(m, 1).wall_seconds, 2001 * 10.0 + 41 * 30.0);
}

void expect_wall_is_the_sum_of_its_parts(const RunResult& r) {
  EXPECT_NEAR(r.wall_seconds,
              r.useful_seconds + r.checkpoint_seconds + r.persist_seconds + r.lost_seconds + r.restart_seconds +
                  r.degraded_seconds,
              1e-6 * r.wall_seconds);
}

TEST(TrainingRun, WallTimeIsTheSumOfItsParts) {
  RunModel m = simple_model();
  m.sources = {{Component::gpu, 1.0 / 3000, true}, {Component::link, 1.0 / 5000, false}};
  m.reliability.spare_nodes = 1;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const RunResult r = simulate_run(m, seed);
    expect_wall_is_the_sum_of_its_parts(r);
    EXPECT_EQ(r.steps, m.steps);
    EXPECT_GT(r.failures.at("gpu"), 0);
  }
}

TEST(TrainingRun, AFailureThrowsAwayWorkSinceTheLastCheckpoint) {
  RunModel m = simple_model();
  FailureSource gpu{Component::gpu, 0, true};
  m.scheduled = {{1234.0, gpu}};  // 50 steps + one 30 s write end at 530 s; the second interval is cut at 1234 s
  m.reliability.spare_nodes = 1;
  const RunResult r = simulate_run(m, 1, true);
  EXPECT_EQ(r.restarts, 1);
  EXPECT_DOUBLE_EQ(r.lost_seconds, 1234.0 - 2 * 530.0);
  EXPECT_DOUBLE_EQ(r.restart_seconds, 60 + 120 + 20);  // a spare: no wait for the repair
  m.reliability.spare_nodes = 0;
  EXPECT_DOUBLE_EQ(simulate_run(m, 1).restart_seconds, 3600 + 20);  // waits for the repair, then loads
}

TEST(TrainingRun, AFailureDuringACheckpointKeepsThePreviousOne) {
  RunModel m = simple_model();
  m.scheduled = {{2 * 530.0 - 10, {Component::node, 0, true}}};  // 10 s before the second write completes
  m.reliability.spare_nodes = 1;
  const RunResult r = simulate_run(m, 1);
  EXPECT_DOUBLE_EQ(r.lost_seconds, 530.0 - 10);
  EXPECT_EQ(r.checkpoints, 40);
}

TEST(TrainingRun, ARedundantLinkFailureSlowsStepsUntilRepairedWithoutRestart) {
  RunModel m = simple_model();
  m.checkpoint_every_steps = m.steps;  // only at the end
  m.scheduled = {{100.0, {Component::link, 0, false}}};
  const RunResult r = simulate_run(m, 1);
  EXPECT_EQ(r.restarts, 0);
  EXPECT_DOUBLE_EQ(r.degraded_seconds, 3600.0 / 12 * 2);  // the steps started within the hour of repair take 12 s, not 10
}

TEST(TrainingRun, WithoutCheckpointsAFailureFreeRunIsItsStepsAlone) {
  RunModel m = simple_model();
  m.step_seconds = m.degraded_step_seconds = 0.1;  // not a binary fraction: a running sum would drift
  m.checkpoint_every_steps = 0;
  m.steps = 1'000'003;
  const RunResult r = simulate_run(m, 1);
  EXPECT_EQ(r.steps, m.steps);
  EXPECT_EQ(r.checkpoints, 0);
  EXPECT_EQ(r.wall_seconds, m.steps * 0.1);
  EXPECT_EQ(r.goodput(), 1.0);
  EXPECT_EQ(failure_free_seconds(m), r.wall_seconds);
}

TEST(TrainingRun, AWallLimitEndsWithACheckpointOfWhatWasTrained) {
  RunModel m = simple_model();  // 10 s steps, a 30 s write every 50 steps
  m.steps = 1'000'000;
  m.wall_limit_seconds = 1500;  // 141 steps and 3 writes take 1500 s; 142 steps 1510 s
  EXPECT_EQ(steps_within(m, 1500), 141);
  const RunResult r = simulate_run(m, 1);
  EXPECT_EQ(r.steps, 141);
  EXPECT_EQ(r.checkpoints, 3);  // after steps 50, 100 and 141
  EXPECT_DOUBLE_EQ(r.wall_seconds, 1500);
  m.wall_limit_seconds = 1509.9;
  EXPECT_EQ(simulate_run(m, 1).steps, 141);
}

TEST(TrainingRun, AFailureFreeRunUnderALimitTrainsExactlyTheStepsWithin) {
  RunModel m = simple_model();
  m.step_seconds = m.degraded_step_seconds = 0.1;
  m.checkpoint_write_seconds = 0.7;
  for (int64_t every : {0, 1, 7, 1000}) {
    m.checkpoint_every_steps = every;
    for (double limit = 0.3; limit < 300; limit += 0.37) {
      m.wall_limit_seconds = limit;
      const double within = steps_within(m, limit);
      m.steps = 1'000'000;
      const RunResult r = simulate_run(m, 1);
      ASSERT_EQ(r.steps, within) << "every " << every << ", limit " << limit;
      EXPECT_LE(r.wall_seconds, limit);
      m.steps = static_cast<int64_t>(within);
      if (within > 0) EXPECT_NEAR(failure_free_seconds(m), r.wall_seconds, 1e-9 * limit);
      if (every == 0) {
        EXPECT_LE(within * 0.1, limit);
        EXPECT_GT((within + 1) * 0.1, limit);
      }
    }
  }
}

TEST(TrainingRun, WallTimeIsTheSumOfItsPartsUnderALimit) {
  RunModel m = simple_model();
  m.sources = {{Component::gpu, 1.0 / 3000, true}, {Component::link, 1.0 / 5000, false}};
  m.steps = 1'000'000;
  m.wall_limit_seconds = 20000;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const RunResult r = simulate_run(m, seed);
    expect_wall_is_the_sum_of_its_parts(r);
    EXPECT_LE(r.wall_seconds, m.wall_limit_seconds);
    EXPECT_GT(r.steps, 0);
    EXPECT_LT(r.steps, steps_within(m, m.wall_limit_seconds));
  }
}

TEST(TrainingRun, AJobStillDownAtTheLimitEndsThere) {
  RunModel m = simple_model();
  m.steps = 1'000'000;
  m.wall_limit_seconds = 2000;
  m.scheduled = {{1500.0, {Component::gpu, 0, true}}};  // no spare: down for the hour of the repair
  const RunResult r = simulate_run(m, 1);
  EXPECT_DOUBLE_EQ(r.wall_seconds, 2000);
  EXPECT_DOUBLE_EQ(r.restart_seconds, 500);
  EXPECT_EQ(r.steps, 100);  // two checkpoints, at 530 s and 1060 s
  EXPECT_DOUBLE_EQ(r.lost_seconds, 1500 - 1060);
}

TEST(TrainingRun, ExpectedEventsAreTheStepsWithoutFailuresAndGrowWithThem) {
  RunModel m = simple_model();
  EXPECT_EQ(expected_events(m), 2000);
  m.wall_limit_seconds = 1000;
  EXPECT_EQ(expected_events(m), 100);  // at most a step every 10 s
  m.wall_limit_seconds = 0;
  m.sources = {{Component::gpu, 1.0 / 3000, true}};
  // 50 steps and a write: 530 s, tried exp(530 / 3000) times; a failure every 3000 s of the 10 s steps.
  EXPECT_DOUBLE_EQ(expected_events(m), 2000 * std::exp(530.0 / 3000) * (1 + 10.0 / 3000));
  m.sources = {{Component::gpu, 10, true}};  // a failure every 0.1 s: 530 s without one never comes
  EXPECT_GT(expected_events(m), max_simulated_events);
}

TEST(TrainingRun, ReportsProgressEveryMillionOrSoStepsTried) {
  RunModel m = simple_model();
  m.checkpoint_every_steps = 0;
  m.steps = 3'000'000;
  std::vector<double> reported;
  simulate_run(m, 1, false, [&](double seconds) { reported.push_back(seconds); });
  EXPECT_EQ(reported, (std::vector<double>{((1 << 20) - 1) * 10.0, ((1 << 21) - 1) * 10.0}));
}

TEST(TrainingRun, DalysIntervalBeatsHalfAndDoubleOnGoodput) {
  RunModel m = simple_model();
  m.steps = 20000;
  m.checkpoint_write_seconds = 120;
  const double mtbf = 4 * 3600;
  m.sources = {{Component::gpu, 1 / mtbf, true}};
  m.reliability.spare_nodes = 1000;
  const double optimum = daly_interval_seconds(m.checkpoint_write_seconds, mtbf) / m.step_seconds;
  auto goodput_every = [&](double steps) {
    m.checkpoint_every_steps = std::llround(steps);
    return mean_goodput(m, 300);  // the same seeds for every interval
  };
  const double best = goodput_every(optimum);
  EXPECT_GT(best, goodput_every(optimum / 2));
  EXPECT_GT(best, goodput_every(optimum * 2));
}

TEST(Train, PlansARunFromTheStepSimulation) {
  nlohmann::json doc = fixtures::scenario_json(2, 2, 2, 4, "1f1b");
  doc["model"]["tie_word_embeddings"] = false;  // else the last stage saves its copy of the embeddings too
  doc["reliability"] = {{"gpu_mtbf_hours", 1000}, {"spare_nodes", 1}};
  doc["checkpoint"] = {{"storage_write_GBps", 1}, {"storage_read_GBps", 2}};
  doc["cluster"]["price_per_gpu_hour"] = 3;
  const Scenario s = fixtures::scenario_from(doc);
  TrainRequest request;
  request.steps = 500;
  request.runs = 3;
  const TrainPlan plan = plan_training(s, request);
  double bytes = 0;
  for (double b : checkpoint_bytes_per_rank(s, plan.step.workload, plan.step.program)) bytes += b;
  // 14 bytes per parameter (bf16 weights, fp32 master and moments) plus 16 KiB of RNG state per rank;
  // each TP rank also saves its copy of the replicated norms and biases (1.6 % of this small model).
  EXPECT_NEAR(bytes, 14 * plan.step.workload.total_parameters + 8 * 16384, 0.02 * bytes);
  EXPECT_GT(bytes, 14 * plan.step.workload.total_parameters);
  // All ranks share the 1 GB/s storage: the write takes the whole checkpoint's bytes over it.
  EXPECT_NEAR(plan.model.checkpoint_write_seconds, bytes / 1e9, 0.01 * plan.model.checkpoint_write_seconds);
  EXPECT_NEAR(plan.model.checkpoint_read_seconds, bytes / 2e9, 0.01 * plan.model.checkpoint_read_seconds);
  EXPECT_NE(plan.interval_rule.find("Daly"), std::string::npos);
  EXPECT_EQ(plan.runs.size(), 3u);
  EXPECT_DOUBLE_EQ(plan.model.gpus, 8 + 8);  // one spare node of 8 GPUs is billed too
}

TEST(Train, RefusesFailuresItCannotPlace) {
  auto error = [](nlohmann::json failure) {
    nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 2, "1f1b");
    doc["reliability"] = {{"failures", {failure}}};
    TrainRequest request;
    request.steps = 10;
    try {
      plan_training(fixtures::scenario_from(doc), request);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({{"component", "gpu"}, {"index", 99}, {"at_hours", 0}}).find("reliability.failures[0].index"), std::string::npos);
  EXPECT_NE(error({{"component", "link"}, {"link", "nope"}, {"at_hours", 0}}).find("no link 'nope'"), std::string::npos);
  EXPECT_NE(error({{"component", "gpu"}, {"index", 0}, {"at_hours", 1e6}}).find("after the end of the run"), std::string::npos);
  EXPECT_NE(error({{"component", "disk"}, {"at_hours", 0}}).find("reliability.failures[0].component"), std::string::npos);
  nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 2, "1f1b");
  doc["reliability"] = {{"gpu_mtbf_hours", -5}};
  EXPECT_THROW(fixtures::scenario_from(doc), InputError);
}

TEST(Train, CancellingStopsTheRunsUnderWay) {
  TrainRequest request;
  request.days = 80;  // about 8e8 steps of tiny-4gpu: far longer than this test waits
  std::atomic<bool> cancel{false};
  request.replay.cancel = &cancel;
  std::vector<TrainProgress> reported;
  request.on_progress = [&](const TrainProgress& p) {
    reported.push_back(p);
    cancel = true;
  };
  EXPECT_THROW(plan_training(load_scenario("tiny-4gpu"), request), Interrupted);
  ASSERT_EQ(reported.size(), 1u);  // the runs had started
  EXPECT_EQ(reported[0].runs_done, 0);
  EXPECT_EQ(reported[0].runs, 1);
  EXPECT_EQ(reported[0].simulated_seconds, 0);
}
