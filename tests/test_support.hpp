#pragma once
// Small scenarios and topologies built in code, shared by the test suites.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "sim/base/input_error.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain::fixtures {

// Every rank's task ids in issue order, as Program::set_rank_tasks takes them.
inline std::vector<std::vector<int>> rank_task_lists(const Program& program) {
  std::vector<std::vector<int>> lists;
  for (int rank = 0; rank < program.rank_lists(); ++rank) {
    const RankTaskIds ids = program.rank_tasks(rank);
    lists.emplace_back(ids.begin(), ids.end());
  }
  return lists;
}

// A task's dependencies, to compare with a vector.
inline std::vector<int> deps_of(const Program& program, const Task& task) {
  const TaskDeps deps = program.deps(task);
  return {deps.begin(), deps.end()};
}

// Edits one rank's task ids in issue order: `edit(std::vector<int>& ids)`.
template <class Edit>
void edit_rank_tasks(Program& program, int rank, Edit edit) {
  std::vector<std::vector<int>> lists = rank_task_lists(program);
  edit(lists.at(rank));
  program.set_rank_tasks(lists);
}

// A GPT-style model of `layers` layers on tp x pp x dp GPUs of a DGX H100 topology.
inline nlohmann::json scenario_json(int tp, int pp, int dp, int layers, const std::string& schedule,
                                    int layers_per_virtual_stage = 0, int micro_batches = 8) {
  nlohmann::json parallelism = {{"tensor_model_parallel_size", tp},
                                {"pipeline_model_parallel_size", pp},
                                {"schedule", schedule}};
  if (layers_per_virtual_stage) parallelism["num_layers_per_virtual_pipeline_stage"] = layers_per_virtual_stage;
  return {{"name", "test"},
          {"model",
           {{"hidden_size", 512},
            {"num_hidden_layers", layers},
            {"num_attention_heads", 8},
            {"vocab_size", 4096},
            {"max_position_embeddings", 512}}},
          {"training", {{"seq_length", 512}, {"micro_batch_size", 1}, {"global_batch_size", micro_batches * dp}}},
          {"parallelism", parallelism},
          {"cluster", {{"gpu", "H100-SXM"}, {"num_gpus", tp * pp * dp}, {"topology", "dgx-h100-superpod"}}}};
}

// One GPU per node behind a NIC of `nic_GBps`, every node under one leaf:
// inter-GPU traffic crosses two NIC hops and nothing else that can congest.
inline Topology one_gpu_per_node(double nic_GBps, double hop_latency_seconds) {
  Topology t;
  t.gpus_per_node = 1;
  t.nics_per_node = 1;
  t.nvlink_bytes_per_second = 1e12;
  t.nic_bytes_per_second = nic_GBps * 1e9;
  t.nic_latency_seconds = hop_latency_seconds;
  t.nodes_per_unit = 1024;
  t.units_per_pod = 1;
  return t;
}

// One collective over ranks 0..n-1, on the dp or tp dimension.
inline Program lone_collective(int n, TaskKind kind, double bytes, CommDim dim) {
  Program p;
  p.world_size = n;
  p.tensor_size = dim == CommDim::tp ? n : 1;
  p.coords.resize(n);
  Group g{0, dim, dim == CommDim::tp ? "tp0" : "dp0", {}};
  for (int r = 0; r < n; ++r) g.ranks.push_back(r);
  p.groups.push_back(g);
  for (int r = 0; r < n; ++r) {
    Task t;
    t.rank = r;
    t.stream = dim == CommDim::tp ? Stream::compute : Stream::dp;
    t.kind = kind;
    t.dim = dim;
    t.group = 0;
    t.bytes = bytes;
    p.add_task(t);
    p.end_rank();
  }
  return p;
}

// A ring collective's closed form: bytes over the bandwidth, one step latency per step.
inline double ring_seconds(TaskKind kind, int n, double bytes, double bandwidth, double step_latency) {
  const double factor = kind == TaskKind::ALLREDUCE ? 2.0 * (n - 1) / n : (n - 1.0) / n;
  const int steps = kind == TaskKind::ALLREDUCE ? 2 * (n - 1) : n - 1;
  return factor * bytes / bandwidth + steps * step_latency;
}

struct CliResult {
  int code;
  std::string out, err;
};

// `simtrain args...`, in-process.
inline CliResult run_simtrain(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"simtrain"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

#ifdef SIMTRAIN_MPIEXEC
// Why `mpirun` cannot run here, or "" if it can.
inline std::string mpirun_missing() {
  return ::access(SIMTRAIN_MPIEXEC, X_OK) == 0 ? "" : "no " + std::string(SIMTRAIN_MPIEXEC) + ": cannot run mpirun";
}

// `mpirun -np ranks simtrain args...`, its output in files under `dir`; a
// run still going after `limit_seconds` is killed (exit code 124).
inline CliResult run_mpi_simtrain(int ranks, const std::vector<std::string>& args, const std::filesystem::path& dir,
                                  int limit_seconds = 600) {
  // OpenMPI does not free all it allocates by MPI_Finalize: LeakSanitizer would fail ranks of an ASan build.
  // Containers often forbid the cross-memory attach of its shared-memory transport's single copy.
  const char* asan_options = std::getenv("ASAN_OPTIONS");
  std::string command = "timeout -s KILL " + std::to_string(limit_seconds) + " " + SIMTRAIN_MPIEXEC +
                        " --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np " +
                        std::to_string(ranks) + " -x ASAN_OPTIONS='" +
                        (asan_options ? std::string(asan_options) + ":" : "") + "detect_leaks=0' " + SIMTRAIN_BINARY;
  for (const std::string& a : args) command += " '" + a + "'";
  command += " >" + (dir / "mpi.out").string() + " 2>" + (dir / "mpi.err").string();
  const int status = std::system(command.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, read_text(dir / "mpi.out"), read_text(dir / "mpi.err")};
}
#endif

inline nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(read_text(path)); }

// A fresh directory for the files a test writes, removed afterwards.
class TemporaryDirectory {
public:
  explicit TemporaryDirectory(const std::string& label) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("simtrain-test-" + label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

// The message of the InputError `reading()` throws, or "no error".
template <typename Reading>
std::string input_error_of(Reading reading) {
  try {
    reading();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The message of the InputError that loading `path` throws.
inline std::string error_loading(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    load_scenario(path, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError loading " << path;
  return "";
}

// The op of `pass` named `name`; throws where it has none.
inline const Op& op_named(const Pass& pass, const std::string& name) {
  for (const Op& op : pass.ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

inline Scenario scenario_from(const nlohmann::json& document) { return parse_scenario(document, "test.json", "."); }

// What scenario_from refuses `document` with, or "no error".
inline std::string scenario_error(const nlohmann::json& document) {
  return input_error_of([&] { scenario_from(document); });
}

// tests/golden/scenarios.txt: every file of scenarios/, one a line, and how
// the tests check it ("report-only", "bench-only" or nothing); '#' starts a comment.
struct ListedScenario {
  std::string name, option;
};

inline std::vector<ListedScenario> listed_scenarios() {
  std::vector<ListedScenario> scenarios;
  std::ifstream list(std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "tests" / "golden" / "scenarios.txt");
  for (std::string line; std::getline(list, line);) {
    std::istringstream fields(line.substr(0, line.find('#')));
    ListedScenario s;
    if (fields >> s.name) scenarios.push_back((fields >> s.option, s));
  }
  return scenarios;
}

// The shipped scenarios whose Programs unit tests build: all but the
// bench-only ones (tens of millions of tasks, gigabytes: bench/scale.cpp runs them).
inline std::vector<ListedScenario> unit_tested_scenarios() {
  std::vector<ListedScenario> scenarios;
  for (const ListedScenario& s : listed_scenarios())
    if (s.option != "bench-only") scenarios.push_back(s);
  return scenarios;
}

}  // namespace simtrain::fixtures
