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
  int chunk = 0;       // model chunk on this rank; its model stage: PipelineStages::of
  int microbatch = 0;
  // DualPipe's overlapped forward-backward pair: this F and the B right
  // after it (or this B and the F right before it) run as one, each one's
  // all-to-alls beside the other's compute.
  bool overlapped = false;
  bool operator==(const PipelineAction&) const = default;
};

// Short form used in tests and traces: "F3", "B0c1", "W2"; a pair's two
// halves end in "&" (F3&, B0c1&).
std::string to_string(const PipelineAction& action);

// Where a schedule's chunks sit. Every schedule but dualpipe cuts the model
// into p * v stages and runs stage `chunk * p + rank` on each rank's chunk
// (dualpipe_v: stage `rank` and stage `2p - 1 - rank`, a V). dualpipe keeps
// two copies of a model cut into p stages, one per direction: rank r runs
// copy 0's stage r (chunk 0, micro-batches entering at rank 0) and copy 1's
// stage p - 1 - r (chunk 1, entering at rank p - 1); model stage `c * p + k`
// is copy c's stage k, whose layers are those of stage k.
struct PipelineStages {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int p = 1;  // pipeline ranks
  int v = 1;  // the scenario's chunks per rank (virtual stages)

  int count() const;            // model stages
  int chunks_per_rank() const;  // 2 for dualpipe, else v
  int of(int chunk, int rank) const;
  int rank_of(int stage) const;
  int before(int stage) const;  // the stage feeding it in the forward, -1 for a first stage
  int after(int stage) const;   // the stage it feeds, -1 for a last stage
  int layers_of(int stage) const;  // the stage of the model's partition whose layers it runs
};

// Ordered actions per pipeline rank (outer index: rank 0..p-1) for p stages,
// m micro-batches and v chunks per rank. B stands for the whole backward
// except where splits_backward(kind) (zb_h1, dualpipe, dualpipe_v): there B
// computes input grads and W weight grads (a whole backward is a B with its
// W right after). dualpipe numbers the micro-batches entering at rank 0
// 0..m/2-1 and those entering at rank p-1 m/2..m-1.
// Preconditions (checked by the scenario): v == 1 unless interleaved_1f1b
// or dualpipe_v; for interleaved_1f1b, m % p == 0; for dualpipe_v, v == 2
// and m >= 2p; for dualpipe, p and m even and m >= 2p.
std::vector<std::vector<PipelineAction>> pipeline_schedule(ScheduleKind kind, int p, int m, int v);

// The forwards pipeline rank `rank` runs before its first backward (Megatron's
// num_warmup_microbatches; each chunk's forward counts when interleaved).
int warmup_forwards(ScheduleKind kind, int p, int m, int v, int rank);

// The scenario's stages: its schedule, pipeline size and chunks per rank.
PipelineStages pipeline_stages(const Scenario& scenario);

// The scenario's schedule: its kind, pipeline size, micro-batches and chunks per rank.
std::vector<std::vector<PipelineAction>> pipeline_schedule(const Scenario& scenario);

}  // namespace simtrain
