#include "sim/engine/replay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/program/task_list_difference.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

// Host speed in "flop" units: compute tasks execute seconds * speed, which
// SimGrid times exactly; the GPU's real speed is already in the seconds.
constexpr double host_speed = 1e9;

class Replay {
public:
  Replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
         const ReplayOptions& options, const ProgressSender& send_progress)
      : prog_(program), fabric_(fabric), work_seconds_(work_seconds), options_(options),
        send_progress_(send_progress) {
    if (fabric_.num_hosts() < prog_.world_size + prog_.servers)
      throw std::invalid_argument("the fabric lacks the Program's parameter servers");
    timing_.resize(prog_.tasks.size());
    link_bytes_.assign(fabric_.links().size(), 0);
    make_lanes();
    done_.assign(prog_.tasks.size(), 0);
    for (size_t i = 0; i < fabric_.links().size(); ++i) {
      const std::string& name = fabric_.links()[i].name;
      if (options_.link_bandwidth_factors.count(name)) altered_links_.insert(static_cast<int>(i));
      for (const FailureEvent& e : options_.failures)
        if (e.rank < 0 && e.link == name) altered_links_.insert(static_cast<int>(i));
    }
  }

  Timeline run() {
    sg4::Engine engine("simtrain");
    xbt_log_control_set("root.thresh:critical");
    // GPU fabrics are not TCP: no latency/bandwidth factors (CM02), no
    // reverse ACK traffic, no TCP window limit.
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:1e18");
    build_platform();
    for (auto& lane : lanes_) {
      lane.mutex = sg4::Mutex::create();
      lane.changed = sg4::ConditionVariable::create();
    }
    start_actors();
    start_failures();
    engine.run();
    return finish();
  }

private:
  struct Lane {
    std::vector<int> members;  // ranks, the representative first
    sg4::MutexPtr mutex = nullptr;
    sg4::ConditionVariablePtr changed = nullptr;
    double speed = 1;          // of its slowest GPU: TP ranks wait for each other every layer
  };

  // Lanes are TP groups; every rank outside one is its own lane.
  void make_lanes() {
    lane_of_rank_.assign(prog_.world_size, -1);
    for (const Group& g : prog_.groups)
      if (g.dim == CommDim::tp) {
        for (int r : g.ranks) lane_of_rank_[r] = static_cast<int>(lanes_.size());
        lanes_.push_back({g.ranks});
      }
    for (int r = 0; r < prog_.world_size; ++r)
      if (lane_of_rank_[r] < 0) {
        lane_of_rank_[r] = static_cast<int>(lanes_.size());
        lanes_.push_back({{r}});
      }
    for (Lane& lane : lanes_)
      for (int member : lane.members)
        if (!options_.gpu_speed_factors.empty()) lane.speed = std::min(lane.speed, options_.gpu_speed_factors[member]);
    // Each member's task list mirrors the representative's, position by position.
    rep_task_.assign(prog_.tasks.size(), -1);
    for (const Lane& lane : lanes_) {
      const std::vector<int>& rep = prog_.rank_tasks[lane.members[0]];
      for (int member : lane.members) {
        const std::string difference = task_list_difference(prog_, lane.members[0], member);
        if (!difference.empty()) throw std::logic_error("TP ranks with different task lists: " + difference);
        const std::vector<int>& mine = prog_.rank_tasks[member];
        for (size_t i = 0; i < mine.size(); ++i) rep_task_[mine[i]] = rep[i];
      }
    }
  }

  bool is_rep(int rank) const { return lanes_[lane_of_rank_[rank]].members[0] == rank; }

  // The ranks that carry a collective: the representative's group, and the
  // same task's group on every other member of the lane.
  std::vector<const Group*> member_groups(const Task& rep_task) const {
    std::vector<const Group*> groups;
    const std::vector<int>& members = lanes_[lane_of_rank_[rep_task.rank]].members;
    const size_t position = position_in_rank(rep_task);
    for (int member : members) groups.push_back(&prog_.groups[prog_.tasks[prog_.rank_tasks[member][position]].group]);
    return groups;
  }

  size_t position_in_rank(const Task& task) const {
    const std::vector<int>& list = prog_.rank_tasks[task.rank];
    auto it = std::lower_bound(list.begin(), list.end(), task.id);  // ids grow along a rank's list
    return static_cast<size_t>(it - list.begin());
  }

  Algorithm algorithm_for(TaskKind kind, const Group& group, double bytes) {
    if (kind != TaskKind::ALLREDUCE) return Algorithm::ring;
    if (const auto wanted = group.allreduce_algorithm ? group.allreduce_algorithm : options_.allreduce_algorithm) return *wanted;
    auto key = std::make_pair(group.id, bytes);
    auto it = chosen_algorithm_.find(key);
    if (it == chosen_algorithm_.end())
      it = chosen_algorithm_.emplace(key, choose_allreduce_algorithm(group.ranks, bytes, fabric_)).first;
    return it->second;
  }

  const CollectivePlan& plan(const Task& task, const Group& group) {
    auto key = std::make_tuple(group.id, static_cast<int>(task.kind), task.bytes, task.count);
    auto it = plans_.find(key);
    if (it == plans_.end())
      it = plans_
               .emplace(key, group.servers > 0
                                 ? parameter_server_plan(task.kind, group.ranks, group.servers, task.bytes, task.count, fabric_)
                                 : plan_collective(task.kind, group.ranks, task.bytes, task.count,
                                                   algorithm_for(task.kind, group, task.bytes), fabric_))
               .first;
    return it->second;
  }

  struct ClosedForm {
    double seconds = 0;
    std::vector<std::pair<int, double>> link_bytes;
  };

  const ClosedForm& closed_form(const CollectivePlan& plan) {
    auto [it, inserted] = closed_forms_.try_emplace(&plan);
    if (inserted) it->second = {closed_form_seconds(plan, fabric_), link_loads(plan, fabric_)};
    return it->second;
  }

  double bandwidth(int link) const {
    const LinkSpec& spec = fabric_.links()[link];
    auto factor = options_.link_bandwidth_factors.find(spec.name);
    return spec.bytes_per_second * (factor == options_.link_bandwidth_factors.end() ? 1.0 : factor->second);
  }

  // Every pair of GPUs that exchanges data gets a route; a TP group whose
  // links no other traffic uses is timed in closed form.
  void build_platform() {
    std::set<std::pair<int, int>> pairs;
    std::map<int, std::set<int>> link_users;  // link -> users (group ids; p2p as -1 - rank)
    auto add_flows = [&](const std::vector<Flow>& flows, int user) {
      for (const Flow& f : flows) {
        pairs.insert({f.src, f.dst});
        for (int link : fabric_.route(f.src, f.dst)) link_users[link].insert(user);
      }
    };
    for (const Task& t : prog_.tasks) {
      if (t.kind == TaskKind::SEND) add_flows({{t.rank, t.peer, t.bytes}}, -1 - t.rank);
      if (is_collective(t.kind) && !seen_collective_.count({t.group, t.bytes, t.count, static_cast<int>(t.kind)})) {
        seen_collective_.insert({t.group, t.bytes, t.count, static_cast<int>(t.kind)});
        add_flows(plan(t, prog_.groups[t.group]).flows, t.group);
      }
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

    auto* zone = sg4::create_full_zone("cluster");
    for (int r = 0; r < prog_.world_size; ++r) hosts_.push_back(zone->create_host("gpu" + std::to_string(r), host_speed));
    for (int s = 0; s < prog_.servers; ++s) hosts_.push_back(zone->create_host("server" + std::to_string(s), host_speed));
    controller_ = zone->create_host("controller", host_speed);
    links_.assign(fabric_.links().size(), nullptr);
    auto link = [&](int index) {
      if (!links_[index]) {
        const LinkSpec& spec = fabric_.links()[index];
        links_[index] = zone->create_link(spec.name, bandwidth(index))->set_latency(spec.latency_seconds)->seal();
      }
      return sg4::LinkInRoute(links_[index]);
    };
    for (const auto& [src, dst] : pairs) {
      std::vector<sg4::LinkInRoute> route;
      for (int index : fabric_.route(src, dst)) route.push_back(link(index));
      zone->add_route(hosts_[src]->get_netpoint(), hosts_[dst]->get_netpoint(), nullptr, nullptr, route, false);
    }
    zone->seal();
  }

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
        sg4::Actor::create(name, hosts_[rep], [this, ids = std::move(ids)] {
          try {
            for (int id : ids) execute(prog_.tasks[id]);
          } catch (const JobStopped&) {
          }
        });
      }
    }
    for (const Group& g : prog_.groups) {
      const bool spans_lanes = lane_of_rank_[g.ranks.front()] != lane_of_rank_[g.ranks.back()];
      if (spans_lanes && is_rep(g.ranks.front())) barriers_[g.id] = sg4::Barrier::create(g.ranks.size());
    }
  }

  // Applies the failure events at their times; the job goes on without it.
  void start_failures() {
    if (options_.failures.empty()) return;
    sg4::Actor::create("failures", controller_, [this] {
      try {
        apply_failures();
      } catch (const JobStopped&) {
      }
    })->daemonize();
  }

  void apply_failures() {
    std::vector<FailureEvent> events = options_.failures;
    std::stable_sort(events.begin(), events.end(), [](auto& a, auto& b) { return a.at_seconds < b.at_seconds; });
    for (const FailureEvent& e : events) {
      sg4::this_actor::sleep_until(e.at_seconds);
      if (e.rank >= 0) {
        hosts_[e.rank]->turn_off();
        stop("GPU " + std::to_string(e.rank) + " failed");
      }
      for (size_t i = 0; i < links_.size(); ++i) {
        if (!links_[i] || fabric_.links()[i].name != e.link) continue;
        if (e.bandwidth_factor > 0)
          links_[i]->set_bandwidth(fabric_.links()[i].bytes_per_second * e.bandwidth_factor);
        else
          links_[i]->turn_off();
      }
    }
  }

  struct JobStopped {};

  // The job cannot go on: record why and end every actor.
  [[noreturn]] void stop(const std::string& reason) {
    if (!stopped_) {
      stopped_ = true;
      stop_reason_ = reason;
      stop_seconds_ = sg4::Engine::get_clock();
    }
    sg4::Actor::kill_all();
    throw JobStopped{};
  }

  Lane& lane_of_task(int id) { return lanes_[lane_of_rank_[prog_.tasks[id].rank]]; }

  void wait_for(int id) {
    id = rep_task_[id];
    if (prog_.tasks[id].kind == TaskKind::RECV) id = rep_task_[prog_.tasks[id].deps.front()];
    Lane& lane = lane_of_task(id);
    if (done_[id]) return;
    std::unique_lock lock(*lane.mutex);
    while (!done_[id]) lane.changed->wait(lock);
  }

  void mark_done(int id) {
    Lane& lane = lane_of_task(id);
    {
      std::unique_lock lock(*lane.mutex);
      done_[id] = 1;
    }
    lane.changed->notify_all();
    simulated_tasks_ += 1;
    if ((simulated_tasks_ & 255) == 0) report_progress();
  }

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
      if (f.src != f.dst) comms.push_back(sg4::Comm::sendto_async(hosts_[f.src], hosts_[f.dst], f.bytes));
    flows_ += comms.size();
    for (const Flow& f : flows)
      for (int link : fabric_.route(f.src, f.dst)) link_bytes_[link] += f.bytes;
    try {
      sg4::Comm::wait_all(comms);
    } catch (const simgrid::NetworkFailureException&) {
      stop("a link on the path of a transfer went down");
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
    const std::vector<const Group*> groups = member_groups(task);
    const Group& group = *groups.front();
    auto barrier = barriers_.find(group.id);
    if (!options_.free_communication) {
      const CollectivePlan& rep_plan = plan(task, group);
      if (barrier == barriers_.end() && isolated_group_[group.id]) {
        const ClosedForm& timed = closed_form(rep_plan);
        sg4::this_actor::sleep_for(timed.seconds);
        for (const auto& [link, bytes] : timed.link_bytes) link_bytes_[link] += bytes;
        closed_form_ += 1;
      } else {
        std::vector<Flow> flows;
        for (const Group* g : groups) {
          const std::vector<Flow>& member_flows = plan(task, *g).flows;
          // Within a lane group (TP) the representative drives all flows; across
          // lanes each lane drives the flows that leave its own GPUs (and a
          // parameter server's flows to them).
          for (const Flow& f : member_flows) {
            const int gpu = f.src < prog_.world_size ? f.src : f.dst;
            if (barrier == barriers_.end() || lane_of_rank_[gpu] == lane_of_rank_[task.rank]) flows.push_back(f);
          }
          if (barrier == barriers_.end()) break;
        }
        send_flows(flows);
        if (barrier != barriers_.end()) barrier->second->wait();  // the slowest flow ends the step
        sg4::this_actor::sleep_for(rep_plan.latency_seconds - rep_plan.step_latency_seconds);
      }
    }
  }

  void execute(const Task& task) {
    for (int dep : task.deps) wait_for(dep);
    // Waiting for the group's other ranks is not communication: the
    // collective starts once all of them have arrived.
    if (is_collective(task.kind))
      if (sg4::Barrier* barrier = arrival_barrier(task)) barrier->wait();
    TaskTiming& timing = timing_[task.id];
    timing.start = sg4::Engine::get_clock();
    if (is_compute(task.kind)) {
      sg4::this_actor::execute(work_seconds_[task.work] / lanes_[lane_of_rank_[task.rank]].speed * host_speed);
    } else if (task.kind == TaskKind::SEND) {
      if (!options_.free_communication) {
        std::vector<Flow> flows;
        const size_t position = position_in_rank(task);
        for (int member : lanes_[lane_of_rank_[task.rank]].members) {
          const Task& mine = prog_.tasks[prog_.rank_tasks[member][position]];
          flows.push_back({mine.rank, mine.peer, mine.bytes});
        }
        send_flows(flows);
      }
    } else if (is_collective(task.kind)) {
      run_collective(task);
    }
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
      const int rep = rep_task_[t.id];
      timeline.tasks[t.id] = timing_[t.kind == TaskKind::RECV ? rep_task_[prog_.tasks[rep].deps.front()] : rep];
      timeline.step_seconds = std::max(timeline.step_seconds, timeline.tasks[t.id].end);
      if (timeline.tasks[t.id].end < 0 && !stopped_) throw std::logic_error("task never ran: " + t.name);
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
      if (link_bytes_[i] > 0) loads.push_back({fabric_.links()[i].name, link_bytes_[i], bandwidth(static_cast<int>(i))});
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
  std::vector<Lane> lanes_;
  std::vector<int> lane_of_rank_, rep_task_;
  std::vector<char> done_;
  std::vector<TaskTiming> timing_;
  std::vector<sg4::Host*> hosts_;
  sg4::Host* controller_ = nullptr;
  std::vector<sg4::Link*> links_;  // by fabric index; null where no route uses the link
  std::set<int> altered_links_;    // degraded or failing: never timed in closed form
  bool stopped_ = false;
  std::string stop_reason_;
  double stop_seconds_ = 0;
  std::map<int, sg4::BarrierPtr> barriers_;
  std::vector<char> isolated_group_;
  std::map<std::tuple<int, int, double, int>, CollectivePlan> plans_;
  std::map<std::pair<int, double>, Algorithm> chosen_algorithm_;
  std::map<const CollectivePlan*, ClosedForm> closed_forms_;
  std::vector<double> link_bytes_;  // carried by each fabric link
  std::set<std::tuple<int, double, int, int>> seen_collective_;
  uint64_t flows_ = 0, closed_form_ = 0, simulated_tasks_ = 0, actor_tasks_ = 0;
  std::chrono::steady_clock::time_point last_progress_;
};

template <typename T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T take(const std::string& in, size_t& offset) {
  if (offset + sizeof(T) > in.size()) throw std::runtime_error("simulation process returned a truncated result");
  T value;
  std::memcpy(&value, in.data() + offset, sizeof value);
  offset += sizeof value;
  return value;
}

std::string take_text(const std::string& in, size_t& offset, uint64_t size) {
  if (offset + size > in.size()) throw std::runtime_error("simulation process returned a truncated result");
  offset += size;
  return in.substr(offset - size, size);
}

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
        Timeline timeline = Replay(program, fabric, work_seconds, options, send_progress).run();
        std::string out;
        append(out, timeline.step_seconds);
        append(out, timeline.flows);
        append(out, timeline.closed_form_collectives);
        append(out, timeline.simulated_tasks);
        append(out, static_cast<uint64_t>(timeline.stopped));
        append(out, static_cast<uint64_t>(timeline.stop_reason.size()));
        out.append(timeline.stop_reason);
        append(out, static_cast<uint64_t>(timeline.busiest_links.size()));
        for (const LinkLoad& load : timeline.busiest_links) {
          append(out, static_cast<uint64_t>(load.link.size()));
          out.append(load.link);
          append(out, load.bytes);
          append(out, load.bytes_per_second);
        }
        out.append(reinterpret_cast<const char*>(timeline.tasks.data()), timeline.tasks.size() * sizeof(TaskTiming));
        return out;
      },
      child);
  size_t offset = 0;
  Timeline timeline;
  timeline.step_seconds = take<double>(bytes, offset);
  timeline.flows = take<uint64_t>(bytes, offset);
  timeline.closed_form_collectives = take<uint64_t>(bytes, offset);
  timeline.simulated_tasks = take<uint64_t>(bytes, offset);
  timeline.stopped = take<uint64_t>(bytes, offset) != 0;
  const uint64_t reason_size = take<uint64_t>(bytes, offset);
  timeline.stop_reason = take_text(bytes, offset, reason_size);
  timeline.busiest_links.resize(take<uint64_t>(bytes, offset));
  for (LinkLoad& load : timeline.busiest_links) {
    load.link = take_text(bytes, offset, take<uint64_t>(bytes, offset));
    load.bytes = take<double>(bytes, offset);
    load.bytes_per_second = take<double>(bytes, offset);
  }
  timeline.tasks.resize(program.tasks.size());
  if (bytes.size() - offset != timeline.tasks.size() * sizeof(TaskTiming))
    throw std::runtime_error("simulation process returned a truncated result");
  std::memcpy(timeline.tasks.data(), bytes.data() + offset, bytes.size() - offset);
  return timeline;
}

}  // namespace simtrain
