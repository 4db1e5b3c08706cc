// Wall time and peak memory of `simtrain simulate` on the largest shipped
// jobs, and of a default search over an MoE scenario on 256 GPUs, against
// the goals of the issues on simulating them (15 and 45). Each
// runs as a child process of the built simtrain; its peak resident memory is
// the largest of the child and its descendants (the replay runs in a
// grandchild, see sim/base/child_process.hpp). Prints figures only.
//   simtrain_bench_scale [--timeout SECONDS] [SCENARIO...]   (default: every job below, 600 s each)
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

struct Goal {
  const char* scenario;
  double max_wall_seconds;  // 0: no goal
  double max_peak_bytes;    // 0: no goal
  int search_gpus = 0;      // above 0: `simtrain search SCENARIO --gpus N` (the default grid) instead of simulate
};

// From the issues on simulating them (15, then 45 for the MoE jobs and
// Megatron's 1T row); megatron-529.6b has none of its own.
const Goal goals[] = {
    {"gpt3-175b-1024xh100", 1, 0},
    {"llama3-405b-16kxh100", 15, 2 * GiB},
    {"megatron-1t-3072xa100", 3, 0},
    {"megatron-529.6b-2520xa100", 0, 0},
    {"llama3-405b-98kxh100", 60, 8 * GiB},
    {"deepseek-v3-2048xh800", 30, 4 * GiB},
    {"deepseek-v3-1024xh100", 30, 4 * GiB},
    {"qwen3-30b-a3b-16xh100", 60, 0, 256},  // a default search over an MoE scenario (EP, TP, PP, micro-batch)
};

struct Run {
  double wall_seconds = 0;
  double peak_bytes = 0;
  std::string report;  // what simtrain printed on standard output
  bool timed_out = false;
  int exit_code = 0;   // 128 + signal when killed
};

// `simtrain simulate <scenario> --quiet --no-sensitivity` (the goals are for
// one step; the sensitivity line replays it twice more), or the goal's
// search, in its own process group, killed with its descendants past
// `timeout_seconds`.
Run run_goal(const std::string& simtrain, const Goal& goal, double timeout_seconds) {
  const std::string gpus = std::to_string(goal.search_gpus);
  int out[2];
  if (pipe(out) != 0) std::perror("pipe"), std::exit(1);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) std::perror("fork"), std::exit(1);
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    if (goal.search_gpus > 0)
      execl(simtrain.c_str(), simtrain.c_str(), "search", goal.scenario, "--gpus", gpus.c_str(), "--quiet",
            static_cast<char*>(nullptr));
    else
      execl(simtrain.c_str(), simtrain.c_str(), "simulate", goal.scenario, "--quiet", "--no-sensitivity",
            static_cast<char*>(nullptr));
    std::perror(simtrain.c_str());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: the child may not have run yet
  close(out[1]);
  Run run;
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (char buffer[4096];;) {
    const double left = timeout_seconds - elapsed();
    pollfd readable{out[0], POLLIN, 0};
    if (left <= 0 || poll(&readable, 1, static_cast<int>(left * 1000) + 1) == 0) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    run.report.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);  // ru_maxrss: the child's or, if larger, its descendants'
  run.wall_seconds = elapsed();
  run.peak_bytes = static_cast<double>(usage.ru_maxrss) * 1024;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// "6.4369 s" from the report's "step time             6.4369 s" line.
std::string step_time(const std::string& report) {
  const std::string label = "step time";
  const size_t at = report.find("\n" + label);
  if (at == std::string::npos) return "-";
  const size_t begin = report.find_first_not_of(' ', at + 1 + label.size());
  return report.substr(begin, report.find('\n', begin) - begin);
}

// "< 15 s, < 2.0 GiB: met", "< 1 s: missed", "-" where the issue sets none.
std::string verdict(const Goal& goal, const Run& run) {
  std::string text;
  bool met = run.exit_code == 0 && !run.timed_out;
  char part[64];
  if (goal.max_wall_seconds > 0) {
    std::snprintf(part, sizeof part, "< %.0f s", goal.max_wall_seconds);
    text += part;
    met = met && run.wall_seconds < goal.max_wall_seconds;
  }
  if (goal.max_peak_bytes > 0) {
    std::snprintf(part, sizeof part, "%s< %.1f GiB", text.empty() ? "" : ", ", goal.max_peak_bytes / GiB);
    text += part;
    met = met && run.peak_bytes < goal.max_peak_bytes;
  }
  return text.empty() ? "-" : text + (met ? ": met" : ": missed");
}

// The job's name in the table: the scenario, or "search SCENARIO --gpus N".
std::string job_name(const Goal& goal) {
  return goal.search_gpus > 0 ? "search " + std::string(goal.scenario) + " --gpus " + std::to_string(goal.search_gpus)
                              : goal.scenario;
}

}  // namespace

int main(int argc, char** argv) {
  double timeout_seconds = 600;
  std::vector<Goal> jobs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--timeout" && i + 1 < argc)
      timeout_seconds = std::atof(argv[++i]);
    else
      jobs.push_back({argv[i], 0, 0});  // a scenario of one's own: simulated, no goal
  }
  if (timeout_seconds <= 0) std::fprintf(stderr, "simtrain_bench_scale: --timeout: expected seconds above 0\n"), std::exit(2);
  if (jobs.empty()) jobs.assign(std::begin(goals), std::end(goals));

  std::printf("%-44s %9s %9s %12s  %s\n", "job", "wall s", "peak GiB", "step time", "goal (issues 15, 45)");
  std::fflush(stdout);  // before a child's messages on standard error
  for (Goal job : jobs) {
    for (const Goal& goal : goals)
      if (job.search_gpus == 0 && goal.search_gpus == 0 && std::string(job.scenario) == goal.scenario) job = goal;
    const Run run = run_goal(SIMTRAIN_BINARY, job, timeout_seconds);
    std::string step = job.search_gpus > 0 ? "-" : step_time(run.report);
    if (run.timed_out)
      step = "timed out";
    else if (run.exit_code != 0)
      step = "exit " + std::to_string(run.exit_code);
    std::printf("%-44s %9.2f %9.2f %12s  %s\n", job_name(job).c_str(), run.wall_seconds, run.peak_bytes / GiB,
                step.c_str(), verdict(job, run).c_str());
    std::fflush(stdout);
  }
}
