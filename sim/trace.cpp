#include "trace.hpp"

#include <cstdio>

namespace simtrain {

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

}  // namespace

void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
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
      emit(event + "}}");
    }
  }
  out << "\n]}\n";
}

}  // namespace simtrain
