#include "sim/program/trace_reader.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "sim/base/enum_named.hpp"
#include "sim/base/gzip_stream.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

namespace {

constexpr int streams = static_cast<int>(Stream::tp_overlap) + 1;

// One element of a live trace's "ops": the Op and the seconds it took.
std::pair<Op, double> parse_op(const nlohmann::json& value, const std::string& source, const std::string& where) {
  JsonFields f(value, source, where);
  Op op;
  op.name = f.text("op").value_or("");
  if (op.name.empty()) f.fail("op", "missing");
  const std::string op_class = f.text("class").value_or("");
  const std::optional<OpClass> c = enum_named(op_class, OpClass::optimizer);
  if (!c) f.fail("class", op_class.empty() ? "missing" : "unknown op class '" + op_class + "'");
  op.op_class = *c;
  const nlohmann::json& shape = f.raw("shape");
  if (!shape.is_array() || shape.empty()) f.fail("shape", "expected a non-empty array of positive integers, got " + shape.dump());
  for (const nlohmann::json& dimension : shape) {
    if (!dimension.is_number_integer() || dimension.get<int64_t>() < 1)
      f.fail("shape", "expected a non-empty array of positive integers, got " + shape.dump());
    op.shape.push_back(dimension.get<int64_t>());
  }
  op.flops = f.required_number("flops");
  op.bytes = f.required_number("bytes");
  constexpr double any = std::numeric_limits<double>::lowest();  // the sign is checked below, with a clearer message
  const double seconds = f.required_number("seconds", any);
  if (seconds < 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds);
    f.fail("seconds", std::string("must not be negative, got ") + text);
  }
  f.reject_unknown();
  return {std::move(op), seconds};
}

// A Work's identity in a trace: its ops without their times.
std::string ops_key(const std::vector<Op>& ops) {
  std::string key;
  for (const Op& op : ops) {
    key += op.name + '\x1f' + to_string(op.op_class);
    for (int64_t d : op.shape) key += ' ' + std::to_string(d);
    char numbers[64];
    std::snprintf(numbers, sizeof numbers, " %.17g %.17g\x1e", op.flops, op.bytes);
    key += numbers;
  }
  return key;
}

bool is_program_hash(const std::string& text) {
  return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// An optional array of strings.
std::vector<std::string> texts(JsonFields& f, const std::string& key) {
  if (!f.has(key)) return {};
  const nlohmann::json& value = f.raw(key);
  std::vector<std::string> result;
  if (value.is_array())
    for (const nlohmann::json& item : value)
      if (item.is_string()) result.push_back(item.get<std::string>());
  if (!value.is_array() || result.size() != value.size())
    f.fail(key, "expected an array of strings, got " + value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return result;
}

class TraceBuilder {
public:
  explicit TraceBuilder(std::string source) : source_(std::move(source)) {}

  void add_event(const nlohmann::json& event, size_t index) {
    const std::string where = "traceEvents[" + std::to_string(index) + "].";
    JsonFields f(event, source_, where);
    const std::optional<std::string> phase = f.text("ph");
    if (!phase) f.fail("ph", "missing");
    if (*phase == "M" && f.text("name") == "process_name") add_rank_name(f, where);
    if (*phase != "X") return;  // metadata, instants and counters carry no task

    Recorded r{{}, {}, {}, index, {}, {}};
    Task& t = r.task;
    t.rank = static_cast<int>(f.required_integer("pid", 0));
    const int64_t tid = f.required_integer("tid", 0);
    if (tid == kHostThread) return add_host_slice(f, t.rank, where, index);  // no task of its own
    if (tid >= streams) f.fail("tid", "unknown stream " + std::to_string(tid));
    t.stream = static_cast<Stream>(tid);
    r.name = f.text("name").value_or("");
    const std::string category = f.text("cat").value_or("");
    const std::optional<TaskKind> kind = enum_named(category, TaskKind::ALLTOALL);
    if (!kind) f.fail("cat", "unknown task kind '" + category + "'");
    t.kind = *kind;
    const double start_us = f.required_number("ts");
    const double duration_us = f.required_number("dur");
    r.timing = {start_us * 1e-6, (start_us + duration_us) * 1e-6};

    JsonFields args(f.raw("args"), source_, where + "args.");
    t.id = static_cast<int>(args.required_integer("id", 0));
    t.stage = static_cast<int>(args.integer("stage", -1).value_or(-1));
    t.microbatch = static_cast<int>(args.integer("microbatch", -1).value_or(-1));
    t.dim = enum_named(args.choice("dim", {"none", "tp", "pp", "dp", "ep", "cp"}).value_or("none"), CommDim::cp).value();
    t.bytes = args.number("bytes").value_or(0);
    t.count = static_cast<int>(args.integer("count").value_or(1));
    if (args.has("ops")) {  // live traces: what each op of a compute task took
      if (!is_compute(t.kind)) args.fail("ops", "only compute tasks run ops, this is a " + category + " task");
      const nlohmann::json& ops = args.raw("ops");
      if (!ops.is_array()) args.fail("ops", "expected an array, got " + ops.dump());
      for (size_t i = 0; i < ops.size(); ++i) {
        auto [op, seconds] = parse_op(ops[i], source_, where + "args.ops[" + std::to_string(i) + "].");
        r.ops.push_back(std::move(op));
        r.op_seconds.push_back(seconds);
      }
    }
    recorded_.push_back(std::move(r));
  }

  // `document`: the top level less its events, with "otherData".
  RecordedStep finish(const nlohmann::json& document) {
    refuse_some_ranks(document);
    if (recorded_.empty()) throw InputError(source_, "traceEvents", "no task events (\"ph\": \"X\"): not a simtrain trace");
    RecordedStep step;
    step.source = source_;
    Program& p = step.program;
    const size_t n = recorded_.size();
    std::vector<Task> tasks(n);
    p.recorded_names.resize(n);
    step.timeline.tasks.resize(n);
    std::vector<bool> seen(n, false);
    // Live traces count from an arbitrary epoch; a simulated one from the
    // step's start (its first task may start later: after its host's first launch).
    double first_start = recorded_.front().timing.start;
    for (const Recorded& r : recorded_) first_start = std::min(first_start, r.timing.start);
    for (const HostLaunch& launch : host_launches_) first_start = std::min(first_start, launch.start_seconds);
    if (is_simulated(document)) first_start = std::min(first_start, 0.0);
    for (Recorded& r : recorded_) {
      const int id = r.task.id;
      const std::string field = "traceEvents[" + std::to_string(r.index) + "].args.id";
      if (static_cast<size_t>(id) >= n)
        throw InputError(source_, field, "task ids must run from 0 to " + std::to_string(n - 1) +
                                             " (one per task event), got " + std::to_string(id));
      if (seen[id]) throw InputError(source_, field, "duplicate task id " + std::to_string(id));
      seen[id] = true;
      p.world_size = std::max(p.world_size, r.task.rank + 1);
      tasks[id] = r.task;
      p.recorded_names[id] = std::move(r.name);
      r.timing = {r.timing.start - first_start, r.timing.end - first_start};
      step.timeline.tasks[id] = r.timing;
      step.timeline.step_seconds = std::max(step.timeline.step_seconds, r.timing.end);
    }
    for (const Task& task : tasks) p.add_task(task);  // a trace records no dependencies
    for (const auto& [rank, coord] : coords_) p.world_size = std::max(p.world_size, rank + 1);

    p.coords.resize(p.world_size);
    std::vector<std::vector<int>> rank_tasks(p.world_size);
    for (int rank = 0; rank < p.world_size; ++rank) {
      auto it = coords_.find(rank);
      if (it == coords_.end())
        throw InputError(source_, "traceEvents",
                         "rank " + std::to_string(rank) + " has no process_name 'rank N (tp T, pp P, dp D)'");
      p.coords[rank] = it->second;
      p.tensor_size = std::max(p.tensor_size, it->second.tp + 1);
      p.pipeline_size = std::max(p.pipeline_size, it->second.pp + 1);
    }
    int stages = 1;
    for (const Recorded& r : recorded_) {  // in file order, which is each rank's issue order
      rank_tasks[r.task.rank].push_back(r.task.id);
      p.micro_batches = std::max(p.micro_batches, r.task.microbatch + 1);
      stages = std::max(stages, r.task.stage + 1);
    }
    p.set_rank_tasks(rank_tasks);
    p.virtual_stages = std::max(1, stages / p.pipeline_size);
    read_host_launches(step, first_start);
    read_other_data(document, step);
    read_ops(step);
    return step;
  }

private:
  struct Recorded {
    Task task;
    std::string name;
    TaskTiming timing;
    size_t index;  // in traceEvents, for messages
    std::vector<Op> ops;  // live traces: the task's ops and what each took
    std::vector<double> op_seconds;
  };

  // A slice of a rank's host track: when its host began launching the task
  // `args.id` and went on to the next (sim/program/host_track.hpp).
  struct HostLaunch {
    int rank;
    int task;
    double start_seconds, end_seconds;
    size_t index;  // in traceEvents, for messages
  };

  void add_host_slice(JsonFields& f, int rank, const std::string& where, size_t index) {
    const double start_us = f.required_number("ts");
    const double duration_us = f.required_number("dur");
    JsonFields args(f.raw("args"), source_, where + "args.");
    const int task = static_cast<int>(args.required_integer("id", 0));
    host_launches_.push_back({rank, task, start_us * 1e-6, (start_us + duration_us) * 1e-6, index});
  }

  // The host tracks as the Timeline holds simulated ones, each rank its own
  // host: by rank, when its host began launching each task of its list (-1:
  // none, a RECV posted with its SEND), then when it had launched the last.
  void read_host_launches(RecordedStep& step, double first_start) const {
    if (host_launches_.empty()) return;
    const Program& p = step.program;
    Timeline& timeline = step.timeline;
    std::vector<size_t> position(p.tasks.size());  // in its rank's list
    timeline.host_of_rank.resize(p.world_size);
    timeline.host_launch_seconds.resize(p.world_size);
    for (int rank = 0; rank < p.world_size; ++rank) {
      const RankTaskIds ids = p.rank_tasks(rank);
      for (size_t i = 0; i < ids.size(); ++i) position[ids[i]] = i;
      timeline.host_of_rank[rank] = rank;
      timeline.host_launch_seconds[rank].assign(ids.size() + 1, -1.0);
    }
    for (const HostLaunch& launch : host_launches_) {
      if (launch.rank >= p.world_size || launch.task < 0 || static_cast<size_t>(launch.task) >= p.tasks.size() ||
          p.tasks[launch.task].rank != launch.rank)
        throw InputError(source_, "traceEvents[" + std::to_string(launch.index) + "].args.id",
                         "the host of rank " + std::to_string(launch.rank) + " launches task " +
                             std::to_string(launch.task) + ", which is no task of that rank");
      std::vector<double>& launches = timeline.host_launch_seconds[launch.rank];
      launches[position[launch.task]] = launch.start_seconds - first_start;
      launches.back() = std::max(launches.back(), launch.end_seconds - first_start);
    }
  }

  // The trace's otherData object, or null.
  static const nlohmann::json* other_data_of(const nlohmann::json& document) {
    if (!document.is_object() || !document.contains("otherData") || !document["otherData"].is_object()) return nullptr;
    return &document["otherData"];
  }

  static bool is_simulated(const nlohmann::json& document) {
    const nlohmann::json* other = other_data_of(document);
    return other && other->contains("source") && (*other)["source"] == "simulation";
  }

  // A trace of some ranks only (--trace-ranks) lacks the tasks of the others,
  // which the report's splits, `compare` and the GUI's rows all need.
  void refuse_some_ranks(const nlohmann::json& document) const {
    const nlohmann::json* other = other_data_of(document);
    if (!other || !other->contains("shown_ranks")) return;
    const nlohmann::json& shown = (*other)["shown_ranks"];
    throw InputError(source_, "otherData.shown_ranks",
                     "the trace shows " + (shown.is_array() ? std::to_string(shown.size()) + " ranks" : "some ranks") +
                         " of the job only (simtrain simulate --trace-ranks); reading a trace back needs every rank: "
                         "write it with --trace-ranks all");
  }

  // otherData (sim/program/trace.hpp): where the trace comes from, of what Program,
  // and for a live one what ran it.
  void read_other_data(const nlohmann::json& document, RecordedStep& step) {
    if (!document.is_object() || !document.contains("otherData")) return;
    JsonFields other(document["otherData"], source_, "otherData.");
    step.made_by = other.text("source").value_or("");
    step.program_hash = other.text("program_hash").value_or("");
    if (!step.program_hash.empty() && !is_program_hash(step.program_hash))
      other.fail("program_hash", "expected 16 lowercase hex digits, got '" + step.program_hash + "'");
    step.origin.scenario = other.text("scenario").value_or("");
    step.origin.overrides = texts(other, "overrides");
    if (step.made_by != "live") return;
    LiveRecord& live = step.timeline.live.emplace();
    const std::optional<std::string> device = other.text("device");
    if (!device) other.fail("device", "missing (a live trace names what ran it)");
    live.device = *device;
    const std::optional<std::string> dtype = other.choice("dtype", {"bf16", "fp16", "fp8"});
    if (!dtype) other.fail("dtype", "missing (a live trace names the dtype it ran in)");
    live.dtype = *enum_named(*dtype, Dtype::fp8);
    live.op_seconds.resize(step.program.tasks.size());
  }

  // A live trace's op times, as Works shared by the tasks that ran the same ops.
  void read_ops(RecordedStep& step) {
    std::optional<LiveRecord>& live = step.timeline.live;
    std::map<std::string, int> works;  // ops_key -> index in program.works
    for (Recorded& r : recorded_) {
      if (r.ops.empty()) continue;
      if (!live)
        throw InputError(source_, "traceEvents[" + std::to_string(r.index) + "].args.ops",
                         "op times in a trace whose otherData.source is not \"live\"");
      auto [it, inserted] = works.try_emplace(ops_key(r.ops), static_cast<int>(step.program.works.size()));
      if (inserted) {
        Work work;
        if (r.task.stage >= 0) {  // "s3 F", as task names begin
          work.name = 's';
          work.name += std::to_string(r.task.stage);
          work.name += ' ';
        }
        work.name += to_string(r.task.kind);
        work.ops = std::move(r.ops);
        step.program.works.push_back(std::move(work));
      }
      step.program.tasks.stored(r.task.id).work = it->second;
      live->op_seconds[r.task.id] = std::move(r.op_seconds);
    }
  }

  // "rank 17 (tp 1, pp 0, dp 2)", as write_chrome_trace names processes.
  void add_rank_name(JsonFields& f, const std::string& where) {
    const int pid = static_cast<int>(f.required_integer("pid", 0));
    JsonFields args(f.raw("args"), source_, where + "args.");
    const std::string name = args.text("name").value_or("");
    int rank = -1;
    RankCoord c;
    char end = 0;
    if (std::sscanf(name.c_str(), "rank %d (tp %d, pp %d, dp %d%c", &rank, &c.tp, &c.pp, &c.dp, &end) != 5 ||
        end != ')' || rank != pid || c.tp < 0 || c.pp < 0 || c.dp < 0)
      args.fail("name", "expected 'rank " + std::to_string(pid) + " (tp T, pp P, dp D)', got '" + name + "'");
    coords_[pid] = c;
  }

  std::string source_;
  std::vector<Recorded> recorded_;
  std::vector<HostLaunch> host_launches_;
  std::map<int, RankCoord> coords_;
};

}  // namespace

RecordedStep read_chrome_trace(std::istream& in, const std::string& source) {
  TraceBuilder builder(source);
  // Events are handled as each one ends and then dropped, so a 200 MB trace
  // never sits in memory as a JSON tree. Chrome accepts a bare array of
  // events as well as {"traceEvents": [...]}.
  using Event = nlohmann::json::parse_event_t;
  bool bare_array = false;
  std::string member;  // the top-level key being read
  size_t index = 0;
  auto on_parse = [&](int depth, Event event, nlohmann::json& parsed) {
    if (depth == 0 && event == Event::array_start) bare_array = true;
    if (depth == 1 && event == Event::key) member = parsed.get<std::string>();
    const bool in_events = bare_array ? depth == 1 : depth == 2 && member == "traceEvents";
    if (!in_events || (event != Event::object_end && event != Event::value)) return true;
    builder.add_event(parsed, index++);
    return false;
  };
  nlohmann::json rest;  // the document minus its events
  try {
    rest = nlohmann::json::parse(in, on_parse);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(source, "", json_error_reason(error));
  } catch (const nlohmann::json::out_of_range& error) {  // a number beyond a double's range (fuzz_trace)
    throw InputError(source, "", "malformed JSON: " + json_error_reason(error));
  }
  return builder.finish(rest);
}

RecordedStep read_chrome_trace_file(const std::string& path) {
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read");
  std::istringstream text(read_maybe_gzipped(in, path));
  return read_chrome_trace(text, path);
}

}  // namespace simtrain
