#include "sim/model/profiled_cost_model.hpp"

#include <cmath>
#include <limits>

#include "sim/base/embedded_files.hpp"

namespace simtrain {

namespace {

bool same_op(const ProfileEntry& entry, const Op& op, Dtype dtype) {
  if (entry.dtype != op_dtype(op, dtype) || entry.op.op_class != op.op_class) return false;
  return entry.op.name == op.name || op.op_class == OpClass::gemm;
}

double log_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double distance = 0;
  for (size_t i = 0; i < a.size(); ++i) distance += std::abs(std::log(double(a[i]) / double(b[i])));
  return distance;
}

// Fused attention's efficiency changes with its shape (attention_efficiency.hpp):
// an entry of another length, head size or count of tiles is scaled by the
// ratio of FLOPs and by that of the efficiencies the model gives the two shapes.
double work_ratio(const Op& op, const Op& measured, const GpuSpec& gpu) {
  if (op.op_class == OpClass::attention) {
    const RooflineEfficiency efficiency;
    return op.flops / measured.flops * efficiency.attention(gpu, measured) / efficiency.attention(gpu, op);
  }
  return op.op_class == OpClass::gemm ? op.flops / measured.flops : op.bytes / measured.bytes;
}

}  // namespace

ProfiledCostModel::ProfiledCostModel(ProfileDatabase database, GpuSpec gpu)
    : database_(std::move(database)), gpu_(gpu), roofline_(std::move(gpu)) {}

// Separate GEMMs (a rank's experts): one of them as measured, times what the
// GEMM model gives the group over one (grouped_gemm_seconds).
OpTime ProfiledCostModel::grouped_gemm_time(const Op& op, Dtype dtype) const {
  Op one = op;
  one.shape.at(0) /= op.gemm_groups;
  one.flops /= double(op.gemm_groups);
  one.bytes /= double(op.gemm_groups);
  one.gemm_groups = one.gemm_streams = 1;
  const OpTime measured = op_time(one, dtype);
  return {measured.seconds * roofline_.op_time(op, dtype).seconds / roofline_.op_time(one, dtype).seconds,
          measured.source};
}

OpTime ProfiledCostModel::op_time(const Op& op, Dtype dtype) const {
  if (op.op_class == OpClass::gemm && op.gemm_groups > 1) return grouped_gemm_time(op, dtype);
  const ProfileEntry* nearest = nullptr;
  double nearest_distance = std::numeric_limits<double>::infinity();
  for (const ProfileEntry& entry : database_.entries) {
    if (!same_op(entry, op, dtype) || entry.op.shape.size() != op.shape.size()) continue;
    if (entry.op.shape == op.shape) return {entry.median_seconds, TimeSource::measured};
    const double distance = log_distance(op.shape, entry.op.shape);
    if (distance < nearest_distance) nearest_distance = distance, nearest = &entry;
  }
  if (nearest) return {nearest->median_seconds * work_ratio(op, nearest->op, gpu_), TimeSource::scaled};
  return roofline_.op_time(op, dtype);
}

std::unique_ptr<CostModel> make_cost_model(const Scenario& scenario) {
  const GpuSpec& gpu = scenario.cluster.gpu;
  if (!scenario.cluster.kernel_profile.empty()) {
    ProfileDatabase database = load_profile_database(scenario.cluster.kernel_profile);
    check_measured_on(database, gpu);
    return std::make_unique<ProfiledCostModel>(std::move(database), gpu);
  }
  for (const EmbeddedFile& file : embedded_profiles()) {
    ProfileDatabase database = parse_profile_database(nlohmann::json::parse(file.text),
                                                      "kernels/profiles/" + std::string(file.name) + ".json");
    if (same_gpu(database.device_name, gpu.name)) return std::make_unique<ProfiledCostModel>(std::move(database), gpu);
  }
  return std::make_unique<RooflineModel>(gpu);
}

}  // namespace simtrain
