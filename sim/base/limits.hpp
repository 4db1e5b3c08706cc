#pragma once
// The largest inputs simtrain accepts, in one place (the README lists them).
// Anything larger is refused with an InputError naming the file, the field
// and the reason before memory or time is spent on it, so that a typo, a
// half-written file or a fuzzer cannot exhaust memory, overflow a count or
// hang the program.
#include <cstdint>
#include <string>

namespace simtrain {

namespace limits {

constexpr uint64_t max_file_bytes = uint64_t{64} << 20;  // a scenario, topology or config.json file
constexpr int max_json_depth = 64;                        // arrays and objects inside each other
// Any integer field. Products of two fields then fit in 64 bits, and every
// field fits in an int.
constexpr int64_t max_integer = int64_t{1} << 30;
constexpr int64_t max_gpus = int64_t{1} << 20;            // cluster.num_gpus
constexpr int64_t max_layers = int64_t{1} << 16;          // model.num_hidden_layers
// parallelism.pipeline_model_parallel_layout once its repetitions are
// expanded: room for every layer alone on a stage, twice over.
constexpr size_t max_layout_chars = 4 * max_layers;
// Elements of the largest tensor (weight, activation or attention scores of
// one micro-batch, unsharded): bounds every count the workload makes.
constexpr double max_tensor_elements = 0x1p40;
// A Program's memory, estimated before it is built (estimated_program_bytes,
// sim/scenario/scenario_limits.hpp): its tasks x program_bytes_per_task.
// 16 GiB holds the largest jobs the shipped scenarios describe (megatron-1t,
// about 50 M tasks, 7.5 GiB) and leaves a 32 GiB machine room for the
// replay; a scenario past it is more likely a typo (a global batch with a
// zero too many) than a plan.
constexpr double max_program_bytes = 16.0 * (uint64_t{1} << 30);
// What one task takes, an upper bound tests/test_program.cpp checks on a
// built Program: its Task (56 bytes), its dependency ids (about 8 bytes and
// their array's growth) and its TaskTiming (16); bench/simulation_speed
// measures about 83.
constexpr double program_bytes_per_task = 96;

}  // namespace limits

}  // namespace simtrain
