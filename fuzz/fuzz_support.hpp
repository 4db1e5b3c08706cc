#pragma once
// What the fuzz targets share. Each target hands its input to a reader the way
// the command line does. An InputError is the reader refusing the input, as it
// should; any other exception, a sanitizer report, a leak or a timeout is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/base/embedded_files.hpp"
#include "sim/base/input_error.hpp"
#include "sim/network/fabric.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_limits.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// This process's directory for the files a target writes, removed at exit.
inline const std::filesystem::path& work_dir() {
  static const struct Directory {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("simtrain-fuzz-" + std::to_string(::getpid()));
    Directory() { std::filesystem::create_directories(path); }
    ~Directory() { std::filesystem::remove_all(path); }
  } directory;
  return directory.path;
}

// Writes `text` to work_dir()/name; returns the path.
inline std::string write_file(const std::string& name, std::string_view text) {
  const std::string path = (work_dir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
  return path;
}

// The built-in scenario tiny-4gpu, for targets that read a part of a scenario.
inline nlohmann::json tiny_scenario() {
  for (const EmbeddedFile& f : embedded_scenarios())
    if (f.name == "tiny-4gpu") return nlohmann::json::parse(f.text);
  throw std::logic_error("tiny-4gpu is not built in");
}

// Runs `read`; a refusal is a correct outcome.
template <typename Read>
void refusal_allowed(Read&& read) {
  try {
    read();
  } catch (const InputError&) {
  }
}

// What the simulation does next with an accepted scenario, up to the replay:
// the workload always; the Program, memory model and fabric when the Program
// has at most 20,000 tasks, to keep each input fast.
inline void use(const Scenario& s) {
  const Workload workload = build_workload(s);
  if (estimated_tasks(s) > 20000) return;
  const Program program = build_program(s, workload);
  memory_for_rank(s, workload, program, program.world_size - 1);
  const Fabric fabric(s.cluster.topology, program.world_size);
  fabric.route(0, program.world_size - 1);
}

}  // namespace simtrain::fuzz
