// A replay's Timeline survives its trip from the child process bit for bit,
// each rank with the times of the rank that ran for it.
#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "sim/engine/timeline_bytes.hpp"

using namespace simtrain;

namespace {

// Two ranks alike: a forward, then a SEND to the other rank and a pre-posted
// RECV from it (ids 0-2 on rank 0, 3-5 on rank 1).
Program two_alike_ranks() {
  Program p;
  p.world_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    Task forward;
    forward.rank = rank;
    p.add_task(forward);
    Task send;
    send.rank = rank;
    send.kind = TaskKind::SEND;
    send.stream = Stream::p2p;
    send.peer = 1 - rank;
    p.add_task(send);
    Task recv = send;
    recv.kind = TaskKind::RECV;
    const int32_t other_send = rank == 0 ? 4 : 1;
    p.add_task(recv, std::span<const int32_t>(&other_send, 1));
    p.end_rank();
  }
  return p;
}

Timeline figures() {
  Timeline t;
  t.step_seconds = 2.0 / 3;
  t.stopped = true;
  t.stop_reason = "GPU 3 failed";
  t.flows = 12;
  t.closed_form_collectives = 5;
  t.simulated_tasks = 2;
  t.tasks_stood_for = 6;
  t.representative_of_rank = {0, 0};
  t.approximate_after_rounds = 3;
  t.busiest_links = {{"nic0.0_up", 1e9 / 7, 50e9}, {"leaf0_up", 3.5, 0.1}};
  return t;
}

}  // namespace

TEST(TimelineBytes, RoundTripKeepsEveryFigureExactly) {
  const Program p = two_alike_ranks();
  const Timeline t = figures();
  const std::vector<TaskTiming> timing = {{0.1, 0.30000000000000004}, {1.0 / 3, 2.0 / 3}, {}, {7, 8}, {9, 10}, {}};
  const Timeline back = timeline_from_bytes(timeline_to_bytes(t, {0, 1}, timing), p);
  ASSERT_EQ(back.tasks.size(), 6u);
  for (int id : {0, 1, 3, 4}) {
    EXPECT_EQ(back.tasks[id].start, timing[id].start) << id;
    EXPECT_EQ(back.tasks[id].end, timing[id].end) << id;
  }
  EXPECT_EQ(back.step_seconds, t.step_seconds);
  EXPECT_TRUE(back.stopped);
  EXPECT_EQ(back.stop_reason, t.stop_reason);
  EXPECT_EQ(back.flows, 12u);
  EXPECT_EQ(back.closed_form_collectives, 5u);
  EXPECT_EQ(back.simulated_tasks, 2u);
  EXPECT_EQ(back.tasks_stood_for, 6u);
  EXPECT_EQ(back.representative_of_rank, t.representative_of_rank);
  EXPECT_EQ(back.approximate_after_rounds, 3);
  ASSERT_EQ(back.busiest_links.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.busiest_links[i].link, t.busiest_links[i].link);
    EXPECT_EQ(back.busiest_links[i].bytes, t.busiest_links[i].bytes);
    EXPECT_EQ(back.busiest_links[i].bytes_per_second, t.busiest_links[i].bytes_per_second);
  }
}

// Where the hosts were simulated, each source's host launches travel laid
// out as its times, and come back by host, the timing sources being the hosts.
TEST(TimelineBytes, HostLaunchesComeBackByHostRank) {
  const Program p = two_alike_ranks();
  const std::vector<TaskTiming> timing = {{0, 1}, {1, 2}, {}};  // rank 0 ran for both
  const std::vector<double> launches = {0.25, 1.0 / 3, -1}, done = {0.5, -1};
  const Timeline back = timeline_from_bytes(timeline_to_bytes(figures(), {0, 0}, timing, launches, done), p);
  EXPECT_EQ(back.host_of_rank, (std::vector<int>{0, 0}));
  ASSERT_EQ(back.host_launch_seconds.size(), 2u);
  EXPECT_EQ(back.host_launch_seconds[0], (std::vector<double>{0.25, 1.0 / 3, -1, 0.5}));
  EXPECT_TRUE(back.host_launch_seconds[1].empty());
  // Without simulated hosts there are none.
  const Timeline without = timeline_from_bytes(timeline_to_bytes(figures(), {0, 0}, timing), p);
  EXPECT_TRUE(without.host_of_rank.empty());
  EXPECT_TRUE(without.host_launch_seconds.empty());
  // Launches not laid out as the times are refused.
  const std::vector<double> short_launches = {0.25};
  EXPECT_THROW(timeline_from_bytes(timeline_to_bytes(figures(), {0, 0}, timing, short_launches, done), p),
               std::runtime_error);
}

TEST(TimelineBytes, EachPrePostedReceiveSpansTheTransferItReceives) {
  const Program p = two_alike_ranks();
  const std::vector<TaskTiming> timing = {{0, 1}, {1, 2}, {}, {0, 1.5}, {1.5, 3}, {}};
  const Timeline back = timeline_from_bytes(timeline_to_bytes(figures(), {0, 1}, timing), p);
  EXPECT_EQ(back.tasks[2].start, 1.5);  // rank 0 receives rank 1's SEND
  EXPECT_EQ(back.tasks[2].end, 3);
  EXPECT_EQ(back.tasks[5].start, 1);
  EXPECT_EQ(back.tasks[5].end, 2);
}

TEST(TimelineBytes, ARankThatDidNotRunTakesItsSourcesTimesOnly) {
  const Program p = two_alike_ranks();
  const std::vector<TaskTiming> timing = {{0, 1}, {1, 2}, {}};  // rank 0's: rank 1 never ran
  const std::string bytes = timeline_to_bytes(figures(), {0, 0}, timing);
  const Timeline back = timeline_from_bytes(bytes, p);
  for (int position = 0; position < 2; ++position) {
    EXPECT_EQ(back.tasks[3 + position].start, timing[position].start) << position;
    EXPECT_EQ(back.tasks[3 + position].end, timing[position].end) << position;
  }
  // Rank 0's RECV at position 2 receives rank 1's SEND (id 4), which takes
  // rank 0's SEND's times; rank 1's RECV, standing for it, takes the same.
  EXPECT_EQ(back.tasks[2].start, 1);
  EXPECT_EQ(back.tasks[5].start, 1);
}

TEST(TimelineBytes, BytesThatEndTooSoonOrGoOnAreRefused) {
  const Program p = two_alike_ranks();
  Timeline t;
  t.stop_reason = "a link on the path of a transfer went down";
  const std::vector<TaskTiming> timing(6, TaskTiming{0, 1});
  const std::string bytes = timeline_to_bytes(t, {0, 1}, timing);
  for (size_t size : {size_t{0}, size_t{7}, size_t{45}, bytes.size() - 1})
    EXPECT_THROW(timeline_from_bytes(bytes.substr(0, size), p), std::runtime_error) << size;
  EXPECT_THROW(timeline_from_bytes(bytes + "x", p), std::runtime_error);
  Program three = p;
  three.world_size = 3;
  three.end_rank();  // a third rank: the bytes hold two
  EXPECT_THROW(timeline_from_bytes(bytes, three), std::runtime_error);
}

TEST(TimelineBytes, ASourceThatDidNotRunItselfIsRefused) {
  const Program p = two_alike_ranks();
  const std::vector<TaskTiming> timing(6, TaskTiming{0, 1});
  EXPECT_THROW(timeline_from_bytes(timeline_to_bytes(figures(), {1, 0}, timing), p), std::runtime_error);
}
