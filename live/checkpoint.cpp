#include "checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "sim/base/atomic_file.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- SHA-256

struct Sha256::State {
  EVP_MD_CTX* context = nullptr;
  ~State() { EVP_MD_CTX_free(context); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->context = EVP_MD_CTX_new();
  if (!state_->context || EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL: cannot start a SHA-256");
}

Sha256::~Sha256() = default;

void Sha256::update(std::span<const std::byte> data) {
  if (EVP_DigestUpdate(state_->context, data.data(), data.size()) != 1)
    throw std::runtime_error("OpenSSL: SHA-256 update failed");
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(state_->context, digest, &length) != 1)
    throw std::runtime_error("OpenSSL: SHA-256 final failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < length; ++i) text += {hex[digest[i] >> 4], hex[digest[i] & 15]};
  return text;
}

std::string sha256_hex(std::span<const std::byte> data) {
  Sha256 hash;
  hash.update(data);
  return hash.hex_digest();
}

// ---------------------------------------------------------------- identity

std::string to_string(const CheckpointLayout& l) {
  return "TP " + std::to_string(l.tensor) + " x PP " + std::to_string(l.pipeline) + " x DP " + std::to_string(l.data) +
         " (" + std::to_string(l.world_size) + " ranks)";
}

std::string scenario_hash(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  nlohmann::json model = to_json(s.model);
  model.erase("name");  // a label: renaming the model changes no tensor of the checkpoint
  const nlohmann::json state = {
      {"what", "simtrain checkpoint state, version 3"},
      {"model", model},
      {"dtype", to_string(s.training.dtype)},
      {"parallel",
       {{"tensor", p.tensor},
        {"pipeline", p.pipeline},
        {"data", p.data},
        {"virtual_stages", s.virtual_stages()},
        {"stage_layers", p.stage_layers},
        {"balance_pipeline_layers", p.balance_pipeline_layers},
        {"zero_stage", p.zero_stage}}}};
  const std::string canonical = state.dump();  // object keys sorted: canonical
  return sha256_hex(std::as_bytes(std::span(canonical)));
}

CheckpointIdentity checkpoint_identity(const Scenario& s) {
  return {s.name, scenario_hash(s),
          {s.parallel.world_size(), s.parallel.tensor, s.parallel.pipeline, s.parallel.data}};
}

std::string shard_file_name(int64_t rank, int64_t step) {
  return "shard-r" + std::to_string(rank) + "-s" + std::to_string(step) + ".bin";
}

// ---------------------------------------------------------------- files

namespace {

constexpr size_t chunk_bytes = size_t{4} << 20;
constexpr const char* temporary_suffix = ".tmp";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string error_text(int error) { return std::strerror(error); }

// Closes a descriptor on every path out.
class Descriptor {
public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

private:
  int fd_;
};

// Makes a rename or unlink in `dir` durable.
void sync_directory(const std::string& dir) {
  const Descriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(dir, "", "cannot be opened to sync: " + error_text(errno));
  // Some file systems cannot sync a directory (EINVAL); they order metadata themselves.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw InputError(dir, "", "cannot be synced: " + error_text(errno));
}

void create_directory(const std::string& dir) {
  std::error_code error;
  const bool created = fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir, error)) throw InputError(dir, "", "cannot be created as a checkpoint directory");
  if (created) {  // its entry in the parent must be durable too
    const fs::path parent = fs::absolute(dir, error).parent_path();
    if (!error) sync_directory(parent.string());
  }
}

// The content of a shard: a splitmix64 stream seeded by (rank, step).
class ShardContent {
public:
  ShardContent(int64_t rank, int64_t step)
      : state_(0x243f6a8885a308d3ULL ^ (static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ULL) ^
               (static_cast<uint64_t>(step) * 0xc2b2ae3d27d4eb4fULL)) {}
  // Fills `out` (a multiple of 8 bytes, except at the end of the shard).
  void fill(std::span<std::byte> out) {
    size_t i = 0;
    for (; i + 8 <= out.size(); i += 8) {
      const uint64_t word = next();
      std::memcpy(out.data() + i, &word, 8);
    }
    if (i < out.size()) {
      const uint64_t word = next();
      std::memcpy(out.data() + i, &word, out.size() - i);
    }
  }

private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

void write_all(int fd, const std::byte* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, "", "write failed: " + error_text(errno));
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

// shard-r<rank>-s<step>.bin, optionally followed by ".tmp": the step, else nothing.
std::optional<int64_t> shard_step(const std::string& name) {
  std::string_view rest(name);
  if (rest.ends_with(temporary_suffix)) rest.remove_suffix(std::strlen(temporary_suffix));
  if (!rest.starts_with("shard-r") || !rest.ends_with(".bin")) return std::nullopt;
  rest = rest.substr(7, rest.size() - 7 - 4);
  const size_t dash = rest.find("-s");
  if (dash == std::string_view::npos) return std::nullopt;
  int64_t rank = 0, step = 0;
  const std::string_view rank_text = rest.substr(0, dash), step_text = rest.substr(dash + 2);
  const auto r = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
  const auto s = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
  if (r.ec != std::errc() || r.ptr != rank_text.data() + rank_text.size() || s.ec != std::errc() ||
      s.ptr != step_text.data() + step_text.size())
    return std::nullopt;
  return step;
}

}  // namespace

ShardRecord write_shard(const std::string& dir, int64_t rank, int64_t step, uint64_t bytes, TransferTiming* timing) {
  if (rank < 0 || step < 0) throw std::invalid_argument("write_shard: negative rank or step");
  create_directory(dir);
  ShardRecord record{rank, shard_file_name(rank, step), bytes, ""};
  const std::string path = (fs::path(dir) / record.file).string();
  const std::string temporary = path + temporary_suffix;

  struct statvfs space{};
  if (::statvfs(dir.c_str(), &space) == 0) {
    const uint64_t available = static_cast<uint64_t>(space.f_bavail) * space.f_frsize;
    if (available < bytes)
      throw InputError(path, "", "needs " + std::to_string(bytes) + " bytes, the file system has " +
                                     std::to_string(available) + " free");
  }

  const auto start = std::chrono::steady_clock::now();
  Descriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw InputError(temporary, "", "cannot be written: " + error_text(errno));
  try {
    ShardContent content(rank, step);
    Sha256 hash;
    std::vector<std::byte> chunk(static_cast<size_t>(std::min<uint64_t>(bytes, chunk_bytes)));
    for (uint64_t left = bytes; left > 0;) {
      const std::span<std::byte> part(chunk.data(), static_cast<size_t>(std::min<uint64_t>(left, chunk.size())));
      content.fill(part);
      hash.update(part);
      write_all(fd.get(), part.data(), part.size(), temporary);
      left -= part.size();
    }
    record.sha256 = hash.hex_digest();
    if (::fsync(fd.get()) != 0) throw InputError(temporary, "", "cannot be synced: " + error_text(errno));
    if (::close(fd.release()) != 0) throw InputError(temporary, "", "write failed: " + error_text(errno));
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      throw InputError(path, "", "cannot be written: " + error_text(errno));
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  sync_directory(dir);
  if (timing) *timing = {bytes, seconds_since(start)};
  return record;
}

// ---------------------------------------------------------------- manifest

nlohmann::json to_json(const CheckpointManifest& m) {
  nlohmann::json shards = nlohmann::json::array();
  for (const ShardRecord& s : m.shards)
    shards.push_back({{"rank", s.rank}, {"file", s.file}, {"bytes", s.bytes}, {"sha256", s.sha256}});
  return {{"format", "simtrain-checkpoint"},
          {"format_version", m.format_version},
          {"step", m.step},
          {"scenario", {{"name", m.scenario_name}, {"hash", m.scenario_hash}}},
          {"layout",
           {{"world_size", m.layout.world_size},
            {"tensor_model_parallel_size", m.layout.tensor},
            {"pipeline_model_parallel_size", m.layout.pipeline},
            {"data_parallel_size", m.layout.data}}},
          {"shards", shards}};
}

namespace {

constexpr uint64_t max_shard_bytes = uint64_t{1} << 60;

std::string required_text(JsonFields& f, const std::string& key) {
  std::optional<std::string> value = f.text(key);
  if (!value) f.fail(key, "missing");
  return *value;
}

std::string required_sha256(JsonFields& f, const std::string& key) {
  const std::string value = required_text(f, key);
  const bool hex = value.size() == 64 && std::all_of(value.begin(), value.end(), [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (!hex) f.fail(key, "expected 64 lowercase hex digits (a SHA-256), got " + nlohmann::json(value).dump());
  return value;
}

uint64_t required_bytes(JsonFields& f, const std::string& key) {
  const nlohmann::json& value = f.raw(key);
  if (!value.is_number_integer()) f.fail(key, "expected a whole number of bytes, got " + value.dump());
  if (value.is_number_unsigned() ? value.get<uint64_t>() > max_shard_bytes : value.get<int64_t>() < 0)
    f.fail(key, "must be from 0 to 2^60, got " + value.dump());
  return value.get<uint64_t>();
}

}  // namespace

CheckpointManifest parse_manifest(const nlohmann::json& document, const std::string& file) {
  JsonFields top(document, file, "");
  CheckpointManifest m;
  // The version first: the other fields are those of this version.
  top.choice("format", {"simtrain-checkpoint"});
  if (!top.has("format")) top.fail("format", "missing (expected \"simtrain-checkpoint\")");
  const int64_t version = top.required_integer("format_version", 1);
  if (version != CheckpointManifest::current_format_version)
    top.fail("format_version", std::to_string(version) + " is not a version this simtrain reads (" +
                                   std::to_string(CheckpointManifest::current_format_version) + ")");
  m.format_version = static_cast<int>(version);
  m.step = top.required_integer("step", 0);

  JsonFields scenario(top.raw("scenario"), file, "scenario.");
  m.scenario_name = required_text(scenario, "name");
  m.scenario_hash = required_sha256(scenario, "hash");
  scenario.reject_unknown();

  JsonFields layout(top.raw("layout"), file, "layout.");
  CheckpointLayout& l = m.layout;
  l.world_size = layout.required_integer("world_size");
  l.tensor = layout.required_integer("tensor_model_parallel_size");
  l.pipeline = layout.required_integer("pipeline_model_parallel_size");
  l.data = layout.required_integer("data_parallel_size");
  layout.reject_unknown();
  // Each size is at most 2^30, so the product fits in 128 bits.
  if (static_cast<__int128>(l.tensor) * l.pipeline * l.data != l.world_size)
    layout.fail("world_size", std::to_string(l.world_size) + " is not tensor x pipeline x data = " +
                                  std::to_string(static_cast<long double>(l.tensor) * l.pipeline * l.data));

  const nlohmann::json& shards = top.raw("shards");
  if (!shards.is_array()) top.fail("shards", "expected an array of shards, got " + std::string(shards.type_name()));
  if (static_cast<int64_t>(shards.size()) != l.world_size)
    top.fail("shards", "has " + std::to_string(shards.size()) + " shards for " + std::to_string(l.world_size) +
                           " ranks: every rank writes exactly one");
  top.reject_unknown();

  m.shards.resize(shards.size());
  std::vector<int64_t> index_of_rank(shards.size(), -1);
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string path = "shards[" + std::to_string(i) + "].";
    JsonFields f(shards[i], file, path);
    const int64_t rank = f.required_integer("rank", 0);
    if (rank >= l.world_size)
      f.fail("rank", std::to_string(rank) + " is not below the world size, " + std::to_string(l.world_size));
    if (index_of_rank[rank] >= 0)
      f.fail("rank", "rank " + std::to_string(rank) + " already has a shard (shards[" +
                         std::to_string(index_of_rank[rank]) + "])");
    index_of_rank[rank] = static_cast<int64_t>(i);
    ShardRecord& s = m.shards[rank];
    s.rank = rank;
    s.file = required_text(f, "file");
    if (s.file != shard_file_name(rank, m.step))
      f.fail("file", nlohmann::json(s.file).dump() + " is not the name of rank " + std::to_string(rank) +
                         "'s shard of step " + std::to_string(m.step) + ", " + shard_file_name(rank, m.step));
    s.bytes = required_bytes(f, "bytes");
    s.sha256 = required_sha256(f, "sha256");
    f.reject_unknown();
  }
  return m;
}

CheckpointManifest read_manifest(const std::string& path) { return parse_manifest(read_json_file(path), path); }

void write_manifest(const std::string& dir, const CheckpointManifest& manifest) {
  create_directory(dir);
  const std::string path = (fs::path(dir) / manifest_file_name).string();
  const nlohmann::json document = to_json(manifest);
  parse_manifest(document, path);  // never commit a manifest that resuming would refuse
  const std::string text = document.dump(2) + "\n";
  write_file_atomically(path, [&](std::ostream& out) { out << text; });
  sync_directory(dir);  // the commit point: the rename is durable

  // Now nothing names the shards of earlier steps, nor a killed write's leftovers.
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const std::optional<int64_t> step = shard_step(name);
    const bool stale_shard = step && *step < manifest.step;
    const bool stale_manifest = name.starts_with(std::string(manifest_file_name) + ".tmp");
    if (stale_shard || stale_manifest) fs::remove(entry.path(), error);
  }
  sync_directory(dir);
}

// ---------------------------------------------------------------- verification

namespace {

std::string short_hash(const std::string& hash) { return hash.substr(0, 12); }

// Re-reads one shard against its record; returns the bytes read.
uint64_t verify_shard(const std::string& dir, const ShardRecord& shard, int64_t step) {
  const std::string path = (fs::path(dir) / shard.file).string();
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT)
      throw InputError(path, "", "missing: the checkpoint of step " + std::to_string(step) + " is incomplete");
    throw InputError(path, "", "cannot be read: " + error_text(errno));
  }
  struct stat info{};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) throw InputError(path, "", "is not a regular file");
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size != shard.bytes)
    throw InputError(path, "", "is " + std::to_string(size) + " bytes, the manifest records " +
                                   std::to_string(shard.bytes) + (size < shard.bytes ? " (truncated)" : ""));
  // Measure the storage, not the page cache: drop the file's (synced, clean) cached pages.
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  Sha256 hash;
  std::vector<std::byte> chunk(static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(size, 1), chunk_bytes)));
  uint64_t total = 0;
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, "", "cannot be read: " + error_text(errno));
    }
    if (got == 0) break;
    hash.update(std::span(chunk.data(), static_cast<size_t>(got)));
    total += static_cast<uint64_t>(got);
    if (total > shard.bytes) break;  // grew while read
  }
  if (total != shard.bytes)
    throw InputError(path, "", "read " + std::to_string(total) + " bytes, the manifest records " +
                                   std::to_string(shard.bytes) + " (changed while read)");
  const std::string digest = hash.hex_digest();
  if (digest != shard.sha256)
    throw InputError(path, "", "SHA-256 is " + digest + ", the manifest records " + shard.sha256 +
                                   ": the shard is corrupt");
  return total;
}

}  // namespace

CheckpointManifest verify_checkpoint(const std::string& dir, const CheckpointIdentity& expected,
                                     std::span<const int64_t> ranks, TransferTiming* timing) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw InputError(dir, "", "no such checkpoint directory");
  const std::string path = (fs::path(dir) / manifest_file_name).string();
  if (!fs::exists(path, error))
    throw InputError(dir, "", std::string("no ") + manifest_file_name +
                                  ": not a checkpoint, or its write did not complete");
  const CheckpointManifest m = read_manifest(path);

  if (m.scenario_hash != expected.scenario_hash)
    throw InputError(path, "scenario.hash",
                     "written for scenario " + m.scenario_name + " (hash " + short_hash(m.scenario_hash) +
                         "), this run is " + expected.scenario_name + " (hash " +
                         short_hash(expected.scenario_hash) + "): its model, dtype or parallel layout differ");
  if (!(m.layout == expected.layout))
    throw InputError(path, "layout",
                     "written for " + to_string(m.layout) + ", this run is " + to_string(expected.layout));

  std::vector<int64_t> all;
  if (ranks.empty()) {
    for (int64_t r = 0; r < m.layout.world_size; ++r) all.push_back(r);
    ranks = all;
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  for (const int64_t rank : ranks) {
    if (rank < 0 || rank >= m.layout.world_size)
      throw std::out_of_range("verify_checkpoint: rank " + std::to_string(rank) + " is outside the layout");
    bytes += verify_shard(dir, m.shards[rank], m.step);
  }
  if (timing) *timing = {bytes, seconds_since(start)};
  return m;
}

CheckpointManifest manifest_for(const CheckpointIdentity& identity, int64_t step) {
  CheckpointManifest m;
  m.step = step;
  m.scenario_name = identity.scenario_name;
  m.scenario_hash = identity.scenario_hash;
  m.layout = identity.layout;
  return m;
}

CheckpointManifest write_checkpoint(const std::string& dir, const CheckpointIdentity& identity, int64_t step,
                                    std::span<const uint64_t> bytes_per_rank, TransferTiming* timing) {
  if (static_cast<int64_t>(bytes_per_rank.size()) != identity.layout.world_size)
    throw std::invalid_argument("write_checkpoint: one size per rank of the layout");
  const auto start = std::chrono::steady_clock::now();
  CheckpointManifest m = manifest_for(identity, step);
  uint64_t bytes = 0;
  for (int64_t rank = 0; rank < identity.layout.world_size; ++rank) {
    m.shards.push_back(write_shard(dir, rank, step, bytes_per_rank[rank]));
    bytes += bytes_per_rank[rank];
  }
  write_manifest(dir, m);
  if (timing) *timing = {bytes, seconds_since(start)};
  return m;
}

}  // namespace simtrain
