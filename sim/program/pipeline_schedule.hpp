#pragma once
// Pipeline schedules as generators of per-stage action lists, in the manner of
// PyTorch's torch/distributed/pipelining/schedules.py: for each pipeline rank,
// the ordered compute actions it runs in one step.
#include <string>
#include <vector>

#include "sim/model/task_kind.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct PipelineAction {
  TaskKind kind = TaskKind::F;  // F, B or W (sim/model/task_kind.hpp)
  int chunk = 0;       // model chunk on this rank (0..v-1); model stage = chunk * p + rank
  int microbatch = 0;
  bool operator==(const PipelineAction&) const = default;
};

// Short form used in tests and traces: "F3", "B0c1", "W2".
std::string to_string(const PipelineAction& action);

// Ordered actions per pipeline rank (outer index: rank 0..p-1) for p stages,
// m micro-batches and v chunks per rank. B stands for the whole backward
// except in zb_h1, which emits B (input grads) and W (weight grads) apart.
// Preconditions (checked by the scenario): v == 1 unless interleaved_1f1b;
// for interleaved_1f1b, m % p == 0.
std::vector<std::vector<PipelineAction>> pipeline_schedule(ScheduleKind kind, int p, int m, int v);

// The forwards pipeline rank `rank` runs before its first backward (Megatron's
// num_warmup_microbatches; each chunk's forward counts when interleaved).
int warmup_forwards(ScheduleKind kind, int p, int m, int v, int rank);

// The scenario's schedule: its kind, pipeline size, micro-batches and chunks per rank.
std::vector<std::vector<PipelineAction>> pipeline_schedule(const Scenario& scenario);

}  // namespace simtrain
