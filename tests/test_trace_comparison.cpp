// Comparing a simulated trace with a live one (live/trace_comparison.hpp),
// and the kernel-profile database calibrated from a live trace
// (live/calibration.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "calibration.hpp"
#include "sim/base/input_error.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profile_database.hpp"
#include "sim/program/trace.hpp"
#include "sim/program/trace_reader.hpp"
#include "test_support.hpp"
#include "trace_comparison.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

RecordedStep through_trace(const Program& program, const Timeline& timeline, const std::string& source) {
  std::stringstream trace;
  write_chrome_trace(trace, program, timeline);
  return read_chrome_trace(trace, source);
}

// A hand-built step: tasks on their ranks, each {kind, name, start, duration},
// times in 1/1024 s so that sums, differences and ×1.5 are exact.
struct Spec {
  int rank;
  TaskKind kind;
  std::string name;
  double start, duration;
};
constexpr double tick = 1.0 / 1024;

RecordedStep step_of(int world_size, const std::vector<Spec>& specs, const std::string& source) {
  RecordedStep step;
  step.source = source;
  Program& p = step.program;
  p.world_size = world_size;
  p.coords.resize(world_size);
  std::vector<std::vector<int>> rank_tasks(world_size);
  for (const Spec& s : specs) {
    Task t;
    t.rank = s.rank;
    t.kind = s.kind;
    rank_tasks[s.rank].push_back(p.add_task(t));
    p.recorded_names.push_back(s.name);
    step.timeline.tasks.push_back({s.start * tick, (s.start + s.duration) * tick});
    step.timeline.step_seconds = std::max(step.timeline.step_seconds, (s.start + s.duration) * tick);
  }
  p.set_rank_tasks(rank_tasks);
  return step;
}

// Every time of `step` multiplied by `factor`.
RecordedStep scaled(RecordedStep step, double factor, const std::string& source) {
  step.source = source;
  for (TaskTiming& t : step.timeline.tasks) t = {t.start * factor, t.end * factor};
  step.timeline.step_seconds *= factor;
  return step;
}

std::string comparison_error(const RecordedStep& a, const RecordedStep& b) {
  return fixtures::input_error_of([&] { compare_traces(a, b); });
}

const KindComparison* kind_of(const TraceComparison& c, TaskKind kind) {
  for (const KindComparison& k : c.kinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

}  // namespace

TEST(TraceComparison, ASimulatedTraceAgainstItselfMatchesEveryTaskWithoutError) {
  const Simulation sim = simulate(load_scenario("tiny-4gpu"));
  const RecordedStep a = through_trace(sim.program, sim.timeline, "sim.json");
  const RecordedStep b = through_trace(sim.program, sim.timeline, "again.json");
  const TraceComparison c = compare_traces(a, b);
  EXPECT_EQ(c.world_size, 4);
  EXPECT_EQ(c.matched, static_cast<int>(sim.program.tasks.size()));
  EXPECT_EQ(c.only_simulated, 0);
  EXPECT_EQ(c.only_live, 0);
  EXPECT_EQ(c.step_error, 0);
  ASSERT_TRUE(c.recv.has_value());  // PP 2: activations and gradients cross stages
  EXPECT_GT(c.recv->matched, 0);
  int matched = c.recv->matched;
  for (const KindComparison& k : c.kinds) {
    EXPECT_NE(k.kind, TaskKind::RECV);
    EXPECT_EQ(k.median_error, 0) << to_string(k.kind);
    EXPECT_EQ(k.worst_error, 0) << to_string(k.kind);
    EXPECT_EQ(k.sum_error, 0) << to_string(k.kind);
    EXPECT_EQ(k.simulated_seconds, k.live_seconds) << to_string(k.kind);
    matched += k.matched;
  }
  EXPECT_EQ(matched, c.matched);
  ASSERT_NE(kind_of(c, TaskKind::F), nullptr);
  EXPECT_EQ(kind_of(c, TaskKind::F)->matched, 4 * 8);  // every rank runs 8 micro-batches forward
  ASSERT_NE(kind_of(c, TaskKind::ALLREDUCE), nullptr);  // the TP all-reduces, whose names repeat on a rank

  const std::string text = to_text(c);
  EXPECT_THAT(text, HasSubstr("sim.json (simulated) against again.json (live), 4 ranks"));
  EXPECT_THAT(text, HasSubstr("receives (simulated: their send's transfer; live: "));
  const nlohmann::json json = to_json(c);
  EXPECT_EQ(json["matched"], c.matched);
  EXPECT_EQ(json["step"]["error"], 0.0);
  EXPECT_EQ(json["kinds"].size(), c.kinds.size());
  EXPECT_EQ(json["recv"]["kind"], "RECV");
}

TEST(TraceComparison, ErrorsOfUniformlyScaledDurationsAreInClosedForm) {
  const RecordedStep sim = step_of(2,
                                   {{0, TaskKind::F, "s0 F mb0", 0, 2},
                                    {0, TaskKind::B, "s0 B mb0", 2, 4},
                                    {0, TaskKind::SEND, "send act", 6, 1},
                                    {1, TaskKind::RECV, "recv act", 6, 1},
                                    {1, TaskKind::F, "s1 F mb0", 7, 8},
                                    {1, TaskKind::OPT, "optimizer", 15, 1}},
                                   "sim.json");
  // Live 1.5 times slower: (1.5 d - d) / 1.5 d = 0.5 / 1.5 for every task and the step.
  const TraceComparison slow = compare_traces(sim, scaled(sim, 1.5, "live.json"));
  EXPECT_EQ(slow.matched, 6);
  EXPECT_EQ(slow.step_error, 0.5 / 1.5);
  for (const KindComparison& k : slow.kinds) {
    EXPECT_EQ(k.median_error, 0.5 / 1.5) << to_string(k.kind);
    EXPECT_EQ(k.worst_error, 0.5 / 1.5) << to_string(k.kind);
    EXPECT_EQ(k.sum_error, 0.5 / 1.5) << to_string(k.kind);
    EXPECT_EQ(k.live_seconds, 1.5 * k.simulated_seconds) << to_string(k.kind);
  }
  EXPECT_EQ(slow.recv->median_error, 0.5 / 1.5);
  ASSERT_NE(kind_of(slow, TaskKind::F), nullptr);
  EXPECT_EQ(kind_of(slow, TaskKind::F)->matched, 2);
  EXPECT_EQ(kind_of(slow, TaskKind::F)->simulated_seconds, 10 * tick);
  // The other way round, live 1.5 times faster: (d - 1.5 d) / d = -0.5.
  const TraceComparison fast = compare_traces(scaled(sim, 1.5, "sim15.json"), sim);
  EXPECT_EQ(fast.step_error, -0.5);
  for (const KindComparison& k : fast.kinds) {
    EXPECT_EQ(k.median_error, -0.5) << to_string(k.kind);
    EXPECT_EQ(k.worst_error, -0.5) << to_string(k.kind);
  }
}

TEST(TraceComparison, MedianAndWorstOfMixedErrorsAndRepeatedNamesMatchedInStartOrder) {
  const RecordedStep sim = step_of(1,
                                   {{0, TaskKind::F, "a", 0, 1},
                                    {0, TaskKind::F, "b", 1, 2},
                                    {0, TaskKind::F, "c", 3, 6},
                                    {0, TaskKind::ALLREDUCE, "allreduce tp0", 9, 1},
                                    {0, TaskKind::ALLREDUCE, "allreduce tp0", 10, 2},
                                    {0, TaskKind::SEND, "only in sim", 12, 1}},
                                   "sim.json");
  // Errors of F: (2-1)/2 = 0.5, (4-2)/4 = 0.5, (3-6)/3 = -1. The two
  // all-reduces of one name are listed in the other order, but matched by start.
  const RecordedStep live = step_of(1,
                                    {{0, TaskKind::F, "a", 0, 2},
                                     {0, TaskKind::F, "b", 2, 4},
                                     {0, TaskKind::F, "c", 6, 3},
                                     {0, TaskKind::ALLREDUCE, "allreduce tp0", 12, 4},
                                     {0, TaskKind::ALLREDUCE, "allreduce tp0", 9, 2},
                                     {0, TaskKind::F, "only live", 16, 1},
                                     {0, TaskKind::B, "a", 17, 1}},  // same name, another kind: another task
                                    "live.json");
  const TraceComparison c = compare_traces(sim, live);
  const KindComparison* f = kind_of(c, TaskKind::F);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->matched, 3);
  EXPECT_EQ(f->median_error, 0.5);
  EXPECT_EQ(f->worst_error, -1);
  EXPECT_EQ(f->worst_task, "c");
  EXPECT_EQ(f->worst_rank, 0);
  EXPECT_EQ(f->simulated_seconds, 9 * tick);
  EXPECT_EQ(f->live_seconds, 9 * tick);
  EXPECT_EQ(f->sum_error, 0);
  const KindComparison* allreduce = kind_of(c, TaskKind::ALLREDUCE);
  ASSERT_NE(allreduce, nullptr);
  EXPECT_EQ(allreduce->matched, 2);
  EXPECT_EQ(allreduce->median_error, 0.5);  // (2-1)/2 and (4-2)/4
  EXPECT_EQ(allreduce->worst_error, 0.5);
  EXPECT_EQ(c.matched, 5);
  EXPECT_EQ(c.only_simulated, 1);
  EXPECT_EQ(c.only_live, 2);
  EXPECT_THAT(c.only_simulated_examples, testing::ElementsAre("rank 0: only in sim"));
  EXPECT_THAT(c.only_live_examples, testing::UnorderedElementsAre("rank 0: only live", "rank 0: a"));
  EXPECT_FALSE(c.recv.has_value());
  EXPECT_EQ(c.step_error, (18.0 - 13.0) / 18.0);
  const std::string text = to_text(c);
  EXPECT_THAT(text, HasSubstr("only simulated        1 (rank 0: only in sim)"));
  EXPECT_THAT(text, HasSubstr("rank 0: c"));
  EXPECT_THAT(text, HasSubstr("-100.0%"));
}

TEST(TraceComparison, ZeroLiveDurationsHaveNoRelativeError) {
  const RecordedStep sim = step_of(1, {{0, TaskKind::F, "a", 0, 1}, {0, TaskKind::F, "b", 1, 0}, {0, TaskKind::F, "c", 1, 2}}, "s");
  const RecordedStep live = step_of(1, {{0, TaskKind::F, "a", 0, 0}, {0, TaskKind::F, "b", 0, 0}, {0, TaskKind::F, "c", 0, 4}}, "l");
  const KindComparison f = compare_traces(sim, live).kinds.at(0);
  EXPECT_EQ(f.matched, 3);
  EXPECT_EQ(f.zero_live, 1);       // a: 1 simulated, 0 live
  EXPECT_EQ(f.median_error, 0.25);  // b: 0 (both 0); c: (4-2)/4
  EXPECT_EQ(f.worst_error, 0.5);
}

TEST(TraceComparison, RefusesTracesOfDifferentJobs) {
  const RecordedStep two = step_of(2, {{0, TaskKind::F, "a", 0, 1}, {1, TaskKind::F, "a", 0, 1}}, "two.json");
  const RecordedStep four = step_of(4, {{0, TaskKind::F, "a", 0, 1}}, "four.json");
  EXPECT_THAT(comparison_error(two, four),
              HasSubstr("four.json: has 4 ranks, but two.json has 2: they are not traces of the same job"));
  const RecordedStep other = step_of(2, {{0, TaskKind::F, "b", 0, 1}}, "other.json");
  EXPECT_THAT(comparison_error(two, other), HasSubstr("other.json: not one task matches a task of two.json"));
}

namespace {

// `simtrain compare` on trace files: a simulated one written by `simtrain
// simulate --trace`, a live one as `simtrain live --trace` writes it (here
// with the simulated times and no op times).
class CompareCli : public ::testing::Test {
protected:
  std::string path(const std::string& name) const { return (directory_.path() / name).string(); }

  std::string simulated(const std::string& name, const std::vector<std::string>& overrides = {}) const {
    std::vector<std::string> args = {"simulate", "tiny-4gpu", "--quiet", "--trace", path(name), "--force"};  // again: replaced
    for (const std::string& o : overrides) args.insert(args.end(), {"--set", o});
    const fixtures::CliResult r = fixtures::run_simtrain(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return path(name);
  }
  std::string live(const std::string& name, const std::vector<std::string>& overrides = {}) const {
    Simulation sim = simulate(load_scenario("tiny-4gpu", overrides));
    sim.timeline.live = LiveRecord{"host CPU (MPI backend)", Dtype::bf16, {}};
    std::ofstream out(path(name));
    write_chrome_trace(out, sim.program, sim.timeline, {"tiny-4gpu", overrides});
    return path(name);
  }
  // The trace with otherData less `key` (all of otherData where empty), as traces before it had.
  std::string without(const std::string& trace, const std::string& key) const {
    nlohmann::json document = fixtures::read_json(trace);
    if (key.empty())
      document.erase("otherData");
    else
      document["otherData"].erase(key);
    const std::string old = trace + ".old.json";
    std::ofstream(old) << document.dump();
    return old;
  }
  fixtures::CliResult compare(const std::string& sim, const std::string& live) const {
    return fixtures::run_simtrain({"compare", sim, live});
  }
  static std::string hash_of(const std::string& trace) { return read_chrome_trace_file(trace).program_hash; }

  fixtures::TemporaryDirectory directory_{"compare"};
};

void expect_refused(const fixtures::CliResult& r, const std::string& message) {
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "") << "no figure is printed for traces that cannot be compared";
  EXPECT_THAT(r.err, HasSubstr(message));
}

}  // namespace

TEST_F(CompareCli, RefusesTracesInTheWrongPlaces) {
  const std::string sim = simulated("sim.json"), live_trace = live("live.json");
  const fixtures::CliResult right = compare(sim, live_trace);
  EXPECT_EQ(right.code, 0) << right.err;
  expect_refused(compare(live_trace, sim),
                 "simtrain: " + live_trace + ": is a live trace (otherData.source = live); compare takes SIM LIVE\n");
  expect_refused(compare(sim, sim),
                 "simtrain: " + sim + ": is a simulated trace (otherData.source = simulation); compare takes SIM LIVE\n");
  expect_refused(compare(live_trace, live_trace), live_trace + ": is a live trace");
}

TEST_F(CompareCli, RefusesTracesOfDifferentProgramsAndSaysHowToSimulateTheLiveOne) {
  // What `simtrain live tiny-4gpu --layers 4` writes: its scaling as --set.
  const std::string live_trace = live("live.json", {"model.num_hidden_layers=4"});
  const std::string sim = simulated("sim.json");
  const fixtures::CliResult r = compare(sim, live_trace);
  expect_refused(r, live_trace + ": program hash " + hash_of(live_trace) + " differs from " + sim + "'s " +
                        hash_of(sim) + ": traces of different Programs (" + live_trace +
                        ": tiny-4gpu --set model.num_hidden_layers=4, TP 2 x PP 2 x DP 1, 8 micro-batches; " + sim + ": ");
  EXPECT_THAT(r.err, HasSubstr(". To simulate the Program the live run ran (its --layers and --micro-batches as --set): "
                               "simtrain simulate tiny-4gpu --set model.num_hidden_layers=4 --trace " + sim + "\n"));
  // As it says:
  const fixtures::CliResult same = compare(simulated("sim.json", {"model.num_hidden_layers=4"}), live_trace);
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_THAT(same.out, HasSubstr("tasks matched"));
}

TEST_F(CompareCli, TracesWrittenBeforeProgramHashesGetAClearMessage) {
  const std::string sim = simulated("sim.json"), live_trace = live("live.json");
  expect_refused(compare(without(sim, "program_hash"), live_trace),
                 "sim.json.old.json: otherData.program_hash: missing: the trace was written before simtrain recorded "
                 "which Program a trace is of, so whether both traces are of one Program cannot be checked; simulate "
                 "again with --trace");
  expect_refused(compare(sim, without(live_trace, "program_hash")),
                 "live.json.old.json: otherData.program_hash: missing: the trace was written before simtrain recorded "
                 "which Program a trace is of, so whether both traces are of one Program cannot be checked; run it "
                 "again with `simtrain live --trace`");
  expect_refused(compare(without(sim, ""), live_trace), "sim.json.old.json: otherData.program_hash: missing");
  expect_refused(compare(sim, without(sim, "")),
                 "sim.json.old.json: is not a live trace (no otherData.source; `simtrain live --trace` writes "
                 "\"live\"); compare takes SIM LIVE");
}

namespace {

// One rank running `samples` forward tasks of one Work: a gemm and a norm,
// each op's seconds given.
RecordedStep live_step(const std::vector<std::pair<double, double>>& samples) {
  RecordedStep step;
  step.source = "live.json";
  Program& p = step.program;
  p.world_size = 1;
  p.coords.resize(1);
  p.works.push_back({"s0 F", {{"qkv", OpClass::gemm, {2048, 3072, 1024}, 1.2e10, 1.8e7}, {"ln1", OpClass::memory_bound, {2097152}, 1e7, 8.4e6}}, 0});
  Timeline& timeline = step.timeline;
  timeline.live.emplace();
  timeline.live->device = "host CPU (MPI backend)";
  timeline.live->dtype = Dtype::fp16;
  double now = 0;
  for (const auto& [gemm, norm] : samples) {
    Task t;
    t.kind = TaskKind::F;
    t.stage = 0;
    t.microbatch = static_cast<int>(p.tasks.size());
    t.work = 0;
    p.add_task(t);
    p.recorded_names.push_back("s0 F mb" + std::to_string(t.microbatch));
    timeline.tasks.push_back({now, now + gemm + norm});
    timeline.live->op_seconds.push_back({gemm, norm});
    now += gemm + norm;
  }
  // A communication task: no ops.
  Task send;
  send.kind = TaskKind::SEND;
  p.add_task(send);
  p.recorded_names.push_back("send act");
  p.end_rank();
  timeline.tasks.push_back({now, now + 1e-3});
  timeline.live->op_seconds.emplace_back();
  timeline.step_seconds = now + 1e-3;
  return step;
}

std::vector<std::pair<double, double>> ten_samples() {
  std::vector<std::pair<double, double>> samples;
  for (int i = 10; i >= 1; --i) samples.push_back({i * 1e-3, i == 3 ? 0.0 : 1e-4 * i});  // one norm below resolution
  return samples;
}

void expect_calibrated(const ProfileDatabase& db) {
  EXPECT_EQ(db.device_name, "host CPU (MPI backend)");
  ASSERT_EQ(db.entries.size(), 2u);
  const ProfileEntry& gemm = db.entries[0];
  EXPECT_EQ(gemm.op.name, "qkv");
  EXPECT_EQ(gemm.op.op_class, OpClass::gemm);
  EXPECT_EQ(gemm.op.shape, (std::vector<int64_t>{2048, 3072, 1024}));
  EXPECT_EQ(gemm.op.flops, 1.2e10);
  EXPECT_EQ(gemm.op.bytes, 1.8e7);
  EXPECT_EQ(gemm.dtype, Dtype::fp16);
  EXPECT_EQ(gemm.kernel, "live run (host CPU (MPI backend))");
  EXPECT_EQ(gemm.repetitions, 10);
  // 1..10 ms, percentiles interpolated between the sorted samples.
  EXPECT_NEAR(gemm.median_seconds, 5.5e-3, 1e-15);
  EXPECT_NEAR(gemm.p10_seconds, 1.9e-3, 1e-15);
  EXPECT_NEAR(gemm.p90_seconds, 9.1e-3, 1e-15);
  const ProfileEntry& norm = db.entries[1];
  EXPECT_EQ(norm.op.name, "ln1");
  EXPECT_EQ(norm.repetitions, 9);  // the 0 s sample left out: 0.1, 0.2, 0.4 .. 1.0 ms
  EXPECT_NEAR(norm.median_seconds, 0.6e-3, 1e-15);
  EXPECT_NEAR(norm.p10_seconds, 0.1e-3 + 0.8 * 0.1e-3, 1e-15);
  EXPECT_NEAR(norm.p90_seconds, 0.9e-3 + 0.2 * 0.1e-3, 1e-15);
}

}  // namespace

TEST(Calibration, MediansAndPercentilesOfEveryTaskThatRanTheOp) {
  const RecordedStep step = live_step(ten_samples());
  const ProfileDatabase db = calibration_database(step);
  EXPECT_EQ(db.source, "live.json");
  expect_calibrated(db);
}

TEST(Calibration, ReadsTheLiveTraceAndRoundTripsThroughTheProfileFormat) {
  const RecordedStep step = live_step(ten_samples());
  const RecordedStep read = through_trace(step.program, step.timeline, "live.json");
  const ProfileDatabase db = calibration_database(read);
  expect_calibrated(db);

  const nlohmann::json document = calibration_document(db, "simtrain compare --calibrate live.json");
  EXPECT_EQ(document["format"], kProfileFormat);
  EXPECT_EQ(document["command"], "simtrain compare --calibrate live.json");
  EXPECT_EQ(document["method"]["trace"], "live.json");
  const ProfileDatabase back = parse_profile_database(nlohmann::json::parse(document.dump()), "calibrated.json");
  EXPECT_EQ(back.source, "calibrated.json");
  ASSERT_EQ(back.entries.size(), db.entries.size());
  for (size_t i = 0; i < db.entries.size(); ++i) EXPECT_EQ(to_json(back.entries[i]), to_json(db.entries[i]));
  expect_calibrated(back);
}

TEST(Calibration, RefusesASimulatedTraceAndOneWithoutOps) {
  const Simulation sim = simulate(load_scenario("tiny-4gpu"));
  const RecordedStep simulated = through_trace(sim.program, sim.timeline, "sim.json");
  try {
    calibration_database(simulated);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("sim.json: is a simulated trace: nothing was measured"));
  }
  RecordedStep bare = live_step({});
  try {
    calibration_database(bare);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("live.json: is a live trace without a single timed op"));
  }
}
