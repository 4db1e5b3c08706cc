// Nothing a user wrote is lost: one output policy for every command that
// writes (checked before any work, an existing file replaced only with
// --force (tests/test_overwrite_rule.cpp), inputs never overwritten, symbolic links
// written through, devices and FIFOs written in place, outputs complete or as
// they were after Ctrl-C), and inputs that are not files named as such.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "sim/base/interrupt_guard.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/output_files.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

std::string tiny_scenario_text() { return fixtures::read_text(fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json"); }

class OutputPolicy : public testing::Test {
protected:
  fixtures::TemporaryDirectory dir{"outputs"};
  std::string at(const std::string& name) const { return (dir.path() / name).string(); }
  std::string scenario = at("mine.json");
  void SetUp() override { std::ofstream(scenario) << tiny_scenario_text(); }
};

TEST_F(OutputPolicy, AnOutputThatIsTheScenarioIsRefusedAndTheScenarioKept) {
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--report", scenario, "--force"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--report " + scenario + ": is " + scenario + ", an input of this command"));
  EXPECT_EQ(result.out, "") << "refused before any work";
  EXPECT_EQ(fixtures::read_text(scenario), tiny_scenario_text());
}

TEST_F(OutputPolicy, AnOutputThatIsAFileTheScenarioNamesIsRefused) {
  // The model's config.json and the topology file are inputs too, also when reached through a link.
  nlohmann::json document = nlohmann::json::parse(tiny_scenario_text());
  std::ofstream(at("config.json")) << document["model"].dump();
  document["model"] = "config.json";
  std::ofstream(scenario) << document.dump();
  fs::create_symlink("config.json", at("alias.json"));
  const std::string config = fixtures::read_text(at("config.json"));
  for (const std::string& output : {at("config.json"), at("alias.json")}) {
    const auto result = fixtures::run_simtrain({"schedule", scenario, "--out", output, "--force"});
    EXPECT_EQ(result.code, 2) << output;
    EXPECT_THAT(result.err, HasSubstr("an input of this command")) << output;
  }
  EXPECT_EQ(fixtures::read_text(at("config.json")), config);

  const std::string topology = fixtures::read_text(fs::path(SIMTRAIN_SOURCE_DIR) / "topologies/dgx-h100-superpod.json");
  std::ofstream(at("topology.json")) << topology;
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--set", "cluster.topology=topology.json",
                                              "--trace", at("topology.json"), "--force"});
  EXPECT_EQ(result.code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("topology.json, an input of this command"));
  EXPECT_EQ(fixtures::read_text(at("topology.json")), topology);
}

// Even with --force, which replaces other existing files.
TEST_F(OutputPolicy, EveryCommandThatWritesRefusesItsInputAsOutput) {
  const std::vector<std::vector<std::string>> commands = {
      {"search", scenario, "--quiet", "--gpus", "4", "--json", scenario},
      {"search", scenario, "--quiet", "--gpus", "4", "--csv", at("table.csv"), "--pareto-svg", scenario},
      {"schedule", scenario, "--out", scenario},
      {"profile", scenario, "--out", scenario},
      {"train", scenario, "--quiet", "--steps", "10", "--report", scenario},
      {"compare", at("sim.json"), at("live.json"), "--json", at("live.json")},
  };
  std::ofstream(at("sim.json")) << "{}";
  std::ofstream(at("live.json")) << "{}";
  for (std::vector<std::string> command : commands) {
    command.push_back("--force");
    const auto result = fixtures::run_simtrain(command);
    EXPECT_EQ(result.code, 2) << command[0];
    EXPECT_THAT(result.err, HasSubstr("an input of this command")) << command[0];
  }
  EXPECT_EQ(fixtures::read_text(scenario), tiny_scenario_text());
  EXPECT_EQ(fixtures::read_text(at("live.json")), "{}");
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"mine.json", "sim.json", "live.json"}));
}

TEST_F(OutputPolicy, TwoOutputsOnOnePathAreRefused) {
  const auto same = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", at("x.json"), "--report", at("x.json")});
  EXPECT_EQ(same.code, 2);
  EXPECT_THAT(same.err, HasSubstr("--report " + at("x.json") + ": is also the output of --trace"));
  fs::create_symlink("x.json", at("y.json"));
  const auto through_link = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", at("x.json"), "--report", at("y.json")});
  EXPECT_EQ(through_link.code, 2);
  const auto both_standard = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", "-", "--report", "-"});
  EXPECT_EQ(both_standard.code, 2);
  EXPECT_THAT(both_standard.err, HasSubstr("is also the output of --trace"));
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"mine.json", "y.json"}));
}

TEST_F(OutputPolicy, UnwritablePathsAreRefusedBeforeAnyWork) {
  const std::string missing_folder = at("no/such/dir/x.json");
  const auto missing = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", missing_folder});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--trace: " + missing_folder + ": no such folder: " + at("no/such/dir")));
  EXPECT_EQ(missing.out, "") << "refused before the simulation";

  const auto folder = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--report", dir.path().string()});
  EXPECT_EQ(folder.code, 2);
  EXPECT_THAT(folder.err, HasSubstr("is a directory"));

  std::ofstream(at("file")) << "x";
  const auto under_a_file = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--report", at("file/r.json")});
  EXPECT_EQ(under_a_file.code, 2);
  EXPECT_THAT(under_a_file.err, HasSubstr("is not a directory"));
  EXPECT_EQ(fixtures::read_text(at("file")), "x");
}

TEST_F(OutputPolicy, DashIsStandardOutputAndTheTextReportMovesToStandardError) {
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--report", "-"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_GT(nlohmann::json::parse(result.out).at("step_time_s").get<double>(), 0);
  EXPECT_THAT(result.err, HasSubstr("step time"));

  const auto schedule = fixtures::run_simtrain({"schedule", scenario});
  ASSERT_EQ(schedule.code, 0) << schedule.err;
  const auto schedule_file = fixtures::run_simtrain({"schedule", scenario, "--out", at("program.json")});
  ASSERT_EQ(schedule_file.code, 0) << schedule_file.err;
  EXPECT_EQ(fixtures::read_text(at("program.json")), schedule.out);
}

TEST_F(OutputPolicy, AFullDeviceIsAnErrorAndStaysADevice) {
  if (!fs::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", "/dev/full"});
  EXPECT_EQ(result.code, 1);
  EXPECT_THAT(result.err, HasSubstr("/dev/full: write failed: No space left on device"));
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  const auto null = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--trace", "/dev/null"});
  EXPECT_EQ(null.code, 0) << null.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(OutputPolicy, AFifoIsWrittenInPlace) {
  const std::string fifo = at("report.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = fixtures::read_text(fifo); });
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--report", fifo});
  reader.join();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_GT(nlohmann::json::parse(received).at("step_time_s").get<double>(), 0);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"mine.json", "report.fifo"}));
}

TEST_F(OutputPolicy, ASymbolicLinkIsWrittenThroughAndTheModeKept) {
  fs::create_directories(at("results"));
  std::ofstream(at("results/report.json")) << "previous";
  ::chmod(at("results/report.json").c_str(), 0600);
  fs::create_symlink("results/report.json", at("latest.json"));
  fs::create_symlink("results/new.json", at("dangling.json"));
  const auto result = fixtures::run_simtrain(
      {"simulate", scenario, "--quiet", "--report", at("latest.json"), "--trace", at("dangling.json"), "--force"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_TRUE(fs::is_symlink(at("latest.json")));
  EXPECT_TRUE(fs::is_symlink(at("dangling.json")));
  EXPECT_GT(nlohmann::json::parse(fixtures::read_text(at("results/report.json"))).at("step_time_s").get<double>(), 0);
  EXPECT_THAT(fixtures::read_text(at("results/new.json")), HasSubstr("traceEvents"));
  EXPECT_EQ(fs::status(at("results/report.json")).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(files_in(at("results")), (std::set<std::string>{"report.json", "new.json"}));
}

// In a child process, as a user who is not root when run as root (root may write any file).
int exit_code_as_other_user(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(99);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST_F(OutputPolicy, AFileTheUserCannotWriteIsRefused) {
  const std::string read_only = at("read-only.json");
  std::ofstream(read_only) << "keep";
  ::chmod(read_only.c_str(), 0444);
  ::chmod(dir.path().c_str(), 0777);  // so that only the file's own mode stops the other user
  const int code = exit_code_as_other_user([&] {
    try {
      OutputFiles outputs(std::cout);
      outputs.add("--report", read_only);
      return 1;
    } catch (const InputError& error) {
      return std::string(error.what()).find("cannot be written: Permission denied") != std::string::npos ? 0 : 2;
    }
  });
  EXPECT_EQ(code, 0) << "1: accepted, 2: another message, 99: could not become another user";
  EXPECT_EQ(fixtures::read_text(read_only), "keep");
}

// What a child that is interrupted while writing outputs leaves behind.
struct AfterInterrupt {
  int exit_code;
  std::string message;
};
AfterInterrupt interrupt_while_writing(const std::string& trace, const std::string& report, bool at_standard_output) {
  int message_pipe[2];
  if (::pipe(message_pipe) != 0) return {-1, ""};
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(message_pipe[1], STDERR_FILENO);
    const InterruptGuard guard;
    OutputFiles outputs(std::cout, ExistingFiles::replace);
    outputs.add("--trace", trace);
    outputs.add("--report", report);
    if (at_standard_output) outputs.add("--json", "-");
    const auto interrupt = [](std::ostream& out) { out << "half"; ::raise(SIGINT); out << " and the rest"; };
    const auto complete = [](std::ostream& out) { out << "new"; };
    outputs.write({{"--trace", complete}, {"--report", at_standard_output ? complete : interrupt}, {"--json", interrupt}});
    ::_exit(0);
  }
  ::close(message_pipe[1]);
  std::string message;
  char buffer[256];
  for (ssize_t n; (n = ::read(message_pipe[0], buffer, sizeof buffer)) > 0;) message.append(buffer, n);
  ::close(message_pipe[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, message};
}

TEST_F(OutputPolicy, CtrlCWhileWritingLeavesEveryOutputAsItWas) {
  std::ofstream(at("trace.json")) << "previous";
  std::ofstream(at("report.json")) << "previous";
  const AfterInterrupt result = interrupt_while_writing(at("trace.json"), at("report.json"), false);
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_THAT(result.message, HasSubstr("interrupted; no output was written"));
  EXPECT_EQ(fixtures::read_text(at("trace.json")), "previous") << "not a new trace beside an old report";
  EXPECT_EQ(fixtures::read_text(at("report.json")), "previous");
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"mine.json", "trace.json", "report.json"}));
}

TEST_F(OutputPolicy, CtrlCAfterTheFilesAreInPlaceLeavesThemComplete) {
  std::ofstream(at("trace.json")) << "previous";
  const AfterInterrupt result = interrupt_while_writing(at("trace.json"), at("report.json"), true);
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_THAT(result.message, HasSubstr("interrupted; the output files were written completely"));
  EXPECT_EQ(fixtures::read_text(at("trace.json")), "new");
  EXPECT_EQ(fixtures::read_text(at("report.json")), "new");
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"mine.json", "trace.json", "report.json"}));
}

TEST_F(OutputPolicy, InputsThatAreNotFilesAreNamedAsSuch) {
  const auto folder = fixtures::run_simtrain({"simulate", dir.path().string(), "--quiet"});
  EXPECT_EQ(folder.code, 2);
  EXPECT_THAT(folder.err, HasSubstr(dir.path().string() + ": is a directory, not a file"));
  const std::string fifo = at("scenario.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto fifo_input = fixtures::run_simtrain({"simulate", fifo, "--quiet"});
  EXPECT_EQ(fifo_input.code, 2);
  EXPECT_THAT(fifo_input.err, HasSubstr(fifo + ": not a regular file"));
  if (fs::is_character_file("/dev/zero")) {
    const auto device = fixtures::run_simtrain({"simulate", "/dev/zero", "--quiet"});
    EXPECT_EQ(device.code, 2);
    EXPECT_THAT(device.err, HasSubstr("/dev/zero: not a regular file"));
  }
  const auto missing = fixtures::run_simtrain({"simulate", at("missing.json"), "--quiet"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr(at("missing.json") + ": no such file"));
  nlohmann::json document = nlohmann::json::parse(tiny_scenario_text());
  document["model"] = dir.path().string();
  std::ofstream(scenario) << document.dump();
  const auto model_folder = fixtures::run_simtrain({"simulate", scenario, "--quiet"});
  EXPECT_EQ(model_folder.code, 2);
  EXPECT_THAT(model_folder.err, HasSubstr("is a directory, not a file"));
}

TEST(JsonInput, AKeyGivenTwiceIsRefusedNamingIt) {
  try {
    parse_json(R"({"model": {"hidden_size": 512, "num_hidden_layers": 2, "hidden_size": 1024}})", "mine.json");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "mine.json: model.hidden_size: given twice in one object; keep one");
  }
  // Equal keys in different objects are fine, and so are arrays of objects.
  EXPECT_NO_THROW(parse_json(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})", "ok.json"));
  try {
    parse_json(R"({"c": [{"x": 1, "x": 2}]})", "list.json");
    FAIL() << "accepted";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "list.json: c.x: given twice in one object; keep one");
  }
}

TEST_F(OutputPolicy, AScenarioWithADuplicateKeyIsRefused) {
  std::string text = tiny_scenario_text();
  text.insert(text.find('{') + 1, "\"name\": \"first\",");
  std::ofstream(scenario) << text;
  const auto result = fixtures::run_simtrain({"simulate", scenario, "--quiet"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(scenario + ": name: given twice in one object"));
}

}  // namespace
}  // namespace simtrain
