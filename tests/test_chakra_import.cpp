// Chakra traces read back (sim/chakra/chakra_import.hpp): simtrain's own
// export gives back its Program and its step time; traces from elsewhere
// replay with what they say; bad input is refused naming the file and node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/base/input_error.hpp"
#include "sim/chakra/chakra_export.hpp"
#include "sim/chakra/chakra_file.hpp"
#include "sim/chakra/chakra_import.hpp"
#include "sim/chakra/et_def.pb.h"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "chakra_trace_fixtures.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace chakra = ChakraProtoMsg;

// The durations the export writes: whole microseconds, at least 1.
std::vector<double> rounded_to_micros(const std::vector<double>& seconds) {
  std::vector<double> rounded;
  for (double s : seconds) rounded.push_back(double(std::max<int64_t>(1, std::llround(s * 1e6))) * 1e-6);
  return rounded;
}

std::set<int32_t> dep_set(const Program& program, const Task& task) {
  const auto deps = program.deps(task);
  return {deps.begin(), deps.end()};
}

// Exports `scenario`'s Program, imports it; the same Program, and the same
// step time as the original replayed with its durations rounded as exported.
void expect_round_trip(const Scenario& scenario, const std::string& label) {
  SCOPED_TRACE(label);
  const Program original = build_program(scenario, build_workload(scenario));
  const std::vector<double> seconds = work_durations(original, *make_cost_model(scenario), scenario.training.dtype);
  const fixtures::TemporaryDirectory dir("chakra-import-" + label);
  const std::string prefix = (dir.path() / "trace").string();
  export_chakra(original, seconds, prefix, "OUT_PREFIX");
  const ChakraTraces imported = import_chakra(prefix);
  const Program& program = imported.program;
  EXPECT_TRUE(imported.ignored.empty());

  ASSERT_EQ(program.world_size, original.world_size);
  EXPECT_EQ(program.tensor_size, original.tensor_size);
  EXPECT_EQ(program.pipeline_size, original.pipeline_size);
  for (int rank = 0; rank < program.world_size; ++rank) {
    EXPECT_EQ(program.coords[rank].tp, original.coords[rank].tp);
    EXPECT_EQ(program.coords[rank].dp, original.coords[rank].dp);
    EXPECT_EQ(program.coords[rank].pp, original.coords[rank].pp);
  }
  EXPECT_EQ(fixtures::rank_task_lists(program), fixtures::rank_task_lists(original));
  ASSERT_EQ(program.tasks.size(), original.tasks.size());
  const std::vector<double> rounded = rounded_to_micros(seconds);
  double sent_bytes = 0, received_bytes = 0;
  std::map<std::pair<int, TaskKind>, int> kinds, original_kinds;  // (rank, kind) -> tasks
  for (const Task& task : program.tasks) {
    const Task& before = original.tasks[task.id];
    ++kinds[{task.rank, task.kind}];
    ++original_kinds[{before.rank, before.kind}];
    EXPECT_EQ(program.recorded_names[task.id], task_name(original, before));
    EXPECT_EQ(task.stream, before.stream) << task.id;
    EXPECT_EQ(task.dim, before.dim) << task.id;
    EXPECT_EQ(task.peer, before.peer) << task.id;
    EXPECT_EQ(task.count, before.count) << task.id;
    EXPECT_EQ(task.joins_batch, before.joins_batch) << task.id;
    // comm_size is what each rank holds as ASTRA-sim reads it: an all-gather's input, its output over the group.
    const double members = is_collective(task.kind) ? double(original.groups[before.group].ranks.size()) : 1.0;
    const double exported_bytes =
        task.kind == TaskKind::ALLGATHER ? double(std::llround(before.bytes / members)) * members : std::round(before.bytes);
    EXPECT_EQ(task.bytes, exported_bytes) << task.id;
    if (is_compute(task.kind)) EXPECT_EQ(imported.work_seconds[task.work], rounded[before.work]) << task.id;
    if (is_collective(task.kind)) EXPECT_EQ(program.groups[task.group].ranks, original.groups[before.group].ranks) << task.id;
    EXPECT_EQ(dep_set(program, task), dep_set(original, before)) << task_name(original, before);
    if (task.kind == TaskKind::SEND) sent_bytes += task.bytes;
    if (task.kind == TaskKind::RECV) received_bytes += task.bytes;
  }
  EXPECT_EQ(kinds, original_kinds);
  EXPECT_EQ(sent_bytes, received_bytes);
  EXPECT_GT(sent_bytes, 0);

  const Fabric fabric(scenario.cluster.topology, original.world_size);
  const double original_seconds = replay(original, fabric, rounded, {}).step_seconds;
  const double imported_seconds = replay(program, fabric, imported.work_seconds, {}).step_seconds;
  std::printf("%s: step time %.9f s (original, durations rounded to microseconds), %.9f s (imported)\n", label.c_str(),
              original_seconds, imported_seconds);
  EXPECT_NEAR(imported_seconds, original_seconds, 1e-9 * original_seconds);
}

TEST(ChakraImport, TinyScenarioRoundTrip) { expect_round_trip(load_scenario("tiny-4gpu"), "tiny-4gpu"); }

TEST(ChakraImport, DataParallelZeroRoundTrip) {
  nlohmann::json doc = fixtures::scenario_json(2, 2, 2, 4, "1f1b");
  doc["parallelism"]["zero_stage"] = 1;
  doc["parallelism"]["overlap_grad_reduce"] = true;
  expect_round_trip(fixtures::scenario_from(doc), "tp2-pp2-dp2-zero1");
}

// ---- traces written here, as another tool would (chakra_trace_fixtures.hpp) ----

using fixtures::node;
using fixtures::with;
using fixtures::write_trace;

chakra::Node compute(uint64_t id, uint64_t micros, std::vector<uint64_t> data_deps = {}) {
  chakra::Node n = node(id, chakra::COMP_NODE, std::move(data_deps));
  n.set_duration_micros(micros);
  return n;
}

chakra::Node transfer(uint64_t id, chakra::NodeType type, int src, int dst, int tag, std::vector<uint64_t> data_deps = {}) {
  chakra::Node n = node(id, type, std::move(data_deps));
  with(n, "comm_src", src);
  with(n, "comm_dst", dst);
  with(n, "comm_tag", tag);
  return with(n, "comm_size", 1 << 20);
}

std::string import_error(const std::string& prefix) {
  return fixtures::input_error_of([&] { import_chakra(prefix); });
}

TEST(ChakraImport, NodesItCannotReplayAreCountedAndPassedThrough) {
  const fixtures::TemporaryDirectory dir("chakra-import-ignored");
  const std::string prefix = (dir.path() / "t").string();
  chakra::Node broadcast = node(6, chakra::COMM_COLL_NODE, {5});
  with(broadcast, "comm_type", chakra::BROADCAST);
  with(broadcast, "comm_size", 4096);
  write_trace(prefix + ".0.et", {compute(1, 10), node(2, chakra::MEM_LOAD_NODE, {1}), node(3, chakra::MEM_LOAD_NODE, {2}),
                                 node(4, chakra::METADATA_NODE), compute(5, 20, {3, 4}), broadcast,
                                 transfer(7, chakra::COMM_SEND_NODE, 0, 1, 9, {6})});
  write_trace(prefix + ".1.et", {transfer(1, chakra::COMM_RECV_NODE, 0, 1, 9), compute(2, 5, {1})});
  const ChakraTraces traces = import_chakra(prefix);
  EXPECT_EQ(traces.ignored, (std::map<std::string, long long>{
                                {"MEM_LOAD_NODE", 2}, {"METADATA_NODE", 1}, {"COMM_COLL_NODE BROADCAST", 1}}));
  EXPECT_EQ(ignored_text(traces),
            "1 node of type COMM_COLL_NODE BROADCAST, 2 nodes of type MEM_LOAD_NODE, 1 node of type METADATA_NODE "
            "ignored (no time; what waits for them waits for what they waited for)");
  const Program& p = traces.program;
  ASSERT_EQ(p.tasks.size(), 5u);  // rank 0: compute, compute, SEND; rank 1: RECV, compute
  EXPECT_EQ(fixtures::deps_of(p, p.tasks[1]), std::vector<int>{0});  // through both loads
  EXPECT_EQ(fixtures::deps_of(p, p.tasks[2]), std::vector<int>{1});  // through the broadcast
  EXPECT_EQ(fixtures::deps_of(p, p.tasks[3]), std::vector<int>{2});  // its SEND
  EXPECT_EQ(fixtures::deps_of(p, p.tasks[4]), std::vector<int>{3});
  EXPECT_EQ(p.tasks[2].stream, Stream::p2p);
  // 30 us of compute, 1 MiB between two GPUs of a node, 5 us of compute.
  const double step_seconds =
      replay(p, Fabric(load_scenario("tiny-4gpu").cluster.topology, 2), traces.work_seconds, {}).step_seconds;
  EXPECT_GT(step_seconds, 35e-6);
  EXPECT_LT(step_seconds, 35e-6 + 100e-6);
}

// A trace recorded from a real PyTorch job and converted by Chakra's own
// converter (tests/data/chakra/README.md): its GPU kernels replay at their
// recorded durations, its NCCL all-reduces as collectives; the host-side ops
// and the broadcasts are ignored by name, and its ctrl_deps, PyTorch's call
// tree (which here even loops), are not read as order.
TEST(ChakraImport, ConvertedPyTorchTrace) {
  const std::string prefix = std::string(SIMTRAIN_SOURCE_DIR) + "/tests/data/chakra/pytorch";
  const ChakraTraces traces = import_chakra(prefix);
  EXPECT_TRUE(traces.from_pytorch);
  EXPECT_EQ(traces.ignored, (std::map<std::string, long long>{{"COMM_COLL_NODE BROADCAST", 2},
                                                               {"COMM_COLL_NODE on the CPU (is_cpu_op)", 14},
                                                               {"COMP_NODE on the CPU (is_cpu_op)", 2434}}));
  const Program& p = traces.program;
  ASSERT_EQ(p.world_size, 1);
  std::vector<double> all_reduce_bytes;
  double kernel_seconds = 0;
  for (const Task& task : p.tasks) {
    if (is_compute(task.kind)) kernel_seconds += traces.work_seconds[task.work];
    if (task.kind == TaskKind::ALLREDUCE) all_reduce_bytes.push_back(task.bytes);
  }
  EXPECT_EQ(p.tasks.size(), 1214u);  // 1,209 GPU kernels, 5 all-reduces
  EXPECT_EQ(all_reduce_bytes, (std::vector<double>{8196000, 31502336, 26255360, 26550272, 9724160}));
  EXPECT_NEAR(kernel_seconds, 292828e-6, 1e-9);  // the kernels' duration_micros, summed
  // One GPU: the kernels one after another, the all-reduces over one rank take no time.
  const double step_seconds =
      replay(p, Fabric(load_scenario("tiny-4gpu").cluster.topology, 1), traces.work_seconds, {}).step_seconds;
  EXPECT_NEAR(step_seconds, 292828e-6, 1e-9);
}

TEST(ChakraImport, TruncatedTraceIsRefusedNamingTheFileAndNode) {
  const fixtures::TemporaryDirectory dir("chakra-import-truncated");
  const std::string prefix = (dir.path() / "trace").string();
  const Scenario s = load_scenario("tiny-4gpu");
  const Program program = build_program(s, build_workload(s));
  export_chakra(program, std::vector<double>(program.works.size(), 1e-3), prefix, "OUT_PREFIX");
  const std::string rank1 = prefix + ".1.et";
  std::filesystem::resize_file(rank1, std::filesystem::file_size(rank1) - 3);
  const std::string error = import_error(prefix);
  EXPECT_NE(error.find(rank1 + ": node "), std::string::npos) << error;
  EXPECT_NE(error.find("truncated, or not a length-delimited protobuf message"), std::string::npos) << error;
}

// Traces simtrain wrote before comm_size followed ASTRA-sim (an all-gather's
// gathered output) would be read 8 times too large over 8 ranks: refused.
TEST(ChakraImport, ExportsBeforeTheCommSizeConventionAreRefused) {
  const fixtures::TemporaryDirectory dir("chakra-import-old");
  const std::string prefix = (dir.path() / "trace").string();
  const Scenario s = load_scenario("tiny-4gpu");
  const Program program = build_program(s, build_workload(s));
  export_chakra(program, std::vector<double>(program.works.size(), 1e-3), prefix, "OUT_PREFIX");
  const std::string rank0 = prefix + ".0.et";
  ChakraRankFile file = read_chakra_rank_file(rank0);
  auto* attributes = file.metadata.mutable_attr();
  const auto convention = std::find_if(attributes->begin(), attributes->end(),
                                       [](const chakra::AttributeProto& a) { return a.name() == "simtrain_comm_size"; });
  ASSERT_NE(convention, attributes->end());
  attributes->erase(convention);
  write_trace(rank0, file.metadata, file.nodes);
  EXPECT_EQ(import_error(prefix), rank0 + ": GlobalMetadata: simtrain_comm_size: missing: written by a simtrain before "
                                          "issue 42, whose all-gathers' comm_size held the gathered output, not each "
                                          "rank's input as ASTRA-sim reads it; export the traces again");
}

TEST(ChakraImport, BadInputIsRefusedNamingFileFieldAndReason) {
  const fixtures::TemporaryDirectory dir("chakra-import-bad");
  const std::string prefix = (dir.path() / "t").string();
  EXPECT_EQ(import_error(prefix), prefix + ".0.et: no such file (the trace of rank 0 of --chakra " + prefix + ")");

  write_trace(prefix + ".0.et", {compute(1, 10), compute(2, 10, {5})});
  EXPECT_EQ(import_error(prefix), prefix + ".0.et: node 2 (n2): data_deps: no node 5 in this file");

  write_trace(prefix + ".0.et", {transfer(1, chakra::COMM_SEND_NODE, 0, 1, 3)});
  write_trace(prefix + ".1.et", {compute(1, 10)});
  EXPECT_EQ(import_error(prefix), prefix + ".0.et: node 1 (n1): comm_tag: no RECV of it in " + prefix + ".1.et");

  write_trace(prefix + ".0.et", {transfer(1, chakra::COMM_SEND_NODE, 0, 2, 3)});
  EXPECT_EQ(import_error(prefix), prefix + ".0.et: node 1 (n1): comm_dst: rank 2, but there are traces of 2 ranks (" +
                                      prefix + ".{0..1}.et)");

  std::ofstream(prefix + ".comm_groups.json") << R"({"1": [0, 1, 2]})";
  EXPECT_EQ(import_error(prefix),
            prefix + ".comm_groups.json: 1: rank 2, but there are traces of 2 ranks (" + prefix + ".{0..1}.et)");

  std::ofstream(prefix + ".comm_groups.json") << R"({"1": [0, )";  // cut short: said plainly, no library codes
  EXPECT_EQ(import_error(prefix), prefix + ".comm_groups.json: malformed JSON at line 1, column 11: unexpected end of "
                                           "input; expected '[', '{', or a literal (is the file cut short?)");
}

}  // namespace
}  // namespace simtrain
