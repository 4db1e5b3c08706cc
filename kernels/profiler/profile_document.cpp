#include "profile_document.hpp"

#include <chrono>
#include <ctime>

#include "timing.hpp"

namespace simtrain {

nlohmann::json profile_document(const std::vector<Scenario>& scenarios, const ProfileOptions& options, const nlohmann::json& device,
                                const std::vector<ProfileEntry>& entries, const nlohmann::json& skipped) {
  nlohmann::json names = nlohmann::json::array();
  for (const Scenario& scenario : scenarios) names.push_back(scenario.name);
  nlohmann::json document = {
      {"format", kProfileFormat},
      {"version", kProfileVersion},
      {"device", device},
      {"measured_at", utc_timestamp()},
      {"command", options.command_line},
      {"scenarios", names},
      {"method",
       {{"warmup_runs", kWarmupRuns},
        {"repetitions", std::to_string(kMinRepetitions) + " to " + std::to_string(kMaxRepetitions) + ", about " +
                            std::to_string(kTargetSeconds) + " s of runs per kernel"},
        {"timer", "a pair of CUDA events around each repetition"},
        {"cache", "L2 flushed (a memset twice its size) before each repetition"},
        {"statistics", "median, 10th and 90th percentiles of the repetitions"}}},
      {"entries", nlohmann::json::array()},
      {"skipped", skipped}};
  for (const ProfileEntry& entry : entries) document["entries"].push_back(to_json(entry));
  return document;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string command_line(int argc, const char* const* argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    std::string quoted = "'";
    for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += (i ? " " : "") + (plain ? arg : quoted + "'");
  }
  return line;
}

}  // namespace simtrain
