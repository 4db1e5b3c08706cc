#include "trace.hpp"

#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "scenario.hpp"

namespace simtrain {

static_assert(Dtype{} == Dtype::bf16, "LiveRecord::dtype (sim/timeline.hpp) defaults to the first Dtype, bf16");

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
std::string ops_field(const Work& work, const std::vector<double>& seconds, const Task& task) {
  if (seconds.size() != work.ops.size())
    throw std::logic_error("live record of task " + std::to_string(task.id) + " ('" + task.name + "') has " +
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

}  // namespace

void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline) {
  const LiveRecord* live = timeline.live ? &*timeline.live : nullptr;
  out << "{\"displayTimeUnit\":\"ms\",";
  if (live)  // what the reader and `compare` tell live traces by
    out << "\"otherData\":{\"source\":\"live\",\"device\":\"" << escaped(live->device) << "\",\"dtype\":\""
        << to_string(live->dtype) << "\"},\n";
  out << "\"traceEvents\":[\n";
  char buffer[512];
  bool first = true;
  auto emit = [&](const std::string& event) {
    out << (first ? "" : ",\n") << event;
    first = false;
  };
  for (int rank = 0; rank < program.world_size; ++rank) {
    const RankCoord& c = program.coords[rank];
    std::snprintf(buffer, sizeof buffer,
                  R"j({"ph":"M","pid":%d,"name":"process_name","args":{"name":"rank %d (tp %d, pp %d, dp %d)"}})j", rank,
                  rank, c.tp, c.pp, c.dp);
    emit(buffer);
    std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"name":"process_sort_index","args":{"sort_index":%d}})j",
                  rank, rank);
    emit(buffer);
    for (Stream stream : {Stream::compute, Stream::p2p, Stream::dp, Stream::dp_gather}) {
      std::snprintf(buffer, sizeof buffer, R"j({"ph":"M","pid":%d,"tid":%d,"name":"thread_name","args":{"name":"%s"}})j",
                    rank, static_cast<int>(stream), to_string(stream).c_str());
      emit(buffer);
    }
    for (int id : program.rank_tasks[rank]) {
      const Task& t = program.tasks[id];
      const TaskTiming& timing = timeline.tasks[id];
      std::snprintf(buffer, sizeof buffer,
                    R"j({"ph":"X","pid":%d,"tid":%d,"name":"%s","cat":"%s","ts":%.3f,"dur":%.3f,"args":{"id":%d,"stage":%d,"microbatch":%d)j",
                    rank, static_cast<int>(t.stream), escaped(t.name).c_str(), to_string(t.kind).c_str(),
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
        event += ops_field(program.works[t.work], live->op_seconds[id], t);
      emit(event + "}}");
    }
  }
  out << "\n]}\n";
}

}  // namespace simtrain
