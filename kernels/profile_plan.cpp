#include "profile_plan.hpp"

#include <set>
#include <utility>

#include "sim/program/program_builder.hpp"

namespace simtrain {

namespace {

using OpKey = std::pair<std::string, std::vector<int64_t>>;

void add_distinct(std::vector<Op>& ops, std::set<OpKey>& seen, const Op& op) {
  if (seen.insert({op.name, op.shape}).second) ops.push_back(op);
}

// `op` with its element count (memory-bound, optimizer) or sequence length
// (attention) changed; FLOPs and bytes follow.
Op resized(const Op& op, int64_t size) {
  Op result = op;
  if (op.op_class == OpClass::attention) {
    const double ratio = double(size) / double(op.shape[2]);
    result.shape[2] = size;
    result.flops *= ratio * ratio;
    result.bytes *= ratio;
  } else {
    const double ratio = double(size) / double(op.shape[0]);
    result.shape[0] = size;
    result.flops *= ratio;
    result.bytes *= ratio;
  }
  return result;
}

}  // namespace

std::vector<Op> program_ops(const Program& program) {
  std::vector<Op> ops;
  std::set<OpKey> seen;
  for (const Work& work : program.works)
    for (const Op& op : work.ops) add_distinct(ops, seen, op);
  return ops;
}

std::vector<Op> sweep_ops(const std::vector<Op>& ops, Dtype dtype) {
  std::vector<Op> grid;
  std::set<OpKey> seen;
  const double e = dtype_bytes(dtype);
  for (int64_t m = 512; m <= 16384; m *= 2)
    for (int64_t n = 512; n <= 16384; n *= 2)
      for (int64_t k = 512; k <= 16384; k *= 2)
        add_distinct(grid, seen, {"gemm", OpClass::gemm, {m, n, k}, 2.0 * m * n * k, (m * k + k * n + m * n) * e});
  for (const Op& op : ops) {
    if (op.op_class == OpClass::attention)
      for (int64_t seq = 1024; seq <= 8192; seq *= 2) add_distinct(grid, seen, resized(op, seq));
    if (op.op_class == OpClass::memory_bound || op.op_class == OpClass::optimizer)
      for (int64_t elements = int64_t(1) << 20; elements <= int64_t(1) << 30; elements *= 4)
        add_distinct(grid, seen, resized(op, elements));
  }
  return grid;
}

std::vector<ProfileItem> profile_plan(const Scenario& scenario, bool sweep) {
  const Program program = build_program(scenario, build_workload(scenario));
  std::vector<Op> ops = program_ops(program);
  if (sweep) {
    std::set<OpKey> seen;
    for (const Op& op : ops) seen.insert({op.name, op.shape});
    for (const Op& op : sweep_ops(ops, scenario.training.dtype)) add_distinct(ops, seen, op);
  }
  const KernelContext context = kernel_context(scenario);
  std::vector<ProfileItem> plan;
  for (const Op& op : ops) plan.push_back({op, kernel_call(op, scenario.training.dtype, context)});
  return plan;
}

}  // namespace simtrain
