#include "sim/engine/replay_platform.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

// Ordered as the tuples (src, dst, [(link, repeats)...], latency), compared
// in place: a map of routes compares them once per flow.
bool PlatformRoute::operator<(const PlatformRoute& other) const {
  if (src != other.src) return src < other.src;
  if (dst != other.dst) return dst < other.dst;
  if (const auto order = links <=> other.links; order != 0) return order < 0;
  return latency_seconds < other.latency_seconds;
}

namespace {

// Bandwidth of a route's latency link: far above any fabric link, so that it never limits a flow.
constexpr double latency_link_bytes_per_second = 1e30;

}  // namespace

ReplayPlatform build_replay_platform(const Fabric& fabric, const std::vector<char>& needed_gpu, int servers,
                                     const std::vector<PlatformRoute>& routes,
                                     const std::vector<double>& link_bytes_per_second) {
  ReplayPlatform platform;
  auto* zone = sg4::create_full_zone("cluster");
  for (size_t r = 0; r < needed_gpu.size(); ++r)
    platform.hosts.push_back(needed_gpu[r] ? zone->create_host("gpu" + std::to_string(r), host_speed_flops) : nullptr);
  for (int s = 0; s < servers; ++s)
    platform.hosts.push_back(zone->create_host("server" + std::to_string(s), host_speed_flops));
  platform.controller = zone->create_host("controller", host_speed_flops);
  platform.links.assign(fabric.links().size(), nullptr);
  auto link = [&](int index) {  // created when a route first needs it
    sg4::Link*& created = platform.links[index];
    if (!created) created = zone->create_link(fabric.links()[index].name, link_bytes_per_second[index])->seal();
    return sg4::LinkInRoute(created);
  };
  std::map<std::pair<int, int>, int> routes_between;  // by (src, dst): how many so far
  std::map<int, int> extra_hosts;                      // by src: hosts added for second routes so far
  for (size_t i = 0; i < routes.size(); ++i) {
    const PlatformRoute& r = routes[i];
    std::vector<sg4::LinkInRoute> route;
    for (const WeightedLink& w : r.links)
      for (int k = 0; k < w.repeats; ++k) route.push_back(link(w.link));
    route.push_back(sg4::LinkInRoute(zone->create_link("latency" + std::to_string(i), latency_link_bytes_per_second)
                                         ->set_latency(r.latency_seconds)
                                         ->seal()));
    sg4::Host* src = platform.hosts[r.src];
    if (routes_between[{r.src, r.dst}]++ > 0)
      src = zone->create_host(src->get_name() + "." + std::to_string(++extra_hosts[r.src]), host_speed_flops);
    zone->add_route(src->get_netpoint(), platform.hosts[r.dst]->get_netpoint(), nullptr, nullptr, route, false);
    platform.route_hosts.emplace_back(src, platform.hosts[r.dst]);
  }
  zone->seal();
  return platform;
}

}  // namespace simtrain
