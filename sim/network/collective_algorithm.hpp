#pragma once
// The algorithms NCCL runs a collective with: an all-reduce a ring or a tree
// (a Program's group may fix one, as the scenario's dp_sync does, the
// command line may, --allreduce-algorithm; where neither does, the executor
// picks per collective, as NCCL's tuner does); an all-to-all its pairwise
// exchange.
#include <optional>
#include <string>

namespace simtrain {

enum class Algorithm { ring, tree, pairwise };
std::string to_string(Algorithm algorithm);  // "ring", "tree", "pairwise"

// "ring" or "tree"; "auto" gives no algorithm (the executor chooses).
std::optional<Algorithm> parse_allreduce_algorithm(const std::string& text);

}  // namespace simtrain
