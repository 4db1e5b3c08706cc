#pragma once
// The algorithms NCCL runs a collective with: an all-reduce a ring or a tree
// (a Program's group may fix one, as the scenario's dp_sync does, the
// command line may, --allreduce-algorithm; where neither does, the executor
// picks per collective, as NCCL's tuner does); an all-to-all its pairwise
// exchange. gloo_ring: the all-reduce of the gloo communication backend
// (PyTorch's Gloo over TCP through the hosts, gloo_collective.cpp), which a
// data-parallel group of a scenario with cluster.communication_backend gloo fixes.
#include <optional>
#include <string>

namespace simtrain {

enum class Algorithm { ring, tree, pairwise, gloo_ring };
std::string to_string(Algorithm algorithm);  // "ring", "tree", "pairwise", "gloo_ring"

// "ring" or "tree"; "auto" gives no algorithm (the executor chooses).
std::optional<Algorithm> parse_allreduce_algorithm(const std::string& text);

}  // namespace simtrain
