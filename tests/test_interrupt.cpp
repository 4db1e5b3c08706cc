// Ctrl-C during a long simulation, on the real binary: it exits with 130 and
// a clear message, leaves the previous report as it was, and leaves neither a
// temporary file nor the forked simulation process behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

extern char** environ;

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The processes whose parent is `parent`, from /proc/<pid>/stat.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat;
    std::getline(std::ifstream(entry.path() / "stat"), stat);
    const size_t name_end = stat.rfind(')');  // "pid (command) state ppid ...": the command may hold spaces
    if (name_end == std::string::npos) continue;
    std::istringstream fields(stat.substr(name_end + 1));
    char state = 0;
    pid_t ppid = 0;
    if (fields >> state >> ppid && ppid == parent) children.push_back(std::stoi(name));
  }
  return children;
}

// Starts `argv` with stdout and stderr going to files.
pid_t spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  return error == 0 ? pid : -1;
}

// Ctrl-C to `simtrain`: it exits with 130 and `message` on standard error
// (the file `err`), and its forked `child` is gone.
void interrupt_and_expect_exit_130(pid_t simtrain, pid_t child, const std::string& err, const std::string& message) {
  ASSERT_EQ(::kill(simtrain, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(simtrain, &status, 0), simtrain);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130) << fixtures::read_text(err);
  EXPECT_THAT(fixtures::read_text(err), testing::HasSubstr(message));
  EXPECT_EQ(::kill(child, 0), -1) << "the forked process " << child << " is still there";
  EXPECT_EQ(errno, ESRCH);
}

TEST(Interrupt, CtrlCKeepsThePreviousReportAndLeavesNothingBehind) {
  const fixtures::TemporaryDirectory temporary{"interrupt"};
  const fs::path& dir = temporary.path();
  const std::string report = (dir / "report.json").string(), out = (dir / "out"), err = (dir / "err");
  const std::string previous = "{\"step_time_s\": 6.4}\n";
  std::ofstream(report) << previous;

  // About 2 s of replay after about 1 s of building the Program (more under sanitizers).
  const pid_t simtrain =
      spawn({SIMTRAIN_BINARY, "simulate", "gpt3-175b-1024xh100", "--quiet", "--report", report, "--force"}, out, err);
  ASSERT_GT(simtrain, 0);
  // Ctrl-C once the simulation runs in its forked child.
  std::vector<pid_t> children;
  for (auto deadline = std::chrono::steady_clock::now() + 120s;
       children.empty() && std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(10ms))
    children = children_of(simtrain);
  ASSERT_EQ(children.size(), 1u) << "no simulation process started";
  std::this_thread::sleep_for(200ms);
  interrupt_and_expect_exit_130(simtrain, children[0], err, "interrupted");
  EXPECT_EQ(fixtures::read_text(report), previous);
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.insert(entry.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"report.json", "out", "err"}));
}

// The same for the runs of `train`, which go on in a child process of their own.
TEST(Interrupt, CtrlCStopsALongTrainingRunWithExitCode130AndWritesNothing) {
  const fixtures::TemporaryDirectory temporary{"train-interrupt"};
  const fs::path& dir = temporary.path();
  const std::string report = (dir / "report.json").string(), out = (dir / "out"), err = (dir / "err");
  // 90 days of tiny-4gpu are some 9.5e8 steps: seconds of runs, after a step simulation of milliseconds.
  const pid_t simtrain =
      spawn({SIMTRAIN_BINARY, "train", "tiny-4gpu", "--days", "90", "--quiet", "--report", report}, out, err);
  ASSERT_GT(simtrain, 0);
  // Ctrl-C once a child has lived for 200 ms: the runs', not the step simulation's.
  pid_t runs = -1;
  for (auto deadline = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < deadline;) {
    const std::vector<pid_t> children = children_of(simtrain);
    if (children.empty()) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    std::this_thread::sleep_for(200ms);
    const std::vector<pid_t> later = children_of(simtrain);
    if (!later.empty() && later.front() == children.front()) {
      runs = children.front();
      break;
    }
  }
  ASSERT_GT(runs, 0) << "no run process lasted 200 ms";
  interrupt_and_expect_exit_130(simtrain, runs, err, "interrupted; no output was written");
  EXPECT_FALSE(fs::exists(report));
}

}  // namespace
}  // namespace simtrain
