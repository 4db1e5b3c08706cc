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
// Elements of the largest tensor (weight, activation or attention scores of
// one micro-batch, unsharded): bounds every count the workload makes.
constexpr double max_tensor_elements = 0x1p40;
constexpr double max_tasks = 1e7;                         // a Program's tasks (about 80 bytes each: bench/simulation_speed)

}  // namespace limits

}  // namespace simtrain
