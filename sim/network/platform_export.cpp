#include "sim/network/platform_export.hpp"

#include <cstdio>
#include <vector>

namespace simtrain {

namespace {

// Every digit a double holds, so that the file reads back to the same value.
std::string exact(double value, const char* unit) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g%s", value, unit);
  return text;
}

std::string gpu(int rank) { return "gpu" + std::to_string(rank); }

}  // namespace

void write_platform_xml(std::ostream& out, const Fabric& fabric, const std::string& origin) {
  const int gpus = fabric.num_gpus();
  std::vector<char> used(fabric.links().size(), 0);
  for (int src = 0; src < gpus; ++src)
    for (int dst = 0; dst < gpus; ++dst)
      for (int link : fabric.route(src, dst)) used[link] = 1;
  out << "<?xml version='1.0'?>\n"
      << "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      << "<!-- Written by simtrain export-platform from " << origin << ".\n"
      << "     Hosts in document order are GPU ranks; bandwidths are achievable (line rate x efficiency). -->\n"
      << "<platform version=\"4.1\">\n"
      << "  <zone id=\"simtrain\" routing=\"Full\">\n";
  for (int rank = 0; rank < gpus; ++rank) out << "    <host id=\"" << gpu(rank) << "\" speed=\"1Gf\"/>\n";
  for (size_t i = 0; i < used.size(); ++i)
    if (used[i]) {
      const LinkSpec& link = fabric.links()[i];
      out << "    <link id=\"" << link.name << "\" bandwidth=\"" << exact(link.bytes_per_second, "Bps")
          << "\" latency=\"" << exact(link.latency_seconds, "s") << "\"/>\n";
    }
  for (int src = 0; src < gpus; ++src)
    for (int dst = 0; dst < gpus; ++dst) {
      if (src == dst) continue;
      out << "    <route src=\"" << gpu(src) << "\" dst=\"" << gpu(dst) << "\" symmetrical=\"NO\">";
      for (int link : fabric.route(src, dst)) out << "<link_ctn id=\"" << fabric.links()[link].name << "\"/>";
      out << "</route>\n";
    }
  out << "  </zone>\n</platform>\n";
}

}  // namespace simtrain
