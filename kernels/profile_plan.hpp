#pragma once
// What `simtrain profile` measures for a scenario: every distinct op of its
// Program and, with --sweep, a standard grid of shapes, each with the kernel
// call that times it. Plain C++.
#include <vector>

#include "kernel_call.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ProfileItem {
  Op op;  // what the database entry records (name, shape, FLOPs, bytes)
  KernelCall call;
};

// Every distinct (name, shape) among the Program's compute ops, in first-seen order.
std::vector<Op> program_ops(const Program& program);

// The standard grid, derived from a scenario's ops so that it fits its model:
// GEMMs (named "gemm") of M, N, K in 512, 1024, ..., 16384; each attention op
// at sequence lengths 1024..8192 (its batch, heads and head_dim); each
// memory-bound and optimizer op at 2^20, 2^22, ..., 2^30 elements (its bytes
// per element).
std::vector<Op> sweep_ops(const std::vector<Op>& ops, Dtype dtype);

std::vector<ProfileItem> profile_plan(const Scenario& scenario, bool sweep);

}  // namespace simtrain
