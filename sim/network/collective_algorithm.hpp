#pragma once
// The algorithms NCCL runs an all-reduce with. A Program's group may fix one
// (the scenario's dp_sync), the command line may (--allreduce-algorithm);
// where neither does, the executor picks per collective, as NCCL's tuner does.
#include <optional>
#include <string>

namespace simtrain {

enum class Algorithm { ring, tree };
std::string to_string(Algorithm algorithm);  // "ring", "tree"

// "ring" or "tree"; "auto" gives no algorithm (the executor chooses).
std::optional<Algorithm> parse_allreduce_algorithm(const std::string& text);

}  // namespace simtrain
