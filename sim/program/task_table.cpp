#include "sim/program/task_table.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace simtrain {

int32_t DependencyTranslation::operator()(int32_t stored_dep) const {
  if (rank_offset == 0) return stored_dep;
  const std::vector<int32_t>& begin = table->rank_begin_;
  const int on_rank = stored_dep >= begin[source_rank] && stored_dep < begin[source_rank + 1]
                          ? source_rank
                          : table->rank_of(stored_dep);
  return begin[on_rank + rank_offset] + (stored_dep - begin[on_rank]);
}

int TaskTable::rank_of(int id) const {
  if (every_list_stored()) return stored_[id].rank;
  // Between the ranks holding this block's first id and the next block's.
  const size_t block = static_cast<size_t>(id / kIdsPerBlock);
  const int32_t low = rank_of_block_[block];
  const int32_t high = block + 1 < rank_of_block_.size() ? rank_of_block_[block + 1] : rank_lists() - 1;
  return static_cast<int>(std::upper_bound(rank_begin_.begin() + low + 1, rank_begin_.begin() + high + 1, id) -
                          rank_begin_.begin()) -
         1;
}

int TaskTable::position_in_rank(int id) const {
  return (issue_order_.empty() ? id : issue_position_[id]) - rank_begin_[rank_of(id)];
}

// Indexes the blocks of ids that ranks from `rank` on begin, their lists ending at rank_begin_.
void TaskTable::index_ranks_from(int rank) {
  for (; rank < rank_lists(); ++rank)
    while (static_cast<int64_t>(rank_of_block_.size()) * kIdsPerBlock < rank_begin_[rank + 1])
      rank_of_block_.push_back(rank);
}

int32_t TaskTable::stored_index(int id, int rank) const {
  return stored_begin_[source_rank_[rank]] + (id - rank_begin_[rank]);
}

Task TaskTable::operator[](int id) const { return every_list_stored() ? stored_[id] : task_on_rank(id, rank_of(id)); }

TaskTable::iterator TaskTable::begin() const {
  int32_t rank = 0;  // the first rank with tasks
  while (!every_list_stored() && task_count_ > 0 && rank_begin_[rank + 1] == 0) ++rank;
  return {this, 0, rank};
}

Task TaskTable::task_on_rank(int id, int rank) const {
  if (every_list_stored()) return stored_[id];
  Task task = stored_[stored_index(id, rank)];
  if (task.rank == rank) return task;
  task.id = id;
  return translated(task, rank);
}

Task TaskTable::at(int id) const {
  if (id < 0 || id >= task_count_) throw std::out_of_range("no task " + std::to_string(id));
  return (*this)[id];
}

Task TaskTable::translated(Task task, int rank) const {
  const int source = task.rank;
  task.rank = rank;
  if (task.peer >= 0) task.peer += rank - source;
  if (task.group >= 0) {
    const int32_t kind = kind_of_group_.at(task.group);
    if (kind < 0 || groups_of_rank_[static_cast<size_t>(source) * group_kinds_ + kind] != task.group)
      throw std::logic_error("a stored task names a group its rank is not in");
    task.group = groups_of_rank_[static_cast<size_t>(rank) * group_kinds_ + kind];
  }
  return task;
}

TaskDeps TaskTable::deps(int id) const {
  if (every_list_stored())
    return TaskDeps({dep_ids_.data() + dep_begin_[id], dep_ids_.data() + dep_begin_[id + 1]}, {this, 0, 0});
  const int rank = rank_of(id), source = source_rank_[rank];
  const int32_t stored = stored_index(id, rank);
  return TaskDeps({dep_ids_.data() + dep_begin_[stored], dep_ids_.data() + dep_begin_[stored + 1]},
                  {this, rank - source, source});
}

RankTaskIds TaskTable::rank_tasks(int rank) const {
  const int32_t begin = rank_begin_.at(rank), end = rank_begin_.at(rank + 1);
  return {issue_order_.empty() ? nullptr : issue_order_.data(), begin, end};
}

int TaskTable::add(Task task, std::span<const int32_t> deps) {
  task.id = task_count_++;
  stored_.push_back(task);
  dep_ids_.insert(dep_ids_.end(), deps.begin(), deps.end());
  dep_begin_.push_back(static_cast<int32_t>(dep_ids_.size()));
  return task.id;
}

void TaskTable::end_rank() {
  source_rank_.push_back(rank_lists());
  rank_begin_.push_back(task_count_);
  stored_begin_.push_back(static_cast<int32_t>(stored_.size()));
  index_ranks_from(rank_lists() - 1);
}

void TaskTable::set_groups_of_rank(std::vector<int32_t> groups_of_rank, int kinds) {
  groups_of_rank_ = std::move(groups_of_rank);
  group_kinds_ = kinds;
  kind_of_group_.clear();
  for (size_t i = 0; i < groups_of_rank_.size(); ++i) {
    const int32_t group = groups_of_rank_[i];
    if (group < 0) continue;
    if (static_cast<size_t>(group) >= kind_of_group_.size()) kind_of_group_.resize(group + 1, -1);
    const int32_t kind = static_cast<int32_t>(i % kinds);
    if (kind_of_group_[group] >= 0 && kind_of_group_[group] != kind)
      throw std::logic_error("a group is of two kinds");  // translated() looks a group's kind up
    kind_of_group_[group] = kind;
  }
}

void TaskTable::add_translated_rank(int source) {
  if (source < 0 || source >= rank_lists() || source_rank_[source] != source || !issue_order_.empty())
    throw std::logic_error("a translated rank reads a stored list, numbered rank by rank");
  source_rank_.push_back(source);
  task_count_ += rank_begin_[source + 1] - rank_begin_[source];
  rank_begin_.push_back(task_count_);
  stored_begin_.push_back(static_cast<int32_t>(stored_.size()));
  index_ranks_from(rank_lists() - 1);
  ++translated_ranks_;
}

void TaskTable::set_rank_tasks(const std::vector<std::vector<int>>& ids_of_rank) {
  store_every_list();
  rank_begin_ = {0};
  issue_order_.clear();
  source_rank_.clear();
  for (const std::vector<int>& ids : ids_of_rank) {
    source_rank_.push_back(static_cast<int32_t>(source_rank_.size()));
    issue_order_.insert(issue_order_.end(), ids.begin(), ids.end());
    rank_begin_.push_back(static_cast<int32_t>(issue_order_.size()));
  }
  stored_begin_ = rank_begin_;
  bool ids_in_issue_order = true;
  for (size_t i = 0; i < issue_order_.size() && ids_in_issue_order; ++i)
    ids_in_issue_order = issue_order_[i] == static_cast<int32_t>(i);
  if (ids_in_issue_order) issue_order_.clear();
  issue_position_.assign(issue_order_.empty() ? 0 : size(), -1);
  for (size_t i = 0; i < issue_order_.size(); ++i) issue_position_[issue_order_[i]] = static_cast<int32_t>(i);
  rank_of_block_.clear();
  index_ranks_from(0);
}

Task& TaskTable::stored(int id) {
  store_every_list();
  return stored_[id];
}

void TaskTable::store_every_list() {
  if (every_list_stored()) return;
  std::vector<Task> tasks;
  std::vector<int32_t> dep_begin = {0}, dep_ids;
  tasks.reserve(size());
  dep_begin.reserve(size() + 1);
  for (int id = 0; id < task_count_; ++id) {
    tasks.push_back((*this)[id]);
    const TaskDeps deps = this->deps(id);
    dep_ids.insert(dep_ids.end(), deps.begin(), deps.end());
    dep_begin.push_back(static_cast<int32_t>(dep_ids.size()));
  }
  stored_ = std::move(tasks);
  dep_begin_ = std::move(dep_begin);
  dep_ids_ = std::move(dep_ids);
  stored_begin_ = rank_begin_;
  for (size_t rank = 0; rank < source_rank_.size(); ++rank) source_rank_[rank] = static_cast<int32_t>(rank);
  translated_ranks_ = 0;
}

void TaskTable::reserve(size_t tasks, size_t deps) {
  stored_.reserve(tasks);
  dep_begin_.reserve(tasks + 1);
  dep_ids_.reserve(deps);
}

namespace {
template <typename T>
size_t reserved_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}
}  // namespace

size_t TaskTable::dependency_bytes() const { return reserved_bytes(dep_begin_) + reserved_bytes(dep_ids_); }

size_t TaskTable::bytes() const {
  return reserved_bytes(stored_) + dependency_bytes() + reserved_bytes(rank_begin_) + reserved_bytes(issue_order_) +
         reserved_bytes(issue_position_) + reserved_bytes(rank_of_block_) + reserved_bytes(stored_begin_) +
         reserved_bytes(source_rank_) + reserved_bytes(groups_of_rank_);
}

}  // namespace simtrain
