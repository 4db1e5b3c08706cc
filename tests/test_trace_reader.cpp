// Reading a Chrome trace back: what write_chrome_trace wrote comes back task
// for task, and malformed input is refused with the event and field named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/program/host_track.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/program/trace_reader.hpp"
#include "sim/step/report.hpp"
#include "test_support.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

struct Step {
  Program program;
  Timeline timeline;
};

// A Program of the fixtures' model with made-up times: each rank's tasks back
// to back, 1 ms each, ranks offset by 0.25 ms.
// `expert_parallel` > 1: the model's layers are MoE (8 experts, top-2) over that many EP ranks;
// `context_parallel` > 1: the dp ranks split into DP x CP, ring attention's K/V exchange over CP.
Step made_up_step(int tp, int pp, int dp, const std::string& schedule, int layers_per_virtual_stage = 0,
                  int expert_parallel = 1, int context_parallel = 1) {
  nlohmann::json document = fixtures::scenario_json(tp, pp, dp, 8, schedule, layers_per_virtual_stage, 8);
  if (context_parallel > 1) document["parallelism"]["context_parallel_size"] = context_parallel;
  if (expert_parallel > 1) {
    document["model"].update({{"num_experts", 8}, {"num_experts_per_tok", 2}});
    document["parallelism"].update({{"expert_model_parallel_size", expert_parallel}, {"sequence_parallel", true}});
  }
  const Scenario s = fixtures::scenario_from(document);
  Step step{build_program(s, build_workload(s)), {}};
  step.timeline.tasks.resize(step.program.tasks.size());
  for (int rank = 0; rank < step.program.world_size; ++rank) {
    double now = 0.25e-3 * rank;
    for (int id : step.program.rank_tasks(rank)) {
      step.timeline.tasks[id] = {now, now + 1e-3};
      now += 1e-3;
    }
    step.timeline.step_seconds = std::max(step.timeline.step_seconds, now);
  }
  return step;
}

RecordedStep round_trip(const Step& step) {
  std::stringstream trace;
  write_chrome_trace(trace, step.program, step.timeline);
  return read_chrome_trace(trace, "step.json");
}

RecordedStep read_text(const std::string& text) {
  std::istringstream in(text);
  return read_chrome_trace(in, "t.json");
}

std::string error_of(const std::string& text) {
  try {
    read_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const std::string rank0 = R"j({"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0 (tp 0, pp 0, dp 0)"}})j";

std::string trace_of(const std::string& events) { return R"({"traceEvents":[)" + rank0 + "," + events + "]}"; }

const std::string good_task = R"({"ph":"X","pid":0,"tid":0,"name":"s0 F mb0","cat":"F","ts":0,"dur":5,"args":{"id":0,"stage":0,"microbatch":0}})";

}  // namespace

TEST(TraceReader, GivesBackEveryTaskAsWritten) {
  for (const Step& step : {made_up_step(2, 2, 2, "1f1b"), made_up_step(1, 2, 2, "interleaved_1f1b", 2),
                           made_up_step(2, 2, 2, "1f1b", 0, 2), made_up_step(2, 2, 2, "1f1b", 0, 1, 2)}) {
    const RecordedStep read = round_trip(step);
    const Program& p = step.program;
    const Program& q = read.program;
    EXPECT_EQ(q.world_size, p.world_size);
    EXPECT_EQ(q.tensor_size, p.tensor_size);
    EXPECT_EQ(q.pipeline_size, p.pipeline_size);
    EXPECT_EQ(q.virtual_stages, p.virtual_stages);
    EXPECT_EQ(q.micro_batches, p.micro_batches);
    EXPECT_EQ(fixtures::rank_task_lists(q), fixtures::rank_task_lists(p));
    for (int rank = 0; rank < p.world_size; ++rank) {
      EXPECT_EQ(q.coords[rank].tp, p.coords[rank].tp);
      EXPECT_EQ(q.coords[rank].pp, p.coords[rank].pp);
      EXPECT_EQ(q.coords[rank].dp, p.coords[rank].dp);
    }
    ASSERT_EQ(q.tasks.size(), p.tasks.size());
    for (const Task& a : p.tasks) {
      const Task& b = q.tasks[a.id];
      EXPECT_EQ(b.id, a.id);
      EXPECT_EQ(b.rank, a.rank);
      EXPECT_EQ(b.stream, a.stream);
      EXPECT_EQ(b.kind, a.kind);
      EXPECT_EQ(task_name(q, b), task_name(p, a));
      EXPECT_EQ(b.stage, a.stage);
      EXPECT_EQ(b.microbatch, a.microbatch);
      EXPECT_EQ(b.dim, a.dim);
      EXPECT_EQ(b.bytes, std::round(a.bytes));
      EXPECT_EQ(b.count, a.count);
      EXPECT_TRUE(q.deps(b).empty());
      EXPECT_NEAR(read.timeline.tasks[a.id].start, step.timeline.tasks[a.id].start, 1e-9);
      EXPECT_NEAR(read.timeline.tasks[a.id].end, step.timeline.tasks[a.id].end, 1e-9);
    }
    EXPECT_NEAR(read.timeline.step_seconds, step.timeline.step_seconds, 1e-9);
  }
}

// Where the hosts were simulated, each rank has a "host" thread: a slice per
// task its host launched, from that launch to the next (a RECV posted with
// its SEND has none), the last to when the host was done. The reader makes
// no tasks of them but gives them back as each rank's own host's launches.
TEST(TraceReader, AHostTrackShowsEachLaunchUntilTheNextAndReadsBackAsNoTask) {
  Step step = made_up_step(2, 1, 1, "1f1b");  // ranks 0 and 1: one TP group, one host
  const RankTaskIds ids = step.program.rank_tasks(0);
  std::vector<double> launches;
  for (size_t i = 0; i < ids.size(); ++i) launches.push_back(i == 1 ? -1 : 0.5e-3 * static_cast<double>(i));
  launches.push_back(0.5e-3 * static_cast<double>(ids.size()));
  step.timeline.host_of_rank = {0, 0};
  step.timeline.host_launch_seconds = {launches, {}};
  std::stringstream trace;
  write_chrome_trace(trace, step.program, step.timeline);
  const nlohmann::json written = nlohmann::json::parse(trace.str());
  for (int rank : {0, 1}) {
    std::vector<nlohmann::json> slices;
    bool named = false;
    for (const nlohmann::json& e : written["traceEvents"])
      if (e["pid"] == rank && e.value("tid", -1) == kHostThread) {
        if (e["ph"] == "M") named = e["args"]["name"] == "host";
        if (e["ph"] == "X") slices.push_back(e);
      }
    EXPECT_TRUE(named) << rank;
    ASSERT_EQ(slices.size(), ids.size() - 1) << rank;
    const RankTaskIds mine = step.program.rank_tasks(rank);
    EXPECT_EQ(slices[0]["name"], "launch " + task_name(step.program, step.program.tasks[mine[0]]));
    EXPECT_EQ(slices[0]["args"]["id"], mine[0]);
    EXPECT_DOUBLE_EQ(slices[0]["dur"].get<double>(), 1000.0);  // to the third task's launch: the second has none
    EXPECT_EQ(slices[1]["args"]["id"], mine[2]);
    EXPECT_DOUBLE_EQ(slices[1]["ts"].get<double>(), 1000.0);
    EXPECT_DOUBLE_EQ(slices.back()["dur"].get<double>(), 500.0);  // to when the host was done
  }
  const RecordedStep read = read_chrome_trace(trace, "step.json");
  EXPECT_EQ(read.program.tasks.size(), step.program.tasks.size());
  EXPECT_EQ(fixtures::rank_task_lists(read.program), fixtures::rank_task_lists(step.program));
  EXPECT_EQ(read.timeline.host_of_rank, (std::vector<int>{0, 1}));
  for (int rank : {0, 1}) {
    const std::vector<HostSlice> written_slices = host_track(step.program, step.timeline, rank);
    const std::vector<HostSlice> read_slices = host_track(read.program, read.timeline, rank);
    ASSERT_EQ(read_slices.size(), ids.size() - 1) << rank;
    ASSERT_EQ(read_slices.size(), written_slices.size()) << rank;
    for (size_t i = 0; i < read_slices.size(); ++i) {
      EXPECT_EQ(read_slices[i].task, written_slices[i].task);
      EXPECT_NEAR(read_slices[i].start_seconds, written_slices[i].start_seconds, 1e-9);
      EXPECT_NEAR(read_slices[i].end_seconds, written_slices[i].end_seconds, 1e-9);
    }
  }
}

TEST(TraceReader, RefusesAHostLaunchingAnotherRanksTask) {
  const std::string rank1 = R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"rank 1 (tp 1, pp 0, dp 0)"}})j";
  const std::string task1 = R"({"ph":"X","pid":1,"tid":0,"name":"s0 F mb0","cat":"F","ts":0,"dur":5,"args":{"id":1}})";
  const std::string launch = R"({"ph":"X","pid":0,"tid":8,"name":"launch","cat":"host","ts":0,"dur":1,"args":{"id":1}})";
  EXPECT_THAT(error_of(trace_of(rank1 + "," + good_task + "," + task1 + "," + launch)),
              HasSubstr("traceEvents[4].args.id: the host of rank 0 launches task 1, which is no task of that rank"));
  const RecordedStep without = read_text(trace_of(good_task));
  EXPECT_TRUE(without.timeline.host_of_rank.empty());
  EXPECT_TRUE(without.timeline.host_launch_seconds.empty());
}

TEST(TraceReader, TimeSplitsMatchTheOriginals) {
  const Step step = made_up_step(2, 4, 2, "1f1b");
  const RecordedStep read = round_trip(step);
  const StepReport a = timing_report(step.program, step.timeline);
  const StepReport b = timing_report(read.program, read.timeline);
  ASSERT_EQ(b.stages.size(), 4u);
  EXPECT_NEAR(b.bubble_fraction, a.bubble_fraction, 1e-9);
  for (size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(b.stages[i].rank, a.stages[i].rank);
    EXPECT_NEAR(b.stages[i].time.compute_seconds, a.stages[i].time.compute_seconds, 1e-9);
    EXPECT_NEAR(b.stages[i].time.exposed_tp_seconds, a.stages[i].time.exposed_tp_seconds, 1e-9);
    EXPECT_NEAR(b.stages[i].time.idle_seconds, a.stages[i].time.idle_seconds, 1e-9);
  }
}

TEST(TraceReader, AcceptsABareEventArrayAndCountsFromTheFirstTask) {
  const RecordedStep r = read_text("[" + rank0 + "," +
                                   R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":1000,"dur":5,"args":{"id":1}},)"
                                   R"({"ph":"X","pid":0,"tid":2,"name":"b","cat":"ALLREDUCE","ts":1002,"dur":1,"args":{"id":0,"dim":"dp","bytes":64}},)"
                                   R"({"ph":"i","pid":0,"name":"marker","ts":3}])");
  ASSERT_EQ(r.program.tasks.size(), 2u);
  EXPECT_EQ(fixtures::rank_task_lists(r.program)[0], (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(r.timeline.tasks[1].start, 0);
  EXPECT_NEAR(r.timeline.tasks[0].start, 2e-6, 1e-12);
  EXPECT_NEAR(r.timeline.step_seconds, 5e-6, 1e-12);
  EXPECT_EQ(r.program.tasks[0].stream, Stream::dp);
  EXPECT_EQ(r.program.tasks[0].dim, CommDim::dp);
  EXPECT_EQ(r.program.tasks[0].bytes, 64);
  EXPECT_EQ(r.program.tasks[1].stage, -1);
}

TEST(TraceReader, RefusesMalformedInputNamingEventAndField) {
  EXPECT_THAT(error_of("{\"traceEvents\": ["), HasSubstr("t.json: malformed JSON"));
  EXPECT_THAT(error_of(trace_of("42")), HasSubstr("t.json: traceEvents[1]: expected a JSON object, got number"));
  EXPECT_THAT(error_of(trace_of(R"({"pid":0})")), HasSubstr("traceEvents[1].ph: missing"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","dur":1,"args":{"id":0}})")),
              HasSubstr("traceEvents[1].ts: missing"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":"0","dur":1,"args":{"id":0}})")),
              HasSubstr("traceEvents[1].ts: expected a number"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"CKPTX","ts":0,"dur":1,"args":{"id":0}})")),
              HasSubstr("traceEvents[1].cat: unknown task kind 'CKPTX'"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":9,"name":"a","cat":"F","ts":0,"dur":1,"args":{"id":0}})")),
              HasSubstr("traceEvents[1].tid: unknown stream 9"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":0,"dur":1})")),
              HasSubstr("traceEvents[1].args: missing"));
  EXPECT_THAT(error_of(trace_of(good_task + "," + good_task)), HasSubstr("traceEvents[2].args.id: duplicate task id 0"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":0,"dur":1,"args":{"id":3}})")),
              HasSubstr("traceEvents[1].args.id: task ids must run from 0 to 0 (one per task event), got 3"));
  EXPECT_THAT(error_of(R"({"traceEvents":[)" + good_task + "]}"),
              HasSubstr("traceEvents: rank 0 has no process_name 'rank N (tp T, pp P, dp D)'"));
  EXPECT_THAT(error_of(R"({"traceEvents":[{"ph":"M","pid":0,"name":"process_name","args":{"name":"worker"}}]})"),
              HasSubstr("traceEvents[0].args.name: expected 'rank 0 (tp T, pp P, dp D)', got 'worker'"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"M","pid":0,"name":"thread_name","args":{"name":"compute"}})")),
              HasSubstr("no task events"));
}

TEST(TraceReader, GivesBackALiveRecordWithEachComputeTasksOps) {
  Step step = made_up_step(2, 2, 2, "1f1b");
  const Program& p = step.program;
  LiveRecord& live = step.timeline.live.emplace();
  live.device = "NVIDIA H100 80GB HBM3 \"test\"";
  live.dtype = Dtype::fp8;
  live.op_seconds.resize(p.tasks.size());
  int timed = 0;
  for (const Task& t : p.tasks) {
    if (t.work < 0 || p.works[t.work].ops.empty()) continue;
    ++timed;
    for (size_t i = 0; i < p.works[t.work].ops.size(); ++i)
      live.op_seconds[t.id].push_back((t.id + 1) * 1e-6 / 3 * static_cast<double>(i + 1));
  }
  ASSERT_GT(timed, 0);
  std::stringstream trace;
  write_chrome_trace(trace, p, step.timeline);
  EXPECT_THAT(trace.str(), HasSubstr(R"("otherData":{"source":"live",)"));
  EXPECT_THAT(trace.str(), HasSubstr(R"("device":"NVIDIA H100 80GB HBM3 \"test\"","dtype":"fp8"})"));
  const RecordedStep read = read_chrome_trace(trace, "live.json");
  EXPECT_EQ(read.source, "live.json");
  EXPECT_EQ(read.made_by, "live");
  EXPECT_EQ(read.program_hash, program_hash(p));
  ASSERT_TRUE(read.timeline.live.has_value());
  EXPECT_EQ(read.timeline.live->device, live.device);
  EXPECT_EQ(read.timeline.live->dtype, Dtype::fp8);
  EXPECT_EQ(read.timeline.live->op_seconds, live.op_seconds);  // to the bit
  for (const Task& t : p.tasks) {
    const Task& r = read.program.tasks[t.id];
    if (live.op_seconds[t.id].empty()) {
      EXPECT_EQ(r.work, -1) << task_name(p, t);
      continue;
    }
    ASSERT_GE(r.work, 0) << task_name(p, t);
    const std::vector<Op>& want = p.works[t.work].ops;
    const std::vector<Op>& got = read.program.works[r.work].ops;
    ASSERT_EQ(got.size(), want.size()) << task_name(p, t);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].name, want[i].name);
      EXPECT_EQ(got[i].op_class, want[i].op_class);
      EXPECT_EQ(got[i].shape, want[i].shape);
      EXPECT_EQ(got[i].flops, want[i].flops);
      EXPECT_EQ(got[i].bytes, want[i].bytes);
    }
  }
  EXPECT_LE(read.program.works.size(), p.works.size());  // tasks that ran the same ops share a Work
}

TEST(TraceReader, ASimulatedTraceHasNoLiveRecordAndNoWorks) {
  const Step step = made_up_step(2, 2, 1, "1f1b");
  std::stringstream trace;
  write_chrome_trace(trace, step.program, step.timeline);
  EXPECT_EQ(trace.str().rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", 0), 0u);
  EXPECT_THAT(trace.str(), HasSubstr("\n],\n\"otherData\":{\"source\":\"simulation\",\"layout\":{\"tp\":2,\"pp\":2,\"dp\":1,"
                                     "\"virtual_stages\":1,\"micro_batches\":8},\"program_hash\":\"" +
                                     program_hash(step.program) + "\"}}\n"));
  EXPECT_THAT(trace.str(), testing::Not(HasSubstr("\"ops\"")));
  const RecordedStep read = read_chrome_trace(trace, "sim.json");
  EXPECT_FALSE(read.timeline.live.has_value());
  EXPECT_TRUE(read.program.works.empty());
  EXPECT_EQ(read.made_by, "simulation");
  EXPECT_EQ(read.program_hash, program_hash(step.program));
  EXPECT_TRUE(read.origin.scenario.empty());
  // otherData of another source is no live record.
  const RecordedStep other = read_text(R"({"otherData":{"source":"perfetto"},"traceEvents":[)" + rank0 + "," + good_task + "]}");
  EXPECT_FALSE(other.timeline.live.has_value());
}

TEST(TraceReader, RefusesMalformedLiveRecordsNamingEventAndField) {
  const std::string live = R"({"otherData":{"source":"live","device":"cpu","dtype":"bf16"},"traceEvents":[)" + rank0 + ",";
  auto with_ops = [&](const std::string& ops, const std::string& cat = "F") {
    return live + R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":")" + cat + R"(","ts":0,"dur":1,"args":{"id":0,"ops":)" + ops + "}}]}";
  };
  const std::string qkv = R"("op":"qkv","class":"gemm","shape":[2,3,4],"flops":48,"bytes":18)";
  const RecordedStep good = read_text(with_ops("[{" + qkv + R"(,"seconds":0.5}])"));
  ASSERT_TRUE(good.timeline.live.has_value());
  EXPECT_EQ(good.timeline.live->op_seconds, (std::vector<std::vector<double>>{{0.5}}));
  EXPECT_EQ(good.program.works.at(good.program.tasks[0].work).ops.at(0).shape, (std::vector<int64_t>{2, 3, 4}));

  EXPECT_THAT(error_of(with_ops("[{" + qkv + R"(,"seconds":-0.5}])")),
              HasSubstr("t.json: traceEvents[1].args.ops[0].seconds: must not be negative, got -0.5"));
  EXPECT_THAT(error_of(with_ops("[{" + qkv + "}]")), HasSubstr("traceEvents[1].args.ops[0].seconds: missing"));
  EXPECT_THAT(error_of(with_ops(R"([{"op":"qkv","class":"matmul","shape":[2],"flops":1,"bytes":1,"seconds":1}])")),
              HasSubstr("traceEvents[1].args.ops[0].class: unknown op class 'matmul'"));
  EXPECT_THAT(error_of(with_ops(R"([{"op":"qkv","class":"gemm","shape":[2,"3"],"flops":1,"bytes":1,"seconds":1}])")),
              HasSubstr("traceEvents[1].args.ops[0].shape: expected a non-empty array of positive integers"));
  EXPECT_THAT(error_of(with_ops(R"([{"op":"qkv","class":"gemm","shape":[2.5],"flops":1,"bytes":1,"seconds":1}])")),
              HasSubstr("traceEvents[1].args.ops[0].shape: expected a non-empty array of positive integers"));
  EXPECT_THAT(error_of(with_ops("[{" + qkv + R"(,"seconds":1,"secs":2}])")), HasSubstr("traceEvents[1].args.ops[0]"));
  EXPECT_THAT(error_of(with_ops(R"({"op":"qkv"})")), HasSubstr("traceEvents[1].args.ops: expected an array"));
  EXPECT_THAT(error_of(with_ops("[{" + qkv + R"(,"seconds":1}])", "SEND")),
              HasSubstr("traceEvents[1].args.ops: only compute tasks run ops, this is a SEND task"));
  EXPECT_THAT(error_of(trace_of(R"({"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":0,"dur":1,"args":{"id":0,"ops":[{)" + qkv +
                                R"(,"seconds":1}]}})")),
              HasSubstr("traceEvents[1].args.ops: op times in a trace whose otherData.source is not \"live\""));
  EXPECT_THAT(error_of(R"({"otherData":{"source":"live","dtype":"bf16"},"traceEvents":[)" + rank0 + "," + good_task + "]}"),
              HasSubstr("t.json: otherData.device: missing"));
  EXPECT_THAT(error_of(R"({"otherData":{"source":"live","device":"x","dtype":"int4"},"traceEvents":[)" + rank0 + "," + good_task + "]}"),
              HasSubstr("t.json: otherData.dtype:"));
  EXPECT_THAT(error_of(R"({"otherData":"live","traceEvents":[)" + rank0 + "," + good_task + "]}"),
              HasSubstr("t.json: otherData: expected a JSON object"));
}

TEST(TraceReader, GivesBackWhatTheTraceIsOf) {
  const Step step = made_up_step(1, 2, 2, "1f1b");
  std::stringstream trace;
  write_chrome_trace(trace, step.program, step.timeline, {"tiny-4gpu", {"num_hidden_layers=4", "seq_length=128"}});
  const RecordedStep read = read_chrome_trace(trace, "sim.json");
  EXPECT_EQ(read.made_by, "simulation");
  EXPECT_EQ(read.program_hash, program_hash(step.program));
  EXPECT_EQ(read.origin.scenario, "tiny-4gpu");
  EXPECT_THAT(read.origin.overrides, testing::ElementsAre("num_hidden_layers=4", "seq_length=128"));

  // Written before traces said what they are of: nothing to give back, and no error.
  const RecordedStep old = read_text(trace_of(good_task));
  EXPECT_EQ(old.made_by, "");
  EXPECT_EQ(old.program_hash, "");
}

TEST(TraceReader, RefusesMalformedOtherData) {
  auto with_other = [&](const std::string& other) {
    return error_of(R"({"otherData":)" + other + R"(,"traceEvents":[)" + rank0 + "," + good_task + "]}");
  };
  EXPECT_THAT(with_other(R"({"source":"simulation","program_hash":"12AB"})"),
              HasSubstr("t.json: otherData.program_hash: expected 16 lowercase hex digits, got '12AB'"));
  EXPECT_THAT(with_other(R"({"source":"simulation","program_hash":7})"), HasSubstr("t.json: otherData.program_hash:"));
  EXPECT_THAT(with_other(R"({"source":"simulation","overrides":["a=1",2]})"),
              HasSubstr("t.json: otherData.overrides: expected an array of strings, got [\"a=1\",2]"));
  EXPECT_THAT(with_other(R"({"source":"simulation","overrides":"a=1"})"),
              HasSubstr("t.json: otherData.overrides: expected an array of strings"));
  EXPECT_THAT(with_other(R"({"source":["live"]})"), HasSubstr("t.json: otherData.source:"));
}

// A Program's hash: the same for the same Program, built twice; another for
// a change in any of its parts; its bytes fixed on any machine.
TEST(ProgramHash, IsTheSameForTheSameProgramAndChangesWithAnyPart) {
  const Program program = made_up_step(2, 2, 2, "1f1b").program;
  EXPECT_EQ(program_hash(program), program_hash(made_up_step(2, 2, 2, "1f1b").program));
  // FNV-1a of an empty Program's eleven 8-byte integers (0, 1, 1, 1, 1, 0 and five empty lists).
  EXPECT_EQ(program_hash(Program{}), "21c1083a9d7393c5");
  EXPECT_THAT(program_hash(program), testing::MatchesRegex("[0-9a-f]{16}"));
  ASSERT_FALSE(program.works.empty());
  ASSERT_FALSE(program.groups.empty());
  const std::vector<std::pair<std::string, std::function<void(Program&)>>> changes = {
      {"micro-batches", [](Program& p) { p.micro_batches += 1; }},
      {"a rank's coordinates", [](Program& p) { p.coords[0].dp += 1; }},
      {"a work's name", [](Program& p) { p.works[0].name += "x"; }},
      {"an op's FLOPs", [](Program& p) { p.works[0].ops[0].flops += 1; }},
      {"an op's shape", [](Program& p) { p.works[0].ops[0].shape[0] += 1; }},
      {"a group's ranks", [](Program& p) { std::reverse(p.groups[0].ranks.begin(), p.groups[0].ranks.end()); }},
      {"a task's bytes", [](Program& p) { p.tasks.stored(0).bytes += 1; }},
      {"a task's dependencies", [](Program& p) { p.tasks.stored_dep(0) += 1; }},
      {"a task's name",
       [](Program& p) {
         std::vector<std::string> names;
         for (const Task& t : p.tasks) names.push_back(task_name(p, t));
         names[0] += " ";
         p.recorded_names = names;
       }},
      {"a rank's order",
       [](Program& p) { fixtures::edit_rank_tasks(p, 0, [](std::vector<int>& ids) { std::swap(ids[0], ids[1]); }); }},
  };
  for (const auto& [what, change] : changes) {
    Program changed = program;
    change(changed);
    EXPECT_NE(program_hash(changed), program_hash(program)) << what;
  }
}

TEST(TraceReader, NamesAMissingFile) {
  try {
    read_chrome_trace_file("/nonexistent/step.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/step.json: no such file"));
  }
}
