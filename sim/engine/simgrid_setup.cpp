#include "sim/engine/simgrid_setup.hpp"

#include <simgrid/s4u.hpp>

namespace simtrain {

void configure_simgrid() {
  xbt_log_control_set("root.thresh:critical");
  // GPU fabrics are not TCP: no latency/bandwidth factors (CM02), no
  // reverse ACK traffic, no TCP window limit.
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:1e18");
}

}  // namespace simtrain
