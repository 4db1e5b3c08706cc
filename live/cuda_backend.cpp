#include "cuda_backend.hpp"

// NOT YET RUN ON A GPU (see cuda_backend.hpp): compiled only.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <cuda_runtime.h>
#include <nccl.h>

#include "device_buffer.hpp"
#include "fill.hpp"
#include "gemm.hpp"
#include "kernel_call.hpp"
#include "prepared_kernel.hpp"
#include "sim/model/profiled_cost_model.hpp"

namespace simtrain {

namespace {

void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw LiveError(what + ": " + cudaGetErrorString(status));
}

void check(ncclResult_t status, const std::string& what, ncclComm_t comm = nullptr) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  std::string message = what + ": " + ncclGetErrorString(status);
  const char* last = ncclGetLastError(comm);
  if (last && *last) message += std::string(" (") + last + ")";
  throw LiveError(message);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t group_ranks(const Program& program, const Task& task) {
  return task.group >= 0 ? int64_t(program.groups.at(task.group).ranks.size()) : 2;
}

// What a communication task moves, as NCCL sees it. Both the backend's
// bytes_needed() and prepare() size their buffers with it.
struct CommShape {
  ncclDataType_t type = ncclBfloat16;
  int64_t elements = 0;  // all-reduce: of the buffer; reduce-scatter: its input; all-gather: its output;
                         // all-to-all: what the rank sends; p2p: bytes
  int64_t element_bytes = 2;
  bool checked = false;  // out of place, float, from an input of (communicator rank + 1)
  bool out_of_place = false;  // all-to-all: sent from the buffer's first half, received into its second
  double buffer_bytes() const { return double(elements * element_bytes) * (checked || out_of_place ? 2 : 1); }
};

// `group_size`: the ranks of the task's group (unused for SEND/RECV).
CommShape comm_shape(const Task& task, int64_t group_size, bool checked) {
  CommShape shape;
  const int64_t bytes = std::max<int64_t>(1, int64_t(std::ceil(task.bytes)));
  if (task.kind == TaskKind::SEND || task.kind == TaskKind::RECV) {
    shape.type = ncclUint8;
    shape.element_bytes = 1;
    shape.elements = bytes;
    return shape;
  }
  const int64_t n = std::max<int64_t>(1, group_size);
  shape.checked = checked;
  if (checked) shape.type = ncclFloat32, shape.element_bytes = 4;
  shape.elements = ceil_div(bytes, shape.element_bytes);
  if (task.kind != TaskKind::ALLREDUCE) shape.elements = ceil_div(shape.elements, n) * n;
  shape.out_of_place = task.kind == TaskKind::ALLTOALL;
  return shape;
}

// The first all-reduce of each (group, stream) in the rank's task order: the
// collectives whose results are checked. Every member of a group runs that
// group's collectives in the same order, so they agree on which it is.
std::set<int> checked_tasks(const Program& program, int rank) {
  std::set<int> checked;
  std::set<std::pair<int, Stream>> seen;
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks.at(id);
    if (t.kind == TaskKind::ALLREDUCE && seen.insert({t.group, t.stream}).second) checked.insert(id);
  }
  return checked;
}

bool uses_communicator(TaskKind kind) {
  return is_collective(kind) || kind == TaskKind::SEND || kind == TaskKind::RECV;
}

// Marks the backend unhealthy (its communicators aborted, not destroyed, at
// the end) unless the scope it guards completes.
struct UnhealthyUnlessDone {
  std::atomic<bool>& healthy;
  bool done = false;
  ~UnhealthyUnlessDone() {
    if (!done) healthy = false;
  }
};

}  // namespace

struct CudaBackend::State {
  ProcessWorld& world;
  std::unique_ptr<CostModel> cost_model;  // the simulator's, for the estimate of the step
  KernelContext context;
  Dtype dtype = Dtype::bf16;
  int device = 0;
  int rank = -1;
  bool prepared = false;

  CommunicatorPlan plan;
  std::vector<TaskQueue> queues;
  std::vector<cudaStream_t> streams;  // by queue
  cudaStream_t setup = nullptr;       // filling, warm-up

  // By spec index; null where this rank is not a member.
  std::vector<ncclComm_t> comms;
  std::vector<int> comm_rank, comm_size;
  std::mutex comm_mutex;  // polling vs. abort
  std::atomic<bool> aborted{false};  // set under comm_mutex
  std::atomic<bool> healthy{true};  // no error seen: communicators are destroyed, not aborted

  std::unique_ptr<cuda::CublasLt> cublas;
  std::map<std::string, std::unique_ptr<PreparedKernel>> kernels;  // by KernelCall::description()
  std::map<int, std::vector<const PreparedKernel*>> work_kernels;  // by work index, one per op

  std::vector<cuda::DeviceBuffer<std::byte>> queue_buffers;  // by queue
  struct Check {
    int comm = -1;
    CommShape shape;
    cuda::DeviceBuffer<float> input, output;
    float expected = 0;
  };
  std::map<int, Check> checks;  // by task id
  long long checked = 0;

  struct Record {
    int queue = -1;
    bool compute = false;
    cudaEvent_t start = nullptr, end = nullptr;
    std::vector<cudaEvent_t> after_op;  // compute tasks: recorded after each op
    std::atomic<bool> issued{false};  // read by the threads of other queues, for their dependencies
  };
  std::unordered_map<int, Record> records;     // this rank's tasks, by id; built in prepare()
  const Program* program = nullptr;             // prepare()'s, for messages
  std::vector<int> order;                       // this rank's tasks, Program::rank_tasks order
  std::vector<std::vector<int>> issued;         // by queue, in issue order; a queue is issued from one thread
  std::vector<size_t> finished;                 // by queue: how many of `issued` have completed
  std::vector<cudaEvent_t> origin;              // by queue: start()'s event

  State(ProcessWorld& w) : world(w) {}
  ~State();

  // Counts the queue's newly completed tasks into `completed` (a queue's
  // tasks complete in issue order: only the first unfinished one is asked).
  bool drain(size_t queue, std::atomic<int>& completed);
  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")"); }
  void poll_communicators();
  void wait_for(cudaStream_t stream, const std::string& what);
  void enqueue_communication(const Task& task, cudaStream_t stream, int times);
  void verify(int task_id, Check& check);
};

CudaBackend::State::~State() {
  cudaSetDevice(device);
  {
    std::lock_guard lock(comm_mutex);
    if (!aborted)
      for (ncclComm_t comm : comms)
        if (comm) healthy ? ncclCommDestroy(comm) : ncclCommAbort(comm);
    aborted = true;
  }
  for (auto& [id, record] : records) {
    if (record.start) cudaEventDestroy(record.start);
    if (record.end) cudaEventDestroy(record.end);
    for (cudaEvent_t e : record.after_op) cudaEventDestroy(e);
  }
  for (cudaEvent_t e : origin)
    if (e) cudaEventDestroy(e);
  if (healthy) cudaDeviceSynchronize();  // before the buffers are freed
  for (cudaStream_t s : streams)
    if (s) cudaStreamDestroy(s);
  if (setup) cudaStreamDestroy(setup);
}

void CudaBackend::State::poll_communicators() {
  std::lock_guard lock(comm_mutex);
  if (aborted) throw LiveError("rank " + std::to_string(rank) + ": the communicators were aborted");
  for (size_t i = 0; i < comms.size(); ++i) {
    if (!comms[i]) continue;
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comms[i], &async), "ncclCommGetAsyncError on " + plan.specs[i].name, comms[i]);
    check(async, "rank " + std::to_string(rank) + ": communicator " + plan.specs[i].name, comms[i]);
  }
}

bool CudaBackend::State::drain(size_t queue, std::atomic<int>& completed) {
  bool progress = false;
  while (finished[queue] < issued[queue].size()) {
    const int id = issued[queue][finished[queue]];
    const cudaError_t status = cudaEventQuery(records.at(id).end);
    if (status == cudaErrorNotReady) break;
    check(status, "rank " + std::to_string(rank) + ": task " + std::to_string(id));
    ++finished[queue];
    ++completed;
    progress = true;
  }
  return progress;
}

// Polls, so that a failing communicator is reported rather than waited on forever.
void CudaBackend::State::wait_for(cudaStream_t stream, const std::string& what) {
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) check(status, what);
    poll_communicators();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// `times` calls of the task's NCCL operation on `stream`.
void CudaBackend::State::enqueue_communication(const Task& task, cudaStream_t stream, int times) {
  const int index = plan.of_task(task);
  if (aborted) throw LiveError("rank " + std::to_string(rank) + ": the communicators were aborted");
  ncclComm_t comm = comms.at(index);
  if (!comm) throw LiveError("rank " + std::to_string(rank) + " is not in communicator " + plan.specs[index].name);
  const std::string where =
      "rank " + std::to_string(rank) + ": " + task_name(*program, task) + " on " + plan.specs[index].name;
  const int n = comm_size[index], me = comm_rank[index];
  std::byte* buffer = queue_buffers.at(records.at(task.id).queue).get();
  const auto found = checks.find(task.id);
  const CommShape shape = found != checks.end() ? found->second.shape : comm_shape(task, n, false);
  const size_t elements = size_t(shape.elements);
  for (int i = 0; i < times; ++i) {
    switch (task.kind) {
      case TaskKind::ALLREDUCE:
        if (found != checks.end())
          check(ncclAllReduce(found->second.input.get(), found->second.output.get(), elements, shape.type, ncclSum,
                              comm, stream),
                "ncclAllReduce, " + where, comm);
        else
          check(ncclAllReduce(buffer, buffer, elements, shape.type, ncclSum, comm, stream), "ncclAllReduce, " + where,
                comm);
        break;
      case TaskKind::REDUCESCATTER: {  // in place: the output is this rank's share of the input
        const size_t share = elements / size_t(n);
        check(ncclReduceScatter(buffer, buffer + size_t(me) * share * size_t(shape.element_bytes), share, shape.type,
                                ncclSum, comm, stream),
              "ncclReduceScatter, " + where, comm);
        break;
      }
      case TaskKind::ALLGATHER: {  // in place: the input is this rank's share of the output
        const size_t share = elements / size_t(n);
        check(ncclAllGather(buffer + size_t(me) * share * size_t(shape.element_bytes), buffer, share, shape.type, comm,
                            stream),
              "ncclAllGather, " + where, comm);
        break;
      }
      case TaskKind::SEND: check(ncclSend(buffer, elements, shape.type, 1, comm, stream), "ncclSend, " + where, comm); break;
      case TaskKind::RECV: check(ncclRecv(buffer, elements, shape.type, 0, comm, stream), "ncclRecv, " + where, comm); break;
      case TaskKind::ALLTOALL: {  // a share to each member, as NCCL's own all-to-all does: grouped sends and receives
        const size_t share = elements / size_t(n), share_bytes = share * size_t(shape.element_bytes);
        std::byte* received = buffer + elements * size_t(shape.element_bytes);
        check(ncclGroupStart(), "ncclGroupStart, " + where, comm);
        for (int peer = 0; peer < n; ++peer) {
          check(ncclSend(buffer + size_t(peer) * share_bytes, share, shape.type, peer, comm, stream), "ncclSend, " + where,
                comm);
          check(ncclRecv(received + size_t(peer) * share_bytes, share, shape.type, peer, comm, stream),
                "ncclRecv, " + where, comm);
        }
        check(ncclGroupEnd(), "ncclGroupEnd, " + where, comm);
        break;
      }
      default: throw LiveError(where + ": not a communication task");
    }
  }
}

void CudaBackend::State::verify(int task_id, Check& c) {
  const std::vector<float> result = c.output.to_host();
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < result.size(); ++i)
    if (result[i] != c.expected && wrong++ == 0) first = int64_t(i);
  ++checked;
  if (wrong)
    throw LiveError("rank " + std::to_string(rank) + ": wrong all-reduce result on communicator " +
                    plan.specs[c.comm].name + " (task " + std::to_string(task_id) + "): " + std::to_string(wrong) +
                    " of " + std::to_string(result.size()) + " elements differ from " + std::to_string(c.expected) +
                    ", the first at index " + std::to_string(first) + " is " + std::to_string(result[size_t(first)]));
}

CudaBackend::CudaBackend(ProcessWorld& world, const Scenario& scenario, int device)
    : state_(std::make_unique<State>(world)) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw LiveError(std::string("no CUDA device: ") +
                    (status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount found none"));
  state_->device = device >= 0 ? device : local_rank_device() % count;
  if (state_->device >= count)
    throw LiveError("CUDA device " + std::to_string(state_->device) + " asked for, " + std::to_string(count) +
                    " visible");
  state_->cost_model = make_cost_model(scenario);
  state_->context = kernel_context(scenario);
  state_->dtype = scenario.training.dtype;
  state_->use_device();
}

CudaBackend::~CudaBackend() = default;

int CudaBackend::local_rank_device() {
  return rank_from_environment({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"});
}

std::string CudaBackend::device() const {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, state_->device), "cudaGetDeviceProperties");
  return properties.name;
}

double CudaBackend::bytes_available() const {
  state_->use_device();
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return double(free);
}

// Nothing is timed before the step: the simulator's cost model of the
// scenario's GPU stands in for the device.
WorkEstimate CudaBackend::estimate_works(const Program& program, int) const {
  WorkEstimate estimate{{}, "the simulator's cost model of the scenario's GPU (its kernel profile where it has one); "
                            "communication not counted"};
  for (const Work& work : program.works)
    estimate.work_seconds.push_back(work_seconds(*state_->cost_model, work, state_->dtype));
  return estimate;
}

double CudaBackend::bytes_needed(const Program& program, int rank) const {
  const State& st = *state_;
  double bytes = 0;
  for (const auto& [name, call] : rank_kernel_calls(program, rank, st.dtype, st.context)) {
    try {
      bytes += PreparedKernel::bytes_needed(call);
    } catch (const std::exception& e) {
      throw LiveError("rank " + std::to_string(rank) + ": " + name + " cannot run on the GPU: " + e.what());
    }
  }
  const std::set<int> checked = checked_tasks(program, rank);
  for (const TaskQueue& queue : task_queues(program, rank, true)) {
    double largest = 0;
    for (int id : queue.tasks) {
      const Task& t = program.tasks.at(id);
      if (!uses_communicator(t.kind)) continue;
      const CommShape shape = comm_shape(t, group_ranks(program, t), checked.count(id) > 0);
      if (shape.checked)
        bytes += shape.buffer_bytes();  // its own input and output
      else
        largest = std::max(largest, shape.buffer_bytes());
    }
    bytes += largest;
  }
  return bytes;
}

void CudaBackend::prepare(const Program& program, int rank, const CommunicatorPlan& plan,
                          const std::vector<TaskQueue>& queues) {
  State& st = *state_;
  UnhealthyUnlessDone guard{st.healthy};
  st.use_device();
  if (st.prepared) throw LiveError("CudaBackend::prepare() called twice");
  if (st.world.rank() != rank)
    throw LiveError("CudaBackend: process " + std::to_string(st.world.rank()) + " asked to prepare rank " +
                    std::to_string(rank) + "; the world's ranks must be the Program's");
  const std::string me = "rank " + std::to_string(rank);
  st.rank = rank;
  st.plan = plan;
  st.queues = queues;
  st.program = &program;
  const RankTaskIds order = program.rank_tasks(rank);
  st.order.assign(order.begin(), order.end());

  // Communicators: every rank takes part in every broadcast, in plan order;
  // then this rank's communicators are created together, so that no order
  // of creation across ranks can deadlock.
  const size_t specs = plan.specs.size();
  st.comms.assign(specs, nullptr);
  st.comm_rank.assign(specs, -1);
  st.comm_size.assign(specs, 0);
  std::vector<ncclUniqueId> ids(specs);
  for (size_t i = 0; i < specs; ++i) {
    const CommunicatorSpec& spec = plan.specs[i];
    const int root = spec.ranks.at(0);
    std::string bytes;
    if (root == rank) {
      ncclUniqueId id;
      check(ncclGetUniqueId(&id), "ncclGetUniqueId for " + spec.name);
      bytes.assign(reinterpret_cast<const char*>(&id), sizeof id);
    }
    st.world.broadcast(bytes, root);
    const auto member = std::find(spec.ranks.begin(), spec.ranks.end(), rank);
    if (member == spec.ranks.end()) continue;
    if (bytes.size() != sizeof(ncclUniqueId))
      throw LiveError(me + ": the NCCL unique id of " + spec.name + " arrived with " + std::to_string(bytes.size()) +
                      " bytes, not " + std::to_string(sizeof(ncclUniqueId)));
    std::memcpy(&ids[i], bytes.data(), sizeof(ncclUniqueId));
    st.comm_rank[i] = int(member - spec.ranks.begin());
    st.comm_size[i] = int(spec.ranks.size());
  }
  std::vector<ncclComm_t> comms(specs, nullptr);
  int members = 0;
  check(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < specs; ++i)
    if (st.comm_rank[i] >= 0) {
      ++members;
      check(ncclCommInitRank(&comms[i], st.comm_size[i], ids[i], st.comm_rank[i]),
            me + ": ncclCommInitRank for " + plan.specs[i].name);
    }
  check(ncclGroupEnd(), me + ": creating its " + std::to_string(members) + " NCCL communicators");
  {
    std::lock_guard lock(st.comm_mutex);
    st.comms = comms;
  }

  // Streams, and the events of every task.
  check(cudaStreamCreateWithFlags(&st.setup, cudaStreamNonBlocking), "cudaStreamCreate");
  st.streams.assign(queues.size(), nullptr);
  st.origin.assign(queues.size(), nullptr);
  st.issued.assign(queues.size(), {});
  st.finished.assign(queues.size(), 0);
  for (size_t q = 0; q < queues.size(); ++q) {
    check(cudaStreamCreateWithFlags(&st.streams[q], cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&st.origin[q]), "cudaEventCreate");
    for (int id : queues[q].tasks) {
      const Task& t = program.tasks.at(id);
      State::Record& record = st.records[id];
      record.queue = int(q);
      record.compute = is_compute(t.kind);
      check(cudaEventCreate(&record.start), "cudaEventCreate");
      check(cudaEventCreate(&record.end), "cudaEventCreate");
      if (record.compute && t.work >= 0) {
        record.after_op.assign(program.works.at(t.work).ops.size(), nullptr);
        for (cudaEvent_t& e : record.after_op) check(cudaEventCreate(&e), "cudaEventCreate");
      }
    }
  }

  // Kernels: one PreparedKernel per distinct call, shared by the ops that make it.
  try {
    st.cublas = std::make_unique<cuda::CublasLt>();
    for (int id : st.order) {
      const Task& t = program.tasks.at(id);
      if (!is_compute(t.kind) || t.work < 0 || st.work_kernels.count(t.work)) continue;
      std::vector<const PreparedKernel*>& launches = st.work_kernels[t.work];
      for (const Op& op : program.works.at(t.work).ops) {
        const KernelCall call = kernel_call(op, st.dtype, st.context);
        std::unique_ptr<PreparedKernel>& kernel = st.kernels[call.description()];
        if (!kernel) {
          try {
            kernel = std::make_unique<PreparedKernel>(call, *st.cublas, st.setup);
          } catch (const std::exception& e) {
            st.kernels.erase(call.description());
            throw LiveError(me + ": cannot prepare " + call.description() + " for op " + op.name + " of " +
                            program.works.at(t.work).name + ": " + e.what());
          }
        }
        launches.push_back(st.kernels.at(call.description()).get());
      }
    }
  } catch (const LiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw LiveError(me + ": preparing the kernels: " + e.what());
  }

  // Communication buffers: one per queue, of its largest transfer; the
  // checked all-reduces an input and an output of their own.
  const std::set<int> checked = checked_tasks(program, rank);
  try {
    for (size_t q = 0; q < queues.size(); ++q) {
      double largest = 0;
      for (int id : queues[q].tasks) {
        const Task& t = program.tasks.at(id);
        if (!uses_communicator(t.kind)) continue;
        const int comm = plan.of_task(t);
        const CommShape shape = comm_shape(t, st.comm_size.at(comm), checked.count(id) > 0);
        if (!shape.checked) {
          largest = std::max(largest, shape.buffer_bytes());
          continue;
        }
        State::Check& c = st.checks[id];
        c.comm = comm;
        c.shape = shape;
        c.input = cuda::DeviceBuffer<float>(size_t(shape.elements));
        c.output = cuda::DeviceBuffer<float>(size_t(shape.elements));
        const float mine = float(st.comm_rank[comm] + 1);
        const double n = st.comm_size[comm];
        c.expected = float(n * (n + 1) / 2);
        cuda::fill_uniform(c.input.get(), shape.elements, mine, mine, 1, st.setup);  // low == high: all `mine`
        check(cudaMemsetAsync(c.output.get(), 0, c.output.bytes(), st.setup), "cudaMemsetAsync");
      }
      st.queue_buffers.emplace_back(size_t(largest));
      if (largest > 0)
        check(cudaMemsetAsync(st.queue_buffers.back().get(), 0, size_t(largest), st.setup), "cudaMemsetAsync");
    }
  } catch (const LiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw LiveError(me + ": allocating the communication buffers: " + e.what());
  }

  // Warm-up, on the setup stream: every kernel once; on every communicator,
  // in plan order, each distinct operation once (the same on every member).
  try {
    for (const auto& [call, kernel] : st.kernels) kernel->launch(st.setup);
  } catch (const std::exception& e) {
    throw LiveError(me + ": warming up the kernels: " + e.what());
  }
  std::vector<std::map<std::tuple<int, int64_t, int, bool>, int>> distinct(specs);
  for (int id : st.order) {
    const Task& t = program.tasks.at(id);
    if (!uses_communicator(t.kind)) continue;
    const int comm = plan.of_task(t);
    const auto found = st.checks.find(id);
    const CommShape shape = found != st.checks.end() ? found->second.shape : comm_shape(t, st.comm_size[comm], false);
    distinct[comm].emplace(std::make_tuple(int(t.kind), shape.elements, int(shape.type), shape.checked), id);
  }
  for (size_t i = 0; i < specs; ++i)
    for (const auto& [key, id] : distinct[i]) st.enqueue_communication(program.tasks.at(id), st.setup, 1);
  st.wait_for(st.setup, me + ": warm-up");
  st.prepared = true;
  guard.done = true;
}

void CudaBackend::start() {
  State& st = *state_;
  if (!st.prepared) throw LiveError("CudaBackend::start() before prepare()");
  st.use_device();
  for (auto& [id, c] : st.checks)
    check(cudaMemsetAsync(c.output.get(), 0, c.output.bytes(), st.setup), "cudaMemsetAsync");
  st.wait_for(st.setup, "rank " + std::to_string(st.rank) + ": before the step");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  st.world.barrier();  // after the device is idle, so that every rank's origin is as close as it can be
  for (size_t q = 0; q < st.streams.size(); ++q)
    check(cudaEventRecord(st.origin[q], st.streams[q]), "cudaEventRecord");
  for (auto& [id, record] : st.records) record.issued = false;
  for (std::vector<int>& ids : st.issued) ids.clear();
  std::fill(st.finished.begin(), st.finished.end(), 0);
  completed_ = 0;
}

void CudaBackend::issue(const Task& task, int queue, const std::vector<int>& local_deps) {
  State& st = *state_;
  try {
    st.use_device();  // the executor may issue from a thread per queue
    const std::string me = "rank " + std::to_string(st.rank);
    const auto found = st.records.find(task.id);
    if (found == st.records.end()) throw LiveError(me + ": task " + task_name(*st.program, task) + " is not one of its tasks");
    State::Record& record = found->second;
    if (queue != record.queue)
      throw LiveError(me + ": task " + task_name(*st.program, task) + " issued on queue " + std::to_string(queue) + ", prepared on " +
                      std::to_string(record.queue));
    cudaStream_t stream = st.streams.at(size_t(queue));
    for (int dep : local_deps) {
      const auto d = st.records.find(dep);
      if (d == st.records.end() || !d->second.issued)
        throw LiveError(me + ": task " + task_name(*st.program, task) + " depends on task " + std::to_string(dep) +
                        ", which this rank has not issued");
      check(cudaStreamWaitEvent(stream, d->second.end, 0), "cudaStreamWaitEvent");
    }
    check(cudaEventRecord(record.start, stream), "cudaEventRecord");
    if (record.compute) {
      if (task.work >= 0) {
        const std::vector<const PreparedKernel*>& launches = st.work_kernels.at(task.work);
        for (size_t i = 0; i < launches.size(); ++i) {
          try {
            launches[i]->launch(stream);
          } catch (const std::exception& e) {
            throw LiveError(me + ": task " + task_name(*st.program, task) + ", op " + std::to_string(i) + ": " + e.what());
          }
          check(cudaEventRecord(record.after_op[i], stream), "cudaEventRecord");
        }
      }
    } else if (uses_communicator(task.kind)) {
      st.enqueue_communication(task, stream, is_collective(task.kind) ? std::max(1, task.count) : 1);
    }
    check(cudaEventRecord(record.end, stream), "cudaEventRecord");
    record.issued = true;
    st.issued[size_t(queue)].push_back(task.id);
    st.drain(size_t(queue), completed_);  // so that the watchdog sees progress while tasks are still issued
  } catch (...) {
    st.healthy = false;
    throw;
  }
}

RankRecord CudaBackend::collect() {
  State& st = *state_;
  try {
    st.use_device();
    for (;;) {
      bool progress = false, done = true;
      for (size_t q = 0; q < st.issued.size(); ++q) {
        progress = st.drain(q, completed_) || progress;
        done = done && st.finished[q] == st.issued[q].size();
      }
      if (done) break;
      st.poll_communicators();
      if (!progress) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }

    RankRecord result;
    auto seconds = [&](cudaEvent_t from, cudaEvent_t to) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
      return double(ms) * 1e-3;
    };
    for (int id : st.order) {
      const State::Record& record = st.records.at(id);
      if (!record.issued) continue;
      const cudaEvent_t origin = st.origin.at(size_t(record.queue));
      result.task_ids.push_back(id);
      result.timings.push_back({seconds(origin, record.start), seconds(origin, record.end)});
      std::vector<double> ops;
      cudaEvent_t previous = record.start;
      for (cudaEvent_t after : record.after_op) {
        ops.push_back(seconds(previous, after));
        previous = after;
      }
      result.op_seconds.push_back(std::move(ops));
    }
    for (auto& [id, c] : st.checks)
      if (st.records.at(id).issued) st.verify(id, c);
    return result;
  } catch (...) {
    st.healthy = false;
    throw;
  }
}

long long CudaBackend::checked_collectives() const { return state_->checked; }

void CudaBackend::abort_communicators() {
  State& st = *state_;
  std::lock_guard lock(st.comm_mutex);
  st.healthy = false;
  if (st.aborted) return;
  cudaSetDevice(st.device);  // the watchdog's thread
  for (ncclComm_t comm : st.comms)
    if (comm) ncclCommAbort(comm);
  st.aborted = true;
}

}  // namespace simtrain
