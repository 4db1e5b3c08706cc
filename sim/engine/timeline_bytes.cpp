#include "sim/engine/timeline_bytes.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace simtrain {

namespace {

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void append_text(std::string& out, const std::string& text) {
  append(out, static_cast<uint64_t>(text.size()));
  out.append(text);
}

[[noreturn]] void truncated() { throw std::runtime_error("simulation process returned a truncated result"); }

template <typename T>
T take(const std::string& in, size_t& offset) {
  if (offset + sizeof(T) > in.size()) truncated();
  T value;
  std::memcpy(&value, in.data() + offset, sizeof value);
  offset += sizeof value;
  return value;
}

std::string take_text(const std::string& in, size_t& offset) {
  const uint64_t size = take<uint64_t>(in, offset);
  if (offset + size > in.size()) truncated();
  offset += size;
  return in.substr(offset - size, size);
}

// A contiguous range of values (a vector, a span): its size, then its bytes.
template <typename Range>
void append_array(std::string& out, const Range& values) {
  append(out, static_cast<uint64_t>(values.size()));
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(*values.data()));
}

template <typename T>
std::vector<T> take_array(const std::string& in, size_t& offset) {
  const uint64_t size = take<uint64_t>(in, offset);
  if (size > (in.size() - offset) / sizeof(T)) truncated();
  std::vector<T> values(size);
  if (size > 0) std::memcpy(values.data(), in.data() + offset, size * sizeof(T));  // an empty vector's data() may be null
  offset += size * sizeof(T);
  return values;
}

bool is_pre_posted_receive(const Task& task) { return task.kind == TaskKind::RECV && !is_posted_in_order(task); }

}  // namespace

std::string timeline_to_bytes(const Timeline& figures, const std::vector<int>& timing_source,
                              std::span<const TaskTiming> source_timings, std::span<const double> source_launches,
                              std::span<const double> host_done_seconds) {
  std::string out;
  append(out, figures.step_seconds);
  append(out, figures.flows);
  append(out, figures.closed_form_collectives);
  append(out, figures.simulated_tasks);
  append(out, figures.tasks_stood_for);
  append_array(out, figures.representative_of_rank);
  append(out, static_cast<uint64_t>(figures.approximate_after_rounds));
  append(out, static_cast<uint64_t>(figures.stopped));
  append_text(out, figures.stop_reason);
  append(out, static_cast<uint64_t>(figures.busiest_links.size()));
  for (const LinkLoad& load : figures.busiest_links) {
    append_text(out, load.link);
    append(out, load.bytes);
    append(out, load.bytes_per_second);
  }
  append_array(out, figures.host_wait_seconds);
  append_array(out, timing_source);
  append_array(out, source_timings);
  append_array(out, source_launches);
  append_array(out, host_done_seconds);
  return out;
}

Timeline timeline_from_bytes(const std::string& bytes, const Program& program) {
  size_t offset = 0;
  Timeline timeline;
  timeline.step_seconds = take<double>(bytes, offset);
  timeline.flows = take<uint64_t>(bytes, offset);
  timeline.closed_form_collectives = take<uint64_t>(bytes, offset);
  timeline.simulated_tasks = take<uint64_t>(bytes, offset);
  timeline.tasks_stood_for = take<uint64_t>(bytes, offset);
  timeline.representative_of_rank = take_array<int>(bytes, offset);
  timeline.approximate_after_rounds = static_cast<int>(take<uint64_t>(bytes, offset));
  timeline.stopped = take<uint64_t>(bytes, offset) != 0;
  timeline.stop_reason = take_text(bytes, offset);
  timeline.busiest_links.resize(take<uint64_t>(bytes, offset));
  for (LinkLoad& load : timeline.busiest_links) {
    load.link = take_text(bytes, offset);
    load.bytes = take<double>(bytes, offset);
    load.bytes_per_second = take<double>(bytes, offset);
  }
  timeline.host_wait_seconds = take_array<double>(bytes, offset);
  const std::vector<int> timing_source = take_array<int>(bytes, offset);
  const std::vector<TaskTiming> source_timings = take_array<TaskTiming>(bytes, offset);
  const std::vector<double> source_launches = take_array<double>(bytes, offset);
  const std::vector<double> host_done_seconds = take_array<double>(bytes, offset);
  if (offset != bytes.size()) truncated();
  if (timing_source.size() != static_cast<size_t>(program.rank_lists()))
    throw std::runtime_error("simulation process returned the times of another Program's ranks");

  // Where each source's times begin in source_timings.
  std::vector<size_t> first_timing(timing_source.size(), 0);
  size_t sent = 0;
  for (int rank = 0; rank < static_cast<int>(timing_source.size()); ++rank) {
    const int source = timing_source[rank];
    if (source < 0 || source >= static_cast<int>(timing_source.size()) || timing_source[source] != source ||
        program.rank_tasks(source).size() != program.rank_tasks(rank).size())
      throw std::runtime_error("simulation process returned a timing source that did not run");
    if (source == rank) {
      first_timing[rank] = sent;
      sent += program.rank_tasks(rank).size();
    }
  }
  if (sent != source_timings.size()) truncated();
  if (!source_launches.empty()) {
    if (source_launches.size() != sent || host_done_seconds.size() != timing_source.size()) truncated();
    timeline.host_of_rank = timing_source;
    timeline.host_launch_seconds.resize(timing_source.size());
    for (int rank = 0; rank < static_cast<int>(timing_source.size()); ++rank) {
      if (timing_source[rank] != rank) continue;
      const auto first = source_launches.begin() + static_cast<std::ptrdiff_t>(first_timing[rank]);
      std::vector<double>& launches = timeline.host_launch_seconds[rank];
      launches.assign(first, first + static_cast<std::ptrdiff_t>(program.rank_tasks(rank).size()));
      launches.push_back(host_done_seconds[rank]);
    }
  }

  timeline.tasks.resize(program.tasks.size());
  for (int rank = 0; rank < static_cast<int>(timing_source.size()); ++rank) {
    const RankTaskIds mine = program.rank_tasks(rank);
    const size_t first = first_timing[timing_source[rank]];
    for (size_t i = 0; i < mine.size(); ++i) timeline.tasks[mine[i]] = source_timings[first + i];
  }
  // A pre-posted RECV spans the transfer of the SEND its source's RECV
  // receives: by source, each such RECV's position and that SEND, read once
  // for all the ranks taking the source's times.
  std::vector<std::vector<std::pair<size_t, int>>> pre_posted(timing_source.size());
  for (int rank = 0; rank < static_cast<int>(timing_source.size()); ++rank) {
    if (timing_source[rank] != rank) continue;
    const RankTaskIds source = program.rank_tasks(rank);
    for (size_t i = 0; i < source.size(); ++i)
      if (is_pre_posted_receive(program.tasks[source[i]]))
        pre_posted[rank].emplace_back(i, program.deps(source[i]).front());
  }
  for (int rank = 0; rank < static_cast<int>(timing_source.size()); ++rank) {
    const RankTaskIds mine = program.rank_tasks(rank);
    for (const auto& [position, send] : pre_posted[timing_source[rank]]) timeline.tasks[mine[position]] = timeline.tasks[send];
  }
  return timeline;
}

}  // namespace simtrain
