// Reading a Chrome trace back: what write_chrome_trace wrote comes back task
// for task, and malformed input is refused with the event and field named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "input_error.hpp"
#include "program_builder.hpp"
#include "report.hpp"
#include "test_support.hpp"
#include "trace.hpp"
#include "trace_reader.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

struct Step {
  Program program;
  Timeline timeline;
};

// A Program of the fixtures' model with made-up times: each rank's tasks back
// to back, 1 ms each, ranks offset by 0.25 ms.
Step made_up_step(int tp, int pp, int dp, const std::string& schedule, int layers_per_virtual_stage = 0) {
  const Scenario s =
      fixtures::scenario_from(fixtures::scenario_json(tp, pp, dp, 8, schedule, layers_per_virtual_stage, 8));
  Step step{build_program(s, build_workload(s)), {}};
  step.timeline.tasks.resize(step.program.tasks.size());
  for (int rank = 0; rank < step.program.world_size; ++rank) {
    double now = 0.25e-3 * rank;
    for (int id : step.program.rank_tasks[rank]) {
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
  for (const Step& step : {made_up_step(2, 2, 2, "1f1b"), made_up_step(1, 2, 2, "interleaved_1f1b", 2)}) {
    const RecordedStep read = round_trip(step);
    const Program& p = step.program;
    const Program& q = read.program;
    EXPECT_EQ(q.world_size, p.world_size);
    EXPECT_EQ(q.tensor_size, p.tensor_size);
    EXPECT_EQ(q.pipeline_size, p.pipeline_size);
    EXPECT_EQ(q.virtual_stages, p.virtual_stages);
    EXPECT_EQ(q.micro_batches, p.micro_batches);
    EXPECT_EQ(q.rank_tasks, p.rank_tasks);
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
      EXPECT_EQ(b.name, a.name);
      EXPECT_EQ(b.stage, a.stage);
      EXPECT_EQ(b.microbatch, a.microbatch);
      EXPECT_EQ(b.dim, a.dim);
      EXPECT_EQ(b.bytes, std::round(a.bytes));
      EXPECT_EQ(b.count, a.count);
      EXPECT_TRUE(b.deps.empty());
      EXPECT_NEAR(read.timeline.tasks[a.id].start, step.timeline.tasks[a.id].start, 1e-9);
      EXPECT_NEAR(read.timeline.tasks[a.id].end, step.timeline.tasks[a.id].end, 1e-9);
    }
    EXPECT_NEAR(read.timeline.step_seconds, step.timeline.step_seconds, 1e-9);
  }
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
  EXPECT_EQ(r.program.rank_tasks[0], (std::vector<int>{1, 0}));
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

TEST(TraceReader, NamesAMissingFile) {
  try {
    read_chrome_trace_file("/nonexistent/step.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/step.json: cannot be read"));
  }
}
