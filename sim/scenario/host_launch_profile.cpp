#include "sim/scenario/host_launch_profile.hpp"

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

HostLaunchProfile read_host_launch_profile(const std::string& path) {
  const nlohmann::json document = read_json_file(path);
  if (!document.is_object()) throw InputError(path, "", "expected a JSON object, as bench/launch_rate_probe.py --json writes");
  JsonFields top(document, path, "");
  HostLaunchProfile profile;
  profile.file = path;
  profile.device = top.text("device").value_or("");
  top.text("torch");  // the PyTorch version it ran under: read, for the record
  if (!top.has("seconds_per_launch") || !top.raw("seconds_per_launch").is_object())
    top.fail("seconds_per_launch", "expected an object of seconds per launch, as bench/launch_rate_probe.py --json writes");
  JsonFields seconds(top.raw("seconds_per_launch"), path, "seconds_per_launch.");
  // The probe's figures this model uses; its others (graph_replay_64,
  // kernel_gpu) are read and not used.
  const auto figure = [&](const std::string& key) -> std::optional<double> {
    const std::optional<double> value = seconds.number(key);
    if (value && (*value <= 0 || *value >= 1))
      seconds.fail(key, "expected seconds per launch above 0 and below 1, got " + number_text(*value));
    return value;
  };
  profile.python_forward = figure("python_forward");
  profile.python_no_grad = figure("python_no_grad");
  profile.triton = figure("triton");
  profile.graph_replay = figure("graph_replay_1");
  profile.sync_round_trip = figure("sync_round_trip");
  for (const char* unused : {"graph_replay_64", "kernel_gpu"}) seconds.number(unused);
  seconds.reject_unknown();
  top.reject_unknown();
  if (!profile.python_forward && !profile.python_no_grad && !profile.triton && !profile.graph_replay &&
      !profile.sync_round_trip)
    top.fail("seconds_per_launch", "none of python_forward, python_no_grad, triton, graph_replay_1, sync_round_trip");
  return profile;
}

}  // namespace simtrain
