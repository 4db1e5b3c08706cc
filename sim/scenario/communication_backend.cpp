#include "sim/scenario/communication_backend.hpp"

#include <algorithm>
#include <set>

#include "sim/base/input_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

namespace {

const std::vector<std::string> kVendors = {"NVIDIA", "AMD"};

// The built-in GPUs whose data sheets give a PCIe Gen5 x16 host link, the
// one Gloo's staging copies are modelled over (sim/network/gloo_host_path.hpp):
// H100 SXM and H200 SXM ("PCIe Gen5: 128 GB/s", NVIDIA data sheets), H800
// (H100's board, NVLink cut), MI300X ("PCIe 5.0 x16", AMD data sheet).
// A100 attaches by Gen4, GB200 by NVLink-C2C to its Grace CPU; B200's is not
// checked here.
bool host_link_is_pcie_gen5_x16(const GpuSpec& gpu) {
  return builtin_gpu(gpu.name) && (gpu.name == "H100-SXM" || gpu.name == "H200" || gpu.name == "H800" || gpu.name == "MI300X");
}

// "17" or "8-15": the ranks a key of cluster.gpu_vendors names.
std::pair<int64_t, int64_t> rank_range(JsonFields& cluster, const std::string& key, int64_t num_gpus) {
  const size_t dash = key.find('-');
  auto rank = [&](const std::string& text) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
    }
    if (text.empty() || used != text.size() || value < 0 || value >= num_gpus)
      cluster.fail("gpu_vendors." + key, "not a rank or a range first-last of ranks in 0.." + std::to_string(num_gpus - 1));
    return static_cast<int64_t>(value);
  };
  const int64_t first = rank(key.substr(0, dash));
  const int64_t last = dash == std::string::npos ? first : rank(key.substr(dash + 1));
  if (last < first) cluster.fail("gpu_vendors." + key, "the range's last rank is before its first");
  return {first, last};
}

}  // namespace

std::string to_string(CommunicationBackend backend) {
  return backend == CommunicationBackend::gloo ? "gloo" : "nccl";
}

std::string gpu_vendor(const GpuSpec& gpu) {
  if (!builtin_gpu(gpu.name)) return "";
  return gpu.name == "MI300X" ? "AMD" : "NVIDIA";
}

std::vector<std::string> parse_gpu_vendors(JsonFields& cluster, const GpuSpec& gpu, int64_t num_gpus) {
  if (!cluster.has("gpu_vendors")) return {};
  const nlohmann::json& map = cluster.raw("gpu_vendors");
  if (!map.is_object()) cluster.fail("gpu_vendors", "expected an object {\"rank\" or \"first-last\": \"NVIDIA\" | \"AMD\"}");
  std::vector<std::string> vendors(static_cast<size_t>(num_gpus), gpu_vendor(gpu));
  for (const auto& [key, value] : map.items()) {
    if (!value.is_string() || std::find(kVendors.begin(), kVendors.end(), value.get<std::string>()) == kVendors.end())
      cluster.fail("gpu_vendors." + key, "must be \"NVIDIA\" or \"AMD\", got " + value.dump());
    const auto [first, last] = rank_range(cluster, key, num_gpus);
    std::fill(vendors.begin() + first, vendors.begin() + last + 1, value.get<std::string>());
  }
  if (std::find(vendors.begin(), vendors.end(), "") != vendors.end())
    cluster.fail("gpu_vendors", "names some ranks only, and the vendor of an inline cluster.gpu is not known: name every rank");
  return vendors;
}

void check_communication_backend(const Scenario& s) {
  const std::vector<std::string>& vendors = s.cluster.gpu_vendors;
  const ParallelConfig& p = s.parallel;
  auto fail = [&](const std::string& field, const std::string& reason) { throw InputError(s.source, field, reason); };
  const std::set<std::string> distinct(vendors.begin(), vendors.end());
  if (distinct.size() > 1) {
    if (s.cluster.communication_backend == CommunicationBackend::nccl)
      fail("cluster.communication_backend",
           "nccl: NCCL (RCCL on AMD GPUs) does not span GPUs of several vendors, and cluster.gpu_vendors mixes NVIDIA "
           "and AMD: use gloo");
    // Ranks in Megatron's tp-cp-dp-pp order: a replica is one data-parallel index.
    const int64_t inner = p.tensor * p.context;
    std::vector<std::string> replica_vendor(static_cast<size_t>(p.data));
    for (int64_t rank = 0; rank < s.cluster.num_gpus; ++rank) {
      std::string& vendor = replica_vendor[static_cast<size_t>(rank / inner % p.data)];
      if (vendor.empty()) vendor = vendors[rank];
      if (vendor != vendors[rank])
        fail("cluster.gpu_vendors", "rank " + std::to_string(rank) + " (" + vendors[rank] +
                                        ") is in a data-parallel replica of " + vendor +
                                        " GPUs: its tensor-, context- and pipeline-parallel traffic runs on NCCL, "
                                        "which does not span vendors (Gloo carries the gradient reduction only)");
    }
    if (p.expert > 1)
      fail("parallelism.expert_model_parallel_size",
           "expert-parallel groups span data-parallel replicas of both vendors, and their all-to-alls run on NCCL");
  }
  if (s.cluster.communication_backend != CommunicationBackend::gloo) return;
  if (p.zero_stage > 0)
    fail("parallelism.zero_stage", "the gloo backend is modelled for gradient all-reduces, and zero_stage " +
                                       std::to_string(p.zero_stage) + " reduce-scatters them");
  if (p.dp_sync != DpSync::auto_ && p.dp_sync != DpSync::ring)
    fail("parallelism.dp_sync", to_string(p.dp_sync) + ": the gloo backend all-reduces in a ring (use ring or auto)");
  if (!host_link_is_pcie_gen5_x16(s.cluster.gpu))
    fail("cluster.communication_backend",
         "gloo stages gradients over the GPU's PCIe link, modelled for PCIe Gen5 x16 (H100-SXM, H200, H800, MI300X); "
         "GPU " + s.cluster.gpu.name + " is not one of them");
}

}  // namespace simtrain
