#include "sim/scenario/host_settings.hpp"

#include <algorithm>

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain {

namespace {

const std::vector<std::string> kGraphImplementations = {"none", "transformer_engine", "local"};
const std::vector<std::string> kGraphScopes = {"attn", "mlp", "moe", "moe_router", "moe_preprocess", "full_iteration"};
const char* const kGraphScopeList = "attn, mlp, moe, moe_router, moe_preprocess, full_iteration";

}  // namespace

const std::vector<std::string>& host_settings_keys() {
  static const std::vector<std::string> keys = {
      "moe_permute_fusion",     "moe_router_fusion",   "moe_grouped_gemm", "moe_aux_loss",
      "moe_router_force_load_balancing", "bias_activation_fusion", "bias_dropout_fusion", "te_cross_entropy",
      "cuda_graph_impl",        "cuda_graph_scope"};
  return keys;
}

HostSettings parse_host_settings(const nlohmann::json* section, const std::string& file) {
  HostSettings s;
  if (!section) return s;
  if (!section->is_object()) throw InputError(file, "software", "must be an object");
  JsonFields f(*section, file, "software.");
  for (auto [key, flag] : {std::pair{"moe_permute_fusion", &s.moe_permute_fusion},
                          {"moe_router_fusion", &s.moe_router_fusion},
                          {"moe_grouped_gemm", &s.moe_grouped_gemm},
                          {"moe_aux_loss", &s.moe_aux_loss},
                          {"moe_router_force_load_balancing", &s.moe_router_force_load_balancing},
                          {"bias_activation_fusion", &s.bias_activation_fusion},
                          {"bias_dropout_fusion", &s.bias_dropout_fusion},
                          {"te_cross_entropy", &s.te_cross_entropy}})
    *flag = f.boolean(key).value_or(*flag);
  s.cuda_graph_impl = f.choice("cuda_graph_impl", kGraphImplementations).value_or("none");
  if (f.has("cuda_graph_scope")) {
    const nlohmann::json& scopes = f.raw("cuda_graph_scope");
    if (!scopes.is_array()) f.fail("cuda_graph_scope", std::string("must be a list of scopes (") + kGraphScopeList + ")");
    for (const nlohmann::json& scope : scopes) {
      if (!scope.is_string() || std::find(kGraphScopes.begin(), kGraphScopes.end(), scope.get<std::string>()) ==
                                    kGraphScopes.end())
        f.fail("cuda_graph_scope", "unknown scope " + scope.dump() + " (" + kGraphScopeList + ")");
      s.cuda_graph_scope.push_back(scope.get<std::string>());
    }
    if (s.cuda_graph_impl == "none")
      f.fail("cuda_graph_scope", "needs cuda_graph_impl transformer_engine or local (CUDA graphs are off)");
  }
  f.reject_unknown();
  return s;
}

}  // namespace simtrain
