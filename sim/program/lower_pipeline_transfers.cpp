// Pipeline transfers: a forward receives activations from the stage before
// and sends its outputs to the stage after; a backward receives gradients
// from the stage after and sends its input gradients to the stage before.
//
// Eager (p2p_communication "eager"; always with overlap_p2p_communication,
// and for zb_h1): a RECV sits on the p2p stream right before the pass that
// reads it, pre-posted and passive; a SEND right after the pass that writes
// it, on the compute stream (the p2p stream when overlapped). The Zero
// Bubble reference runtime (sail-sg/zero-bubble-pipeline-parallelism,
// zerobubble/runtime.py: add_communication, flush) issues consecutive
// transfers as one batch_isend_irecv without waiting for it: only the pass
// that consumes a receive waits for it, and no blocking pair is left to model.
//
// Paired (Megatron-LM's blocking p2p calls: megatron/core/pipeline_parallel/
// schedules.py over p2p_communication.py): SENDs and RECVs on the compute
// stream, in one batch per call, where the schedule makes its calls. The
// actions between two calls form a step:
//   1f1b: every forward and backward is a step. After a steady-state
//     forward, its send and the next backward's receive are one call
//     (send_forward_recv_backward); after a backward, its send and the next
//     forward's receive (send_backward_recv_forward); in warm-up and
//     cool-down each transfer is a call alone (send_forward, recv_forward,
//     recv_backward, send_backward).
//   gpipe (no Megatron schedule; a choice): every transfer alone, as
//     Megatron's 1F1B code runs a rank whose micro-batches all fit in its
//     warm-up, which is GPipe's order.
//   interleaved_1f1b: a step is a warm-up forward, a steady-state forward
//     and backward, or a cool-down backward; between two steps one call
//     holds the first's sends and the next's receives
//     (send_forward_recv_forward, send_forward_backward_recv_forward_backward,
//     send_backward_recv_backward). The first receive is a call alone; so is
//     the first backward's when every forward is in warm-up.
#include <optional>

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

bool is_paired(const LoweringContext& context) {
  return context.scenario.parallel.p2p_communication == P2pCommunication::paired &&
         !context.scenario.parallel.overlap_p2p_communication &&
         !splits_backward(context.scenario.parallel.schedule);
}

// Whether `stage` exists and runs on another rank than `rank` (DualPipeV's
// middle rank hands its first chunk's output to its second in place).
bool is_peer_stage(const LoweringContext& context, int rank, int stage) {
  return stage >= 0 && context.rank_of_stage(rank, stage) != rank;
}

// An action's transfers: the RECV of what it reads and the SEND of what it writes, where it has them.
struct ActionTransfers {
  std::optional<LoweredTask> recv, send;
  size_t reader = 0;  // the pass that reads the received boundary (after a backward's recomputation)
};

ActionTransfers action_transfers(const LoweringContext& context, RankTasks& rank, const ActionSpan& span, int i) {
  ActionTransfers transfers;
  const PipelineAction& action = rank.actions[i];
  const bool backward = action.kind == TaskKind::B;
  size_t reader = span.first_compute;
  while (rank.tasks[reader].task.kind != action.kind) ++reader;
  transfers.reader = reader;
  const int stage = rank.tasks[reader].task.stage, mb = action.microbatch;
  const PipelineStages& stages = context.pipeline_stages;
  const int from_stage = backward ? stages.after(stage) : stages.before(stage);
  const int to_stage = backward ? stages.before(stage) : stages.after(stage);
  if (is_peer_stage(context, rank.rank, from_stage)) {
    const Stream stream = is_paired(context) ? Stream::compute : Stream::p2p;
    transfers.recv = rank.make(transfer(context, TaskKind::RECV, stream, rank.rank, stage, from_stage, mb, backward),
                               {}, i);
    transfers.recv->transfer = context.transfer_key(rank.rank, stage, mb, backward);
    rank.tasks[reader].deps.push_back(transfers.recv->label);
  }
  if (is_peer_stage(context, rank.rank, to_stage)) {
    // Megatron blocks the compute stream on pipeline sends unless
    // --overlap-p2p-communication is set.
    const Stream stream = context.scenario.parallel.overlap_p2p_communication ? Stream::p2p : Stream::compute;
    const int after = rank.tasks[ready_index(rank, span.last_compute)].label;
    transfers.send =
        rank.make(transfer(context, TaskKind::SEND, stream, rank.rank, stage, to_stage, mb, backward), {after}, i);
    transfers.send->transfer = context.transfer_key(transfers.send->task.peer, to_stage, mb, backward);
  }
  return transfers;
}

void place_eager(RankTasks& rank, const std::vector<ActionSpan>& spans, std::vector<ActionTransfers>& transfers,
                 ListEdit& edit) {
  for (size_t i = 0; i < transfers.size(); ++i) {
    if (transfers[i].recv) edit.insert_before(transfers[i].reader, std::move(*transfers[i].recv));
    if (transfers[i].send) edit.insert_after(ready_index(rank, spans[i].last_compute), std::move(*transfers[i].send));
  }
}

// The actions (indices) between two of Megatron's p2p calls, in order.
using Step = std::vector<int>;

std::vector<Step> steps(const LoweringContext& context, const RankTasks& rank) {
  const int actions = static_cast<int>(rank.actions.size());
  // Interleaved, the steady state's forward-backward pairs run from the end
  // of the warm-up forwards to the start of as many cool-down backwards;
  // otherwise every action is a step of its own.
  int pairs_begin = actions, pairs_end = 0;
  if (context.scenario.parallel.schedule == ScheduleKind::interleaved_1f1b) {
    pairs_begin = warmup_forwards(ScheduleKind::interleaved_1f1b, context.layout.pipeline, context.micro_batches,
                                  context.virtual_stages, context.coords[rank.rank].pp);
    pairs_end = actions - pairs_begin;
  }
  std::vector<Step> result;
  for (int k = 0; k < actions; ++k) {
    const bool pair = k >= pairs_begin && k < pairs_end;
    if (pair && (k - pairs_begin) % 2 == 1) continue;
    result.push_back(pair ? Step{k, k + 1} : Step{k});
  }
  return result;
}

// Whether the call after step `before` also receives for step `next` (else
// the receives are a call of their own, right before `next`). `forwards_before`:
// of each action, the forwards before it on the rank.
bool one_call(const LoweringContext& context, const RankTasks& rank, const std::vector<int>& forwards_before,
              const Step& before, const Step& next) {
  const TaskKind first = rank.actions[before.front()].kind, then = rank.actions[next.front()].kind;
  const bool lone_forward_then_backward = before.size() == 1 && first == TaskKind::F && then == TaskKind::B;
  if (context.scenario.parallel.schedule == ScheduleKind::interleaved_1f1b) return !lone_forward_then_backward;
  if (first == TaskKind::B) return then == TaskKind::F;
  if (!lone_forward_then_backward) return false;
  // A warm-up forward's send is a call alone.
  return forwards_before[before.front()] >= warmup_forwards(context.scenario.parallel.schedule, context.layout.pipeline,
                                                             context.micro_batches, context.virtual_stages,
                                                             context.coords[rank.rank].pp);
}

// Of each action, the forwards before it on the rank.
std::vector<int> forwards_before(const RankTasks& rank) {
  std::vector<int> forwards(rank.actions.size());
  for (size_t i = 1; i < rank.actions.size(); ++i) forwards[i] = forwards[i - 1] + (rank.actions[i - 1].kind == TaskKind::F);
  return forwards;
}

// One call: its transfers form a batch, counted with action `action`.
std::vector<LoweredTask> batch(std::vector<LoweredTask> call, int action) {
  for (size_t t = 0; t < call.size(); ++t) {
    call[t].task.joins_batch = t > 0;
    call[t].action = action;
  }
  return call;
}

void place_paired(const LoweringContext& context, RankTasks& rank, const std::vector<ActionSpan>& spans,
                  std::vector<ActionTransfers>& transfers, ListEdit& edit) {
  const std::vector<Step> all = steps(context, rank);
  const std::vector<int> forwards = forwards_before(rank);
  for (size_t k = 0; k <= all.size(); ++k) {
    std::vector<LoweredTask> sends, receives;
    if (k > 0)
      for (int i : all[k - 1])
        if (transfers[i].send) sends.push_back(std::move(*transfers[i].send));
    if (k < all.size())
      for (int i : all[k])
        if (transfers[i].recv) receives.push_back(std::move(*transfers[i].recv));
    if (k > 0 && k < all.size() && one_call(context, rank, forwards, all[k - 1], all[k])) {
      for (LoweredTask& r : receives) sends.push_back(std::move(r));
      receives.clear();
    }
    if (!sends.empty()) {
      const int last = all[k - 1].back();
      const size_t after = ready_index(rank, spans[last].last_compute);
      for (LoweredTask& t : batch(std::move(sends), last)) edit.insert_after(after, std::move(t));
    }
    if (!receives.empty()) {
      const int first = all[k].front();
      for (LoweredTask& t : batch(std::move(receives), first)) edit.insert_before(spans[first].first_task, std::move(t));
    }
  }
}

}  // namespace

void lower_pipeline_transfers(const LoweringContext& context, RankTasks& rank) {
  ListEdit edit(rank);
  const std::vector<ActionSpan> spans = action_spans(rank);
  std::vector<ActionTransfers> transfers(spans.size());
  for (int i = 0; i < static_cast<int>(spans.size()); ++i)
    if (rank.actions[i].kind != TaskKind::W) transfers[i] = action_transfers(context, rank, spans[i], i);
  if (is_paired(context))
    place_paired(context, rank, spans, transfers, edit);
  else
    place_eager(rank, spans, transfers, edit);
  edit.apply();
}

}  // namespace simtrain
