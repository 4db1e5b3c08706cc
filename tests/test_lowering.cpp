// The lowering passes one by one, on their per-rank lists (sim/program/lowering.hpp),
// and the stage and rank layouts they share with the memory model and the step bound.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "sim/program/lowering.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// 8 layers on tp x pp x dp GPUs, 4 micro-batches, with `parallelism` fields set on top.
Scenario scenario(int tp, int pp, int dp, const std::string& schedule, const nlohmann::json& parallelism = {}) {
  nlohmann::json doc = fixtures::scenario_json(tp, pp, dp, 8, schedule, 0, 4);
  for (const auto& [key, value] : parallelism.items()) doc["parallelism"][key] = value;
  return fixtures::scenario_from(doc);
}

// "F0 R0 B0 W0": kind and micro-batch of each task that runs model units.
std::vector<std::string> model_passes(const RankTasks& rank) {
  std::vector<std::string> passes;
  for (const LoweredTask& t : rank.tasks)
    if (is_model_pass(t.task.kind)) passes.push_back(to_string(t.task.kind) + std::to_string(t.task.microbatch));
  return passes;
}

std::vector<std::string> schedule_names(const std::vector<PipelineAction>& actions) {
  std::vector<std::string> names;
  for (const PipelineAction& a : actions) names.push_back(to_string(a));
  return names;
}

size_t index_of(const RankTasks& rank, int label) {
  for (size_t i = 0; i < rank.tasks.size(); ++i)
    if (rank.tasks[i].label == label) return i;
  ADD_FAILURE() << "no task labelled " << label;
  return 0;
}

struct Lowering {
  explicit Lowering(const Scenario& s)
      : scenario(s), workload(build_workload(s)), context(scenario, workload),
        schedule(pipeline_schedule(s.parallel.schedule, context.layout.pipeline, context.micro_batches,
                                   context.virtual_stages)) {}
  RankTasks compute(int rank) { return lower_compute(context, rank, schedule[context.coords[rank].pp]); }
  RankTasks through_transfers(int rank) {
    RankTasks lowered = compute(rank);
    lower_tp_collectives(context, lowered);
    lower_pipeline_transfers(context, lowered);
    return lowered;
  }
  RankTasks through_dp_sync(int rank) {
    RankTasks lowered = through_transfers(rank);
    lower_parameter_gathers(context, lowered);
    lower_dp_sync(context, lowered);
    return lowered;
  }

  Scenario scenario;
  Workload workload;
  LoweringContext context;
  std::vector<std::vector<PipelineAction>> schedule;
};

}  // namespace

TEST(Lowering, StagesHoldTheEmbeddingFirstEveryLayerOnceAndTheHeadLast) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(1, 4, 1, 8, "interleaved_1f1b", 1, 4));
  const Workload w = build_workload(s);
  ASSERT_EQ(w.stage_layers.size(), 8u);
  int next_layer = 0;
  for (int stage = 0; stage < 8; ++stage) {
    const StageUnits held = stage_units(w, stage);
    EXPECT_EQ(held.embedding, stage == 0);
    EXPECT_EQ(held.head, stage == 7);
    EXPECT_EQ(held.first_layer, next_layer);
    EXPECT_EQ(held.layers, 1);
    next_layer += held.layers;
  }
  EXPECT_EQ(next_layer, 8);
}

TEST(Lowering, RanksAreLaidOutTensorFastestThenDataThenPipeline) {
  const RankLayout layout(scenario(2, 2, 2, "1f1b").parallel);
  EXPECT_EQ(layout.world_size(), 8);
  std::vector<int> ranks;
  for (int pp = 0; pp < 2; ++pp)
    for (int dp = 0; dp < 2; ++dp)
      for (int tp = 0; tp < 2; ++tp) ranks.push_back(layout.rank(tp, dp, pp));
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Lowering, ComputePassHoldsTheScheduleInOrderWithoutDependencies) {
  for (const std::string schedule : {"gpipe", "1f1b", "zb_h1"}) {
    Lowering l(scenario(1, 2, 1, schedule));
    for (int rank = 0; rank < 2; ++rank) {
      SCOPED_TRACE(schedule + " rank " + std::to_string(rank));
      const RankTasks lowered = l.compute(rank);
      EXPECT_EQ(model_passes(lowered), schedule_names(l.schedule[rank]));
      for (size_t i = 0; i < lowered.tasks.size(); ++i) {
        EXPECT_EQ(lowered.tasks[i].action, static_cast<int>(i));
        EXPECT_TRUE(lowered.tasks[i].deps.empty());
      }
    }
  }
}

TEST(Lowering, ComputePassRecomputesBeforeEachBackward) {
  nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 8, "1f1b", 0, 4);
  doc["training"]["recompute_granularity"] = "full";
  Lowering full(fixtures::scenario_from(doc));
  EXPECT_EQ(model_passes(full.compute(1)),
            (std::vector<std::string>{"F0", "R0", "B0", "F1", "R1", "B1", "F2", "R2", "B2", "F3", "R3", "B3"}));
}

// Megatron's block method recomputes the first recompute_num_layers layers of
// each model stage (a chunk under interleaving); the others keep their
// activations. 8 layers, 2 pipeline ranks x 2 chunks of 2 layers, block 1:
// the first layer of each chunk is recomputed, half of what full recompute does.
TEST(Lowering, BlockRecomputeRecomputesTheFirstLayersOfEachModelStage) {
  auto with_recompute = [](const nlohmann::json& training) {
    nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 8, "interleaved_1f1b", 2, 4);
    for (const auto& [key, value] : training.items()) doc["training"][key] = value;
    return fixtures::scenario_from(doc);
  };
  Lowering block(with_recompute({{"recompute_granularity", "full"}, {"recompute_method", "block"}, {"recompute_num_layers", 1}}));
  Lowering full(with_recompute({{"recompute_granularity", "full"}}));
  Lowering none(with_recompute({{"recompute_granularity", "none"}}));
  const Workload& w = block.workload;
  EXPECT_EQ(w.stage_layers, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(w.kept_layers, (std::vector<bool>{false, true, false, true, false, true, false, true}));
  for (int layer = 0; layer < 8; ++layer) {
    const UnitWork& unit = w.layer_at(layer);
    EXPECT_EQ(&unit, layer % 2 ? &w.kept_layer : &w.layer) << layer;
    EXPECT_EQ(unit.activation_bytes, (layer % 2 ? none : full).workload.layer.activation_bytes) << layer;
  }
  EXPECT_TRUE(w.kept_layer.recompute.ops.empty());

  // Each backward is preceded by a recompute of one layer where full recompute does two.
  const double layer_recompute_flops = full.workload.layer.recompute.flops();
  ASSERT_GT(layer_recompute_flops, 0);
  for (int rank = 0; rank < 2; ++rank) {
    const RankTasks blocked = block.compute(rank);
    EXPECT_EQ(model_passes(blocked), model_passes(full.compute(rank)));
    for (const LoweredTask& t : blocked.tasks)
      if (t.task.kind == TaskKind::R) EXPECT_DOUBLE_EQ(t.work->flops(), layer_recompute_flops);
  }
  const double model_flops = none.workload.model_flops_per_step;
  EXPECT_DOUBLE_EQ(w.model_flops_per_step, model_flops);
  EXPECT_DOUBLE_EQ(w.hardware_flops_per_step - model_flops,
                   (full.workload.hardware_flops_per_step - model_flops) / 2);

  // Activations held: half the layers at full recompute's, half at none's.
  const auto block_memory = memory_per_pipeline_rank(block.scenario, w);
  const auto full_memory = memory_per_pipeline_rank(full.scenario, full.workload);
  const auto none_memory = memory_per_pipeline_rank(none.scenario, none.workload);
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_DOUBLE_EQ(block_memory[rank].activations_bytes,
                     (full_memory[rank].activations_bytes + none_memory[rank].activations_bytes) / 2)
        << rank;
}

// Megatron's recompute_modules: core_attn (its default) is selective
// recompute as simtrain simulates it; no module at all recomputes nothing.
TEST(Lowering, RecomputeModulesOfCoreAttentionOrOfNothing) {
  auto with = [](const nlohmann::json& training) {
    nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 8, "1f1b", 0, 4);
    for (const auto& [key, value] : training.items()) doc["training"][key] = value;
    return fixtures::scenario_from(doc);
  };
  const Scenario core_attn = with({{"recompute_granularity", "selective"}, {"recompute_modules", {"core_attn"}}});
  const Scenario selective = with({{"recompute_granularity", "selective"}});
  EXPECT_EQ(core_attn.training.recompute, Recompute::selective);
  EXPECT_DOUBLE_EQ(build_workload(core_attn).hardware_flops_per_step, build_workload(selective).hardware_flops_per_step);
  const Scenario nothing = with({{"recompute_granularity", "selective"}, {"recompute_modules", nlohmann::json::array()}});
  EXPECT_EQ(nothing.training.recompute, Recompute::none);
}

// Under --overlap-grad-reduce the last backward of a chunk is one task per
// gradient bucket; together they run the stage's units once, in reverse.
TEST(Lowering, ComputePassSplitsTheLastBackwardOfAChunkAtItsBuckets) {
  Lowering l(scenario(1, 2, 2, "1f1b", {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 3000000}}));
  const RankTasks lowered = l.compute(0);
  const auto buckets = l.context.gradient_buckets(0);
  ASSERT_GT(buckets.size(), 1u);
  std::vector<const UnitWork*> split, expected;
  for (const LoweredTask& t : lowered.tasks) {
    EXPECT_EQ(t.closes_bucket, t.action == static_cast<int>(lowered.actions.size()) - 1);
    if (t.closes_bucket)
      for (const ModelUnit& u : t.units) split.push_back(u.work);
  }
  for (auto u = l.context.units(0).rbegin(); u != l.context.units(0).rend(); ++u) expected.push_back(u->work);
  EXPECT_EQ(split, expected);
  EXPECT_EQ(model_passes(lowered).size(), l.schedule[0].size() - 1 + buckets.size());
}

TEST(Lowering, TpPassPutsEachComputesCollectivesRightAfterItWithTheirCounts) {
  Lowering l(scenario(2, 2, 1, "1f1b", {{"sequence_parallel", true}}));
  RankTasks lowered = l.compute(0);
  lower_tp_collectives(l.context, lowered);
  int computes = 0;
  for (size_t i = 0; i < lowered.tasks.size(); ++i) {
    const LoweredTask& compute = lowered.tasks[i];
    if (!is_model_pass(compute.task.kind)) continue;
    ++computes;
    const bool computes_weight_gradients = std::find(compute.passes.begin(), compute.passes.end(),
                                                     &UnitWork::backward_weight) != compute.passes.end();
    std::map<TaskKind, int> expected, issued;
    for (const ModelUnit& u : compute.units)
      for (PassOf pass : compute.passes)
        for (const TpCollectives& c : (u.work->*pass).tp)
          if (!c.overlapped && !(c.beside_weight_gradient && computes_weight_gradients)) expected[c.kind] += c.count;
    int previous = compute.label;
    size_t next = i + 1;
    for (; next < lowered.tasks.size() && lowered.tasks[next].task.dim == CommDim::tp; ++next) {
      const LoweredTask& c = lowered.tasks[next];
      issued[c.task.kind] += c.task.count;
      EXPECT_EQ(c.deps, std::vector<int>{previous});
      EXPECT_EQ(c.task.group, l.context.groups.tp[0]);
      EXPECT_EQ(c.task.microbatch, compute.task.microbatch);
      previous = c.label;
    }
    EXPECT_EQ(issued, expected) << "label " << compute.label;
    EXPECT_EQ(ready_index(lowered, i), next - 1);
  }
  EXPECT_EQ(computes, 8);  // 4 forwards, 4 backwards
}

// Sequence parallelism: each backward's re-gathers of the qkv and fc1
// inputs (2 a layer) start with it on a stream of their own, once what it
// waits for and the compute stream's task before it are done, then the
// reduce-scatters of their input gradients (2 a layer, beside the weight
// gradients); its first blocking collective waits for the last of them.
// With the blocking all-gathers (2 a layer), 6 a layer.
TEST(Lowering, SequenceParallelRegathersEachLayersInputsBesideItsBackward) {
  Lowering l(scenario(2, 2, 1, "1f1b", {{"sequence_parallel", true}}));
  const RankTasks lowered = lower_rank(l.context, 0, l.schedule[0]);  // stage 0: the embedding and 4 layers
  const double bytes = 512 * 512 * 2.0;
  int backwards = 0, overlapped_tasks = 0;
  for (size_t i = 0; i < lowered.tasks.size(); ++i) {
    const LoweredTask& t = lowered.tasks[i];
    overlapped_tasks += t.task.stream == Stream::tp_overlap;
    if (t.task.kind != TaskKind::B) continue;
    ++backwards;
    const LoweredTask& regather = lowered.tasks[i + 1];
    EXPECT_EQ(regather.task.stream, Stream::tp_overlap);
    EXPECT_EQ(regather.task.kind, TaskKind::ALLGATHER);
    EXPECT_EQ(regather.task.dim, CommDim::tp);
    EXPECT_EQ(regather.task.count, 4 * 2);
    EXPECT_EQ(regather.task.bytes, bytes);
    std::vector<int> starts_with = t.deps;
    for (size_t before = i; before-- > 0;)
      if (lowered.tasks[before].task.stream == Stream::compute) {
        starts_with.push_back(lowered.tasks[before].label);
        break;
      }
    EXPECT_EQ(regather.deps, starts_with);
    const LoweredTask& reduction = lowered.tasks[i + 2];
    EXPECT_EQ(reduction.task.stream, Stream::tp_overlap);
    EXPECT_EQ(reduction.task.kind, TaskKind::REDUCESCATTER);
    EXPECT_EQ(reduction.task.count, 4 * 2);
    EXPECT_EQ(reduction.deps, std::vector<int>{regather.label});
    EXPECT_EQ(lowered.tasks[i + 3].deps, (std::vector<int>{t.label, reduction.label}));
    std::map<TaskKind, int> blocking;
    for (size_t c = i + 3; c <= ready_index(lowered, i); ++c) {
      EXPECT_EQ(lowered.tasks[c].task.stream, Stream::compute);
      EXPECT_EQ(lowered.tasks[c].task.bytes, bytes);
      blocking[lowered.tasks[c].task.kind] += lowered.tasks[c].task.count;
    }
    // The embedding's backward adds one all-gather (of its output's gradient).
    EXPECT_EQ(blocking, (std::map<TaskKind, int>{{TaskKind::ALLGATHER, 4 * 2 + 1}}));
  }
  EXPECT_EQ(backwards, 4);
  EXPECT_EQ(overlapped_tasks, 8);

  Lowering plain(scenario(2, 2, 1, "1f1b", {{"async_tensor_model_parallel_allreduce", false}}));
  for (const LoweredTask& t : lower_rank(plain.context, 0, plain.schedule[0]).tasks)
    EXPECT_NE(t.task.stream, Stream::tp_overlap);
}

// Without SP, a column-parallel linear's input gradient is all-reduced
// beside its weight-gradient GEMM (Megatron's async TP all-reduce): each
// backward's all-reduces (qkv and fc1 of 4 layers) start with it on the
// overlapped stream. A zb_h1 backward leaves its weight gradients to its W
// task: its all-reduces block, as they do with the overlap turned off.
TEST(Lowering, InputGradientAllReducesRunBesideTheWeightGradients) {
  const auto streams_after_backwards = [](const Scenario& s) {
    Lowering l(s);
    const RankTasks lowered = lower_rank(l.context, 0, l.schedule[0]);  // stage 0: the embedding and 4 layers
    std::map<Stream, int> all_reduces;  // by stream, counted
    for (size_t i = 0; i < lowered.tasks.size(); ++i) {
      if (lowered.tasks[i].task.kind != TaskKind::B) continue;
      for (size_t c = i + 1; c < lowered.tasks.size() && lowered.tasks[c].task.dim == CommDim::tp; ++c)
        if (lowered.tasks[c].task.kind == TaskKind::ALLREDUCE) all_reduces[lowered.tasks[c].task.stream] += lowered.tasks[c].task.count;
    }
    return all_reduces;
  };
  EXPECT_EQ(streams_after_backwards(scenario(2, 2, 1, "1f1b")), (std::map<Stream, int>{{Stream::tp_overlap, 4 * 4 * 2}}));
  EXPECT_EQ(streams_after_backwards(scenario(2, 2, 1, "zb_h1")), (std::map<Stream, int>{{Stream::compute, 4 * 4 * 2}}));
  EXPECT_EQ(streams_after_backwards(scenario(2, 2, 1, "1f1b", {{"async_tensor_model_parallel_allreduce", false}})),
            (std::map<Stream, int>{{Stream::compute, 4 * 4 * 2}}));
}

TEST(Lowering, TransferPassPairsEverySendWithOneReceiveOfTheSameBytes) {
  for (const std::string p2p : {"paired", "eager"})
    for (const std::string schedule : {"1f1b", "interleaved_1f1b", "zb_h1", "gpipe"}) {
      SCOPED_TRACE(schedule + " " + p2p);
      const int layers_per_chunk = schedule == "interleaved_1f1b" ? 1 : 0;
      nlohmann::json doc = fixtures::scenario_json(2, 4, 1, 8, schedule, layers_per_chunk, 4);
      doc["parallelism"]["p2p_communication"] = p2p;
      Lowering l(fixtures::scenario_from(doc));
      std::map<uint64_t, const LoweredTask*> sends;
      std::vector<RankTasks> ranks;
      for (int rank = 0; rank < l.context.layout.world_size(); ++rank) ranks.push_back(l.through_transfers(rank));
      double bytes_sent = 0, bytes_received = 0;
      for (const RankTasks& rank : ranks)
        for (const LoweredTask& t : rank.tasks)
          if (t.task.kind == TaskKind::SEND) {
            EXPECT_TRUE(sends.emplace(t.transfer, &t).second) << "label " << t.label;
            EXPECT_EQ(t.task.stream, Stream::compute);
            bytes_sent += t.task.bytes;
          }
      size_t receives = 0;
      for (const RankTasks& rank : ranks)
        for (size_t i = 0; i < rank.tasks.size(); ++i) {
          const LoweredTask& recv = rank.tasks[i];
          if (recv.task.kind != TaskKind::RECV) continue;
          ++receives;
          bytes_received += recv.task.bytes;
          ASSERT_EQ(sends.count(recv.transfer), 1u) << "label " << recv.label;
          const LoweredTask& send = *sends[recv.transfer];
          EXPECT_EQ(send.task.peer, rank.rank);
          EXPECT_EQ(recv.task.peer, send.task.rank);
          EXPECT_EQ(send.task.bytes, recv.task.bytes);
          const bool paired = p2p == "paired" && schedule != "zb_h1";  // zb_h1 keeps eager transfers
          EXPECT_EQ(recv.task.stream, paired ? Stream::compute : Stream::p2p);
          // The compute that reads the transfer waits for it: eager, it comes
          // next; paired, later (after the rest of the receive's batch, or
          // after a backward's recomputation).
          size_t reader = i + 1;
          while (reader < rank.tasks.size() && !is_model_pass(rank.tasks[reader].task.kind)) ++reader;
          while (reader < rank.tasks.size() && rank.tasks[reader].task.kind == TaskKind::R) ++reader;
          ASSERT_LT(reader, rank.tasks.size());
          if (!paired) EXPECT_EQ(reader, i + 1);
          EXPECT_EQ(rank.tasks[reader].deps.back(), recv.label);
        }
      EXPECT_EQ(receives, sends.size());
      EXPECT_EQ(bytes_sent, bytes_received);
    }
}

namespace {

// A rank's compute passes and transfer calls in order: "F0", "[>F0]" (a
// call sending F0's output), "[>F2 <B0]" (one batch: F2's output sent, B0's
// gradient received); with `stages`, each named with its model stage ("F0s2").
std::vector<std::string> calls(const RankTasks& rank, bool stages = false) {
  std::vector<std::string> out;
  for (const LoweredTask& t : rank.tasks) {
    const Task& task = t.task;
    const bool transfer = task.kind == TaskKind::SEND || task.kind == TaskKind::RECV;
    if (!transfer && !is_model_pass(task.kind)) continue;
    std::string name = (task.kind == TaskKind::SEND   ? ">"
                        : task.kind == TaskKind::RECV ? "<"
                                                      : "") +
                       std::string(transfer ? (task.backward ? "B" : "F") : to_string(task.kind)) +
                       std::to_string(task.microbatch) + (stages ? "s" + std::to_string(task.stage) : "");
    if (!transfer) out.push_back(name);
    else if (task.joins_batch) out.back().insert(out.back().size() - 1, " " + name);
    else out.push_back("[" + name + "]");
  }
  return out;
}

}  // namespace

// Megatron-LM's forward_backward_pipelining_without_interleaving: warm-up
// recv_forward / send_forward alone; in the steady state
// send_forward_recv_backward and send_backward_recv_forward; cool-down
// recv_backward / send_backward alone.
TEST(Lowering, PairedTransfersOf1f1bAreMegatronsCalls) {
  Lowering l(scenario(1, 4, 1, "1f1b"));
  const std::vector<std::string> rank1 = {
      "[<F0]", "F0", "[>F0]", "[<F1]", "F1", "[>F1]", "[<F2]", "F2", "[>F2 <B0]", "B0", "[>B0 <F3]", "F3",
      "[>F3 <B1]", "B1", "[>B1]", "[<B2]", "B2", "[>B2]", "[<B3]", "B3", "[>B3]"};
  EXPECT_EQ(calls(l.through_transfers(1)), rank1);
  // The last stage: each forward's input arrives with the send of the gradient before it.
  const std::vector<std::string> rank3 = {"[<F0]", "F0", "B0", "[>B0 <F1]", "F1", "B1", "[>B1 <F2]", "F2", "B2",
                                          "[>B2 <F3]", "F3", "B3", "[>B3]"};
  EXPECT_EQ(calls(l.through_transfers(3)), rank3);
}

// GPipe, which Megatron does not run, as its 1F1B code runs a rank whose
// micro-batches all fit in the warm-up: every transfer alone.
TEST(Lowering, PairedTransfersOfGpipeAreEachACallAlone) {
  Lowering l(scenario(1, 2, 1, "gpipe"));
  const std::vector<std::string> rank0 = {"F0", "[>F0]", "F1", "[>F1]", "F2", "[>F2]", "F3", "[>F3]",
                                          "[<B0]", "B0", "[<B1]", "B1", "[<B2]", "B2", "[<B3]", "B3"};
  EXPECT_EQ(calls(l.through_transfers(0)), rank0);
}

// The Zero Bubble runtime waits for a receive only where its consumer runs:
// zb_h1 keeps eager transfers, pre-posted on the p2p stream.
TEST(Lowering, ZbH1KeepsEagerTransfersWhenPaired) {
  Lowering l(scenario(1, 2, 1, "zb_h1", {{"p2p_communication", "paired"}}));
  for (const LoweredTask& t : l.through_transfers(1).tasks)
    if (t.task.kind == TaskKind::RECV) EXPECT_EQ(t.task.stream, Stream::p2p);
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: one call
// between steps (a warm-up forward, a steady-state forward and backward, a
// cool-down backward) sends the step's outputs and receives the next step's
// inputs. Rank 0 of p = 2, v = 2, m = 4 holds stages 0 and 2.
TEST(Lowering, PairedTransfersOfInterleaved1f1bAreMegatronsCalls) {
  nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 8, "interleaved_1f1b", 2, 4);
  Lowering l(fixtures::scenario_from(doc));
  const std::vector<std::string> rank0 = {
      "F0s0", "[>F0s0]", "F1s0", "[>F1s0 <F0s2]", "F0s2", "[>F0s2 <F1s2]", "F1s2", "[>F1s2 <B0s2]",
      "F2s0", "B0s2", "[>F2s0 >B0s2 <B1s2]", "F3s0", "B1s2", "[>F3s0 >B1s2 <F2s2 <B0s0]",
      "F2s2", "B0s0", "[>F2s2 <F3s2 <B1s0]", "F3s2", "B1s0", "[>F3s2 <B2s2]",
      "B2s2", "[>B2s2 <B3s2]", "B3s2", "[>B3s2 <B2s0]", "B2s0", "[<B3s0]", "B3s0"};
  EXPECT_EQ(calls(l.through_transfers(0), true), rank0);
  // With p micro-batches every forward is in warm-up, and the first backward's receive is a call alone.
  Lowering all_warmup(fixtures::scenario_from(fixtures::scenario_json(1, 2, 1, 8, "interleaved_1f1b", 2, 2)));
  const std::vector<std::string> all_warmup_rank0 = {
      "F0s0", "[>F0s0]", "F1s0", "[>F1s0 <F0s2]", "F0s2", "[>F0s2 <F1s2]", "F1s2", "[>F1s2]", "[<B0s2]",
      "B0s2", "[>B0s2 <B1s2]", "B1s2", "[>B1s2 <B0s0]", "B0s0", "[<B1s0]", "B1s0"};
  EXPECT_EQ(calls(all_warmup.through_transfers(0), true), all_warmup_rank0);
}

TEST(Lowering, DpPassReducesEachBucketRightAfterTheBackwardThatClosesIt) {
  Lowering l(scenario(1, 2, 2, "1f1b", {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 3000000}}));
  const RankTasks lowered = l.through_dp_sync(0);
  size_t closing = 0;
  for (size_t i = 0; i < lowered.tasks.size(); ++i) {
    const LoweredTask& backward = lowered.tasks[i];
    if (!backward.closes_bucket) continue;
    ++closing;
    const size_t ready = ready_index(lowered, i);
    ASSERT_LT(ready + 1, lowered.tasks.size());
    const LoweredTask& reduction = lowered.tasks[ready + 1];
    EXPECT_EQ(reduction.task.kind, TaskKind::ALLREDUCE);
    EXPECT_EQ(reduction.task.group, l.context.groups.dp[0]);
    EXPECT_EQ(reduction.deps, std::vector<int>{lowered.tasks[ready].label});
    EXPECT_EQ(reduction.task.bytes, parameters(backward.units) * l.workload.grad_bytes_per_parameter);
    ASSERT_TRUE(reduction.bucket_parameters);
    EXPECT_EQ(*reduction.bucket_parameters, parameters(backward.units));
    EXPECT_TRUE(reduction.gradients_ready);
  }
  size_t reductions = 0;
  for (const LoweredTask& t : lowered.tasks) reductions += t.task.group == l.context.groups.dp[0];
  EXPECT_EQ(closing, l.context.gradient_buckets(0).size());
  EXPECT_EQ(reductions, closing);
}

// Without overlap every bucket is reduced after the last backward, compressed
// first and decompressed at the end when asked; the tied embeddings' all-reduce
// (first and last stage) comes after the buckets.
TEST(Lowering, DpPassReducesAfterTheLastBackwardWithoutOverlap) {
  Lowering l(scenario(1, 2, 2, "1f1b", {{"ddp_bucket_size", 3000000}, {"dp_compression_ratio", 4}}));
  const RankTasks lowered = l.through_dp_sync(0);
  size_t last_backward = 0;
  for (size_t i = 0; i < lowered.tasks.size(); ++i)
    if (lowered.tasks[i].task.kind == TaskKind::B) last_backward = i;
  std::vector<TaskKind> tail;
  for (size_t i = last_backward + 1; i < lowered.tasks.size(); ++i) tail.push_back(lowered.tasks[i].task.kind);
  const size_t buckets = l.context.gradient_buckets(0).size();
  std::vector<TaskKind> expected;
  for (size_t b = 0; b < buckets; ++b) expected.insert(expected.end(), {TaskKind::COMPRESS, TaskKind::ALLREDUCE});
  expected.push_back(TaskKind::ALLREDUCE);
  expected.insert(expected.end(), buckets, TaskKind::DECOMPRESS);
  EXPECT_EQ(tail, expected);
  for (size_t i = last_backward + 1; i < lowered.tasks.size(); ++i)
    if (lowered.tasks[i].task.kind == TaskKind::COMPRESS)
      EXPECT_EQ(lowered.tasks[i].deps, std::vector<int>{lowered.tasks[last_backward].label});
}

TEST(Lowering, OptimizerWaitsForEveryGradientReductionThenZeroGathersEachBucket) {
  Lowering l(scenario(1, 2, 2, "1f1b",
                      {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 3000000}, {"zero_stage", 1},
                       {"dp_compression_ratio", 2}}));
  RankTasks lowered = l.through_dp_sync(0);
  std::vector<int> reductions;
  std::vector<double> buckets;
  for (const LoweredTask& t : lowered.tasks) {
    if (t.gradients_ready) reductions.push_back(t.label);
    if (t.bucket_parameters) buckets.push_back(*t.bucket_parameters);
  }
  const size_t before = lowered.tasks.size();
  lower_optimizer(l.context, lowered);
  ASSERT_EQ(lowered.tasks.size(), before + 1 + buckets.size());
  const LoweredTask& optimizer = lowered.tasks[before];
  EXPECT_EQ(optimizer.task.kind, TaskKind::OPT);
  EXPECT_EQ(optimizer.deps, reductions);
  // Every reduce-scatter and every decompression, the tied embeddings' all-reduce with them.
  size_t expected = 0;
  for (const LoweredTask& t : lowered.tasks)
    expected += t.task.kind == TaskKind::REDUCESCATTER || t.task.kind == TaskKind::DECOMPRESS ||
                (t.task.kind == TaskKind::ALLREDUCE && t.task.group == l.context.groups.embedding[0]);
  EXPECT_EQ(reductions.size(), expected);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const LoweredTask& gather = lowered.tasks[before + 1 + b];
    EXPECT_EQ(gather.task.kind, TaskKind::ALLGATHER);
    EXPECT_EQ(gather.task.bytes, buckets[b] * l.workload.weight_bytes_per_parameter);
    EXPECT_EQ(gather.deps, std::vector<int>{optimizer.label});
  }
}

TEST(Lowering, GradientsReducedInBf16HalveTheReduceScatters) {
  const nlohmann::json parallelism = {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 3000000}, {"zero_stage", 1}};
  std::vector<double> fp32, bf16;
  for (auto* bytes : {&fp32, &bf16}) {
    nlohmann::json p = parallelism;
    p["grad_reduce_in_bf16"] = bytes == &bf16;
    Lowering l(scenario(1, 2, 2, "1f1b", p));
    for (const LoweredTask& t : lower_rank(l.context, 0, l.schedule[0]).tasks)
      if (t.task.kind == TaskKind::REDUCESCATTER) bytes->push_back(t.task.bytes);
  }
  ASSERT_EQ(fp32.size(), bf16.size());
  ASSERT_FALSE(fp32.empty());
  for (size_t i = 0; i < fp32.size(); ++i) EXPECT_EQ(bf16[i], fp32[i] / 2);
}

// --overlap-param-gather: no gather after the optimizer; each bucket's gather
// is issued at the step's start, and the first forward of the chunk is split
// at its buckets, each piece waiting for its bucket's gather.
TEST(Lowering, OverlappedParamGatherFeedsEachBucketsFirstForward) {
  const nlohmann::json parallelism = {
      {"overlap_grad_reduce", true}, {"ddp_bucket_size", 3000000}, {"zero_stage", 1}, {"overlap_param_gather", true}};
  Lowering l(scenario(1, 2, 2, "1f1b", parallelism));
  const RankTasks lowered = lower_rank(l.context, 0, l.schedule[0]);
  const auto buckets = l.context.gradient_buckets(0);
  ASSERT_GT(buckets.size(), 1u);
  size_t optimizer = 0;
  for (size_t i = 0; i < lowered.tasks.size(); ++i)
    if (lowered.tasks[i].task.kind == TaskKind::OPT) optimizer = i;
  EXPECT_EQ(optimizer, lowered.tasks.size() - 1);  // nothing gathered after it
  std::vector<const LoweredTask*> forwards;
  for (const LoweredTask& t : lowered.tasks)
    if (t.opens_bucket) forwards.push_back(&t);
  ASSERT_EQ(forwards.size(), buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    const LoweredTask& gather = lowered.tasks[b];
    const LoweredTask& forward = *forwards[b];
    EXPECT_EQ(gather.task.kind, TaskKind::ALLGATHER);
    EXPECT_EQ(gather.task.stream, Stream::dp_gather);
    EXPECT_EQ(gather.task.group, l.context.groups.dp[0]);
    EXPECT_TRUE(gather.deps.empty());
    EXPECT_EQ(forward.task.kind, TaskKind::F);
    EXPECT_EQ(forward.task.microbatch, 0);
    const std::vector<ModelUnit>& bucket = buckets[buckets.size() - 1 - b];  // the forward runs them in reverse
    EXPECT_EQ(forward.units.size(), bucket.size());
    EXPECT_EQ(forward.units.front().layer, bucket.back().layer);
    EXPECT_EQ(gather.task.bytes, parameters(bucket) * l.workload.weight_bytes_per_parameter);
    EXPECT_EQ(forward.deps.front(), gather.label);
  }
  // Later forwards run the whole stage, waiting for no gather.
  size_t whole_forwards = 0;
  for (const LoweredTask& t : lowered.tasks)
    if (t.task.kind == TaskKind::F && !t.opens_bucket) {
      ++whole_forwards;
      EXPECT_FALSE(t.task.part_of_stage);
    }
  EXPECT_EQ(whole_forwards, 3u);

  // Without it the optimizer is followed by the gathers, the forward whole.
  nlohmann::json after_optimizer = parallelism;
  after_optimizer["overlap_param_gather"] = false;
  Lowering plain(scenario(1, 2, 2, "1f1b", after_optimizer));
  const RankTasks unchanged = lower_rank(plain.context, 0, plain.schedule[0]);
  EXPECT_EQ(unchanged.tasks.front().task.kind, TaskKind::F);
  EXPECT_EQ(unchanged.tasks.back().task.kind, TaskKind::ALLGATHER);
  for (const LoweredTask& t : unchanged.tasks) EXPECT_FALSE(t.opens_bucket);
}

TEST(Lowering, ZeroThreeGathersBeforeEachPassAndReducesAfterEachBackward) {
  Lowering l(scenario(1, 1, 2, "1f1b", {{"zero_stage", 3}}));
  const RankTasks lowered = l.through_dp_sync(0);
  std::vector<TaskKind> kinds;
  for (const LoweredTask& t : lowered.tasks) kinds.push_back(t.task.kind);
  const std::vector<TaskKind> per_microbatch = {TaskKind::ALLGATHER, TaskKind::F, TaskKind::ALLGATHER, TaskKind::B,
                                                TaskKind::REDUCESCATTER};
  std::vector<TaskKind> expected;
  for (int mb = 0; mb < 4; ++mb) expected.insert(expected.end(), per_microbatch.begin(), per_microbatch.end());
  EXPECT_EQ(kinds, expected);
  // Each gather is prefetched while the pass before runs: it waits for the one two passes back.
  std::vector<size_t> passes;
  for (size_t i = 0; i < lowered.tasks.size(); ++i)
    if (is_model_pass(lowered.tasks[i].task.kind)) passes.push_back(i);
  for (size_t p = 0; p < passes.size(); ++p) {
    const LoweredTask& gather = lowered.tasks[passes[p] - 1];
    EXPECT_EQ(lowered.tasks[passes[p]].deps.front(), gather.label);
    if (p < 2) EXPECT_TRUE(gather.deps.empty());
    else EXPECT_EQ(gather.deps, std::vector<int>{lowered.tasks[passes[p - 2]].label});
  }
}

// With tied embeddings over two stages the last stage holds a copy of the
// word embeddings (not of the position table), as Megatron's output layer
// does: it reduces the copy's gradient over data parallelism and updates it
// with the rest of its parameters, then all-reduces it with the first
// stage's over their embedding group; under ZeRO-3 it gathers and
// reduce-scatters it with the rest.
TEST(Lowering, TheLastStagesCopyOfTiedWordEmbeddingsIsReducedUpdatedAndSharedWithTheFirst) {
  for (const int zero : {0, 3}) {
    SCOPED_TRACE("zero_stage " + std::to_string(zero));
    const Scenario s = scenario(2, 2, 2, "1f1b", {{"zero_stage", zero}});
    ASSERT_TRUE(s.model.tie_word_embeddings && s.model.learned_position_embeddings);
    const Workload w = build_workload(s);
    const double word_rows = 4096.0 / 2 * 512;  // one TP rank's half of the vocabulary
    EXPECT_DOUBLE_EQ(w.tied_embedding_copy_parameters, word_rows);
    EXPECT_DOUBLE_EQ(w.head.parameters, build_workload(scenario(2, 1, 2, "1f1b")).head.parameters + word_rows);
    const Program p = build_program(s, w);
    // Four layers a stage; the final layernorm's weight and bias, less the 512 x 512 position table.
    EXPECT_DOUBLE_EQ(parameters_on_rank(s, w, p, 4) - parameters_on_rank(s, w, p, 0), 2 * 512 - 512.0 * 512);
    for (int rank = 0; rank < p.world_size; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const double held = parameters_on_rank(s, w, p, rank);
      double reduced = 0, gathered = 0, shared = 0, updated = 0;
      int passes = 0, backwards = 0;
      for (int id : p.rank_tasks(rank)) {
        const Task& t = p.tasks[id];
        passes += t.kind == TaskKind::F || t.kind == TaskKind::B;
        backwards += t.kind == TaskKind::B;
        if (t.kind == TaskKind::OPT)
          for (const Op& op : p.works[t.work].ops)
            if (op.name == "adam") updated = double(op.shape.at(0));
        if (t.group < 0 || p.groups[t.group].dim != CommDim::dp) continue;
        const double bytes = t.bytes * t.count;
        if (p.groups[t.group].name.starts_with("emb")) shared += bytes;
        else if (t.kind == TaskKind::ALLGATHER) gathered += bytes;
        else reduced += bytes;
      }
      EXPECT_DOUBLE_EQ(shared, word_rows * w.grad_bytes_per_parameter);
      EXPECT_DOUBLE_EQ(reduced, held * w.grad_bytes_per_parameter * (zero == 3 ? backwards : 1));
      EXPECT_DOUBLE_EQ(gathered, zero == 3 ? held * w.weight_bytes_per_parameter * passes : 0);
      EXPECT_DOUBLE_EQ(updated, double(std::llround(zero == 3 ? held / 2 : held)));
    }
  }
}

// Numbering keeps each rank's list order and its dependencies.
TEST(Lowering, TheProgramNumbersEachRanksListInOrder) {
  const Scenario s = scenario(2, 2, 2, "1f1b", {{"overlap_grad_reduce", true}, {"zero_stage", 1}});
  Lowering l(s);
  const Program program = build_program(s, l.workload);
  for (int rank = 0; rank < program.world_size; ++rank) {
    const RankTasks lowered = lower_rank(l.context, rank, l.schedule[program.coords[rank].pp]);
    ASSERT_EQ(program.rank_tasks(rank).size(), lowered.tasks.size());
    for (size_t i = 0; i < lowered.tasks.size(); ++i) {
      const Task& task = program.tasks[program.rank_tasks(rank)[i]];
      Task unnumbered = lowered.tasks[i].task;
      unnumbered.id = task.id, unnumbered.work = task.work;  // set when numbered
      EXPECT_EQ(task_name(program, task), task_name(program, unnumbered));
      if (task.kind == TaskKind::RECV) continue;  // its one dependency is on another rank
      const TaskDeps deps = program.deps(task);
      ASSERT_EQ(deps.size(), lowered.tasks[i].deps.size());
      for (size_t d = 0; d < deps.size(); ++d)
        EXPECT_EQ(deps[d], program.rank_tasks(rank)[index_of(lowered, lowered.tasks[i].deps[d])]);
    }
  }
}
