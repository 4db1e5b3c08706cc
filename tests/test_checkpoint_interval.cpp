// How a training run chooses its checkpoint interval, rule by rule.
#include <cmath>

#include <gtest/gtest.h>

#include "sim/longrun/checkpoint_interval.hpp"

using namespace simtrain;

TEST(CheckpointInterval, ConfiguredIntervalsComeFirst) {
  CheckpointConfig every_steps;
  every_steps.every_steps = 50;
  const CheckpointInterval by_steps = choose_checkpoint_interval(every_steps, 10, {30}, 3600, true);
  EXPECT_EQ(by_steps.every_steps, 50);
  EXPECT_EQ(by_steps.rule, "every 50 steps (checkpoint.every_steps)");

  CheckpointConfig every_minutes;
  every_minutes.every_minutes = 2;
  const CheckpointInterval by_minutes = choose_checkpoint_interval(every_minutes, 10, {30}, 3600, true);
  EXPECT_EQ(by_minutes.every_steps, 12);
  EXPECT_EQ(by_minutes.rule, "every 2 minutes (checkpoint.every_minutes)");
  // At least one step, however short the interval.
  every_minutes.every_minutes = 0.01;
  EXPECT_EQ(choose_checkpoint_interval(every_minutes, 10, {30}, 3600, true).every_steps, 1);
}

TEST(CheckpointInterval, RandomStopsGetDalysOptimum) {
  const CheckpointInterval daly = choose_checkpoint_interval({}, 10, {30}, 36000, false);
  EXPECT_EQ(daly.every_steps, std::llround(daly_interval_seconds(30, 36000) / 10));
  EXPECT_EQ(daly.rule, "Daly's optimum: 24.2 min of training between checkpoints (write 30.0 s, MTBF 10.00 h)");
}

TEST(CheckpointInterval, WithoutRandomStopsOnceAtTheEndOrNever) {
  const CheckpointInterval scheduled = choose_checkpoint_interval({}, 10, {30}, 0, true);
  EXPECT_EQ(scheduled.every_steps, checkpoint_at_the_end);
  EXPECT_EQ(scheduled.rule, "only scheduled failures: one checkpoint at the end");
  const CheckpointInterval never = choose_checkpoint_interval({}, 10, {30}, 0, false);
  EXPECT_EQ(never.every_steps, 0);
  EXPECT_EQ(never.rule, "no failure can stop the job");
}

TEST(CheckpointInterval, AnAsyncSavesOptimumIsForItsBlockingPartAndSlowedStepsAtLeastItsCopies) {
  // Blocking 0.5 s and 1.5 s of slowed steps cost the training 2 s a save: Daly's optimum for 2 s, not for the 30 s copy.
  const CheckpointInterval async = choose_checkpoint_interval({}, 10, {0.5, 1.5, 30}, 36000, false);
  EXPECT_EQ(async.every_steps, std::llround(daly_interval_seconds(2, 36000) / 10));
  EXPECT_EQ(async.rule, "Daly's optimum: 6.3 min of training between checkpoints (a save costs 2.0 s: blocking 0.5 s, "
                        "slowed steps 1.5 s; MTBF 10.00 h)");
  // Copies longer than the optimum: one save in flight at a time.
  const CheckpointInterval bound = choose_checkpoint_interval({}, 10, {0.5, 1.5, 900}, 36000, false);
  EXPECT_EQ(bound.every_steps, 90);
  EXPECT_NE(bound.rule.find(", the background copies' 900.0 s: one save in flight at a time"), std::string::npos);
}
