#include "sim/engine/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/collective_plan_cache.hpp"
#include "sim/engine/failure_injector.hpp"
#include "sim/engine/host_transfers.hpp"
#include "sim/engine/lane_flows.hpp"
#include "sim/engine/replay_lanes.hpp"
#include "sim/engine/replay_platform.hpp"
#include "sim/engine/replica_classes.hpp"
#include "sim/engine/simgrid_setup.hpp"
#include "sim/engine/simulated_tasks.hpp"
#include "sim/engine/timeline_bytes.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

// Thrown in the actor that stopped the job, to end it once every other actor is killed.
struct JobStopped {};

// Work no step finishes (10^11 s at host_speed_flops): an execution that lasts until cancelled.
constexpr double kEndlessFlops = 1e20;

// A message from the replay's child process that names the phase it begins
// (ReplayOptions::on_phase); the others count tasks.
constexpr std::string_view kPhaseMessage = "phase ";

// The program, once the fabric is known to have a host for each of its parameter servers.
const Program& with_servers_in(const Program& program, const Fabric& fabric) {
  if (fabric.num_hosts() < program.world_size + program.servers)
    throw std::invalid_argument("the fabric lacks the Program's parameter servers");
  return program;
}

// Each link's bandwidth, with the options' degradations.
std::vector<double> link_capacities(const Fabric& fabric, const ReplayOptions& options) {
  std::vector<double> bytes_per_second;
  for (const LinkSpec& spec : fabric.links()) {
    auto factor = options.link_bandwidth_factors.find(spec.name);
    bytes_per_second.push_back(spec.bytes_per_second *
                               (factor == options.link_bandwidth_factors.end() ? 1.0 : factor->second));
  }
  return bytes_per_second;
}

// Links that are degraded or fail during the step.
std::set<int> altered_links(const Fabric& fabric, const ReplayOptions& options) {
  std::set<int> altered;
  for (size_t i = 0; i < fabric.links().size(); ++i) {
    const std::string& name = fabric.links()[i].name;
    if (options.link_bandwidth_factors.count(name)) altered.insert(static_cast<int>(i));
    for (const FailureEvent& e : options.failures)
      if (e.rank < 0 && e.link == name) altered.insert(static_cast<int>(i));
  }
  return altered;
}

class Replay {
public:
  Replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
         const ReplayOptions& options, const ProgressSender& send_progress)
      : prog_(with_servers_in(program, fabric)), fabric_(fabric), work_seconds_(work_seconds), options_(options),
        send_progress_(send_progress),
        lanes_((say_phase("setting up: lanes"), Lanes(prog_, options_.gpu_speed_factors))),
        plans_(fabric_, options_.allreduce_algorithm), link_bytes_per_second_(link_capacities(fabric_, options_)),
        altered_links_(altered_links(fabric_, options_)),
        flows_((say_phase("setting up: flows"),
                LaneFlows(prog_, fabric_, lanes_, plans_, altered_links_, !options_.flow_level))),
        classes_((say_phase("setting up: replica classes"),
                  ReplicaClasses(prog_, fabric_, lanes_, flows_, link_bytes_per_second_, altered_links_, options_))),
        simulated_(prog_, [&](int rank) { return classes_.simulated(rank) && lanes_.is_representative(rank); }),
        timing_(simulated_, TaskTiming{}), done_(simulated_, 0), posted_(simulated_, 0), transferred_(simulated_, 0),
        receive_of_send_(simulated_, -1) {
    if (options_.host.simulated()) {
      launched_at_ = BySimulatedTask<double>(simulated_, -1.0);
      hosts_.resize(prog_.world_size);
      host_released_ = BySimulatedTask<char>(simulated_, 0);
      host_returns_at_ = BySimulatedTask<double>(simulated_, 0.0);
      host_wait_seconds_.assign(prog_.world_size, 0.0);
      host_done_at_.assign(prog_.world_size, -1.0);
    }
    find_receives();
  }

  Timeline run() {
    sg4::Engine engine("simtrain");
    configure_simgrid();
    std::vector<double> capacities = link_bytes_per_second_;
    for (size_t l = 0; l < capacities.size(); ++l) capacities[l] *= classes_.capacity_scale(static_cast<int>(l));
    say_phase("setting up: SimGrid platform");
    platform_ = build_replay_platform(fabric_, needed_gpus(), prog_.servers, platform_routes(), capacities);
    std::vector<sg4::Host*> destinations;
    for (const auto& [src, dst] : platform_.route_hosts) destinations.push_back(dst);
    transfers_.emplace(destinations);
    for (size_t l = 0; l < lanes_.size(); ++l)
      lane_sync_.push_back({sg4::Mutex::create(), sg4::ConditionVariable::create()});
    say_phase("setting up: actors");
    start_actors();
    start_failure_injector();
    say_phase("replaying the step");
    engine.run();
    return finish();
  }

  // By rank: the rank whose tasks ran for its own, position by position (stand_in).
  std::vector<int> timing_sources() const {
    std::vector<int> source(prog_.world_size);
    for (int r = 0; r < prog_.world_size; ++r)
      source[r] = lanes_.lane_of(classes_.representative_of_rank()[r]).members[0];
    return source;
  }
  // The times of the tasks of timing_sources(), source after source in rank order, each list in order.
  const std::vector<TaskTiming>& source_timings() const { return timing_.values(); }
  // Where hosts are simulated (else empty): when each source's host began
  // launching each of its tasks, laid out as source_timings() (-1: not
  // launched), and by rank when a source's host was done.
  const std::vector<double>& source_launches() const { return launched_at_.values(); }
  const std::vector<double>& host_done_seconds() const { return host_done_at_; }

private:
  // What the actors of a lane wait on for each other's tasks.
  struct LaneSync {
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr changed;
    int waiting = 0;  // actors blocked on `changed`: a raise with none wakes nobody
  };

  // An actor running paired transfers (start_transfer), handed its SEND.
  struct Sender {
    sg4::SemaphorePtr handed;
    Task send;
  };

  // The tasks with network work (LaneFlows::comm_tasks) that actors run, in id order.
  std::vector<int> simulated_lane_comms() const {
    std::vector<int> ids;
    for (int id : flows_.comm_tasks())
      if (classes_.simulated(prog_.tasks.rank_of(id))) ids.push_back(id);
    return ids;
  }

  // By SEND that an actor runs: its RECV, found on its peer's list.
  void find_receives() {
    std::set<int> peers;
    for (int id : simulated_lane_comms())
      if (const Task send = prog_.tasks[id]; send.kind == TaskKind::SEND) peers.insert(send.peer);
    for (int peer : peers)
      for (int id : prog_.rank_tasks(peer))
        if (prog_.tasks[id].kind == TaskKind::RECV)
          if (const int send = prog_.deps(id).front(); simulated_.contains(send)) receive_of_send_[send] = id;
  }

  // Calls on_flow(flow index) for each flow an actor sends.
  template <typename OnFlow>
  void for_each_simulated_flow(OnFlow&& on_flow) const {
    for (int id : simulated_lane_comms()) {
      const LaneComm& comm = *flows_.comm(id);
      for (uint32_t f = comm.first_flow; f < comm.first_flow + comm.flow_count; ++f) on_flow(f);
    }
  }

  // GPUs that run actors or receive their flows.
  std::vector<char> needed_gpus() const {
    std::vector<char> needed(prog_.world_size, 0);
    for (int r = 0; r < prog_.world_size; ++r) needed[r] = classes_.simulated(r);
    for_each_simulated_flow([&](uint32_t f) {
      for (int host : {flows_.all()[f].src, flows_.all()[f].dst})
        if (host < prog_.world_size) needed[host] = 1;
    });
    return needed;
  }

  // One route per distinct path and weighting of the transfers actors send.
  // A lane task's flows over the same weighted links, of the same bytes and
  // latency, are one transfer over those links with their repeats times the
  // flows: max-min sharing gives each such flow the same rate, and one flow
  // counted m times on every link takes what m of them take (an all-to-all's
  // flows to the replicas of one colour are so, 63 of them to 2 or 3).
  std::vector<PlatformRoute> platform_routes() {
    std::map<PlatformRoute, int> index_of;
    std::vector<PlatformRoute> routes;
    auto route_index = [&](PlatformRoute&& route) {
      auto [it, added] = index_of.try_emplace(route, static_cast<int>(routes.size()));
      if (added) routes.push_back(std::move(route));
      return it->second;
    };
    for (int id : simulated_lane_comms()) {
      const LaneComm* comm = flows_.comm(id);
      if (comm->flow_count == 0) continue;
      // Flows alike: their weighted route, latency, bytes and rate bound; by
      // key, the first such flow and how many, in the order first seen.
      using Key = std::tuple<std::vector<WeightedLink>, double, double, double>;
      std::map<Key, std::pair<uint32_t, int>> alike;
      std::vector<std::map<Key, std::pair<uint32_t, int>>::iterator> order;
      for (uint32_t f = comm->first_flow; f < comm->first_flow + comm->flow_count; ++f) {
        const LaneFlow& flow = flows_.all()[f];
        const std::span<const WeightedLink> weighted = classes_.weighted_route(f);
        double latency_seconds = 0;
        for (int link : flows_.route(f)) latency_seconds += fabric_.links()[link].latency_seconds;
        auto [it, added] = alike.try_emplace(Key{{weighted.begin(), weighted.end()}, latency_seconds, flow.bytes,
                                                 comm->max_bytes_per_second},
                                             f, 0);
        it->second.second += 1;
        if (added) order.push_back(it);
      }
      const auto begin = static_cast<uint32_t>(sends_.size());
      for (const auto& it : order) {
        const auto& [links, latency_seconds, bytes, max_bytes_per_second] = it->first;
        const auto [first, count] = it->second;
        std::vector<WeightedLink> repeated = links;
        for (WeightedLink& w : repeated) w.repeats *= count;
        const LaneFlow& flow = flows_.all()[first];
        const int route = route_index(PlatformRoute{flow.src, flow.dst, std::move(repeated), latency_seconds});
        sends_.push_back({route, bytes, max_bytes_per_second});
      }
      sends_of_comm_[comm->first_flow] = {begin, static_cast<uint32_t>(sends_.size())};
    }
    return routes;
  }

  // An actor per simulated lane and stream, on the representative's host; a
  // barrier per collective group that spans lanes, for its simulated ranks.
  void start_actors() {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      const int rep = lanes_[l].members[0];
      if (!classes_.simulated(rep)) continue;
      for (TaskQueue& queue : task_queues(prog_, rep)) {
        // Read once here: an actor reads each of its tasks several times. A
        // passive RECV is left out: it completes with its SEND.
        std::vector<Task> tasks;
        for (int id : queue.tasks)
          if (const Task task = prog_.tasks[id]; !is_passive_receive(task)) tasks.push_back(task);
        if (tasks.empty()) continue;
        actor_tasks_ += tasks.size();
        const std::string name = "rank" + std::to_string(rep) + "-" + to_string(queue.stream);
        sg4::Actor::create(name, platform_.hosts[rep], [this, tasks = std::move(tasks)] {
          try {
            for (size_t i = 0; i < tasks.size();) {
              if (!is_paired(tasks[i])) {
                execute(tasks[i++]);
                continue;
              }
              size_t end = i + 1;
              while (end < tasks.size() && tasks[end].joins_batch) ++end;
              run_batch(std::span<const Task>(tasks).subspan(i, end - i));
              i = end;
            }
            lane_done();
          } catch (const JobStopped&) {
          }
        });
        lanes_running_ += 1;
      }
    }
    for (const Group& g : prog_.groups) {
      const auto arriving = std::count_if(g.ranks.begin(), g.ranks.end(), [&](int r) { return classes_.simulated(r); });
      if (lanes_.spans_lanes(g) && lanes_.is_representative(g.ranks.front()) && arriving > 0)
        barriers_[g.id] = sg4::Barrier::create(static_cast<unsigned>(arriving));
    }
  }

  // A rank's host thread, in closed form: it launches the rank's tasks in
  // program order, each compute task's kernels in its work's launch time (or,
  // where the work synchronises, until the compute's closed form returns it),
  // each collective or transfer in one call. It waits for nothing else, so
  // its launch times are a running sum, taken as far as an actor needs them:
  // no actor, and no SimGrid activity, per launch.
  struct Host {
    size_t next = 0;          // the next of the rank's tasks to launch
    double seconds = 0;       // when it begins launching it
    int awaited_sync = -1;    // a synchronising task launched last: `seconds` is when it returns
  };

  // Whether `host` waits on no synchronising task, or on one the GPU has
  // released: then it goes on from when that returns.
  bool returned_from_sync(Host& host) {
    if (host.awaited_sync < 0) return true;
    if (!host_released_[host.awaited_sync]) return false;
    host.seconds = host_returns_at_[host.awaited_sync];
    host.awaited_sync = -1;
    return true;
  }

  // Launches `rank`'s tasks until `id` is launched (waiting, if `may_wait`,
  // for a synchronising task before it to return; else stopping there).
  void launch_until(int rank, int id, bool may_wait) {
    Host& host = hosts_[rank];
    const RankTaskIds ids = prog_.rank_tasks(rank);
    while (launched_at_[id] < 0 && host.next < ids.size()) {
      if (host.awaited_sync >= 0) {
        if (!may_wait && !host_released_[host.awaited_sync]) return;
        wait_until(host_released_, host.awaited_sync);
        returned_from_sync(host);  // (or another stream's actor took the host on meanwhile)
        continue;
      }
      const Task& task = prog_.tasks[ids[host.next++]];
      if (is_passive_receive(task)) continue;  // posted with its SEND
      launched_at_[task.id] = host.seconds;
      if (!is_compute(task.kind))
        host.seconds += options_.host.communication_launch_seconds;
      else if (options_.host.works[task.work].syncs > 0)
        host.awaited_sync = task.id;
      else
        host.seconds += options_.host.works[task.work].launch_seconds;
    }
  }

  // Waits for the host to launch `task`, when hosts are simulated.
  void wait_for_launch(const Task& task) {
    if (!options_.host.simulated()) return;
    launch_until(task.rank, task.id, true);
    if (launched_at_[task.id] > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(launched_at_[task.id]);
  }

  // Launches what each simulated host launched before the job ended (every
  // synchronising task that ran has returned); by rank, when its host had
  // launched its last task, -1 where the job stopped first.
  void finish_hosts() {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      const int rank = lanes_[l].members[0];
      if (!classes_.simulated(rank)) continue;
      bool all_launched = true;
      for (int id : prog_.rank_tasks(rank)) {
        if (is_passive_receive(prog_.tasks[id])) continue;
        launch_until(rank, id, false);
        if (stopped_ && launched_at_[id] > stop_seconds_) launched_at_[id] = -1;
        all_launched = all_launched && launched_at_[id] >= 0;
      }
      Host& host = hosts_[rank];
      const bool done = all_launched && returned_from_sync(host) && !(stopped_ && host.seconds > stop_seconds_);
      host_done_at_[rank] = done ? host.seconds : -1.0;
    }
  }

  // The compute stream, free since `gpu_free`, waits for the host to launch
  // `task`'s kernels: as long as the closed form of its launches makes the
  // GPU wait beyond its own time (host_lane.hpp). Hands the host its return.
  void wait_for_kernels(const Task& task, double gpu_free, double gpu_seconds) {
    wait_for_launch(task);
    if (!options_.host.simulated()) return;
    const HostWork& launches = options_.host.works[task.work];
    const LaunchedWork launched =
        launch_work(launched_at_[task.id], gpu_free, gpu_seconds, launches, options_.host.sync_seconds);
    if (launches.syncs > 0) {
      host_returns_at_[task.id] = launched.host_end;
      raise(host_released_, task.id);
    }
    const double waited = launched.gpu_end - gpu_free - gpu_seconds;
    if (waited <= 0) return;
    host_wait_seconds_[task.rank] += waited;
    sg4::this_actor::sleep_until(launched.gpu_end - gpu_seconds);
  }

  // A daemon: the job ends when its tasks do, whatever failures are still to come.
  void start_failure_injector() {
    if (options_.failures.empty()) return;
    auto stop = [this](const std::string& reason) { stop_job(reason); };
    std::vector<double> nominal;  // what a link's degradation is a fraction of, on this platform
    for (size_t l = 0; l < fabric_.links().size(); ++l)
      nominal.push_back(fabric_.links()[l].bytes_per_second * classes_.capacity_scale(static_cast<int>(l)));
    FailureInjector injector(options_.failures, platform_, fabric_, std::move(nominal), stop);
    sg4::Actor::create("failures", platform_.controller, std::move(injector))->daemonize();
  }

  // The job cannot go on: record why (the first reason) and end every other actor.
  void stop_job(const std::string& reason) {
    if (!stopped_) {
      stopped_ = true;
      stop_reason_ = reason;
      stop_seconds_ = sg4::Engine::get_clock();
    }
    sg4::Actor::kill_all();
  }

  bool is_passive_receive(const Task& task) const {
    return task.kind == TaskKind::RECV && !is_posted_in_order(task);
  }
  // A transfer of a batch posted in order on both sides (sim/scenario: P2pCommunication::paired).
  bool is_paired(const Task& task) const {
    if (task.kind == TaskKind::RECV) return !is_passive_receive(task);
    return task.kind == TaskKind::SEND && receive_of_send_[task.id] >= 0 &&
           !is_passive_receive(prog_.tasks[receive_of_send_[task.id]]);
  }

  // The simulated task whose end `id`'s end is: a passive RECV ends with its SEND.
  int ran_as(int id) const {
    id = classes_.stand_in(id);
    return is_passive_receive(prog_.tasks[id]) ? classes_.stand_in(prog_.deps(id).front()) : id;
  }

  // Waits until `flags[id]` is set (by raise), `id` a simulated task.
  // SimGrid runs one actor at a time and switches only in its calls, so a
  // flag read between them is current; the mutex only pairs with the wait.
  void wait_until(const BySimulatedTask<char>& flags, int id) {
    if (flags[id]) return;
    LaneSync& lane = lane_sync_of_task(id);
    lane.waiting += 1;
    std::unique_lock lock(*lane.mutex);
    while (!flags[id]) lane.changed->wait(lock);
    lane.waiting -= 1;
  }

  // Sets `flags[id]`; wakes the lane's waiters only where there are some,
  // which spares the hot path (a raise per task) three SimGrid calls.
  void raise(BySimulatedTask<char>& flags, int id) {
    flags[id] = 1;
    if (LaneSync& lane = lane_sync_of_task(id); lane.waiting > 0) lane.changed->notify_all();
  }

  void wait_for(int id) { wait_until(done_, ran_as(id)); }

  void mark_done(const Task& task) {
    raise(done_, task.id);
    simulated_tasks_ += 1;
    tasks_stood_for_ += lanes_.lane_of(task.rank).members.size() * classes_.class_size(task.rank) *
                        (task.kind == TaskKind::SEND && !is_paired(task) ? 2 : 1);
    if ((simulated_tasks_ & 255) == 0) report_progress();
  }

  LaneSync& lane_sync_of_task(int id) { return lane_sync_[lanes_.lane_of_rank(prog_.tasks.rank_of(id))]; }

  void say_phase(const std::string& phase) const { send_progress_(std::string(kPhaseMessage) + phase); }

  void report_progress() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ < std::chrono::milliseconds(250)) return;
    last_progress_ = now;
    char message[96];
    std::snprintf(message, sizeof message, "%.17g %llu %llu", sg4::Engine::get_clock(),
                  static_cast<unsigned long long>(simulated_tasks_), static_cast<unsigned long long>(actor_tasks_));
    send_progress_(message);
  }

  void send_flows(const LaneComm& comm) {
    std::vector<HostTransfer> transfers;
    const auto found = sends_of_comm_.find(comm.first_flow);
    const auto [begin, end] = found == sends_of_comm_.end() ? std::pair<uint32_t, uint32_t>{0, 0} : found->second;
    for (uint32_t i = begin; i < end; ++i) {
      const auto& [src, dst] = platform_.route_hosts[sends_[i].route];
      transfers.push_back({src, dst, static_cast<uint64_t>(sends_[i].bytes), sends_[i].max_bytes_per_second});
    }
    const std::vector<sg4::CommPtr> comms = transfers_->start(transfers);
    flows_sent_ += comms.size();
    try {
      sg4::Comm::wait_all(comms);
    } catch (const simgrid::NetworkFailureException&) {
      stop_job("a link on the path of a transfer went down");
      throw JobStopped{};
    }
  }

  // The barrier of a representative's collective whose group spans lanes;
  // null when one lane drives the collective alone.
  sg4::Barrier* arrival_barrier(const Task& task) {
    auto barrier = barriers_.find(task.group);
    return barrier == barriers_.end() ? nullptr : barrier->second.get();
  }

  // Every rank of the group has arrived. A group that spans lanes ends when
  // the slowest lane's flows do.
  void run_collective(const Task& task) {
    if (options_.free_communication) return;
    // Gloo's all-reduce runs on the hosts (copies and CPU sums): it takes no SMs.
    const bool on_host = prog_.groups[task.group].allreduce_algorithm == Algorithm::gloo_ring;
    const OccupiedSms occupied(on_host ? 0 : options_.interference.sm_share(task));
    const LaneComm& comm = *flows_.comm(task.id);
    if (comm.closed_form) {
      sg4::this_actor::sleep_for(comm.closed_form->seconds);
      closed_form_ += 1;
      return;
    }
    send_flows(comm);
    if (sg4::Barrier* barrier = arrival_barrier(task)) barrier->wait();
    sg4::this_actor::sleep_for(comm.later_steps_latency_seconds);
  }

  // A collective's CTAs on the SMs of the GPU it runs on, while it lives: an
  // endless execution on the actor's host, at the priority that leaves a
  // compute execution beside it (priority 1) the other 1 - share of the host.
  class OccupiedSms {
  public:
    explicit OccupiedSms(double share) {
      if (share <= 0) return;
      occupancy_ = sg4::this_actor::exec_init(kEndlessFlops);
      occupancy_->set_priority(share / (1 - share))->start();
    }
    ~OccupiedSms() {
      if (occupancy_) occupancy_->cancel();
    }
    OccupiedSms(const OccupiedSms&) = delete;
    OccupiedSms& operator=(const OccupiedSms&) = delete;

  private:
    sg4::ExecPtr occupancy_;
  };

  void execute(const Task& task) {
    for (int dep : prog_.deps(task)) wait_for(dep);
    const double gpu_seconds = is_compute(task.kind) ? work_seconds_[task.work] / lanes_.lane_of(task.rank).speed : 0;
    if (is_compute(task.kind))
      wait_for_kernels(task, sg4::Engine::get_clock(), gpu_seconds);
    else
      wait_for_launch(task);
    // Waiting for the group's other ranks is not communication: the
    // collective starts once all of them have arrived.
    if (is_collective(task.kind))
      if (sg4::Barrier* barrier = arrival_barrier(task)) barrier->wait();
    TaskTiming& timing = timing_[task.id];
    timing.start = sg4::Engine::get_clock();
    if (is_compute(task.kind))
      sg4::this_actor::execute(gpu_seconds * host_speed_flops);
    else if (task.kind == TaskKind::SEND && !options_.free_communication)
      send_flows(*flows_.comm(task.id));  // every lane member's transfer at once
    else if (is_collective(task.kind))
      run_collective(task);
    timing.end = sg4::Engine::get_clock();
    mark_done(task);
  }

  // A batch of paired transfers (Megatron's batch_isend_irecv and its wait):
  // posted together once the stream reaches it, each transfer starting when
  // its other side is posted too; the stream goes on when the last transfer
  // is done. A transfer starts when its SEND and RECV are both posted and
  // ends when its flows do: each task's time is its own transfer's, so that
  // waiting for a peer to post (or for another transfer of the batch to
  // start) is idle, not communication.
  void run_batch(std::span<const Task> batch) {
    for (const Task& task : batch) wait_for_launch(task);
    for (const Task& task : batch)
      if (task.kind == TaskKind::SEND)
        for (int dep : prog_.deps(task)) wait_for(dep);
    for (const Task& task : batch)
      if (task.kind == TaskKind::RECV) raise(posted_, task.id);
    for (const Task& task : batch)
      if (task.kind == TaskKind::SEND) start_transfer(task);
    for (const Task& task : batch) {
      const int send = task.kind == TaskKind::SEND ? task.id : ran_as(prog_.deps(task).front());
      wait_until(transferred_, send);
      timing_[task.id] = timing_[send];
    }
    for (const Task& task : batch) mark_done(task);
  }

  // An actor of its own waits for the SEND's RECV to be posted and sends
  // its flows, so that the SENDs and RECVs of a batch proceed at once. It is
  // one of the rank's idle senders where there is one: released, it runs
  // before the actor handing it the SEND goes on, as a new actor would
  // start, so the step is the same; an actor created and ended per transfer
  // (its stack, the stack's guard page, the unwinding that ends it) cost a
  // tenth of the 1T's replay.
  void start_transfer(const Task& send) {
    if (std::vector<Sender*>& idle = idle_senders_[send.rank]; !idle.empty()) {
      Sender* sender = idle.back();
      idle.pop_back();
      sender->send = send;
      sender->handed->release();
      return;
    }
    senders_.push_back(std::make_unique<Sender>(Sender{sg4::Semaphore::create(0), send}));
    const std::string name = "rank" + std::to_string(send.rank) + "-sender" + std::to_string(senders_.size());
    sg4::Actor::create(name, platform_.hosts[send.rank], [this, sender = senders_.back().get()] {
      try {
        do transfer(sender->send);
        while (wait_for_next_send(*sender));
      } catch (const JobStopped&) {
      }
    });
  }

  // One paired transfer: from both sides posted to its flows' end.
  void transfer(const Task& send) {
    wait_until(posted_, classes_.stand_in(receive_of_send_[send.id]));
    timing_[send.id].start = sg4::Engine::get_clock();
    if (!options_.free_communication) send_flows(*flows_.comm(send.id));  // every lane member's transfer at once
    timing_[send.id].end = sg4::Engine::get_clock();
    raise(transferred_, send.id);
  }

  // Idles `sender` until it is handed its next SEND; false once the lanes are done.
  bool wait_for_next_send(Sender& sender) {
    if (lanes_running_ == 0) return false;
    idle_senders_[sender.send.rank].push_back(&sender);
    sender.handed->acquire();
    return lanes_running_ > 0;
  }

  // A lane's actor has run its last task: once none runs, idle senders end.
  void lane_done() {
    if (--lanes_running_ > 0) return;
    for (auto& [rank, idle] : idle_senders_)
      for (Sender* sender : idle) sender->handed->release();
    idle_senders_.clear();
  }

  // The step's figures; each task's times stay in source_timings(), by the
  // ranks that ran them (timing_sources()).
  Timeline finish() {
    Timeline timeline;
    timeline.stopped = stopped_;
    timeline.stop_reason = stop_reason_;
    for (const TaskTiming& timing : timing_.values()) timeline.step_seconds = std::max(timeline.step_seconds, timing.end);
    if (stopped_) timeline.step_seconds = stop_seconds_;
    if (options_.host.simulated()) finish_hosts();
    for (double& done : host_done_at_)
      if (done < 0) done = timeline.step_seconds;  // a host the job stopped
    timeline.flows = flows_sent_;
    timeline.closed_form_collectives = closed_form_;
    timeline.simulated_tasks = simulated_tasks_;
    timeline.tasks_stood_for = tasks_stood_for_;
    if (classes_.count() < prog_.world_size / (prog_.tensor_size * prog_.pipeline_size))
      timeline.representative_of_rank = classes_.representative_of_rank();
    timeline.approximate_after_rounds = classes_.approximate_after_rounds();
    timeline.busiest_links = busiest_links();
    if (options_.host.simulated()) {
      const std::vector<int> source = timing_sources();
      for (int r = 0; r < prog_.world_size; ++r) timeline.host_wait_seconds.push_back(host_wait_seconds_[source[r]]);
    }
    return timeline;
  }

  // Bytes each link carried: every lane task that started put its flows (or
  // its closed form's bytes) on their links, whether it ran or stood for.
  std::vector<LinkLoad> busiest_links() const {
    std::vector<double> link_bytes(fabric_.links().size(), 0.0);
    if (!options_.free_communication)
      for (int id : flows_.comm_tasks()) {
        const LaneComm* comm = flows_.comm(id);
        if (timing_[ran_as(id)].start < 0) continue;
        if (comm->closed_form)
          for (const auto& [link, bytes] : comm->closed_form->link_bytes) link_bytes[link] += bytes;
        for (uint32_t f = comm->first_flow; f < comm->first_flow + comm->flow_count; ++f)
          for (int link : flows_.route(f)) link_bytes[link] += flows_.all()[f].bytes;
      }
    std::vector<LinkLoad> loads;
    for (size_t i = 0; i < link_bytes.size(); ++i)
      if (link_bytes[i] > 0) loads.push_back({fabric_.links()[i].name, link_bytes[i], link_bytes_per_second_[i]});
    auto busier = [](const LinkLoad& a, const LinkLoad& b) {
      return a.bytes / a.bytes_per_second > b.bytes / b.bytes_per_second;
    };
    std::stable_sort(loads.begin(), loads.end(), busier);
    loads.resize(std::min<size_t>(loads.size(), 10));
    return loads;
  }

  const Program& prog_;
  const Fabric& fabric_;
  const std::vector<double>& work_seconds_;
  const ReplayOptions options_;
  const ProgressSender& send_progress_;
  const Lanes lanes_;
  CollectivePlanCache plans_;
  const std::vector<double> link_bytes_per_second_;  // by fabric index, degradations included
  const std::set<int> altered_links_;                // degraded or failing: never timed in closed form
  const LaneFlows flows_;
  const ReplicaClasses classes_;
  std::vector<LaneSync> lane_sync_;  // by lane
  ReplayPlatform platform_;
  std::optional<HostTransfers> transfers_;  // once the platform is built
  // What actors send: a lane task's alike flows as one transfer (platform_routes).
  struct Send {
    int route = 0;  // its platform route
    double bytes = 0, max_bytes_per_second = 0;
  };
  std::vector<Send> sends_;
  // By a simulated comm's first flow (none where it has no flows): its range of sends_.
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> sends_of_comm_;
  const SimulatedTasks simulated_;  // what the state below is by
  BySimulatedTask<TaskTiming> timing_;
  BySimulatedTask<char> done_;
  BySimulatedTask<char> posted_;       // by RECV: posted in its batch (paired)
  BySimulatedTask<char> transferred_;  // by SEND: its transfer is over (paired)
  BySimulatedTask<int> receive_of_send_;  // by SEND: its RECV
  // With simulated hosts: by rank, its host; by task, when it launched it (-1: not yet).
  std::vector<Host> hosts_;
  BySimulatedTask<double> launched_at_;
  // By compute task that synchronises: its host may go on, at host_returns_at_.
  BySimulatedTask<char> host_released_;
  BySimulatedTask<double> host_returns_at_;
  std::vector<double> host_wait_seconds_;  // by rank: its compute stream waiting for launches
  std::vector<double> host_done_at_;       // by rank: when its host had launched its last task
  bool stopped_ = false;
  std::string stop_reason_;
  double stop_seconds_ = 0;
  std::map<int, sg4::BarrierPtr> barriers_;
  std::vector<std::unique_ptr<Sender>> senders_;
  std::map<int, std::vector<Sender*>> idle_senders_;  // by rank
  int lanes_running_ = 0;  // lane actors (one per simulated lane and stream) that have tasks left
  uint64_t flows_sent_ = 0, closed_form_ = 0, simulated_tasks_ = 0, actor_tasks_ = 0, tasks_stood_for_ = 0;
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace

Timeline replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
                const ReplayOptions& options) {
  ChildOptions child;
  child.cancel = options.cancel;
  if (options.on_progress || options.on_phase)
    child.on_message = [&](const std::string& message) {
      if (message.starts_with(kPhaseMessage)) {
        if (options.on_phase) options.on_phase(message.substr(kPhaseMessage.size()));
        return;
      }
      if (!options.on_progress) return;
      ReplayProgress progress;
      unsigned long long done = 0, total = 0;
      if (std::sscanf(message.c_str(), "%lf %llu %llu", &progress.simulated_seconds, &done, &total) != 3) return;
      progress.tasks_done = done;
      progress.tasks_total = total;
      options.on_progress(progress);
    };
  if (options.on_phase) options.on_phase("setting up the replay");
  const std::string bytes = run_in_child(
      [&](const ProgressSender& send_progress) {
        Replay simulation(program, fabric, work_seconds, options, send_progress);
        const Timeline figures = simulation.run();
        return timeline_to_bytes(figures, simulation.timing_sources(), simulation.source_timings(),
                                 simulation.source_launches(), simulation.host_done_seconds());
      },
      child);
  Timeline timeline = timeline_from_bytes(bytes, program);
  if (!timeline.stopped)
    for (size_t id = 0; id < timeline.tasks.size(); ++id)
      if (timeline.tasks[id].end < 0)
        throw std::logic_error("task never ran: " + task_name(program, program.tasks[static_cast<int>(id)]));
  return timeline;
}

}  // namespace simtrain
