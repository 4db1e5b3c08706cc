// The optimizer step's passes (sim/model/optimizer_step.hpp): their bytes as
// Megatron-Core's code moves them, and the parameters each pass covers on a
// rank of a lowered Program.
#include <gtest/gtest.h>

#include "sim/model/optimizer_step.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

std::vector<std::string> names_of(const std::vector<Op>& ops) {
  std::vector<std::string> names;
  for (const Op& op : ops) names.push_back(op.name);
  return names;
}

double bytes_of(const std::vector<Op>& ops) {
  double bytes = 0;
  for (const Op& op : ops) bytes += op.bytes;
  return bytes;
}

const Op& op_of(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops)
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

TEST(OptimizerStep, FourPassesOverFp32MainGradients) {
  const std::vector<Op> ops = optimizer_step_ops({.updated_parameters = 1e9, .gradient_parameters = 2e9});
  EXPECT_EQ(names_of(ops), (std::vector<std::string>{"grad_norm", "adam", "params_copy", "zero_grad"}));
  for (const Op& op : ops) EXPECT_EQ(op.op_class, OpClass::optimizer);
  // Per updated parameter: the norm reads 4 bytes; Adam reads master, grad, m, v (16) and
  // writes master, m, v (12); the copy reads the master (4) and writes the bf16 weight (2).
  EXPECT_DOUBLE_EQ(op_of(ops, "grad_norm").bytes, 4e9);
  EXPECT_DOUBLE_EQ(op_of(ops, "adam").bytes, 28e9);
  EXPECT_DOUBLE_EQ(op_of(ops, "params_copy").bytes, 6e9);
  // The whole gradient buffer zeroed, 4 bytes a gradient.
  EXPECT_EQ(op_of(ops, "zero_grad").shape, std::vector<int64_t>{2'000'000'000});
  EXPECT_DOUBLE_EQ(op_of(ops, "zero_grad").bytes, 8e9);
  // Adam's 12 FLOPs a parameter are the step's only ones.
  EXPECT_DOUBLE_EQ(op_of(ops, "adam").flops, 12e9);
  double flops = 0;
  for (const Op& op : ops) flops += op.flops;
  EXPECT_DOUBLE_EQ(flops, 12e9);
}

TEST(OptimizerStep, SixteenBitGradientsAreCastToFp32MainGradientsFirst) {
  const std::vector<Op> ops =
      optimizer_step_ops({.updated_parameters = 1e9, .gradient_parameters = 1e9, .grad_bytes_per_parameter = 2});
  EXPECT_EQ(names_of(ops), (std::vector<std::string>{"main_grad_cast", "grad_norm", "adam", "params_copy", "zero_grad"}));
  EXPECT_DOUBLE_EQ(op_of(ops, "main_grad_cast").bytes, 6e9);  // reads 2, writes 4
  EXPECT_DOUBLE_EQ(op_of(ops, "zero_grad").bytes, 2e9);
  EXPECT_DOUBLE_EQ(bytes_of(ops), (6 + 4 + 28 + 6 + 2) * 1e9);
}

// ZeRO-1 updates the rank's shard of the master weights but zeroes its whole
// gradient buffer; ZeRO-2 and 3 hold only their shard of the gradients too.
TEST(OptimizerStep, TheDistributedOptimizerUpdatesAShardAndZeroesTheGradientsItHolds) {
  for (const int zero : {0, 1, 2, 3}) {
    SCOPED_TRACE("zero_stage " + std::to_string(zero));
    nlohmann::json doc = fixtures::scenario_json(1, 1, 2, 4, "1f1b");
    doc["parallelism"]["zero_stage"] = zero;
    const Scenario s = fixtures::scenario_from(doc);
    const Workload w = build_workload(s);
    const Program p = build_program(s, w);
    for (int rank = 0; rank < p.world_size; ++rank) {
      const double held = parameters_on_rank(s, w, p, rank);
      int steps = 0;
      for (int id : p.rank_tasks(rank)) {
        const Task& t = p.tasks[id];
        if (t.kind != TaskKind::OPT) continue;
        ++steps;
        const std::vector<Op>& ops = p.works[t.work].ops;
        EXPECT_EQ(op_of(ops, "adam").shape.at(0), std::llround(zero >= 1 ? held / 2 : held));
        EXPECT_EQ(op_of(ops, "zero_grad").shape.at(0), std::llround(zero >= 2 ? held / 2 : held));
      }
      EXPECT_EQ(steps, 1);
    }
  }
}

}  // namespace
}  // namespace simtrain
