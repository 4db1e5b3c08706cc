#include "sim/program/program_builder.hpp"

#include <cstdio>
#include <map>
#include <unordered_map>

#include "sim/program/pipeline_schedule.hpp"

namespace simtrain {

namespace {

// The model units a stage holds: the embedding on the first stage, its
// layers, the head on the last stage.
struct Unit {
  const UnitWork* work;
  int layer;  // -1 for embedding and head
};

using PassOf = Pass UnitWork::*;

class ProgramBuilder {
public:
  ProgramBuilder(const Scenario& scenario, const Workload& workload)
      : s_(scenario), w_(workload), t_(static_cast<int>(scenario.parallel.tensor)),
        p_(static_cast<int>(scenario.parallel.pipeline)), d_(static_cast<int>(scenario.parallel.data)),
        v_(static_cast<int>(scenario.virtual_stages())), m_(static_cast<int>(scenario.micro_batches())),
        stages_(p_ * v_), zero_(scenario.parallel.zero_stage) {
    for (int layers : workload.stage_layers) first_layer_.push_back(first_layer_.back() + layers);
  }

  Program build() {
    prog_.world_size = t_ * p_ * d_;
    prog_.tensor_size = t_;
    prog_.pipeline_size = p_;
    prog_.virtual_stages = v_;
    prog_.micro_batches = m_;
    if (s_.parallel.dp_sync == DpSync::parameter_server && d_ > 1) prog_.servers = static_cast<int>(s_.parallel.parameter_servers);
    prog_.rank_tasks.resize(prog_.world_size);
    prog_.coords.resize(prog_.world_size);
    for (int pp = 0; pp < p_; ++pp)
      for (int dp = 0; dp < d_; ++dp)
        for (int tp = 0; tp < t_; ++tp) prog_.coords[rank_of(tp, dp, pp)] = {tp, dp, pp};
    make_groups();
    const auto schedule = pipeline_schedule(s_.parallel.schedule, p_, m_, v_);
    for (int rank = 0; rank < prog_.world_size; ++rank) emit_rank(rank, schedule[prog_.coords[rank].pp]);
    for (auto& [key, recv] : pending_recvs_) prog_.tasks[recv].deps.push_back(sends_.at(key));
    return std::move(prog_);
  }

private:
  int rank_of(int tp, int dp, int pp) const { return tp + t_ * (dp + d_ * pp); }
  int rank_of_stage(int rank, int stage) const {
    const RankCoord& c = prog_.coords[rank];
    return rank_of(c.tp, c.dp, stage % p_);
  }

  int add_group(CommDim dim, const std::string& name, std::vector<int> ranks) {
    const int id = static_cast<int>(prog_.groups.size());
    Group& group = prog_.groups.emplace_back();
    group.id = id;
    group.dim = dim;
    group.name = name + std::to_string(id);
    group.ranks = std::move(ranks);
    return id;
  }

  void make_groups() {
    tp_group_.assign(prog_.world_size, -1);
    dp_group_.assign(prog_.world_size, -1);
    dp_intra_group_.assign(prog_.world_size, -1);
    dp_inter_group_.assign(prog_.world_size, -1);
    emb_group_.assign(prog_.world_size, -1);
    if (t_ > 1)
      for (int pp = 0; pp < p_; ++pp)
        for (int dp = 0; dp < d_; ++dp) {
          std::vector<int> ranks;
          for (int tp = 0; tp < t_; ++tp) ranks.push_back(rank_of(tp, dp, pp));
          const int id = add_group(CommDim::tp, "tp", ranks);
          for (int r : ranks) tp_group_[r] = id;
        }
    if (d_ > 1)
      for (int pp = 0; pp < p_; ++pp)
        for (int tp = 0; tp < t_; ++tp) {
          std::vector<int> ranks;
          for (int dp = 0; dp < d_; ++dp) ranks.push_back(rank_of(tp, dp, pp));
          if (s_.parallel.dp_sync == DpSync::hierarchical) {
            make_hierarchical_groups(ranks);
            continue;
          }
          const bool servers = prog_.servers > 0;
          const int id = add_group(CommDim::dp, servers ? "ps" : "dp", ranks);
          for (int r : ranks) dp_group_[r] = id;
          prog_.groups[id].servers = prog_.servers;
          if (s_.parallel.dp_sync == DpSync::ring || s_.parallel.dp_sync == DpSync::tree)
            prog_.groups[id].allreduce_algorithm = s_.parallel.dp_sync == DpSync::ring ? Algorithm::ring : Algorithm::tree;
        }
    // Tied input and output embeddings live on the first and last stage;
    // Megatron all-reduces their gradients between the two.
    if (s_.model.tie_word_embeddings && p_ > 1)
      for (int dp = 0; dp < d_; ++dp)
        for (int tp = 0; tp < t_; ++tp) {
          const int first = rank_of(tp, dp, 0), last = rank_of(tp, dp, p_ - 1);
          const int id = add_group(CommDim::dp, "emb", {first, last});
          emb_group_[first] = emb_group_[last] = id;
        }
  }

  // A data-parallel group split at node boundaries: the members on each node
  // (reduce-scatter, then all-gather), and the i-th member of every node (the
  // all-reduce in between). The scenario checks that nodes hold equal shares.
  void make_hierarchical_groups(const std::vector<int>& ranks) {
    const int gpus_per_node = s_.cluster.topology.gpus_per_node;
    std::vector<std::vector<int>> nodes;
    for (int r : ranks) {
      if (nodes.empty() || nodes.back().front() / gpus_per_node != r / gpus_per_node) nodes.emplace_back();
      nodes.back().push_back(r);
    }
    for (const std::vector<int>& members : nodes) {
      if (members.size() < 2) continue;
      const int id = add_group(CommDim::dp, "dpnode", members);
      for (int r : members) dp_intra_group_[r] = id;
    }
    if (nodes.size() < 2) return;
    for (size_t i = 0; i < nodes.front().size(); ++i) {
      std::vector<int> across;
      for (const std::vector<int>& members : nodes) across.push_back(members[i]);
      const int id = add_group(CommDim::dp, "dpacross", across);
      for (int r : across) dp_inter_group_[r] = id;
    }
  }

  int add(Task task) {
    task.id = static_cast<int>(prog_.tasks.size());
    prog_.rank_tasks[task.rank].push_back(task.id);
    prog_.tasks.push_back(std::move(task));
    return prog_.tasks.back().id;
  }

  std::vector<Unit> units_of_stage(int stage) const {
    std::vector<Unit> units;
    if (stage == 0) units.push_back({&w_.embedding, -1});
    for (int l = first_layer_[stage]; l < first_layer_[stage + 1]; ++l) units.push_back({&w_.layer, l});
    if (stage == stages_ - 1) units.push_back({&w_.head, -1});
    return units;
  }

  static std::vector<Unit> reversed(std::vector<Unit> units) { return {units.rbegin(), units.rend()}; }

  static std::string layer_range(const std::vector<Unit>& units, int& begin, int& end) {
    begin = 1 << 30, end = -1;
    for (const Unit& u : units)
      if (u.layer >= 0) begin = std::min(begin, u.layer), end = std::max(end, u.layer + 1);
    if (end < 0) begin = end = 0;
    return " L" + std::to_string(begin) + "-" + std::to_string(end - 1);
  }

  // Compute task for `units` (in execution order) running `passes`, followed
  // by the pass's TP collectives on the compute stream, aggregated per size.
  // Returns the id of the last task: the one after which outputs are ready.
  int emit_compute(int rank, TaskKind kind, int stage, int mb, const std::vector<Unit>& units,
                   const std::vector<PassOf>& passes, const std::vector<int>& deps, bool whole_stage) {
    Task task;
    task.rank = rank;
    task.kind = kind;
    task.stage = stage;
    task.microbatch = mb;
    task.deps = deps;
    const std::string range = layer_range(units, task.layer_begin, task.layer_end);
    const std::string work_key = to_string(kind) + " s" + std::to_string(stage) + (whole_stage ? "" : range);
    auto [it, inserted] = work_index_.try_emplace(work_key, static_cast<int>(prog_.works.size()));
    std::map<std::pair<TaskKind, double>, int> tp_counts;
    Work work{work_key, {}};
    for (const Unit& unit : units)
      for (PassOf pass : passes) {
        const Pass& p = unit.work->*pass;
        if (inserted) work.ops.insert(work.ops.end(), p.ops.begin(), p.ops.end());
        for (const TpCollectives& c : p.tp) tp_counts[{c.kind, c.bytes}] += c.count;
      }
    if (inserted) prog_.works.push_back(std::move(work));
    task.work = it->second;
    task.name = "s" + std::to_string(stage) + " " + to_string(kind) + (mb >= 0 ? " mb" + std::to_string(mb) : "") +
                (whole_stage ? "" : range);
    int last = add(std::move(task));
    for (const auto& [key, count] : tp_counts) {
      if (count == 0) continue;
      Task c;
      c.rank = rank;
      c.kind = key.first;
      c.stage = stage;
      c.microbatch = mb;
      c.dim = CommDim::tp;
      c.group = tp_group_[rank];
      c.count = count;
      c.bytes = key.second;
      c.deps = {last};
      c.name = to_lower(to_string(c.kind)) + " " + prog_.groups[c.group].name + " " + format_bytes(c.bytes) +
               (count > 1 ? " x" + std::to_string(count) : "");
      last = add(std::move(c));
    }
    return last;
  }

  static std::string to_lower(std::string text) {
    for (char& ch : text) ch = static_cast<char>(std::tolower(ch));
    return text;
  }

  int emit_collective(int rank, Stream stream, TaskKind kind, int group, double bytes, std::vector<int> deps,
                      int stage = -1) {
    Task c;
    c.rank = rank;
    c.stream = stream;
    c.kind = kind;
    c.stage = stage;
    c.dim = prog_.groups[group].dim;
    c.group = group;
    c.bytes = bytes;
    c.deps = std::move(deps);
    const Group& g = prog_.groups[group];
    const std::string verb = g.servers == 0 ? to_lower(to_string(kind)) : kind == TaskKind::REDUCESCATTER ? "push" : "pull";
    c.name = verb + " " + g.name + " " + format_bytes(bytes) +
             (kind == TaskKind::ALLREDUCE && g.allreduce_algorithm ? " " + to_string(*g.allreduce_algorithm) : "");
    return add(std::move(c));
  }

  // Key of a transfer, as seen by the receiving rank: one digit per field, so
  // distinct for every transfer (and below 2^63 within sim/base/limits.hpp's task limit).
  uint64_t transfer_key(int receiver, int stage, int mb, bool backward) const {
    return ((static_cast<uint64_t>(receiver) * stages_ + stage) * m_ + mb) * 2 + backward;
  }

  // Megatron blocks the compute stream on pipeline sends unless
  // --overlap-p2p-communication is set.
  Stream p2p_stream() const { return s_.parallel.overlap_p2p_communication ? Stream::p2p : Stream::compute; }

  void emit_send(int rank, int to_stage, int from_stage, int mb, bool backward, int ready) {
    Task t;
    t.rank = rank;
    t.stream = p2p_stream();
    t.kind = TaskKind::SEND;
    t.stage = from_stage;
    t.microbatch = mb;
    t.dim = CommDim::pp;
    t.peer = rank_of_stage(rank, to_stage);
    t.bytes = w_.stage_boundary_bytes;
    t.deps = {ready};
    t.name = std::string(backward ? "send grad" : "send act") + " s" + std::to_string(from_stage) + "->s" +
             std::to_string(to_stage) + " mb" + std::to_string(mb) + " " + format_bytes(t.bytes);
    sends_[transfer_key(t.peer, to_stage, mb, backward)] = add(std::move(t));
  }

  // A receive is pre-posted and passive: it spans its send's transfer, on the p2p stream.
  int emit_recv(int rank, int stage, int from_stage, int mb, bool backward) {
    Task t;
    t.rank = rank;
    t.stream = Stream::p2p;
    t.kind = TaskKind::RECV;
    t.stage = stage;
    t.microbatch = mb;
    t.dim = CommDim::pp;
    t.peer = rank_of_stage(rank, from_stage);
    t.bytes = w_.stage_boundary_bytes;
    t.name = std::string(backward ? "recv grad" : "recv act") + " s" + std::to_string(from_stage) + "->s" +
             std::to_string(stage) + " mb" + std::to_string(mb);
    const int id = add(std::move(t));
    pending_recvs_.emplace(transfer_key(rank, stage, mb, backward), id);
    return id;
  }

  double parameters(const std::vector<Unit>& units) const {
    double total = 0;
    for (const Unit& u : units) total += u.work->parameters;
    return total;
  }

  // A stage's gradients in buckets, in the order the backward produces them.
  std::vector<std::vector<Unit>> gradient_buckets(int stage) const {
    std::vector<std::vector<Unit>> buckets(1);
    double bytes = 0;
    for (const Unit& unit : reversed(units_of_stage(stage))) {
      if (bytes >= s_.parallel.dp_bucket_bytes) buckets.emplace_back(), bytes = 0;
      buckets.back().push_back(unit);
      bytes += unit.work->parameters * w_.grad_bytes_per_parameter;
    }
    return buckets;
  }

  void emit_grad_sync(int rank, int stage, const std::vector<Unit>& bucket, int after, std::vector<int>& grad_syncs) {
    bucket_params_.push_back(parameters(bucket));
    if (d_ > 1) grad_syncs.push_back(emit_gradient_reduction(rank, stage, parameters(bucket) * w_.grad_bytes_per_parameter, after));
  }

  // Reduces `bytes` of gradients across data-parallel ranks as dp_sync says,
  // compressed first when asked; returns the last communication task.
  // Decompression waits for the end of the compute stream (emit_decompression).
  int emit_gradient_reduction(int rank, int stage, double bytes, int after) {
    const double ratio = s_.parallel.dp_compression_ratio;
    if (ratio > 1) after = emit_codec(rank, TaskKind::COMPRESS, stage, bytes, ratio, after);
    const double wire_bytes = bytes / ratio;
    int last = after;
    if (s_.parallel.dp_sync == DpSync::hierarchical) {
      const int intra = dp_intra_group_[rank], inter = dp_inter_group_[rank];
      const double shards = intra >= 0 ? static_cast<double>(prog_.groups[intra].ranks.size()) : 1;
      if (intra >= 0) last = emit_collective(rank, Stream::dp, TaskKind::REDUCESCATTER, intra, wire_bytes, {last}, stage);
      if (inter >= 0) last = emit_collective(rank, Stream::dp, TaskKind::ALLREDUCE, inter, wire_bytes / shards, {last}, stage);
      if (intra >= 0) last = emit_collective(rank, Stream::dp, TaskKind::ALLGATHER, intra, wire_bytes, {last}, stage);
    } else if (prog_.servers > 0) {
      last = emit_collective(rank, Stream::dp, TaskKind::REDUCESCATTER, dp_group_[rank], wire_bytes, {last}, stage);
      last = emit_collective(rank, Stream::dp, TaskKind::ALLGATHER, dp_group_[rank], wire_bytes, {last}, stage);
    } else {
      const TaskKind reduce = zero_ == 0 ? TaskKind::ALLREDUCE : TaskKind::REDUCESCATTER;
      last = emit_collective(rank, Stream::dp, reduce, dp_group_[rank], wire_bytes, {last}, stage);
    }
    if (ratio > 1) pending_decompression_.push_back({stage, bytes, last});
    return last;
  }

  // Gradient compression or decompression on the compute stream, at the
  // scenario's cost per byte of uncompressed gradient.
  int emit_codec(int rank, TaskKind kind, int stage, double bytes, double ratio, int after) {
    const std::string name = to_lower(to_string(kind)) + " " + format_bytes(bytes) + " /" + format(ratio);
    auto [it, inserted] = work_index_.try_emplace(name, static_cast<int>(prog_.works.size()));
    if (inserted) prog_.works.push_back({name, {}, bytes * s_.parallel.dp_compression_seconds_per_byte});
    Task t;
    t.rank = rank;
    t.kind = kind;
    t.stage = stage;
    t.work = it->second;
    t.deps = {after};
    t.name = name;
    return add(std::move(t));
  }

  static std::string format(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
  }

  // Each compressed reduction's decompression, once the backward is done; the
  // optimizer waits for them.
  void emit_decompression(int rank, std::vector<int>& grad_syncs) {
    for (const auto& [stage, bytes, reduced] : pending_decompression_)
      grad_syncs.push_back(emit_codec(rank, TaskKind::DECOMPRESS, stage, bytes, s_.parallel.dp_compression_ratio, reduced));
    pending_decompression_.clear();
  }

  // The last backward of a chunk, split where the gradient buckets close, each
  // bucket's data-parallel reduction issued as soon as its gradients exist
  // (Megatron's --overlap-grad-reduce).
  void emit_bucketed_backward(int rank, TaskKind kind, int stage, int mb, const std::vector<PassOf>& passes,
                              std::vector<int> deps, std::vector<int>& grad_syncs, int& last) {
    const auto buckets = gradient_buckets(stage);
    for (const std::vector<Unit>& bucket : buckets) {
      last = emit_compute(rank, kind, stage, mb, bucket, passes, deps, buckets.size() == 1);
      deps.clear();
      emit_grad_sync(rank, stage, bucket, last, grad_syncs);
    }
  }

  void emit_rank(int rank, const std::vector<PipelineAction>& actions) {
    const int pp = prog_.coords[rank].pp;
    const bool split_backward = s_.parallel.schedule == ScheduleKind::zb_h1;
    const std::vector<PassOf> backward_passes =
        split_backward ? std::vector<PassOf>{&UnitWork::backward_input}
                       : std::vector<PassOf>{&UnitWork::backward_input, &UnitWork::backward_weight};
    // The last action that produces each chunk's weight gradients.
    std::map<int, size_t> last_grad_action;
    for (size_t i = 0; i < actions.size(); ++i)
      if (actions[i].kind == (split_backward ? TaskKind::W : TaskKind::B))
        last_grad_action[actions[i].chunk] = i;

    // ZeRO-3 reduces gradients after every backward instead.
    const bool overlap_grad_reduce = zero_ < 3 && s_.parallel.overlap_grad_reduce;
    std::vector<int> grad_syncs, compute_ids;
    bucket_params_.clear();
    int last = -1;
    for (size_t i = 0; i < actions.size(); ++i) {
      const PipelineAction& a = actions[i];
      const int stage = a.chunk * p_ + pp;
      const std::vector<Unit> units = units_of_stage(stage);
      std::vector<int> deps;
      // FSDP / ZeRO-3 gathers a chunk's parameters before each pass, prefetched
      // while the action before runs.
      if (zero_ == 3 && d_ > 1 && a.kind != TaskKind::W) {
        std::vector<int> after;
        if (compute_ids.size() >= 2) after.push_back(compute_ids[compute_ids.size() - 2]);
        deps.push_back(emit_collective(rank, Stream::dp_gather, TaskKind::ALLGATHER, dp_group_[rank],
                                       parameters(units) * 2, after, stage));
      }
      const bool last_grads = overlap_grad_reduce && last_grad_action.at(a.chunk) == i;
      switch (a.kind) {
        case TaskKind::F:
          if (stage > 0) deps.push_back(emit_recv(rank, stage, stage - 1, a.microbatch, false));
          last = emit_compute(rank, TaskKind::F, stage, a.microbatch, units, {&UnitWork::forward}, deps, true);
          if (stage < stages_ - 1) emit_send(rank, stage + 1, stage, a.microbatch, false, last);
          break;
        case TaskKind::B:
          if (s_.training.recompute != Recompute::none) {
            last = emit_compute(rank, TaskKind::R, stage, a.microbatch, units, {&UnitWork::recompute}, deps, true);
            deps.clear();
          }
          if (stage < stages_ - 1) deps.push_back(emit_recv(rank, stage, stage + 1, a.microbatch, true));
          if (last_grads && !split_backward)
            emit_bucketed_backward(rank, TaskKind::B, stage, a.microbatch, backward_passes, deps, grad_syncs, last);
          else
            last = emit_compute(rank, TaskKind::B, stage, a.microbatch, reversed(units), backward_passes, deps, true);
          if (stage > 0) emit_send(rank, stage - 1, stage, a.microbatch, true, last);
          if (zero_ == 3 && d_ > 1)
            grad_syncs.push_back(emit_gradient_reduction(rank, stage, parameters(units) * w_.grad_bytes_per_parameter, last));
          break;
        case TaskKind::W:
          if (last_grads)
            emit_bucketed_backward(rank, TaskKind::W, stage, a.microbatch, {&UnitWork::backward_weight}, deps,
                                   grad_syncs, last);
          else
            last = emit_compute(rank, TaskKind::W, stage, a.microbatch, reversed(units),
                                {&UnitWork::backward_weight}, deps, true);
          break;
      }
      compute_ids.push_back(last);
    }
    if (!overlap_grad_reduce && zero_ < 3)
      for (int chunk = v_ - 1; chunk >= 0; --chunk) {
        const int stage = chunk * p_ + pp;
        for (const std::vector<Unit>& bucket : gradient_buckets(stage)) emit_grad_sync(rank, stage, bucket, last, grad_syncs);
      }
    if (emb_group_[rank] >= 0)
      grad_syncs.push_back(emit_collective(rank, Stream::dp, TaskKind::ALLREDUCE, emb_group_[rank],
                                           w_.embedding.parameters * w_.grad_bytes_per_parameter, {last}));
    emit_decompression(rank, grad_syncs);
    emit_optimizer(rank, grad_syncs);
  }

  void emit_optimizer(int rank, std::vector<int> grad_syncs) {
    double local_parameters = 0;
    for (int chunk = 0; chunk < v_; ++chunk) local_parameters += parameters(units_of_stage(chunk * p_ + prog_.coords[rank].pp));
    const bool sharded = zero_ >= 1 && d_ > 1;
    const std::string key = "optimizer " + std::to_string(local_parameters / (sharded ? d_ : 1));
    auto [it, inserted] = work_index_.try_emplace(key, static_cast<int>(prog_.works.size()));
    if (inserted) prog_.works.push_back({"optimizer", {optimizer_op(local_parameters / (sharded ? d_ : 1))}});
    Task opt;
    opt.rank = rank;
    opt.kind = TaskKind::OPT;
    opt.work = it->second;
    opt.deps = std::move(grad_syncs);
    opt.name = "optimizer";
    const int id = add(std::move(opt));
    // The distributed optimizer (ZeRO-1/2) all-gathers the updated bf16 weights, bucket by bucket.
    if (sharded && zero_ < 3)
      for (double bucket : bucket_params_)
        emit_collective(rank, Stream::dp_gather, TaskKind::ALLGATHER, dp_group_[rank], bucket * 2, {id});
  }

  const Scenario& s_;
  const Workload& w_;
  const int t_, p_, d_, v_, m_, stages_, zero_;
  std::vector<int> first_layer_ = {0};  // of each model stage, and the layer count at the end
  Program prog_;
  std::vector<int> tp_group_, dp_group_, dp_intra_group_, dp_inter_group_, emb_group_;
  struct Decompression {
    int stage;
    double bytes;
    int reduced;  // the reduction it follows
  };
  std::vector<Decompression> pending_decompression_;
  std::unordered_map<std::string, int> work_index_;
  std::unordered_map<uint64_t, int> sends_;
  std::unordered_map<uint64_t, int> pending_recvs_;
  std::vector<double> bucket_params_;
};

}  // namespace

Program build_program(const Scenario& scenario, const Workload& workload) {
  return ProgramBuilder(scenario, workload).build();
}

}  // namespace simtrain
