#include "sim/engine/platform_file.hpp"

#include <map>
#include <set>
#include <memory>

#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/engine/simgrid_setup.hpp"
#include "sim/network/platform_routes.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

const char* unshared_policy(sg4::Link::SharingPolicy policy) {
  switch (policy) {
    case sg4::Link::SharingPolicy::FATPIPE: return "FATPIPE";
    case sg4::Link::SharingPolicy::WIFI: return "WIFI";
    case sg4::Link::SharingPolicy::NONLINEAR: return "NONLINEAR";
    default: return nullptr;
  }
}

// Runs in the child: the links and routes between the first `gpus` hosts, or {"error": reason}.
nlohmann::json read_routes(const std::string& path, int gpus) {
  sg4::Engine engine("simtrain-platform");
  configure_simgrid();
  // In document order: Engine::get_all_hosts() sorts them by name. Sealing
  // the platform announces its hosts a second time: each counts once.
  std::vector<sg4::Host*> hosts;
  std::set<const sg4::Host*> seen;
  sg4::Host::on_creation_cb([&](sg4::Host& host) {
    if (seen.insert(&host).second) hosts.push_back(&host);
  });
  try {
    engine.load_platform(path);
    engine.seal_platform();  // zones compute their routes when sealed (Floyd's table, Dijkstra's graph)
  } catch (const std::exception& e) {
    return {{"error", std::string("not a SimGrid platform: ") + e.what()}};
  }
  if (static_cast<int>(hosts.size()) < gpus)
    return {{"error", "holds " + std::to_string(hosts.size()) + " hosts, the job has " + std::to_string(gpus) +
                          " GPUs (one host per GPU, in document order)"}};
  nlohmann::json links = nlohmann::json::array(), routes = nlohmann::json::array();
  std::map<const sg4::Link*, int> index;
  for (int src = 0; src < gpus; ++src)
    for (int dst = 0; dst < gpus; ++dst) {
      std::vector<sg4::Link*> route;
      double latency = 0;
      if (src != dst) try {
          hosts[src]->route_to(hosts[dst], route, &latency);
        } catch (const std::exception& e) {
          return {{"error", "no route from " + hosts[src]->get_name() + " to " + hosts[dst]->get_name() + ": " + e.what()}};
        }
      if (src != dst && route.empty())  // a sealed Full zone answers a pair it lacks with no links
        return {{"error", "no route from " + hosts[src]->get_name() + " to " + hosts[dst]->get_name() +
                              ": every pair of GPUs needs one"}};
      nlohmann::json indices = nlohmann::json::array();
      for (const sg4::Link* link : route) {
        if (const char* policy = unshared_policy(link->get_sharing_policy()))
          return {{"error", "link " + link->get_name() + " is " + policy +
                                ", which simtrain does not model: write SHARED or SPLITDUPLEX"}};
        auto [it, added] = index.emplace(link, static_cast<int>(links.size()));
        if (added) links.push_back({link->get_name(), link->get_bandwidth(), link->get_latency()});
        indices.push_back(it->second);
      }
      routes.push_back(std::move(indices));
    }
  return {{"links", links}, {"routes", routes}};
}

}  // namespace

Topology with_platform_routes(const Topology& topology, int num_gpus) {
  if (topology.kind != TopologyKind::simgrid_platform || (topology.platform && topology.platform->gpus >= num_gpus))
    return topology;
  const std::string& path = topology.platform_file;
  check_input_file(path);
  if (num_gpus > max_platform_gpus)
    throw InputError(path, "", "a platform file routes at most " + std::to_string(max_platform_gpus) +
                                   " GPUs, the job has " + std::to_string(num_gpus) + " (use a JSON topology)");
  const nlohmann::json read = [&] {
    try {
      return nlohmann::json::from_cbor(run_in_child([&](const ProgressSender&) {
        const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(read_routes(path, num_gpus));
        return std::string(cbor.begin(), cbor.end());
      }));
    } catch (const Interrupted&) {
      throw;
    } catch (const std::runtime_error& e) {  // the child died inside SimGrid (it aborts on some malformed files)
      throw InputError(path, "", std::string("SimGrid failed reading it (") + e.what() + ")");
    }
  }();
  if (read.contains("error")) throw InputError(path, "", read["error"].get<std::string>());
  auto routes = std::make_shared<PlatformRoutes>();
  routes->gpus = num_gpus;
  for (const nlohmann::json& link : read["links"])
    routes->links.push_back({link[0].get<std::string>(), link[1].get<double>(), link[2].get<double>()});
  for (const nlohmann::json& route : read["routes"]) routes->routes.push_back(route.get<std::vector<int>>());
  Topology loaded = topology;
  loaded.platform = std::move(routes);
  return loaded;
}

}  // namespace simtrain
