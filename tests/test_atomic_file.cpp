// Outputs are complete or absent, and an existing one stays as it was until
// its replacement is complete: never a half-written file, never a stray
// temporary one.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/base/atomic_file.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

TEST(AtomicFile, WriterThatThrowsLeavesThePreviousFile) {
  const fixtures::TemporaryDirectory dir{"atomic"};
  const std::string path = (dir.path() / "report.json").string();
  std::ofstream(path) << "previous";
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("failed while writing");
                                     }),
               std::runtime_error);
  EXPECT_EQ(fixtures::read_text(path), "previous");
  EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"report.json"});
}

// What the file held when SIGINT arrived.
std::string path_at_signal, content_at_signal;
void record_content(int) { content_at_signal = fixtures::read_text(path_at_signal); }

// Ctrl-C while a file is written takes effect once it is complete and in place.
TEST(AtomicFile, CtrlCWhileWritingWaitsForTheRename) {
  const fixtures::TemporaryDirectory dir{"atomic"};
  path_at_signal = (dir.path() / "trace.json").string();
  std::ofstream(path_at_signal) << "previous";
  struct sigaction action = {}, previous = {};
  action.sa_handler = record_content;
  sigaction(SIGINT, &action, &previous);
  write_file_atomically(path_at_signal, [](std::ostream& out) {
    out << "first half, ";
    ::raise(SIGINT);
    out << "second half";
  });
  sigaction(SIGINT, &previous, nullptr);
  EXPECT_EQ(content_at_signal, "first half, second half");
  EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"trace.json"});
}

}  // namespace
}  // namespace simtrain
