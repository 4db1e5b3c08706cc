#pragma once
// When each task of a Program ran: what an executor (the SimGrid replay, or a
// live run) hands to the report and the trace.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simtrain {

enum class Dtype;  // sim/scenario/scenario.hpp; declared here to keep this header light

// The replay starts a collective when every rank of its group has arrived:
// a rank that comes first waits idle, not communicating.
struct TaskTiming {
  double start = -1;
  double end = -1;
  bool ran() const { return start >= 0 && end >= start; }  // has a start and an end after it
};

// Bytes one link carried during the step.
struct LinkLoad {
  std::string link;             // its fabric name
  double bytes = 0;
  double bytes_per_second = 0;  // its bandwidth (with any degradation)
};

// What a live run measured beyond each task's start and end.
struct LiveRecord {
  std::string device;  // what ran the step: CUDA's device name, or "host CPU (MPI backend)"
  Dtype dtype{};       // Dtype::bf16 (its first value, 0); the scenario's training.dtype
  std::vector<std::vector<double>> op_seconds;  // indexed by task id: each op of the task's Work, in order; empty for other tasks
};

struct Timeline {
  std::vector<TaskTiming> tasks;  // indexed by task id; every rank's tasks (start -1: never ran)
  double step_seconds = 0;        // when the last task ended, or when the job stopped
  bool stopped = false;           // a failure stopped the job before the step completed
  std::string stop_reason;
  uint64_t flows = 0;             // network transfers simulated (alike flows of a task go as one)
  uint64_t closed_form_collectives = 0;
  uint64_t simulated_tasks = 0;   // tasks executed by actors (TP groups count once)
  // Tasks the executed ones stand for: each counts once per TP rank and data-
  // parallel replica it stands for, a SEND twice (its RECV completes with it).
  // A step that completes accounts for every task of the Program once.
  uint64_t tasks_stood_for = 0;
  // By rank: the rank whose simulated tasks stand for it (a symmetry-reduced
  // replay runs one data-parallel replica per class of equivalent replicas,
  // see sim/engine/replica_classes.hpp); empty: every rank ran its own.
  std::vector<int> representative_of_rank;
  // 0 where the reduction's classes hold exactly equivalent replicas; else
  // the rounds of colour refinement after which it stopped, its classes
  // holding replicas alike that far (ReplayOptions::max_refinement_rounds).
  int approximate_after_rounds = 0;
  std::vector<LinkLoad> busiest_links;  // highest bytes / bandwidth first, at most 10
  // By rank: time its compute stream waited for the host to launch its
  // kernels; empty where the hosts were not simulated.
  std::vector<double> host_wait_seconds;
  // Where the hosts were simulated (else both empty): by rank, the rank
  // whose host's launches are its own (a TP group's ranks share one host in
  // the replay, and a replica stood for by another takes that one's); and by
  // such a host rank, when its host began launching each task of its list,
  // in the list's order (-1: a RECV, posted with its SEND), then when it had
  // launched the last (empty for other ranks). Read back from a trace, each
  // rank is its own host rank. sim/program/host_track.hpp: as slices.
  std::vector<int> host_of_rank;
  std::vector<std::vector<double>> host_launch_seconds;
  std::optional<LiveRecord> live;       // set by live runs only
};

}  // namespace simtrain
