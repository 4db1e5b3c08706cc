#include "sim/program/trace.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sim/program/host_track.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

static_assert(kHostThread > static_cast<int>(Stream::tp_overlap), "the host track's thread id follows the streams'");
static_assert(Dtype{} == Dtype::bf16, "LiveRecord::dtype (sim/program/timeline.hpp) defaults to the first Dtype, bf16");

namespace {

// Task names are ours (letters, digits, spaces, '->'), but escape anyway.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// The shortest text that reads back as the same double (live measurements
// round-trip exactly).
std::string number(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : "0";
}

// ,"ops":[{"op":"qkv","class":"gemm","shape":[...],"flops":...,"bytes":...,"seconds":...},...]
std::string ops_field(const Program& program, const std::vector<double>& seconds, const Task& task) {
  const Work& work = program.works[task.work];
  if (seconds.size() != work.ops.size())
    throw std::logic_error("live record of task " + std::to_string(task.id) + " ('" + task_name(program, task) + "') has " +
                           std::to_string(seconds.size()) + " op times for the " + std::to_string(work.ops.size()) +
                           " ops of its work");
  std::string field = ",\"ops\":[";
  for (size_t i = 0; i < work.ops.size(); ++i) {
    const Op& op = work.ops[i];
    if (i) field += ',';
    field += "{\"op\":\"" + escaped(op.name) + "\",\"class\":\"" + to_string(op.op_class) + "\",\"shape\":[";
    for (size_t d = 0; d < op.shape.size(); ++d) {
      if (d) field += ',';
      field += std::to_string(op.shape[d]);
    }
    field += "],\"flops\":" + number(op.flops) + ",\"bytes\":" + number(op.bytes) +
             ",\"seconds\":" + number(seconds[i]) + "}";
  }
  return field + "]";
}

// 64-bit FNV-1a over values in a fixed byte order (integers as 8 bytes, least
// significant first; doubles by their bits; texts and lists after their length).
class ProgramHasher {
public:
  void integer(int64_t value) {
    for (int byte = 0; byte < 8; ++byte) mix(static_cast<unsigned char>(static_cast<uint64_t>(value) >> (8 * byte)));
  }
  void real(double value) { integer(static_cast<int64_t>(std::bit_cast<uint64_t>(value))); }
  void text(const std::string& value) {
    integer(static_cast<int64_t>(value.size()));
    for (char c : value) mix(static_cast<unsigned char>(c));
  }
  template <class Integers>
  void integers(const Integers& values) {
    integer(static_cast<int64_t>(values.size()));
    for (auto v : values) integer(v);
  }
  std::string hex() const {
    char digits[17];
    std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(state_));
    return digits;
  }

private:
  void mix(unsigned char byte) {
    state_ ^= byte;
    state_ *= 0x100000001b3ull;
  }
  uint64_t state_ = 0xcbf29ce484222325ull;
};

// Every field of the Program's structs (sim/program/program.hpp, sim/model/workload.hpp's
// Op): a field added there must be added here, or Programs that differ in it
// would compare.
void hash_work(ProgramHasher& h, const Work& work) {
  h.text(work.name);
  h.integer(static_cast<int64_t>(work.ops.size()));
  for (const Op& op : work.ops) {
    h.text(op.name);
    h.integer(static_cast<int>(op.op_class));
    h.integers(op.shape);
    h.real(op.flops);
    h.real(op.bytes);
  }
  h.real(work.fixed_seconds);
}

void hash_group(ProgramHasher& h, const Group& group) {
  h.integer(group.id);
  h.integer(static_cast<int>(group.dim));
  h.text(group.name);
  h.integers(group.ranks);
  h.text(group.allreduce_algorithm ? to_string(*group.allreduce_algorithm) : "");
  h.integer(group.servers);
}

// The name stands for the fields that only name a task (part_of_stage, backward).
void hash_task(ProgramHasher& h, const Program& program, const Task& t) {
  for (int value : {t.id, t.rank, static_cast<int>(t.stream), static_cast<int>(t.kind), t.stage, t.microbatch,
                    t.layer_begin, t.layer_end, t.work, static_cast<int>(t.dim), t.peer, t.group, t.count})
    h.integer(value);
  if (t.joins_batch) h.integer(-1);  // only where set: a Program without batches hashes as before them
  h.real(t.bytes);
  h.integers(program.deps(t));
  h.text(task_name(program, t));
}

// By representative rank, the ranks it stands for (itself too) in rank order, from
// Timeline::representative_of_rank; empty where every rank ran its own.
std::vector<std::vector<int>> stood_for(const Program& program, const Timeline& timeline) {
  std::vector<std::vector<int>> members;
  if (timeline.representative_of_rank.empty()) return members;
  members.resize(program.world_size);
  for (int rank = 0; rank < program.world_size; ++rank) members[timeline.representative_of_rank[rank]].push_back(rank);
  return members;
}

// "rank 17 (tp 1, pp 0, dp 2)", as the trace reader reads it back, and after
// it, for a representative of others, " stands for 64 ranks: 17, 25, 33, ...".
std::string process_name(int rank, const RankCoord& c, const std::vector<int>& stands_for) {
  char name[128];
  std::snprintf(name, sizeof name, "rank %d (tp %d, pp %d, dp %d)", rank, c.tp, c.pp, c.dp);
  std::string text = name;
  if (stands_for.size() < 2) return text;
  constexpr size_t listed = 3;  // classes of 100,000 ranks: a few, then the count says the rest
  text += " stands for " + std::to_string(stands_for.size()) + " ranks: ";
  for (size_t i = 0; i < std::min(listed, stands_for.size()); ++i) text += (i ? ", " : "") + std::to_string(stands_for[i]);
  return text + (stands_for.size() > listed ? ", ..." : "");
}

// The rank whose simulated tasks give `rank` its times.
int timed_by(int rank, const Program& program, const Timeline& timeline) {
  if (timeline.representative_of_rank.empty()) return rank;
  const int representative = timeline.representative_of_rank[rank];
  if (program.rank_tasks(representative).size() != program.rank_tasks(rank).size())
    throw std::logic_error("rank " + std::to_string(rank) + " has " + std::to_string(program.rank_tasks(rank).size()) +
                           " tasks, its representative, rank " + std::to_string(representative) + ", has " +
                           std::to_string(program.rank_tasks(representative).size()));
  return representative;
}

// What `compare` checks and names: where the trace comes from and of what.
nlohmann::ordered_json other_data(const Program& program, const LiveRecord* live, const TraceOrigin& origin,
                                  const std::vector<int>& shown_ranks) {
  nlohmann::ordered_json data = {{"source", live ? "live" : "simulation"}};
  if (!origin.scenario.empty()) data["scenario"] = origin.scenario;
  if (!origin.overrides.empty()) data["overrides"] = origin.overrides;
  const int per_data_rank = program.tensor_size * program.pipeline_size;
  data["layout"] = {{"tp", program.tensor_size},
                    {"pp", program.pipeline_size},
                    {"dp", per_data_rank > 0 ? program.world_size / per_data_rank : 0},
                    {"virtual_stages", program.virtual_stages},
                    {"micro_batches", program.micro_batches}};
  data["program_hash"] = program_hash(program);
  if (live) data["device"] = live->device, data["dtype"] = to_string(live->dtype);
  if (shown_ranks.size() < static_cast<size_t>(program.world_size)) data["shown_ranks"] = shown_ranks;
  return data;
}

// Rank `rank`'s host track (sim/program/host_track.hpp): a thread, and a
// slice for each task its host launched.
std::vector<std::string> host_events(const Program& program, const Timeline& timeline, int rank) {
  if (timeline.host_of_rank.empty()) return {};
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"tid":%d,"name":"thread_name","args":{"name":"host"}})j",
                rank, kHostThread);
  std::vector<std::string> events = {buffer};
  for (const HostSlice& slice : host_track(program, timeline, rank)) {
    const Task& t = program.tasks[slice.task];
    std::snprintf(buffer, sizeof buffer,
                  R"j({"ph":"X","pid":%d,"tid":%d,"name":"launch %s","cat":"host","ts":%.3f,"dur":%.3f,"args":{"id":%d}})j",
                  rank, kHostThread, escaped(task_name(program, t)).c_str(), slice.start_seconds * 1e6,
                  (slice.end_seconds - slice.start_seconds) * 1e6, t.id);
    events.push_back(buffer);
  }
  return events;
}

}  // namespace

std::string program_hash(const Program& program) {
  ProgramHasher h;
  for (int value : {program.world_size, program.tensor_size, program.pipeline_size, program.virtual_stages,
                    program.micro_batches, program.servers})
    h.integer(value);
  h.integer(static_cast<int64_t>(program.coords.size()));
  for (const RankCoord& c : program.coords) h.integer(c.tp), h.integer(c.dp), h.integer(c.pp);
  h.integer(static_cast<int64_t>(program.works.size()));
  for (const Work& work : program.works) hash_work(h, work);
  h.integer(static_cast<int64_t>(program.groups.size()));
  for (const Group& group : program.groups) hash_group(h, group);
  h.integer(static_cast<int64_t>(program.tasks.size()));
  for (const Task& task : program.tasks) hash_task(h, program, task);
  h.integer(program.rank_lists());
  for (int rank = 0; rank < program.rank_lists(); ++rank) h.integers(program.rank_tasks(rank));
  return h.hex();
}

void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline,
                        const TraceOrigin& origin, const TraceRanks& ranks) {
  const LiveRecord* live = timeline.live ? &*timeline.live : nullptr;
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buffer[512];
  bool first = true;
  auto emit = [&](const std::string& event) {
    out << (first ? "" : ",\n") << event;
    first = false;
  };
  const std::vector<int> shown_ranks = selected_ranks(ranks, program, timeline);
  const std::vector<std::vector<int>> members = stood_for(program, timeline);
  for (int rank : shown_ranks) {
    const std::string name = process_name(rank, program.coords[rank], members.empty() ? std::vector<int>{} : members[rank]);
    std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"name":"process_name","args":{"name":"%s"}})j", rank,
                  name.c_str());
    emit(buffer);
    std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"name":"process_sort_index","args":{"sort_index":%d}})j",
                  rank, rank);
    emit(buffer);
    for (Stream stream : {Stream::compute, Stream::p2p, Stream::dp, Stream::dp_gather, Stream::tp_overlap}) {
      std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"tid":%d,"name":"thread_name","args":{"name":"%s"}})j",
                    rank, static_cast<int>(stream), to_string(stream).c_str());
      emit(buffer);
    }
    for (const std::string& event : host_events(program, timeline, rank)) emit(event);
    const auto timed_ids = program.rank_tasks(timed_by(rank, program, timeline));
    const auto ids = program.rank_tasks(rank);
    for (size_t position = 0; position < timed_ids.size(); ++position) {
      const int id = ids[position];
      const Task& t = program.tasks[id];
      const TaskTiming& timing = timeline.tasks[timed_ids[position]];
      std::snprintf(buffer, sizeof buffer,
                    R"j({"ph":"X","pid":%d,"tid":%d,"name":"%s","cat":"%s","ts":%.3f,"dur":%.3f,"args":{"id":%d,"stage":%d,"microbatch":%d)j",
                    rank, static_cast<int>(t.stream), escaped(task_name(program, t)).c_str(), to_string(t.kind).c_str(),
                    timing.start * 1e6, (timing.end - timing.start) * 1e6, t.id, t.stage, t.microbatch);
      std::string event = buffer;
      if (t.layer_end > t.layer_begin) {
        std::snprintf(buffer, sizeof buffer, R"j(,"layers":[%d,%d])j", t.layer_begin, t.layer_end);
        event += buffer;
      }
      if (t.dim != CommDim::none) {
        std::snprintf(buffer, sizeof buffer, R"j(,"dim":"%s","bytes":%.0f,"count":%d)j", to_string(t.dim).c_str(),
                      t.bytes, t.count);
        event += buffer;
      }
      if (live && t.work >= 0 && static_cast<size_t>(id) < live->op_seconds.size() && !live->op_seconds[id].empty())
        event += ops_field(program, live->op_seconds[id], t);
      emit(event + "}}");
    }
  }
  // After the events: readers that look for "traceEvents" near the start (the GUI) still find it.
  out << "\n],\n\"otherData\":" << other_data(program, live, origin, shown_ranks).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
      << "}\n";
}

}  // namespace simtrain
