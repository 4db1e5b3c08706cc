#include "sim/engine/replay_platform.hpp"

#include <string>

#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

ReplayPlatform build_replay_platform(const Fabric& fabric, int world_size, int servers,
                                     const std::set<std::pair<int, int>>& routed_pairs,
                                     const std::vector<double>& link_bytes_per_second) {
  ReplayPlatform platform;
  auto* zone = sg4::create_full_zone("cluster");
  for (int r = 0; r < world_size; ++r)
    platform.hosts.push_back(zone->create_host("gpu" + std::to_string(r), host_speed_flops));
  for (int s = 0; s < servers; ++s)
    platform.hosts.push_back(zone->create_host("server" + std::to_string(s), host_speed_flops));
  platform.controller = zone->create_host("controller", host_speed_flops);
  platform.links.assign(fabric.links().size(), nullptr);
  auto link = [&](int index) {  // created when a route first needs it
    sg4::Link*& created = platform.links[index];
    if (!created) {
      const LinkSpec& spec = fabric.links()[index];
      created = zone->create_link(spec.name, link_bytes_per_second[index])->set_latency(spec.latency_seconds)->seal();
    }
    return sg4::LinkInRoute(created);
  };
  for (const auto& [src, dst] : routed_pairs) {
    std::vector<sg4::LinkInRoute> route;
    for (int index : fabric.route(src, dst)) route.push_back(link(index));
    zone->add_route(platform.hosts[src]->get_netpoint(), platform.hosts[dst]->get_netpoint(), nullptr, nullptr, route,
                    false);
  }
  zone->seal();
  return platform;
}

}  // namespace simtrain
