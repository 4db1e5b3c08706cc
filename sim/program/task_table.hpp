#pragma once
// Every task of a Program by id, with its dependencies and each rank's list.
// A rank's list is stored, or read from another rank's, translated on
// reading: ranks of one pipeline coordinate lower to the same list but for
// the ranks and groups it names (sim/program/rank_translation.hpp), so a
// built Program stores the first rank of each pipeline coordinate only (64
// lists for a 3,072-GPU job of 64 stages, not 3,072).
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <span>
#include <vector>

#include "sim/program/task.hpp"

namespace simtrain {

// One rank's task ids in issue order: the positions [begin, end) of the
// table's issue order, which are the ids themselves when the table is
// numbered rank by rank (`listed` null), as build_program numbers it.
class RankTaskIds {
public:
  class iterator {
  public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = int;

    iterator() = default;
    iterator(const int32_t* listed, int32_t position) : listed_(listed), position_(position) {}
    int operator*() const { return listed_ ? listed_[position_] : position_; }
    int operator[](difference_type n) const { return *(*this + n); }
    iterator& operator+=(difference_type n) { position_ += static_cast<int32_t>(n); return *this; }
    iterator& operator-=(difference_type n) { return *this += -n; }
    iterator& operator++() { return *this += 1; }
    iterator& operator--() { return *this -= 1; }
    iterator operator++(int) { iterator before = *this; ++*this; return before; }
    iterator operator--(int) { iterator before = *this; --*this; return before; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(iterator a, iterator b) { return a.position_ - b.position_; }
    friend bool operator==(iterator a, iterator b) { return a.position_ == b.position_; }
    friend std::strong_ordering operator<=>(iterator a, iterator b) { return a.position_ <=> b.position_; }

  private:
    const int32_t* listed_ = nullptr;
    int32_t position_ = 0;
  };
  using value_type = int;
  using const_iterator = iterator;

  RankTaskIds(const int32_t* listed, int32_t begin, int32_t end) : listed_(listed), begin_(begin), end_(end) {}
  iterator begin() const { return {listed_, begin_}; }
  iterator end() const { return {listed_, end_}; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  bool empty() const { return begin_ == end_; }
  int operator[](size_t i) const { return begin()[static_cast<std::ptrdiff_t>(i)]; }
  int front() const { return *begin(); }
  int back() const { return *(end() - 1); }

private:
  const int32_t* listed_;
  int32_t begin_, end_;
};

class TaskTable;

// A stored dependency id as the reading rank's task depends on it: the task
// at the same place of the list of the rank as far from its own stored rank
// as the reading rank is from its source.
struct DependencyTranslation {
  const TaskTable* table = nullptr;
  int32_t rank_offset = 0;  // reading rank minus the rank whose list it reads
  int32_t source_rank = 0;  // the rank whose list it reads
  int32_t operator()(int32_t stored_dep) const;
};

// A task's dependencies: the ids of the tasks that must finish first.
using TaskDeps = std::ranges::transform_view<std::span<const int32_t>, DependencyTranslation>;

class TaskTable {
public:
  // Every task, in id order, by value (a translated rank's are made on reading).
  class iterator {
  public:
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = Task;
    using difference_type = std::ptrdiff_t;
    using reference = Task;

    iterator() = default;
    iterator(const TaskTable* table, int32_t id, int32_t rank) : table_(table), id_(id), rank_(rank) {}
    Task operator*() const { return table_->task_on_rank(id_, rank_); }
    iterator& operator++() {
      ++id_;
      while (!table_->every_list_stored() && id_ >= table_->rank_begin_[rank_ + 1] && id_ < table_->task_count_) ++rank_;
      return *this;
    }
    iterator operator++(int) { iterator before = *this; ++*this; return before; }
    friend bool operator==(iterator a, iterator b) { return a.id_ == b.id_; }

  private:
    const TaskTable* table_ = nullptr;
    int32_t id_ = 0;
    int32_t rank_ = 0;  // id's, where some list is translated (ids are then numbered rank by rank)
  };

  size_t size() const { return static_cast<size_t>(task_count_); }
  bool empty() const { return task_count_ == 0; }
  Task operator[](int id) const;
  // Throws std::out_of_range for an id the table has no task for.
  Task at(int id) const;
  iterator begin() const;
  iterator end() const { return {this, task_count_, 0}; }

  TaskDeps deps(int id) const;
  // A rank's task ids in issue order; throws std::out_of_range for a rank the table has no list for.
  RankTaskIds rank_tasks(int rank) const;
  int rank_lists() const { return static_cast<int>(rank_begin_.size()) - 1; }
  // The rank whose stored list `rank` reads (itself where its list is stored).
  int source_rank(int rank) const { return every_list_stored() ? rank : source_rank_[rank]; }
  // The rank whose list holds task `id`, without reading (translating) the task.
  int rank_of(int id) const;
  // Task `id`'s place in its rank's list: rank_tasks(rank_of(id))[position_in_rank(id)] == id.
  int position_in_rank(int id) const;
  // Whether each rank's list holds consecutive ids, rank after rank (as build_program numbers them).
  bool numbered_rank_by_rank() const { return issue_order_.empty(); }

  // Building a table (the numbering pass, the trace reader, tests):
  // `task` becomes the next id, waiting for `deps`; returns its id.
  int add(Task task, std::span<const int32_t> deps = {});
  // The tasks added since the last rank's list make the next rank's, in id order.
  void end_rank();
  // The groups translated ranks' tasks are in: `groups_of_rank[r * kinds + k]`
  // is rank r's group of kind k (-1: none). A task of the source rank in its
  // group of a kind is, translated, in the reading rank's group of that kind.
  void set_groups_of_rank(std::vector<int32_t> groups_of_rank, int kinds);
  // The next rank's list is `source`'s (a stored one), translated: its peers
  // and its dependencies on other ranks are as far from it as `source`'s are
  // from `source`, for ranks are numbered alike at every pipeline coordinate
  // (RankLayout); its groups as set_groups_of_rank says.
  void add_translated_rank(int source);
  // Every rank's task ids in issue order, in any order of ids (storing every list first).
  void set_rank_tasks(const std::vector<std::vector<int>>& ids_of_rank);
  // The i-th dependency stored, for a building pass to fill in later (a RECV's SEND).
  int32_t& stored_dep(size_t i) { return dep_ids_[i]; }
  // A task to change in place (storing every list first: a change to one rank's task is its own).
  Task& stored(int id);
  // Stores every translated rank's list as it reads.
  void store_every_list();
  void reserve(size_t tasks, size_t deps);

  // What the table holds: tasks and dependencies stored, and bytes (as reserved).
  size_t stored_tasks() const { return stored_.size(); }
  size_t stored_deps() const { return dep_ids_.size(); }
  size_t bytes() const;
  size_t dependency_bytes() const;

private:
  friend struct DependencyTranslation;
  int32_t stored_index(int id, int rank) const;
  Task task_on_rank(int id, int rank) const;
  Task translated(Task task, int rank) const;
  void index_ranks_from(int rank);

  bool every_list_stored() const { return translated_ranks_ == 0; }

  int32_t task_count_ = 0;
  std::vector<Task> stored_;              // the stored lists' tasks, rank after rank
  std::vector<int32_t> dep_begin_ = {0};  // stored task i's dependencies: dep_ids_[dep_begin_[i], dep_begin_[i + 1])
  std::vector<int32_t> dep_ids_;
  // Rank r's tasks: the positions [rank_begin_[r], rank_begin_[r + 1]) of the
  // issue order, which is `issue_order_`, or the ids themselves when it is empty.
  std::vector<int32_t> rank_begin_ = {0};
  std::vector<int32_t> issue_order_;
  std::vector<int32_t> issue_position_;  // by id, where issue_order_ is set: its place there
  // By block of kIdsPerBlock ids: the rank whose list holds the block's first
  // id (lists numbered rank by rank), so that rank_of searches the few ranks
  // between one block's and the next's instead of every rank.
  static constexpr int kIdsPerBlock = 256;
  std::vector<int32_t> rank_of_block_;
  // Rank r's stored tasks: stored_[stored_begin_[r], stored_begin_[r + 1]),
  // none where it reads source_rank_[r]'s list.
  std::vector<int32_t> stored_begin_ = {0};
  std::vector<int32_t> source_rank_;
  int translated_ranks_ = 0;  // while none, a task's id is its place in stored_
  std::vector<int32_t> groups_of_rank_;
  int group_kinds_ = 0;
  std::vector<int32_t> kind_of_group_;  // by group id: the kind whose column of groups_of_rank_ holds it
};

}  // namespace simtrain
