#include "sim/scenario/host_settings.hpp"

#include <algorithm>
#include <utility>

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

const std::vector<std::string>& cuda_graph_implementations() {
  static const std::vector<std::string> implementations = {"none", "transformer_engine", "local"};
  return implementations;
}

const std::vector<std::string>& cuda_graph_scopes() {
  static const std::vector<std::string> scopes = {"attn", "mlp", "moe", "moe_router", "moe_preprocess", "full_iteration"};
  return scopes;
}

namespace {

// The section's switches, by field name.
const std::vector<std::pair<std::string, bool HostSettings::*>>& switches() {
  static const std::vector<std::pair<std::string, bool HostSettings::*>> fields = {
      {"moe_permute_fusion", &HostSettings::moe_permute_fusion},
      {"moe_router_fusion", &HostSettings::moe_router_fusion},
      {"moe_grouped_gemm", &HostSettings::moe_grouped_gemm},
      {"moe_aux_loss", &HostSettings::moe_aux_loss},
      {"moe_router_force_load_balancing", &HostSettings::moe_router_force_load_balancing},
      {"bias_activation_fusion", &HostSettings::bias_activation_fusion},
      {"bias_dropout_fusion", &HostSettings::bias_dropout_fusion},
      {"te_cross_entropy", &HostSettings::te_cross_entropy}};
  return fields;
}

}  // namespace

const std::vector<std::string>& host_settings_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names;
    for (const auto& [key, member] : switches()) names.push_back(key);
    names.insert(names.end(), {"cuda_graph_impl", "cuda_graph_scope"});
    return names;
  }();
  return keys;
}

HostSettings parse_host_settings(const nlohmann::json* section, const std::string& file) {
  HostSettings s;
  if (!section) return s;
  if (!section->is_object()) throw InputError(file, "software", "must be an object");
  JsonFields f(*section, file, "software.");
  for (const auto& [key, member] : switches()) s.*member = f.boolean(key).value_or(s.*member);
  s.cuda_graph_impl = f.choice("cuda_graph_impl", cuda_graph_implementations()).value_or("none");
  if (f.has("cuda_graph_scope")) {
    const nlohmann::json& scopes = f.raw("cuda_graph_scope");
    const std::vector<std::string>& known = cuda_graph_scopes();
    if (!scopes.is_array()) f.fail("cuda_graph_scope", "must be a list of scopes (" + joined(known) + ")");
    for (const nlohmann::json& scope : scopes) {
      if (!scope.is_string() || std::find(known.begin(), known.end(), scope.get<std::string>()) == known.end())
        f.fail("cuda_graph_scope", "unknown scope " + scope.dump() + " (" + joined(known) + ")");
      s.cuda_graph_scope.push_back(scope.get<std::string>());
    }
    if (s.cuda_graph_impl == "none")
      f.fail("cuda_graph_scope", "needs cuda_graph_impl transformer_engine or local (CUDA graphs are off)");
  }
  f.reject_unknown();
  return s;
}

}  // namespace simtrain
