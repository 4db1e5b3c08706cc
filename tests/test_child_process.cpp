// Several children at once: results in order whatever finishes first, a
// failing child stops the rest, cancelling kills them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sim/base/child_process.hpp"
#include "sim/engine/replay.hpp"

namespace simtrain {
namespace {

TEST(ChildProcesses, ResultsComeBackInOrder) {
  int done = 0;
  const std::vector<std::string> results = run_in_children(
      7, 3,
      [](size_t i) {
        ::usleep(static_cast<useconds_t>((7 - i) * 2000));  // later items finish first
        return std::to_string(i * i) + " from " + std::to_string(::getppid());
      },
      [&](size_t) { ++done; });
  ASSERT_EQ(results.size(), 7u);
  for (size_t i = 0; i < results.size(); ++i)
    EXPECT_EQ(results[i], std::to_string(i * i) + " from " + std::to_string(::getpid()));
  EXPECT_EQ(done, 7);
}

TEST(ChildProcesses, AFailingChildFailsTheBatch) {
  EXPECT_THROW(run_in_children(
                   4, 2,
                   [](size_t i) -> std::string {
                     if (i == 2) throw std::runtime_error("boom");
                     return "ok";
                   },
                   {}),
               std::runtime_error);
}

TEST(ChildProcesses, CancellingKillsTheChildren) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  ChildOptions options;
  options.cancel = &cancel;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_in_children(
                   4, 2,
                   [](size_t) {
                     ::sleep(30);
                     return std::string();
                   },
                   {}, options),
               Interrupted);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace simtrain
