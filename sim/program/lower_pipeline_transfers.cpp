// Pipeline transfers: a forward receives activations from the stage before
// and sends its outputs to the stage after; a backward receives gradients
// from the stage after and sends its input gradients to the stage before.
#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

// A transfer of one micro-batch's stage boundary between this rank and `peer_stage`'s.
Task transfer(const LoweringContext& context, TaskKind kind, Stream stream, int rank, int stage, int peer_stage,
              int microbatch, bool backward) {
  Task t;
  t.stream = stream;
  t.kind = kind;
  t.stage = stage;
  t.microbatch = microbatch;
  t.dim = CommDim::pp;
  t.peer = context.rank_of_stage(rank, peer_stage);
  t.bytes = context.workload.stage_boundary_bytes;
  t.backward = backward;
  return t;
}

// Megatron blocks the compute stream on pipeline sends unless
// --overlap-p2p-communication is set.
Task send(const LoweringContext& context, int rank, int stage, int to_stage, int microbatch, bool backward) {
  const Stream stream = context.scenario.parallel.overlap_p2p_communication ? Stream::p2p : Stream::compute;
  return transfer(context, TaskKind::SEND, stream, rank, stage, to_stage, microbatch, backward);
}

// A receive is pre-posted and passive: it spans its send's transfer, on the p2p stream.
Task receive(const LoweringContext& context, int rank, int stage, int from_stage, int microbatch, bool backward) {
  return transfer(context, TaskKind::RECV, Stream::p2p, rank, stage, from_stage, microbatch, backward);
}

bool is_stage(const LoweringContext& context, int stage) { return stage >= 0 && stage < context.stages; }

}  // namespace

void lower_pipeline_transfers(const LoweringContext& context, RankTasks& rank) {
  ListEdit edit(rank);
  const std::vector<ActionSpan> spans = action_spans(rank);
  for (int i = 0; i < static_cast<int>(spans.size()); ++i) {
    const PipelineAction& action = rank.actions[i];
    if (action.kind == TaskKind::W) continue;
    const bool backward = action.kind == TaskKind::B;
    // The pass reads the boundary (a backward's recomputation comes before it) ...
    size_t reader = spans[i].first_compute;
    while (rank.tasks[reader].task.kind != action.kind) ++reader;
    const int stage = rank.tasks[reader].task.stage, mb = action.microbatch;
    const int from_stage = backward ? stage + 1 : stage - 1, to_stage = backward ? stage - 1 : stage + 1;
    if (is_stage(context, from_stage)) {
      LoweredTask recv = rank.make(receive(context, rank.rank, stage, from_stage, mb, backward), {}, i);
      recv.transfer = context.transfer_key(rank.rank, stage, mb, backward);
      rank.tasks[reader].deps.push_back(recv.label);
      edit.insert_before(reader, std::move(recv));
    }
    // ... and its last task writes it.
    if (is_stage(context, to_stage)) {
      const size_t ready = ready_index(rank, spans[i].last_compute);
      const int after = rank.tasks[ready].label;
      LoweredTask sent = rank.make(send(context, rank.rank, stage, to_stage, mb, backward), {after}, i);
      sent.transfer = context.transfer_key(sent.task.peer, to_stage, mb, backward);
      edit.insert_after(ready, std::move(sent));
    }
  }
  edit.apply();
}

}  // namespace simtrain
