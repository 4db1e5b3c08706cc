// A checkpoint's manifest.json, as `--resume DIR` reads it (live/checkpoint.hpp):
// read and checked, then verified against its own identity, which reaches the
// shard checks (the shards are not there: refused). An accepted manifest must
// survive a round trip through to_json unchanged.
#include <cstdlib>

#include "checkpoint.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  const std::filesystem::path dir = fuzz::work_dir() / "checkpoint";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / manifest_file_name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fuzz::refusal_allowed([&] {
    const CheckpointManifest m = read_manifest(path);
    const CheckpointManifest again = parse_manifest(to_json(m), path);
    if (again.step != m.step || !(again.layout == m.layout) || again.shards != m.shards ||
        again.scenario_name != m.scenario_name || again.scenario_hash != m.scenario_hash)
      std::abort();  // the writer and the reader disagree
    verify_checkpoint(dir.string(), {m.scenario_name, m.scenario_hash, m.layout});
  });
  return 0;
}
