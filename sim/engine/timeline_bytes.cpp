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

}  // namespace

std::string timeline_to_bytes(const Timeline& timeline) {
  std::string out;
  append(out, timeline.step_seconds);
  append(out, timeline.flows);
  append(out, timeline.closed_form_collectives);
  append(out, timeline.simulated_tasks);
  append(out, timeline.tasks_stood_for);
  append(out, static_cast<uint64_t>(timeline.representative_of_rank.size()));
  out.append(reinterpret_cast<const char*>(timeline.representative_of_rank.data()),
             timeline.representative_of_rank.size() * sizeof(int));
  append(out, static_cast<uint64_t>(timeline.approximate_after_rounds));
  append(out, static_cast<uint64_t>(timeline.stopped));
  append_text(out, timeline.stop_reason);
  append(out, static_cast<uint64_t>(timeline.busiest_links.size()));
  for (const LinkLoad& load : timeline.busiest_links) {
    append_text(out, load.link);
    append(out, load.bytes);
    append(out, load.bytes_per_second);
  }
  out.append(reinterpret_cast<const char*>(timeline.tasks.data()), timeline.tasks.size() * sizeof(TaskTiming));
  return out;
}

Timeline timeline_from_bytes(const std::string& bytes, size_t task_count) {
  size_t offset = 0;
  Timeline timeline;
  timeline.step_seconds = take<double>(bytes, offset);
  timeline.flows = take<uint64_t>(bytes, offset);
  timeline.closed_form_collectives = take<uint64_t>(bytes, offset);
  timeline.simulated_tasks = take<uint64_t>(bytes, offset);
  timeline.tasks_stood_for = take<uint64_t>(bytes, offset);
  const uint64_t ranks = take<uint64_t>(bytes, offset);
  if (ranks > (bytes.size() - offset) / sizeof(int)) truncated();
  timeline.representative_of_rank.resize(ranks);
  for (int& rank : timeline.representative_of_rank) rank = take<int>(bytes, offset);
  timeline.approximate_after_rounds = static_cast<int>(take<uint64_t>(bytes, offset));
  timeline.stopped = take<uint64_t>(bytes, offset) != 0;
  timeline.stop_reason = take_text(bytes, offset);
  timeline.busiest_links.resize(take<uint64_t>(bytes, offset));
  for (LinkLoad& load : timeline.busiest_links) {
    load.link = take_text(bytes, offset);
    load.bytes = take<double>(bytes, offset);
    load.bytes_per_second = take<double>(bytes, offset);
  }
  timeline.tasks.resize(task_count);
  if (bytes.size() - offset != timeline.tasks.size() * sizeof(TaskTiming)) truncated();
  std::memcpy(timeline.tasks.data(), bytes.data() + offset, bytes.size() - offset);
  return timeline;
}

}  // namespace simtrain
