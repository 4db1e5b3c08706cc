#include "profile_plan.hpp"

#include <map>
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
  // In fp8 training the grid's GEMMs are the linears': fp8 in, bf16 out.
  const bool fp8 = dtype == Dtype::fp8;
  const double input_bytes = dtype_bytes(dtype), output_bytes = fp8 ? dtype_bytes(Dtype::bf16) : input_bytes;
  for (int64_t m = 512; m <= 16384; m *= 2)
    for (int64_t n = 512; n <= 16384; n *= 2)
      for (int64_t k = 512; k <= 16384; k *= 2) {
        Op gemm{"gemm", OpClass::gemm, {m, n, k}, 2.0 * m * n * k, (m * k + k * n) * input_bytes + m * n * output_bytes};
        gemm.low_precision_operands = fp8;
        add_distinct(grid, seen, gemm);
      }
  for (const Op& op : ops) {
    if (op.op_class == OpClass::attention)
      for (int64_t seq = 1024; seq <= 8192; seq *= 2) add_distinct(grid, seen, resized(op, seq));
    if (op.op_class == OpClass::memory_bound || op.op_class == OpClass::optimizer)
      for (int64_t elements = int64_t(1) << 20; elements <= int64_t(1) << 30; elements *= 4)
        add_distinct(grid, seen, resized(op, elements));
  }
  return grid;
}

void print_profile_plan(const std::vector<ProfileItem>& plan, std::ostream& out) {
  std::map<std::string, int> per_class;
  for (const ProfileItem& item : plan) {
    out << item.op.name << ": " << item.call.description() << "\n";
    ++per_class[to_string(item.op.op_class)];
  }
  out << plan.size() << " kernels to time:";
  for (const auto& [op_class, count] : per_class) out << " " << count << " " << op_class;
  out << "\n";
}

std::vector<ProfileItem> profile_plan(const std::vector<Scenario>& scenarios, bool sweep) {
  std::vector<ProfileItem> plan;
  std::set<std::pair<OpKey, Dtype>> planned;
  for (const Scenario& scenario : scenarios) {
    const Dtype dtype = scenario.training.dtype;
    std::vector<Op> ops = program_ops(build_program(scenario, build_workload(scenario)));
    if (sweep) {
      std::set<OpKey> seen;
      for (const Op& op : ops) seen.insert({op.name, op.shape});
      for (const Op& op : sweep_ops(ops, dtype)) add_distinct(ops, seen, op);
    }
    const KernelContext context = kernel_context(scenario);
    for (const Op& op : ops)
      if (const Dtype runs_in = op_dtype(op, dtype); planned.insert({{op.name, op.shape}, runs_in}).second)
        plan.push_back({op, runs_in, kernel_call(op, dtype, context)});
  }
  return plan;
}

}  // namespace simtrain
