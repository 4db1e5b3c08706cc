#include "host_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "host/blas_setup.hpp"

namespace simtrain {

namespace {

// Floats a communication task moves: its bytes, rounded up to whole floats.
int64_t floats_of(const Task& task) { return (static_cast<int64_t>(task.bytes) + 3) / 4; }

// Floats of each queue's buffer: its largest transfer.
std::vector<int64_t> buffer_floats(const Program& program, const std::vector<TaskQueue>& queues) {
  std::vector<int64_t> floats;
  for (const TaskQueue& queue : queues) {
    int64_t largest = 1;
    for (int id : queue.tasks)
      if (!is_compute(program.tasks[id].kind)) largest = std::max(largest, floats_of(program.tasks[id]));
    floats.push_back(largest);
  }
  return floats;
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

HostBackend::HostBackend(MpiWorld& world, const Scenario& scenario)
    : world_(world), context_(kernel_context(scenario)), dtype_(scenario.training.dtype) {
  MPI_Comm local;
  MPI_Comm_split_type(world.communicator(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_ranks_);
  MPI_Comm_free(&local);
  // Each rank its share of the host's cores (live/README.md), unless the user chose.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr)
    host::set_threads(static_cast<int>(std::thread::hardware_concurrency()) / local_ranks_);
  int* tag_upper_bound = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_upper_bound, &found);
  if (found) tag_limit_ = *tag_upper_bound;
}

HostBackend::~HostBackend() {
  for (MPI_Comm& c : communicators_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

double HostBackend::bytes_needed(const Program& program, int rank) const {
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    if (!is_compute(t.kind) && floats_of(t) > INT_MAX)
      throw LiveError(task_name(program, t) + ": more elements than one MPI call can move");
  }
  double bytes = 0;
  for (const auto& [name, call] : rank_kernel_calls(program, rank, dtype_, context_)) bytes += CpuKernel::bytes_needed(call);
  for (int64_t floats : buffer_floats(program, task_queues(program, rank, true))) bytes += 4.0 * floats;
  return bytes;
}

double HostBackend::bytes_available() const {
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / local_ranks_;
}

// Every rank times its kernels at once, so that the processes sharing this
// host's cores slow each other down as they will in the step.
WorkEstimate HostBackend::estimate_works(const Program& program, int rank) const {
  std::map<std::string, double> call_seconds;
  for (const auto& [name, call] : rank_kernel_calls(program, rank, dtype_, context_))
    call_seconds[name] = CpuKernel::estimated_seconds(call);
  const std::string advice = host::kernel_advice();
  WorkEstimate estimate{std::vector<double>(program.works.size(), 0),
                        "each CPU kernel timed on a cut-down copy of its call, every rank at once, and "
                        "scaled by its loop count; communication not counted" +
                            (advice.empty() ? "" : "; " + advice)};
  std::vector<bool> done(program.works.size(), false);
  for (int id : program.rank_tasks(rank)) {
    const int work = program.tasks[id].work;
    if (work < 0 || done[work]) continue;
    done[work] = true;
    for (const Op& op : program.works[work].ops)
      estimate.work_seconds[work] += call_seconds.at(kernel_call(op, dtype_, context_).description());
  }
  return estimate;
}

void HostBackend::prepare(const Program& program, int rank, const CommunicatorPlan& plan,
                          const std::vector<TaskQueue>& queues) {
  program_ = &program;
  plan_ = &plan;
  for (const CommunicatorSpec& spec : plan.specs) {
    const auto member = std::find(spec.ranks.begin(), spec.ranks.end(), rank);
    const bool in_it = member != spec.ranks.end();
    MPI_Comm comm = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(world_.communicator(), in_it ? 0 : MPI_UNDEFINED,
                         in_it ? static_cast<int>(member - spec.ranks.begin()) : 0, &comm),
          "creating communicator " + spec.name);
    communicators_.push_back(comm);
  }
  for (const auto& [name, call] : rank_kernel_calls(program, rank, dtype_, context_))
    kernels_[name] = std::make_unique<CpuKernel>(call);
  for (int64_t floats : buffer_floats(program, queues)) buffers_.emplace_back(floats);
  timings_.assign(program.tasks.size(), {});
  op_seconds_.assign(program.tasks.size(), {});
}

double HostBackend::now() const { return monotonic_seconds() - start_; }

// Rank 0's clock reading, on every rank: processes of one host share
// CLOCK_MONOTONIC, so their times line up (each rank's own reading after a
// barrier was milliseconds apart on a loaded host, and so was MPI_Wtime);
// across hosts, the clocks' offset remains.
void HostBackend::start() {
  world_.barrier();
  start_ = monotonic_seconds();
  check_mpi(MPI_Bcast(&start_, 1, MPI_DOUBLE, 0, world_.communicator()), "MPI_Bcast");
}

void HostBackend::issue(const Task& task, int queue, const std::vector<int>&) {
  TaskTiming& timing = timings_[task.id];
  timing.start = now();
  std::vector<float>& buffer = buffers_[queue];
  if (is_compute(task.kind))
    compute(task, op_seconds_[task.id]);
  else if (is_collective(task.kind))
    collective(task, buffer);
  else if (task.kind == TaskKind::SEND)
    send(task, buffer);
  else if (task.kind == TaskKind::RECV)
    receive(task, buffer, timing);
  timing.end = now();
  completed_ += 1;
}

void HostBackend::compute(const Task& task, std::vector<double>& op_seconds) {
  for (const Op& op : program_->works[task.work].ops) {
    CpuKernel& kernel = *kernels_.at(kernel_call(op, dtype_, context_).description());
    const double begin = now();
    kernel.run();
    op_seconds.push_back(now() - begin);
  }
}

void HostBackend::collective(const Task& task, std::vector<float>& buffer) {
  const std::string name = task_name(*program_, task);
  MPI_Comm comm = communicators_[plan_->of_task(task)];
  int members = 0, index = 0;
  MPI_Comm_size(comm, &members);
  MPI_Comm_rank(comm, &index);
  const int64_t elements = floats_of(task);
  const int shard = static_cast<int>(std::max<int64_t>(elements / members, 1));
  const float mine = static_cast<float>(index + 1);
  const float sum = static_cast<float>(members) * (members + 1) / 2;  // exact in float for any group size we run
  for (int repeat = 0; repeat < task.count; ++repeat) {
    bool correct = true;
    if (task.kind == TaskKind::ALLREDUCE) {
      std::fill_n(buffer.begin(), elements, mine);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(elements), MPI_FLOAT, MPI_SUM, comm),
            name);
      correct = std::all_of(buffer.begin(), buffer.begin() + elements, [&](float x) { return x == sum; });
    } else if (task.kind == TaskKind::REDUCESCATTER) {
      std::vector<float> input(static_cast<size_t>(shard) * members, mine);
      check_mpi(MPI_Reduce_scatter_block(input.data(), buffer.data(), shard, MPI_FLOAT, MPI_SUM, comm), name);
      correct = std::all_of(buffer.begin(), buffer.begin() + shard, [&](float x) { return x == sum; });
    } else if (task.kind == TaskKind::ALLGATHER) {
      std::vector<float> input(shard, mine);
      std::vector<float>& output = buffer;
      output.resize(std::max<size_t>(output.size(), static_cast<size_t>(shard) * members));
      check_mpi(MPI_Allgather(input.data(), shard, MPI_FLOAT, output.data(), shard, MPI_FLOAT, comm), name);
      for (int m = 0; m < members && correct; ++m)
        correct = std::all_of(output.begin() + int64_t(m) * shard, output.begin() + int64_t(m + 1) * shard,
                              [&](float x) { return x == m + 1; });
    } else {  // ALLTOALL: the task's bytes are what this rank sends, a shard to each member
      // Block j of member m holds m·members + j: the block received from m must hold m·members + index.
      std::vector<float> input(static_cast<size_t>(shard) * members);
      for (int j = 0; j < members; ++j)
        std::fill_n(input.begin() + int64_t(j) * shard, shard, static_cast<float>(index * members + j));
      std::vector<float>& output = buffer;
      output.resize(std::max<size_t>(output.size(), input.size()));
      check_mpi(MPI_Alltoall(input.data(), shard, MPI_FLOAT, output.data(), shard, MPI_FLOAT, comm), name);
      for (int m = 0; m < members && correct; ++m)
        correct = std::all_of(output.begin() + int64_t(m) * shard, output.begin() + int64_t(m + 1) * shard,
                              [&](float x) { return x == static_cast<float>(m * members + index); });
    }
    if (!correct)
      throw LiveError("rank " + std::to_string(task.rank) + ": " + name + " gave a wrong result (repeat " +
                      std::to_string(repeat + 1) + " of " + std::to_string(task.count) + ")");
    checked_ += 1;
  }
}

// A transfer's first four bytes carry its SEND's task id, which the RECV checks.
void HostBackend::send(const Task& task, std::vector<float>& buffer) {
  const std::string name = task_name(*program_, task);
  const int bytes = static_cast<int>(std::max<int64_t>(floats_of(task), 1) * 4);
  std::memcpy(buffer.data(), &task.id, sizeof task.id);
  check_mpi(MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, task.id % tag_limit_, communicators_[plan_->of_task(task)]),
        name);
}

// A receive starts when its message does: the wait for the sender is idle
// time, as in the simulation, where a RECV spans its SEND's transfer.
void HostBackend::receive(const Task& task, std::vector<float>& buffer, TaskTiming& timing) {
  const std::string name = task_name(*program_, task);
  const int send_id = program_->deps(task).front();
  const int bytes = static_cast<int>(std::max<int64_t>(floats_of(task), 1) * 4);
  MPI_Comm comm = communicators_[plan_->of_task(task)];
  check_mpi(MPI_Probe(0, send_id % tag_limit_, comm, MPI_STATUS_IGNORE), name);
  timing.start = now();
  check_mpi(MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, send_id % tag_limit_, comm, MPI_STATUS_IGNORE), name);
  int carried = -1;
  std::memcpy(&carried, buffer.data(), sizeof carried);
  if (carried != send_id)
    throw LiveError("rank " + std::to_string(task.rank) + ": " + name + " received the data of task " +
                    std::to_string(carried) + ", not of its SEND (task " + std::to_string(send_id) + ")");
}

RankRecord HostBackend::collect() {
  RankRecord record;
  for (int id : program_->rank_tasks(world_.rank())) {
    record.task_ids.push_back(id);
    record.timings.push_back(timings_[id]);
    record.op_seconds.push_back(op_seconds_[id]);
  }
  return record;
}

}  // namespace simtrain
