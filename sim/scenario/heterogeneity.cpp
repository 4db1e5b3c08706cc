#include "sim/scenario/heterogeneity.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace simtrain {

namespace {

// A speed or bandwidth factor: in (0, 1].
double factor(JsonFields& fields, const std::string& key, const nlohmann::json& value) {
  if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 1)
    fields.fail(key, "must be a number in (0, 1], got " + value.dump());
  return value.get<double>();
}

void draw_stragglers(JsonFields& cluster, const nlohmann::json& spec, std::vector<double>& speeds) {
  JsonFields f(spec, "", "");
  auto fail = [&](const std::string& field, const std::string& reason) { cluster.fail("stragglers." + field, reason); };
  if (!spec.is_object()) cluster.fail("stragglers", "expected an object {fraction, speed_factor, seed}");
  const nlohmann::json fraction = spec.value("fraction", nlohmann::json());
  const nlohmann::json speed = spec.value("speed_factor", nlohmann::json());
  const nlohmann::json seed = spec.value("seed", nlohmann::json(0));
  if (!fraction.is_number() || fraction.get<double>() < 0 || fraction.get<double>() > 1)
    fail("fraction", "must be a number in [0, 1]");
  if (!speed.is_number() || speed.get<double>() <= 0 || speed.get<double>() > 1)
    fail("speed_factor", "must be a number in (0, 1]");
  if (!seed.is_number_integer() || seed.get<int64_t>() < 0) fail("seed", "must be a non-negative integer");
  for (const auto& [key, value] : spec.items())
    if (key != "fraction" && key != "speed_factor" && key != "seed") fail(key, "unknown field");
  std::vector<size_t> ranks(speeds.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  std::mt19937_64 random(seed.get<uint64_t>());
  const size_t count = static_cast<size_t>(fraction.get<double>() * speeds.size() + 0.5);
  for (size_t i = 0; i < count; ++i) {  // partial Fisher-Yates, the same on every platform
    std::swap(ranks[i], ranks[i + random() % (ranks.size() - i)]);
    speeds[ranks[i]] = std::min(speeds[ranks[i]], speed.get<double>());
  }
}

}  // namespace

Heterogeneity parse_heterogeneity(JsonFields& cluster, int64_t num_gpus) {
  Heterogeneity h;
  std::vector<double> speeds(static_cast<size_t>(num_gpus), 1.0);
  bool uneven = false;
  if (cluster.has("stragglers")) {
    draw_stragglers(cluster, cluster.raw("stragglers"), speeds);
    uneven = true;
  }
  if (cluster.has("gpu_speed_factors")) {
    const nlohmann::json& map = cluster.raw("gpu_speed_factors");
    if (!map.is_object()) cluster.fail("gpu_speed_factors", "expected an object {\"rank\": factor}");
    for (const auto& [key, value] : map.items()) {
      const std::string field = "gpu_speed_factors." + key;
      size_t used = 0;
      long long rank = -1;
      try {
        rank = std::stoll(key, &used);
      } catch (const std::exception&) {
      }
      if (used != key.size() || rank < 0 || rank >= num_gpus)
        cluster.fail(field, "not a rank in 0.." + std::to_string(num_gpus - 1));
      speeds[static_cast<size_t>(rank)] = factor(cluster, field, value);
    }
    uneven = true;
  }
  if (uneven) h.gpu_speed_factors = std::move(speeds);
  if (cluster.has("link_bandwidth_factors")) {
    const nlohmann::json& map = cluster.raw("link_bandwidth_factors");
    if (!map.is_object()) cluster.fail("link_bandwidth_factors", "expected an object {\"link\": factor}");
    for (const auto& [key, value] : map.items())
      h.link_bandwidth_factors[key] = factor(cluster, "link_bandwidth_factors." + key, value);
  }
  return h;
}

}  // namespace simtrain
