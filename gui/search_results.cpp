#include "search_results.hpp"

#include <algorithm>

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain::gui {

namespace {

// "TP2 PP1 DP4, mb 2, ZeRO 1, SP, interleaved_1f1b v2" from a row's fields.
std::string label_of(const nlohmann::json& row) {
  const nlohmann::json& p = row["parallelism"];
  const auto size = [&](const char* key) { return p.contains(key) ? p[key].get<int64_t>() : int64_t(1); };
  const int64_t model_parallel =
      size("tensor_model_parallel_size") * size("pipeline_model_parallel_size") * size("context_parallel_size");
  std::string label = std::to_string(row["num_gpus"].get<int64_t>()) + " x " + row["gpu"].get<std::string>() + ", TP" +
                      std::to_string(size("tensor_model_parallel_size")) + " PP" +
                      std::to_string(size("pipeline_model_parallel_size")) + " DP" +
                      std::to_string(row["num_gpus"].get<int64_t>() / model_parallel);
  if (p.contains("context_parallel_size")) label += " CP" + std::to_string(size("context_parallel_size"));
  if (p.contains("expert_model_parallel_size")) label += " EP" + std::to_string(size("expert_model_parallel_size"));
  label += ", mb " + std::to_string(row["training"].value("micro_batch_size", int64_t(1)));
  if (p.contains("schedule")) label += ", " + p["schedule"].get<std::string>();
  if (p.contains("num_layers_per_virtual_pipeline_stage") && !p["num_layers_per_virtual_pipeline_stage"].is_null())
    label += " (" + p["num_layers_per_virtual_pipeline_stage"].dump() + " layers a chunk)";
  if (p.contains("zero_stage")) label += ", ZeRO " + p["zero_stage"].dump();
  if (p.value("sequence_parallel", false)) label += ", SP";
  const std::string recompute = row["training"].value("recompute_granularity", std::string("none"));
  if (recompute != "none") label += ", " + recompute + " recompute";
  return label;
}

}  // namespace

SearchResults read_search_results(const std::string& path) {
  const nlohmann::json document = read_json_file(path);
  if (!document.is_object() || !document.contains("rows") || !document["rows"].is_array())
    throw InputError(path, "rows", "not a search's results: expected the JSON `simtrain search --json` writes");
  SearchResults results;
  results.scenario_name = document.value("/scenario/name"_json_pointer, std::string());
  results.cost_unit = document.value("cost_unit", std::string());
  const nlohmann::json& front = document.value("pareto_front_ranks", nlohmann::json::array());
  const nlohmann::json& rows = document["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    const std::string at = "rows[" + std::to_string(i) + "].";
    try {
      const double step_seconds = row.at("figures").at("step_seconds").get<double>();
      if (step_seconds <= 0 || !row["figures"].value("error", std::string()).empty()) continue;  // did not run
      SearchPoint point;
      point.rank = row.at("rank").get<int>();
      point.step_seconds = step_seconds;
      point.cost = row.at("cost").get<double>();
      point.scenario_own = row.value("scenario_own", false);
      point.on_pareto_front = std::find(front.begin(), front.end(), point.rank) != front.end();
      point.label = label_of(row);
      point.fields = {{"cluster", {{"num_gpus", row.at("num_gpus")}, {"gpu", row.at("gpu")}}},
                      {"parallelism", row.at("parallelism")},
                      {"training", row.at("training")}};
      results.points.push_back(std::move(point));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, at.substr(0, at.size() - 1), std::string("not a search's row: ") + e.what());
    }
  }
  return results;
}

nlohmann::json with_point(nlohmann::json document, const SearchPoint& point) {
  for (const auto& [section, fields] : point.fields.items())
    for (const auto& [key, value] : fields.items()) document[section][key] = value;
  if (document.contains("parallelism")) document["parallelism"].erase("data_parallel_size");
  return document;
}

}  // namespace simtrain::gui
