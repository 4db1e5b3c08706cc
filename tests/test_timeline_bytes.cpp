// A replay's Timeline survives its trip from the child process bit for bit.
#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "sim/engine/timeline_bytes.hpp"

using namespace simtrain;

TEST(TimelineBytes, RoundTripKeepsEveryFigureExactly) {
  Timeline t;
  t.tasks = {{0.1, 0.30000000000000004}, {-1, -1}, {1.0 / 3, 2.0 / 3}};
  t.step_seconds = 2.0 / 3;
  t.stopped = true;
  t.stop_reason = "GPU 3 failed";
  t.flows = 12;
  t.closed_form_collectives = 5;
  t.simulated_tasks = 2;
  t.busiest_links = {{"nic0.0_up", 1e9 / 7, 50e9}, {"leaf0_up", 3.5, 0.1}};
  const Timeline back = timeline_from_bytes(timeline_to_bytes(t), t.tasks.size());
  ASSERT_EQ(back.tasks.size(), t.tasks.size());
  for (size_t i = 0; i < t.tasks.size(); ++i) {
    EXPECT_EQ(back.tasks[i].start, t.tasks[i].start) << i;
    EXPECT_EQ(back.tasks[i].end, t.tasks[i].end) << i;
  }
  EXPECT_EQ(back.step_seconds, t.step_seconds);
  EXPECT_TRUE(back.stopped);
  EXPECT_EQ(back.stop_reason, t.stop_reason);
  EXPECT_EQ(back.flows, 12u);
  EXPECT_EQ(back.closed_form_collectives, 5u);
  EXPECT_EQ(back.simulated_tasks, 2u);
  ASSERT_EQ(back.busiest_links.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.busiest_links[i].link, t.busiest_links[i].link);
    EXPECT_EQ(back.busiest_links[i].bytes, t.busiest_links[i].bytes);
    EXPECT_EQ(back.busiest_links[i].bytes_per_second, t.busiest_links[i].bytes_per_second);
  }
}

TEST(TimelineBytes, BytesThatEndTooSoonOrGoOnAreRefused) {
  Timeline t;
  t.tasks = {{0, 1}, {1, 2}};
  t.stop_reason = "a link on the path of a transfer went down";
  const std::string bytes = timeline_to_bytes(t);
  for (size_t size : {size_t{0}, size_t{7}, size_t{45}, bytes.size() - 1})
    EXPECT_THROW(timeline_from_bytes(bytes.substr(0, size), 2), std::runtime_error) << size;
  EXPECT_THROW(timeline_from_bytes(bytes + "x", 2), std::runtime_error);
  EXPECT_THROW(timeline_from_bytes(bytes, 3), std::runtime_error);  // fewer tasks than the Program has
}
