#pragma once
// The replay's failure-injection actor, after the LinkKiller actor of
// SimGrid's examples/cpp/comm-failure: it sleeps until each failure event's
// time and breaks what the event names. A failed GPU's host is turned off
// (its actors die with it) and the job stops; a degraded link keeps a
// fraction of its bandwidth; a link that goes down makes the transfers over
// it fail (simgrid::NetworkFailureException), which stops the job from the
// actor that waits for them.
#include <functional>
#include <string>
#include <vector>

#include "sim/engine/replay_options.hpp"
#include "sim/engine/replay_platform.hpp"

namespace simtrain {

class FailureInjector {
public:
  // `stop_job(reason)` records why the job stopped and ends every other actor;
  // a degraded link keeps its fraction of `nominal_bytes_per_second[link]`.
  FailureInjector(std::vector<FailureEvent> events, const ReplayPlatform& platform, const Fabric& fabric,
                  std::vector<double> nominal_bytes_per_second, std::function<void(const std::string& reason)> stop_job);

  // The actor's body: the events in time order (those at equal times in
  // their given order), until one stops the job.
  void operator()() const;

private:
  void break_link(const FailureEvent& event) const;

  std::vector<FailureEvent> events_;
  const ReplayPlatform* platform_;
  const Fabric* fabric_;
  std::vector<double> nominal_bytes_per_second_;
  std::function<void(const std::string&)> stop_job_;
};

}  // namespace simtrain
