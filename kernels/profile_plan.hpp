#pragma once
// What `simtrain profile` measures for a scenario: every distinct op of its
// Program and, with --sweep, a standard grid of shapes, each with the kernel
// call that times it. Plain C++.
#include <ostream>
#include <vector>

#include "kernel_call.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ProfileItem {
  Op op;        // what the database entry records (name, shape, FLOPs, bytes)
  Dtype dtype;  // the data type it runs in (op_dtype of the scenario's)
  KernelCall call;
};

// Every distinct (name, shape) among the Program's compute ops, in first-seen order.
std::vector<Op> program_ops(const Program& program);

// The standard grid, derived from a scenario's ops so that it fits its model:
// GEMMs (named "gemm") of M, N, K in 512, 1024, ..., 16384 (in fp8, as the
// linears of fp8 training run: fp8 operands, bf16 output); each attention op
// at sequence lengths 1024..8192 (its batch, heads and head_dim); each
// memory-bound and optimizer op at 2^20, 2^22, ..., 2^30 elements (its bytes
// per element).
std::vector<Op> sweep_ops(const std::vector<Op>& ops, Dtype dtype);

// The ops of every scenario (and their sweeps), each distinct (name, shape,
// data type) once, in first-seen order: one database for several scenarios.
// Where two scenarios share an op's name, shape and data type, the first
// one's kernel times it (a LayerNorm and an RMSNorm of the same shape, say).
std::vector<ProfileItem> profile_plan(const std::vector<Scenario>& scenarios, bool sweep);

// The plan as text, with no GPU: one line per kernel ("qkv: gemm 2048x4608x12288
// bf16"), then how many of each op class.
void print_profile_plan(const std::vector<ProfileItem>& plan, std::ostream& out);

}  // namespace simtrain
