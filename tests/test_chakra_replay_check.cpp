// Chakra traces replayed under ASTRA-sim's execution rules
// (sim/chakra/replay_check.hpp): simtrain's exports run to the end; traces
// that would deadlock in ASTRA-sim, or whose collectives or transfers
// disagree, are refused naming the ranks and nodes.
#include <gtest/gtest.h>

#include <fstream>

#include "sim/base/input_error.hpp"
#include "sim/chakra/chakra_export.hpp"
#include "sim/chakra/et_def.pb.h"
#include "sim/chakra/replay_check.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "chakra_trace_fixtures.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace chakra = ChakraProtoMsg;

void expect_runs_to_the_end(const Scenario& scenario, const std::string& label) {
  SCOPED_TRACE(label);
  const Program program = build_program(scenario, build_workload(scenario));
  const std::vector<double> seconds = work_durations(program, *make_cost_model(scenario), scenario.training.dtype);
  const fixtures::TemporaryDirectory dir("chakra-check-" + label);
  const std::string prefix = (dir.path() / "trace").string();
  const ChakraExport written = export_chakra(program, seconds, prefix, "OUT_PREFIX");
  try {
    const ReplayCheck check = check_chakra_replay(prefix);
    EXPECT_EQ(check.ranks, program.world_size);
    EXPECT_EQ(size_t(check.nodes), written.nodes);
  } catch (const InputError& e) {
    ADD_FAILURE() << e.what();
  }
}

// The export the deadlock was found with (issue 42): the last stage's tied
// embedding all-reduce ready with its last `send grad`, and of a lower id.
TEST(ChakraReplayCheck, Gpt3On128GpusRunsToTheEnd) {
  expect_runs_to_the_end(
      load_scenario("gpt3-175b-1024xh100", {"cluster.num_gpus=128", "training.global_batch_size=32"}), "gpt3-128");
}

TEST(ChakraReplayCheck, ShippedScenariosRunToTheEnd) {
  expect_runs_to_the_end(load_scenario("tiny-4gpu"), "tiny-4gpu");
  expect_runs_to_the_end(load_scenario("mixtral-8x7b-64xh100"), "mixtral");  // MoE: all-to-alls
}

TEST(ChakraReplayCheck, InterleavedTiedEmbeddingsRunToTheEnd) {
  nlohmann::json doc = fixtures::scenario_json(2, 4, 2, 16, "interleaved_1f1b", 2);
  expect_runs_to_the_end(fixtures::scenario_from(doc), "interleaved");
  doc = fixtures::scenario_json(1, 4, 2, 8, "1f1b", 0, 4);  // few micro-batches: the embedding all-reduce near the last send
  expect_runs_to_the_end(fixtures::scenario_from(doc), "tied-embeddings");
}

TEST(ChakraReplayCheck, ZeroWithOverlappedReductionsRunsToTheEnd) {
  nlohmann::json doc = fixtures::scenario_json(2, 2, 2, 4, "1f1b");
  doc["parallelism"]["zero_stage"] = 1;
  doc["parallelism"]["overlap_grad_reduce"] = true;
  doc["parallelism"]["overlap_param_gather"] = true;
  expect_runs_to_the_end(fixtures::scenario_from(doc), "zero1-overlap");
  doc["parallelism"]["zero_stage"] = 3;
  doc["parallelism"].erase("overlap_param_gather");
  expect_runs_to_the_end(fixtures::scenario_from(doc), "zero3");
}

// ---- traces written here ----

using fixtures::node;
using fixtures::with;
using fixtures::write_trace;

chakra::Node all_reduce(uint64_t id, int64_t bytes, std::vector<uint64_t> data_deps = {}) {
  chakra::Node n = node(id, chakra::COMM_COLL_NODE, std::move(data_deps), "allreduce");
  with(n, "comm_type", chakra::ALL_REDUCE);
  with(n, "comm_size", bytes);
  chakra::AttributeProto* group = n.add_attr();
  group->set_name("pg_name");
  group->set_string_val("1");
  return n;
}

chakra::Node transfer(uint64_t id, chakra::NodeType type, int64_t bytes, std::vector<uint64_t> data_deps = {}) {
  chakra::Node n = node(id, type, std::move(data_deps), type == chakra::COMM_SEND_NODE ? "send" : "recv");
  with(n, "comm_src", 0);
  with(n, "comm_dst", 1);
  with(n, "comm_tag", 7);
  return with(n, "comm_size", bytes);
}

std::string check_error(const std::string& prefix) {
  return fixtures::input_error_of([&] { check_chakra_replay(prefix); });
}

// Rank 0 issues its all-reduce (lower id) before its send; rank 1 receives
// first, then joins the all-reduce: each waits on the other, as issue 42's
// last pipeline stage did.
TEST(ChakraReplayCheck, DeadlockNamesTheRanksAndNodesWaitingOnEachOther) {
  const fixtures::TemporaryDirectory dir("chakra-check-deadlock");
  const std::string prefix = (dir.path() / "t").string();
  std::ofstream(prefix + ".comm_groups.json") << R"({"1": [0, 1]})";
  write_trace(prefix + ".0.et", {all_reduce(1, 4096), transfer(2, chakra::COMM_SEND_NODE, 1024)});
  write_trace(prefix + ".1.et", {transfer(1, chakra::COMM_RECV_NODE, 1024), all_reduce(2, 4096, {1})});
  EXPECT_EQ(check_error(prefix),
            prefix + ".{0..1}.et: deadlock under ASTRA-sim's rules (one communication node in flight per rank, "
                     "issued in ascending id): rank 0 holds node 1 (allreduce) until rank 1 issues it, node 2 (send) "
                     "waiting behind it; rank 1 waits in node 1 (recv) for rank 0's node 2 (send), not issued "
                     "(2 of 2 ranks stuck, 4 nodes never finish)");

  // The send ordered before the all-reduce (a ctrl_dep, as the export writes it): it runs.
  chakra::Node ordered = all_reduce(1, 4096);
  ordered.add_ctrl_deps(2);
  write_trace(prefix + ".0.et", {ordered, transfer(2, chakra::COMM_SEND_NODE, 1024)});
  const ReplayCheck check = check_chakra_replay(prefix);
  EXPECT_EQ(check.nodes, 4);
  // The send (1 us + 1024 bytes / 100 per ns), then the all-reduce (1 us + 4096 / 100 ns).
  EXPECT_NEAR(check.end_micros, 1.0 + 10.24e-3 + 1.0 + 40.96e-3, 1e-9);
}

TEST(ChakraReplayCheck, DisagreeingSizesAreRefusedNamingBothNodes) {
  const fixtures::TemporaryDirectory dir("chakra-check-sizes");
  const std::string prefix = (dir.path() / "t").string();
  std::ofstream(prefix + ".comm_groups.json") << R"({"1": [0, 1]})";
  write_trace(prefix + ".0.et", {all_reduce(1, 4096)});
  write_trace(prefix + ".1.et", {all_reduce(1, 8192)});
  EXPECT_EQ(check_error(prefix), prefix + ".1.et: node 1 (allreduce): collective 1 of group '1' here is comm_type 0 of "
                                          "comm_size 8192, but on rank 0 (node 1 (allreduce)) comm_type 0 of comm_size 4096");

  write_trace(prefix + ".0.et", {transfer(1, chakra::COMM_SEND_NODE, 1024)});
  write_trace(prefix + ".1.et", {transfer(1, chakra::COMM_RECV_NODE, 2048)});
  EXPECT_EQ(check_error(prefix), prefix + ".1.et: node 1 (recv): comm_size: 2048 bytes, but its send (" + prefix +
                                          ".0.et, node 1 (send)) sends 1024");

  write_trace(prefix + ".1.et", {all_reduce(1, 1024)});
  EXPECT_EQ(check_error(prefix), prefix + ".0.et: node 1 (send): comm_tag: no receive matches it");
}

TEST(ChakraReplayCheck, CommandSaysWhetherTracesRun) {
  const fixtures::TemporaryDirectory dir("chakra-check-cli");
  const std::string prefix = (dir.path() / "tiny").string();
  ASSERT_EQ(fixtures::run_simtrain({"export-chakra", "tiny-4gpu", prefix}).code, 0);
  const fixtures::CliResult ok = fixtures::run_simtrain({"check-chakra", prefix});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "no deadlock: 696 nodes of 4 ranks ran to the end under ASTRA-sim's rules (one communication "
                    "node in flight per rank)\n");
  const fixtures::CliResult missing = fixtures::run_simtrain({"check-chakra", prefix + "-none"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "simtrain: " + prefix + "-none.0.et: no such file (the trace of rank 0 of " + prefix + "-none)\n");
}

}  // namespace
}  // namespace simtrain
