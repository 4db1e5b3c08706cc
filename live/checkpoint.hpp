#pragma once
// Real checkpoint I/O for live mode (`--checkpoint DIR`, `--resume DIR`).
//
// Each rank writes its shard of state, as many bytes as the simulator's
// checkpoint model gives it (checkpoint_bytes_per_rank in sim/step/memory_model.hpp), to
// DIR/shard-r<rank>-s<step>.bin: first to a ".tmp" file beside it, synced,
// renamed, and the directory synced. Then one process writes DIR/manifest.json
// the same way, naming the step, the scenario, the parallel layout and every
// shard's size and SHA-256. That rename is the commit point: the previous
// step's shards are deleted only after it, so a process killed at any moment
// leaves the previous checkpoint valid (its manifest names its intact shards).
//
// Resuming verifies the manifest against this run and re-reads each shard
// against its recorded size and SHA-256; any mismatch is an InputError naming
// the file and the reason. Writes and reads are timed (the write includes the
// fsync; the read first drops the file's clean pages from the page cache), so
// the storage model's storage_write/read_bytes_per_second can be set from them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

struct Scenario;

// SHA-256 (OpenSSL EVP), incremental; hex_digest() ends it.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const std::byte> data);
  std::string hex_digest();  // 64 lowercase hex digits

private:
  struct State;
  std::unique_ptr<State> state_;
};
std::string sha256_hex(std::span<const std::byte> data);

struct CheckpointLayout {
  int64_t world_size = 0, tensor = 1, pipeline = 1, data = 1;
  bool operator==(const CheckpointLayout&) const = default;
};
std::string to_string(const CheckpointLayout& layout);  // "TP 2 x PP 2 x DP 1 (4 ranks)"

// What a checkpoint must match to be resumed by a run.
struct CheckpointIdentity {
  std::string scenario_name;
  std::string scenario_hash;
  CheckpointLayout layout;
};

// SHA-256 of the canonical JSON of the resolved fields that define what a
// checkpoint holds and how it is split: the model (every ModelConfig field as
// to_json(ModelConfig) writes it, but the model's name), the dtype,
// tensor/pipeline/data sizes, virtual stages, the pipeline's layer split
// (explicit or "auto") and the ZeRO stage. Not the names, description,
// cluster, batch or run settings: changing those (say, the storage bandwidths
// measured here) keeps a checkpoint resumable.
std::string scenario_hash(const Scenario& scenario);
CheckpointIdentity checkpoint_identity(const Scenario& scenario);

struct ShardRecord {
  int64_t rank = 0;
  std::string file;  // name within the checkpoint directory
  uint64_t bytes = 0;
  std::string sha256;
  bool operator==(const ShardRecord&) const = default;
};

struct CheckpointManifest {
  static constexpr int current_format_version = 1;
  int format_version = current_format_version;
  int64_t step = 0;
  std::string scenario_name, scenario_hash;
  CheckpointLayout layout;
  std::vector<ShardRecord> shards;  // one per rank, in rank order
};

// Bytes moved and the wall time it took.
struct TransferTiming {
  uint64_t bytes = 0;
  double seconds = 0;
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

std::string shard_file_name(int64_t rank, int64_t step);  // "shard-r<rank>-s<step>.bin"
inline constexpr const char* manifest_file_name = "manifest.json";

// Writes `bytes` of deterministic pseudo-random content for (rank, step)
// atomically to dir/shard_file_name(rank, step), hashing as it writes.
// Creates dir if needed. Throws InputError naming the file (no space, I/O error).
ShardRecord write_shard(const std::string& dir, int64_t rank, int64_t step, uint64_t bytes,
                        TransferTiming* timing = nullptr);

// The manifest as JSON, and back. Reading checks every field (type, range,
// one shard per rank named shard_file_name(rank, step), 64 hex digits), and
// throws InputError naming `file`, the field and the reason.
nlohmann::json to_json(const CheckpointManifest& manifest);
CheckpointManifest parse_manifest(const nlohmann::json& document, const std::string& file);
CheckpointManifest read_manifest(const std::string& path);

// The manifest of step `step` of `identity`, its shards yet to be added.
CheckpointManifest manifest_for(const CheckpointIdentity& identity, int64_t step);

// Commits a checkpoint: writes dir/manifest.json atomically (after all of its
// shards are written), syncs the directory, then deletes the shards (and
// leftover .tmp files) of earlier steps.
void write_manifest(const std::string& dir, const CheckpointManifest& manifest);

// Verifies dir's checkpoint for a run of `expected`: the manifest's format
// version, scenario hash and layout, then each shard of `ranks` (empty: all)
// is re-read against its recorded size and SHA-256. Returns the manifest;
// `timing` gets the bytes read and the time taken. Throws InputError naming the
// file and the reason for a missing, incomplete, corrupt or foreign checkpoint.
CheckpointManifest verify_checkpoint(const std::string& dir, const CheckpointIdentity& expected,
                                     std::span<const int64_t> ranks = {}, TransferTiming* timing = nullptr);

// All of it from one process: rank r's shard of bytes_per_rank[r] bytes for
// every rank of identity.layout, then the manifest. `timing`: the bytes and
// time of the whole write.
CheckpointManifest write_checkpoint(const std::string& dir, const CheckpointIdentity& identity, int64_t step,
                                    std::span<const uint64_t> bytes_per_rank, TransferTiming* timing = nullptr);

}  // namespace simtrain
