#include "sim/engine/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/collective_plan_cache.hpp"
#include "sim/engine/failure_injector.hpp"
#include "sim/engine/replay_lanes.hpp"
#include "sim/engine/replay_platform.hpp"
#include "sim/engine/simgrid_setup.hpp"
#include "sim/engine/timeline_bytes.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

// Thrown in the actor that stopped the job, to end it once every other actor is killed.
struct JobStopped {};

// The program, once the fabric is known to have a host for each of its parameter servers.
const Program& with_servers_in(const Program& program, const Fabric& fabric) {
  if (fabric.num_hosts() < program.world_size + program.servers)
    throw std::invalid_argument("the fabric lacks the Program's parameter servers");
  return program;
}

class Replay {
public:
  Replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
         const ReplayOptions& options, const ProgressSender& send_progress)
      : prog_(with_servers_in(program, fabric)), fabric_(fabric), work_seconds_(work_seconds), options_(options),
        send_progress_(send_progress), lanes_(prog_, options_.gpu_speed_factors),
        plans_(fabric_, options_.allreduce_algorithm) {
    timing_.resize(prog_.tasks.size());
    link_bytes_.assign(fabric_.links().size(), 0);
    done_.assign(prog_.tasks.size(), 0);
    for (size_t i = 0; i < fabric_.links().size(); ++i) {
      const LinkSpec& spec = fabric_.links()[i];
      auto factor = options_.link_bandwidth_factors.find(spec.name);
      link_bytes_per_second_.push_back(spec.bytes_per_second *
                                       (factor == options_.link_bandwidth_factors.end() ? 1.0 : factor->second));
      if (factor != options_.link_bandwidth_factors.end()) altered_links_.insert(static_cast<int>(i));
      for (const FailureEvent& e : options_.failures)
        if (e.rank < 0 && e.link == spec.name) altered_links_.insert(static_cast<int>(i));
    }
  }

  Timeline run() {
    sg4::Engine engine("simtrain");
    configure_simgrid();
    platform_ = build_replay_platform(fabric_, prog_.world_size, prog_.servers, routed_pairs(), link_bytes_per_second_);
    for (size_t l = 0; l < lanes_.size(); ++l)
      lane_sync_.push_back({sg4::Mutex::create(), sg4::ConditionVariable::create()});
    start_actors();
    start_failure_injector();
    engine.run();
    return finish();
  }

private:
  // What the actors of a lane wait on for each other's tasks.
  struct LaneSync {
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr changed;
  };

  // Every pair of hosts that exchanges data, to be routed. On the way, notes
  // which TP groups have their links to themselves: those are timed in
  // closed form.
  std::set<std::pair<int, int>> routed_pairs() {
    std::set<std::pair<int, int>> pairs;
    std::map<int, std::set<int>> link_users;  // link -> users (group ids; p2p as -1 - rank)
    auto add_flows = [&](const std::vector<Flow>& flows, int user) {
      for (const Flow& f : flows) {
        pairs.insert({f.src, f.dst});
        for (int link : fabric_.route(f.src, f.dst)) link_users[link].insert(user);
      }
    };
    std::set<std::tuple<int, double, int, int>> seen_collectives;  // group, bytes, count, kind
    for (const Task& t : prog_.tasks) {
      if (t.kind == TaskKind::SEND) add_flows({{t.rank, t.peer, t.bytes}}, -1 - t.rank);
      if (is_collective(t.kind) && seen_collectives.insert({t.group, t.bytes, t.count, static_cast<int>(t.kind)}).second)
        add_flows(plans_.plan(t, prog_.groups[t.group]).flows, t.group);
    }
    isolated_group_.assign(prog_.groups.size(), 0);
    for (const Group& g : prog_.groups) {
      if (g.dim != CommDim::tp) continue;
      bool alone = true;
      for (size_t i = 0; i < g.ranks.size() && alone; ++i)
        for (int link : fabric_.route(g.ranks[i], g.ranks[(i + 1) % g.ranks.size()]))
          alone = alone && link_users[link].size() == 1 && !altered_links_.count(link);
      isolated_group_[g.id] = alone;
    }
    return pairs;
  }

  // An actor per lane and stream, on the representative's host; a barrier
  // per collective group that spans lanes.
  void start_actors() {
    for (size_t l = 0; l < lanes_.size(); ++l) {
      const int rep = lanes_[l].members[0];
      for (TaskQueue& queue : task_queues(prog_, rep)) {
        std::vector<int> ids;
        for (int id : queue.tasks)
          if (prog_.tasks[id].kind != TaskKind::RECV) ids.push_back(id);  // a RECV completes with its SEND
        if (ids.empty()) continue;
        actor_tasks_ += ids.size();
        const std::string name = "rank" + std::to_string(rep) + "-" + to_string(queue.stream);
        sg4::Actor::create(name, platform_.hosts[rep], [this, ids = std::move(ids)] {
          try {
            for (int id : ids) execute(prog_.tasks[id]);
          } catch (const JobStopped&) {
          }
        });
      }
    }
    for (const Group& g : prog_.groups) {
      const bool spans_lanes = lanes_.lane_of_rank(g.ranks.front()) != lanes_.lane_of_rank(g.ranks.back());
      if (spans_lanes && lanes_.is_representative(g.ranks.front()))
        barriers_[g.id] = sg4::Barrier::create(g.ranks.size());
    }
  }

  // A daemon: the job ends when its tasks do, whatever failures are still to come.
  void start_failure_injector() {
    if (options_.failures.empty()) return;
    auto stop = [this](const std::string& reason) { stop_job(reason); };
    FailureInjector injector(options_.failures, platform_, fabric_, stop);
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

  void wait_for(int id) {
    id = lanes_.representative_task(id);
    if (prog_.tasks[id].kind == TaskKind::RECV) id = lanes_.representative_task(prog_.deps(id).front());
    LaneSync& lane = lane_sync_of_task(id);
    if (done_[id]) return;
    std::unique_lock lock(*lane.mutex);
    while (!done_[id]) lane.changed->wait(lock);
  }

  void mark_done(int id) {
    LaneSync& lane = lane_sync_of_task(id);
    {
      std::unique_lock lock(*lane.mutex);
      done_[id] = 1;
    }
    lane.changed->notify_all();
    simulated_tasks_ += 1;
    if ((simulated_tasks_ & 255) == 0) report_progress();
  }

  LaneSync& lane_sync_of_task(int id) { return lane_sync_[lanes_.lane_of_rank(prog_.tasks[id].rank)]; }

  void report_progress() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ < std::chrono::milliseconds(250)) return;
    last_progress_ = now;
    char message[96];
    std::snprintf(message, sizeof message, "%.17g %llu %llu", sg4::Engine::get_clock(),
                  static_cast<unsigned long long>(simulated_tasks_), static_cast<unsigned long long>(actor_tasks_));
    send_progress_(message);
  }

  void send_flows(const std::vector<Flow>& flows) {
    std::vector<sg4::CommPtr> comms;
    for (const Flow& f : flows)
      if (f.src != f.dst)
        comms.push_back(sg4::Comm::sendto_async(platform_.hosts[f.src], platform_.hosts[f.dst], f.bytes));
    flows_ += comms.size();
    for (const Flow& f : flows)
      for (int link : fabric_.route(f.src, f.dst)) link_bytes_[link] += f.bytes;
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

  // One collective for every member of the lane (a TP collective has one
  // member group; a DP one has a group per member, all advancing together).
  // Every rank of the group has arrived.
  void run_collective(const Task& task) {
    if (options_.free_communication) return;
    std::vector<const Group*> groups;
    for (const Task* mine : lanes_.member_tasks(task)) groups.push_back(&prog_.groups[mine->group]);
    const Group& group = *groups.front();
    auto barrier = barriers_.find(group.id);
    const CollectivePlan& rep_plan = plans_.plan(task, group);
    if (barrier == barriers_.end() && isolated_group_[group.id]) {
      const ClosedForm& timed = plans_.closed_form(rep_plan);
      sg4::this_actor::sleep_for(timed.seconds);
      for (const auto& [link, bytes] : timed.link_bytes) link_bytes_[link] += bytes;
      closed_form_ += 1;
      return;
    }
    std::vector<Flow> flows;
    for (const Group* g : groups) {
      // Within a lane group (TP) the representative drives all flows; across
      // lanes each lane drives the flows that leave its own GPUs (and a
      // parameter server's flows to them).
      for (const Flow& f : plans_.plan(task, *g).flows) {
        const int gpu = f.src < prog_.world_size ? f.src : f.dst;
        if (barrier == barriers_.end() || lanes_.lane_of_rank(gpu) == lanes_.lane_of_rank(task.rank)) flows.push_back(f);
      }
      if (barrier == barriers_.end()) break;
    }
    send_flows(flows);
    if (barrier != barriers_.end()) barrier->second->wait();  // the slowest flow ends the step
    sg4::this_actor::sleep_for(rep_plan.latency_seconds - rep_plan.step_latency_seconds);
  }

  // A send carries every lane member's transfer at once.
  void run_send(const Task& task) {
    if (options_.free_communication) return;
    std::vector<Flow> flows;
    for (const Task* mine : lanes_.member_tasks(task)) flows.push_back({mine->rank, mine->peer, mine->bytes});
    send_flows(flows);
  }

  void execute(const Task& task) {
    for (int dep : prog_.deps(task)) wait_for(dep);
    // Waiting for the group's other ranks is not communication: the
    // collective starts once all of them have arrived.
    if (is_collective(task.kind))
      if (sg4::Barrier* barrier = arrival_barrier(task)) barrier->wait();
    TaskTiming& timing = timing_[task.id];
    timing.start = sg4::Engine::get_clock();
    if (is_compute(task.kind))
      sg4::this_actor::execute(work_seconds_[task.work] / lanes_.lane_of(task.rank).speed * host_speed_flops);
    else if (task.kind == TaskKind::SEND)
      run_send(task);
    else if (is_collective(task.kind))
      run_collective(task);
    timing.end = sg4::Engine::get_clock();
    mark_done(task.id);
  }

  // Copies each representative's times to the lane's other ranks, and each
  // send's times to its receive.
  Timeline finish() {
    Timeline timeline;
    timeline.tasks = timing_;
    timeline.stopped = stopped_;
    timeline.stop_reason = stop_reason_;
    for (const Task& t : prog_.tasks) {
      const int rep = lanes_.representative_task(t.id);
      const bool receive = t.kind == TaskKind::RECV;
      timeline.tasks[t.id] = timing_[receive ? lanes_.representative_task(prog_.deps(rep).front()) : rep];
      timeline.step_seconds = std::max(timeline.step_seconds, timeline.tasks[t.id].end);
      if (timeline.tasks[t.id].end < 0 && !stopped_) throw std::logic_error("task never ran: " + task_name(prog_, t));
    }
    if (stopped_) timeline.step_seconds = stop_seconds_;
    timeline.flows = flows_;
    timeline.closed_form_collectives = closed_form_;
    timeline.simulated_tasks = simulated_tasks_;
    timeline.busiest_links = busiest_links();
    return timeline;
  }

  std::vector<LinkLoad> busiest_links() const {
    std::vector<LinkLoad> loads;
    for (size_t i = 0; i < link_bytes_.size(); ++i)
      if (link_bytes_[i] > 0) loads.push_back({fabric_.links()[i].name, link_bytes_[i], link_bytes_per_second_[i]});
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
  std::vector<LaneSync> lane_sync_;  // by lane
  CollectivePlanCache plans_;
  std::vector<double> link_bytes_per_second_;  // by fabric index, degradations included
  std::set<int> altered_links_;                // degraded or failing: never timed in closed form
  ReplayPlatform platform_;
  std::vector<char> done_;
  std::vector<TaskTiming> timing_;
  bool stopped_ = false;
  std::string stop_reason_;
  double stop_seconds_ = 0;
  std::map<int, sg4::BarrierPtr> barriers_;
  std::vector<char> isolated_group_;
  std::vector<double> link_bytes_;  // carried by each fabric link
  uint64_t flows_ = 0, closed_form_ = 0, simulated_tasks_ = 0, actor_tasks_ = 0;
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace

Timeline replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
                const ReplayOptions& options) {
  ChildOptions child;
  child.cancel = options.cancel;
  if (options.on_progress)
    child.on_message = [&](const std::string& message) {
      ReplayProgress progress;
      unsigned long long done = 0, total = 0;
      if (std::sscanf(message.c_str(), "%lf %llu %llu", &progress.simulated_seconds, &done, &total) != 3) return;
      progress.tasks_done = done;
      progress.tasks_total = total;
      options.on_progress(progress);
    };
  const std::string bytes = run_in_child(
      [&](const ProgressSender& send_progress) {
        return timeline_to_bytes(Replay(program, fabric, work_seconds, options, send_progress).run());
      },
      child);
  return timeline_from_bytes(bytes, program.tasks.size());
}

}  // namespace simtrain
