#include "sim/engine/failure_injector.hpp"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace simtrain {

FailureInjector::FailureInjector(std::vector<FailureEvent> events, const ReplayPlatform& platform,
                                 const Fabric& fabric, std::vector<double> nominal_bytes_per_second,
                                 std::function<void(const std::string& reason)> stop_job)
    : events_(std::move(events)), platform_(&platform), fabric_(&fabric),
      nominal_bytes_per_second_(std::move(nominal_bytes_per_second)), stop_job_(std::move(stop_job)) {
  std::stable_sort(events_.begin(), events_.end(), [](auto& a, auto& b) { return a.at_seconds < b.at_seconds; });
}

void FailureInjector::operator()() const {
  for (const FailureEvent& e : events_) {
    sg4::this_actor::sleep_until(e.at_seconds);
    if (e.rank >= 0) {
      platform_->hosts[e.rank]->turn_off();
      stop_job_("GPU " + std::to_string(e.rank) + " failed");
      return;
    }
    break_link(e);
  }
}

void FailureInjector::break_link(const FailureEvent& event) const {
  for (size_t i = 0; i < platform_->links.size(); ++i) {
    sg4::Link* link = platform_->links[i];
    if (!link || fabric_->links()[i].name != event.link) continue;
    if (event.bandwidth_factor > 0)
      link->set_bandwidth(nominal_bytes_per_second_[i] * event.bandwidth_factor);
    else
      link->turn_off();
  }
}

}  // namespace simtrain
