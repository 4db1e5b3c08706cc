#pragma once
// Compute times from a kernel-profile database measured on the cluster's GPU,
// with the roofline as the last resort, and the choice of cost model a
// scenario makes.
#include <memory>

#include "sim/model/cost_model.hpp"
#include "sim/model/profile_database.hpp"

namespace simtrain {

// Each op is looked up among the entries of its dtype that are the same op:
// the same name, or any GEMM for a GEMM (our profiler runs every GEMM as the
// same cuBLASLt call, so only the shape matters).
//   1. an entry of the same shape: its median time (TimeSource::measured);
//   2. else the nearest entry, by the sum over dimensions of |ln(ours/theirs)|
//      (so aspect ratio counts, not only size), its time scaled by the ratio
//      of FLOPs (gemm, attention) or of bytes (memory-bound, optimizer), and
//      for attention by the ratio of the efficiencies the roofline gives the
//      two shapes (sequence, head size, waves: attention_efficiency.hpp)
//      (TimeSource::scaled);
//   3. else the roofline (TimeSource::roofline).
class ProfiledCostModel : public CostModel {
public:
  ProfiledCostModel(ProfileDatabase database, GpuSpec gpu);
  OpTime op_time(const Op& op, Dtype dtype) const override;

private:
  OpTime grouped_gemm_time(const Op& op, Dtype dtype) const;

  ProfileDatabase database_;
  GpuSpec gpu_;
  RooflineModel roofline_;
};

// The scenario's cluster.kernel_profile (checked to be measured on
// cluster.gpu); else a profile compiled into the binary (kernels/profiles/)
// measured on that GPU; else the roofline. Throws InputError for a bad or
// mismatched database.
std::unique_ptr<CostModel> make_cost_model(const Scenario& scenario);

}  // namespace simtrain
