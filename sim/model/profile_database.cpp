#include "sim/model/profile_database.hpp"

#include <cctype>
#include <limits>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain {

nlohmann::json to_json(const ProfileEntry& entry) {
  return {{"op", entry.op.name},
          {"op_class", to_string(entry.op.op_class)},
          {"shape", entry.op.shape},
          {"dtype", to_string(entry.dtype)},
          {"kernel", entry.kernel},
          {"flops", entry.op.flops},
          {"bytes", entry.op.bytes},
          {"median_seconds", entry.median_seconds},
          {"p10_seconds", entry.p10_seconds},
          {"p90_seconds", entry.p90_seconds},
          {"repetitions", entry.repetitions}};
}

namespace {

double positive_seconds(JsonFields& f, const std::string& key, bool required) {
  constexpr double any = std::numeric_limits<double>::lowest();  // the sign is checked below, with a clearer message
  const std::optional<double> value = required ? f.required_number(key, any) : f.number(key, any);
  if (!value) return 0;
  if (*value <= 0) {
    std::ostringstream reason;
    reason << "must be a positive time, got " << *value;
    f.fail(key, reason.str());
  }
  return *value;
}

OpClass parse_op_class(JsonFields& f) {
  const std::vector<OpClass> classes = {OpClass::gemm, OpClass::attention, OpClass::memory_bound, OpClass::optimizer};
  std::vector<std::string> names;
  for (OpClass c : classes) names.push_back(to_string(c));
  const std::optional<std::string> name = f.choice("op_class", names);
  if (!name) f.fail("op_class", "missing");
  for (OpClass c : classes)
    if (to_string(c) == *name) return c;
  return OpClass::memory_bound;
}

Dtype parse_dtype(JsonFields& f) {
  const std::optional<std::string> name = f.choice("dtype", {"bf16", "fp16", "fp8"});
  if (!name) f.fail("dtype", "missing");
  return *name == "fp8" ? Dtype::fp8 : *name == "fp16" ? Dtype::fp16 : Dtype::bf16;
}

std::vector<int64_t> parse_shape(JsonFields& f) {
  const nlohmann::json& value = f.raw("shape");
  if (!value.is_array() || value.empty()) f.fail("shape", "expected a non-empty array of positive integers, got " + value.dump());
  std::vector<int64_t> shape;
  for (const nlohmann::json& dimension : value) {
    if (!dimension.is_number_integer() || dimension.get<int64_t>() < 1)
      f.fail("shape", "expected a non-empty array of positive integers, got " + value.dump());
    shape.push_back(dimension.get<int64_t>());
  }
  return shape;
}

ProfileEntry parse_entry(const nlohmann::json& value, const std::string& source, const std::string& path) {
  JsonFields f(value, source, path);
  ProfileEntry entry;
  entry.op.name = f.text("op").value_or("");
  if (entry.op.name.empty()) f.fail("op", "missing");
  entry.op.op_class = parse_op_class(f);
  entry.op.shape = parse_shape(f);
  entry.dtype = parse_dtype(f);
  // The profiler times a GEMM in fp8 only for a linear whose operands are fp8.
  entry.op.low_precision_operands = entry.op.op_class == OpClass::gemm && entry.dtype == Dtype::fp8;
  entry.kernel = f.text("kernel").value_or("");
  entry.op.flops = f.required_number("flops");
  entry.op.bytes = f.required_number("bytes");
  // An attention gradient (op_builder's gradient_of: "_grad") recomputes the scores, as the workload's does.
  if (entry.op.op_class == OpClass::attention && entry.op.name.ends_with("_grad"))
    entry.op.uncounted_flops = kAttentionBackwardRecomputedShare * entry.op.flops;
  // Scaling to another shape divides by these.
  const bool compute_bound = entry.op.op_class == OpClass::gemm || entry.op.op_class == OpClass::attention;
  if (compute_bound && entry.op.flops <= 0) f.fail("flops", "must be positive for a " + to_string(entry.op.op_class) + " op");
  if (!compute_bound && entry.op.bytes <= 0) f.fail("bytes", "must be positive for a " + to_string(entry.op.op_class) + " op");
  entry.median_seconds = positive_seconds(f, "median_seconds", true);
  entry.p10_seconds = positive_seconds(f, "p10_seconds", false);
  entry.p90_seconds = positive_seconds(f, "p90_seconds", false);
  if (entry.p10_seconds > entry.median_seconds) f.fail("p10_seconds", "exceeds median_seconds");
  if (entry.p90_seconds && entry.p90_seconds < entry.median_seconds) f.fail("p90_seconds", "is below median_seconds");
  entry.repetitions = f.integer("repetitions").value_or(0);
  f.reject_unknown();
  return entry;
}

struct GpuName {
  std::string model, form_factor, memory;
  std::string words;  // every word but NVIDIA, joined
};

GpuName parse_gpu_name(const std::string& name) {
  std::vector<std::string> words(1);
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      words.back() += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    else if (!words.back().empty())
      words.emplace_back();
  }
  GpuName parts;
  for (const std::string& word : words) {
    if (word.empty() || word == "NVIDIA") continue;
    parts.words += word;
    const bool has_digit = word.find_first_of("0123456789") != std::string::npos;
    const bool is_memory = word.size() > 2 && word.ends_with("GB") &&
                           word.find_first_not_of("0123456789") == word.size() - 2;
    if (is_memory) {
      if (parts.memory.empty()) parts.memory = word;
    } else if (word.starts_with("SXM") || word.starts_with("PCIE") || word.starts_with("NVL")) {
      parts.form_factor = word.substr(0, word.starts_with("PCIE") ? 4 : 3);
    } else if (has_digit && parts.model.empty()) {
      parts.model = word;
    }
  }
  return parts;
}

bool agree(const std::string& a, const std::string& b) { return a.empty() || b.empty() || a == b; }

}  // namespace

ProfileDatabase parse_profile_database(const nlohmann::json& document, const std::string& source) {
  JsonFields top(document, source, "");
  const std::optional<std::string> format = top.text("format");
  if (format != kProfileFormat)
    top.fail("format", format ? "'" + *format + "' is not " + kProfileFormat : "missing (not a simtrain kernel profile)");
  const int64_t version = top.required_integer("version");
  if (version != kProfileVersion)
    top.fail("version", std::to_string(version) + " is not supported (this simtrain reads " +
                            std::to_string(kProfileVersion) + ")");
  ProfileDatabase database;
  database.source = source;
  JsonFields device(top.raw("device"), source, "device.");
  database.device_name = device.text("name").value_or("");
  if (database.device_name.empty()) device.fail("name", "missing");

  const nlohmann::json& entries = top.raw("entries");
  if (!entries.is_array()) top.fail("entries", "expected an array, got " + entries.dump());
  if (entries.empty()) top.fail("entries", "empty: nothing was measured");
  for (size_t i = 0; i < entries.size(); ++i)
    database.entries.push_back(parse_entry(entries[i], source, "entries[" + std::to_string(i) + "]."));
  // Records for people; "scenario" is what databases of one scenario said before "scenarios".
  top.reject_unknown({"measured_at", "command", "scenario", "scenarios", "method", "skipped"});
  return database;
}

ProfileDatabase load_profile_database(const std::string& path) {
  return parse_profile_database(read_json_file(path), path);
}

bool same_gpu(const std::string& device_name, const std::string& gpu_name) {
  const GpuName a = parse_gpu_name(device_name), b = parse_gpu_name(gpu_name);
  if (a.model.empty() || b.model.empty()) return !a.words.empty() && a.words == b.words;
  return a.model == b.model && agree(a.form_factor, b.form_factor) && agree(a.memory, b.memory);
}

void check_measured_on(const ProfileDatabase& database, const GpuSpec& gpu) {
  if (!same_gpu(database.device_name, gpu.name))
    throw InputError(database.source, "device.name",
                     "measured on '" + database.device_name + "', but the scenario's cluster.gpu is '" + gpu.name + "'");
}

}  // namespace simtrain
