// Real checkpoint I/O (live/checkpoint.hpp): shards with SHA-256, the
// manifest, refusals of corrupt, incomplete and foreign checkpoints, and a
// write killed at any moment leaving the previous checkpoint valid.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "checkpoint.hpp"
#include "model_config_changes.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using fixtures::TemporaryDirectory;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

CheckpointIdentity tiny_identity() { return checkpoint_identity(load_scenario("tiny-4gpu")); }

// Sizes that cross the 4 MiB write chunk, end mid-word and are empty.
const std::vector<uint64_t> sizes = {(uint64_t{4} << 20) + 3, 1, 0, uint64_t{5} << 20};

std::string dir_of(const TemporaryDirectory& d) { return d.path().string(); }

// Runs `work` in a child process; returns its pid.
pid_t start_child(const std::function<void()>& work) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      work();
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  return pid;
}

TEST(Checkpoint, Sha256OfKnownInputs) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex(std::as_bytes(std::span(abc))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2, B.1
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;  // incremental, across an uneven split
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  pieces.update(std::as_bytes(std::span(two_blocks).first(5)));
  pieces.update(std::as_bytes(std::span(two_blocks).subspan(5)));
  EXPECT_EQ(pieces.hex_digest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");  // FIPS 180-2, B.2
}

TEST(Checkpoint, WritesAndVerifiesEveryShard) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  TransferTiming wrote, read;
  const CheckpointManifest written = write_checkpoint(dir_of(dir), id, 7, sizes, &wrote);
  EXPECT_EQ(wrote.bytes, (uint64_t{9} << 20) + 4);
  EXPECT_GT(wrote.seconds, 0);
  EXPECT_GT(wrote.bytes_per_second(), 0);

  const CheckpointManifest verified = verify_checkpoint(dir_of(dir), id, {}, &read);
  EXPECT_EQ(read.bytes, wrote.bytes);
  EXPECT_GT(read.seconds, 0);
  EXPECT_EQ(verified.step, 7);
  EXPECT_EQ(verified.scenario_name, "tiny-4gpu");
  EXPECT_EQ(verified.layout, (CheckpointLayout{4, 2, 2, 1}));
  EXPECT_EQ(verified.shards, written.shards);
  ASSERT_EQ(verified.shards.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const ShardRecord& s = verified.shards[rank];
    EXPECT_EQ(s.file, "shard-r" + std::to_string(rank) + "-s7.bin");
    EXPECT_EQ(fs::file_size(dir.path() / s.file), sizes[rank]);
    const std::string content = fixtures::read_text(dir.path() / s.file);
    EXPECT_EQ(sha256_hex(std::as_bytes(std::span(content))), s.sha256);
  }
  EXPECT_EQ(verified.shards[2].sha256, sha256_hex({}));
  EXPECT_EQ(read_manifest((dir.path() / "manifest.json").string()).shards, written.shards);
  for (const auto& entry : fs::directory_iterator(dir.path()))  // no temporary file is left
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(Checkpoint, ShardContentIsDeterministicPerRankAndStep) {
  const TemporaryDirectory dir("checkpoint");
  const std::string a = write_shard(dir_of(dir), 3, 10, 1000).sha256;
  EXPECT_EQ(write_shard(dir_of(dir), 3, 10, 1000).sha256, a);
  EXPECT_NE(write_shard(dir_of(dir), 2, 10, 1000).sha256, a);
  EXPECT_NE(write_shard(dir_of(dir), 3, 11, 1000).sha256, a);
}

TEST(Checkpoint, VerifiesOnlyTheRanksAsked) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  fs::remove(dir.path() / "shard-r3-s1.bin");
  const std::vector<int64_t> mine = {1};
  TransferTiming read;
  EXPECT_NO_THROW(verify_checkpoint(dir_of(dir), id, mine, &read));
  EXPECT_EQ(read.bytes, 1u);
  const std::vector<int64_t> theirs = {3};
  EXPECT_NE(error_of([&] { verify_checkpoint(dir_of(dir), id, theirs); }).find("shard-r3-s1.bin: missing"),
            std::string::npos);
}

TEST(Checkpoint, ShardsAreSizedByTheSimulatorsCheckpointModel) {
  // Two layers of a 512-wide GPT on TP 2 x PP 2: about 120 MB in all.
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(2, 2, 1, 2, "1f1b"));
  const Workload workload = build_workload(s);
  const Program program = build_program(s, workload);
  std::vector<uint64_t> bytes;
  for (double b : checkpoint_bytes_per_rank(s, workload, program)) bytes.push_back(std::llround(b));
  const TemporaryDirectory dir("checkpoint");
  TransferTiming wrote, read;
  write_checkpoint(dir_of(dir), checkpoint_identity(s), 1, bytes, &wrote);
  const CheckpointManifest m = verify_checkpoint(dir_of(dir), checkpoint_identity(s), {}, &read);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(m.shards[rank].bytes, bytes[rank]);
  EXPECT_EQ(read.bytes, wrote.bytes);
  std::cout << "checkpoint of " << wrote.bytes / 1e6 << " MB: write " << wrote.bytes_per_second() / 1e9
            << " GB/s (with fsync), read " << read.bytes_per_second() / 1e9 << " GB/s\n";
}

TEST(Checkpoint, ScenarioHashCoversTheStateNotTheRest) {
  const std::string tiny = scenario_hash(load_scenario("tiny-4gpu"));
  EXPECT_EQ(tiny.size(), 64u);
  EXPECT_EQ(scenario_hash(load_scenario("tiny-4gpu")), tiny);
  for (const std::string same : {"checkpoint.storage_write_GBps=3", "global_batch_size=16", "description=other"})
    EXPECT_EQ(scenario_hash(load_scenario("tiny-4gpu", {same})), tiny) << same;
  const std::vector<std::vector<std::string>> others = {
      {"hidden_size=2048"}, {"dtype=fp16"}, {"zero_stage=1"}, {"num_gpus=8"}, {"vocab_size=32001"},
      {"tensor_model_parallel_size=4", "num_gpus=8"}, {"pipeline_layers=[2,6]"}};
  for (const std::vector<std::string>& other : others)
    EXPECT_NE(scenario_hash(load_scenario("tiny-4gpu", other)), tiny) << other[0];
}

TEST(Checkpoint, ScenarioHashCoversEveryModelFieldButTheName) {
  const Scenario tiny = load_scenario("tiny-4gpu");
  for (const auto& [field, change] : fixtures::one_change_per_field(tiny.model)) {
    Scenario changed = tiny;
    change(changed.model);
    if (field == "name")
      EXPECT_EQ(scenario_hash(changed), scenario_hash(tiny));
    else
      EXPECT_NE(scenario_hash(changed), scenario_hash(tiny)) << field;
  }
}

TEST(Checkpoint, RefusesAShardWithOneFlippedByte) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  {
    std::fstream f(dir.path() / "shard-r3-s1.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(12345);
    const char c = static_cast<char>(f.get());
    f.seekp(12345);
    f.put(static_cast<char>(c ^ 0x01));
  }
  const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), id); });
  EXPECT_NE(message.find("shard-r3-s1.bin: SHA-256 is "), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
}

TEST(Checkpoint, RefusesAMissingShard) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  fs::remove(dir.path() / "shard-r1-s1.bin");
  const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), id); });
  EXPECT_NE(message.find("shard-r1-s1.bin: missing: the checkpoint of step 1 is incomplete"), std::string::npos)
      << message;
}

TEST(Checkpoint, RefusesATruncatedShard) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  fs::resize_file(dir.path() / "shard-r0-s1.bin", 4096);
  const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), id); });
  EXPECT_NE(message.find("shard-r0-s1.bin: is 4096 bytes, the manifest records 4194307 (truncated)"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, RefusesAnotherScenariosCheckpoint) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  const Scenario wider = load_scenario("tiny-4gpu", {"hidden_size=2048", "name=tiny-wide"});
  const CheckpointIdentity other = checkpoint_identity(wider);
  ASSERT_EQ(other.layout, id.layout);
  const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), other); });
  EXPECT_NE(message.find("manifest.json: scenario.hash: written for scenario tiny-4gpu (hash " +
                         id.scenario_hash.substr(0, 12) + "), this run is tiny-wide (hash " +
                         other.scenario_hash.substr(0, 12) + ")"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, RefusesAnotherLayout) {
  const TemporaryDirectory dir("checkpoint");
  CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  id.layout = {4, 1, 2, 2};
  const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), id); });
  EXPECT_NE(message.find("manifest.json: layout: written for TP 2 x PP 2 x DP 1 (4 ranks), "
                         "this run is TP 1 x PP 2 x DP 2 (4 ranks)"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, RefusesADirectoryWithoutManifest) {
  const TemporaryDirectory dir("checkpoint");
  write_shard(dir_of(dir), 0, 1, 10);
  EXPECT_EQ(error_of([&] { verify_checkpoint(dir_of(dir), tiny_identity()); }),
            dir_of(dir) + ": no manifest.json: not a checkpoint, or its write did not complete");
  EXPECT_NE(error_of([&] { verify_checkpoint(dir_of(dir) + "/nowhere", tiny_identity()); })
                .find("no such checkpoint directory"),
            std::string::npos);
}

TEST(Checkpoint, RefusesAMalformedManifestNamingTheField) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  const nlohmann::json good = to_json(write_checkpoint(dir_of(dir), id, 3, sizes));
  const std::string path = (dir.path() / "manifest.json").string();
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["format"] = "other"; }, "format: 'other' is not one of: simtrain-checkpoint"},
      {[](nlohmann::json& j) { j.erase("format"); }, "format: missing"},
      {[](nlohmann::json& j) { j["format_version"] = 2; }, "format_version: 2 is not a version this simtrain reads (1)"},
      {[](nlohmann::json& j) { j["step"] = "three"; }, "step: expected an integer, got \"three\""},
      {[](nlohmann::json& j) { j["step"] = -1; }, "step: must be at least 0"},
      {[](nlohmann::json& j) { j["scenario"].erase("hash"); }, "scenario.hash: missing"},
      {[](nlohmann::json& j) { j["scenario"]["hash"] = "ABC"; }, "scenario.hash: expected 64 lowercase hex digits"},
      {[](nlohmann::json& j) { j["layout"].erase("data_parallel_size"); }, "layout.data_parallel_size: missing"},
      {[](nlohmann::json& j) { j["layout"]["world_size"] = 8; }, "layout.world_size: 8 is not tensor x pipeline x data"},
      {[](nlohmann::json& j) { j["layout"]["tensor"] = 2; }, "layout.tensor: unknown field"},
      {[](nlohmann::json& j) { j["shards"] = 4; }, "shards: expected an array of shards"},
      {[](nlohmann::json& j) { j["shards"].erase(3); }, "shards: has 3 shards for 4 ranks"},
      {[](nlohmann::json& j) { j["shards"][1]["rank"] = 0; }, "shards[1].rank: rank 0 already has a shard (shards[0])"},
      {[](nlohmann::json& j) { j["shards"][1]["rank"] = 4; }, "shards[1].rank: 4 is not below the world size, 4"},
      {[](nlohmann::json& j) { j["shards"][0]["file"] = "../../etc/passwd"; },
       "shards[0].file: \"../../etc/passwd\" is not the name of rank 0's shard of step 3, shard-r0-s3.bin"},
      {[](nlohmann::json& j) { j["shards"][2]["bytes"] = -5; }, "shards[2].bytes: must be from 0 to 2^60, got -5"},
      {[](nlohmann::json& j) { j["shards"][2]["bytes"] = 1.5; }, "shards[2].bytes: expected a whole number of bytes"},
      {[](nlohmann::json& j) { j["shards"][3]["sha256"] = nullptr; }, "shards[3].sha256: missing"},
      {[](nlohmann::json& j) { j["shards"][3]["sha"] = "x"; }, "shards[3].sha: unknown field (did you mean 'sha256'?)"},
      {[](nlohmann::json& j) { j = nlohmann::json::array(); }, "expected a JSON object, got array"},
  };
  for (const Case& c : cases) {
    nlohmann::json manifest = good;
    c.edit(manifest);
    std::ofstream(path, std::ios::trunc) << manifest.dump();
    const std::string message = error_of([&] { verify_checkpoint(dir_of(dir), id); });
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message << "\nexpected: " << c.expected;
  }
  std::ofstream(path, std::ios::trunc) << R"({"format": "simtrain-checkpoint",)";
  EXPECT_NE(error_of([&] { verify_checkpoint(dir_of(dir), id); }).find(path + ": malformed JSON"), std::string::npos);
}

TEST(Checkpoint, RefusesAShardLargerThanTheFreeSpace) {
  const TemporaryDirectory dir("checkpoint");
  const std::string message = error_of([&] { write_shard(dir_of(dir), 0, 1, uint64_t{1} << 60); });
  EXPECT_NE(message.find("shard-r0-s1.bin: needs 1152921504606846976 bytes, the file system has "),
            std::string::npos)
      << message;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Checkpoint, AnUnfinishedWriteLeavesThePreviousCheckpointValid) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  // Step 2 stops after two shards and part of a third: no manifest for it.
  write_shard(dir_of(dir), 0, 2, sizes[0]);
  write_shard(dir_of(dir), 1, 2, sizes[1]);
  std::ofstream(dir.path() / "shard-r2-s2.bin.tmp") << "half";
  std::ofstream(dir.path() / "manifest.json.tmp999") << "{\"step\": 2";
  EXPECT_EQ(verify_checkpoint(dir_of(dir), id).step, 1);

  // The next complete write commits step 2 and removes step 1 and the leftovers.
  write_checkpoint(dir_of(dir), id, 2, sizes);
  EXPECT_EQ(verify_checkpoint(dir_of(dir), id).step, 2);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"manifest.json", "shard-r0-s2.bin", "shard-r1-s2.bin",
                                             "shard-r2-s2.bin", "shard-r3-s2.bin"}));
}

TEST(Checkpoint, AProcessKilledWhileWritingAShardLeavesThePreviousCheckpointValid) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  write_checkpoint(dir_of(dir), id, 1, sizes);
  const fs::path partial = dir.path() / "shard-r0-s2.bin.tmp";
  const pid_t child = start_child([&] { write_shard(dir_of(dir), 0, 2, uint64_t{2} << 30); });  // 2 GiB
  ASSERT_GT(child, 0);
  // Killed once 8 MiB are out, long before the 2 GiB are.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::error_code error;
  while (fs::file_size(partial, error) < (uint64_t{8} << 20) || error) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the child never wrote 8 MiB";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(fs::exists(partial));
  EXPECT_FALSE(fs::exists(dir.path() / "shard-r0-s2.bin"));
  const CheckpointManifest m = verify_checkpoint(dir_of(dir), id);
  EXPECT_EQ(m.step, 1);
}

TEST(Checkpoint, AProcessKilledAtAnyMomentOfACheckpointLeavesAValidOne) {
  const TemporaryDirectory dir("checkpoint");
  const CheckpointIdentity id = tiny_identity();
  const std::vector<uint64_t> small = {uint64_t{3} << 20, uint64_t{3} << 20, uint64_t{3} << 20, uint64_t{3} << 20};
  // Kill moments spread over the time a whole write takes, and a little past it.
  const auto start = std::chrono::steady_clock::now();
  write_checkpoint(dir_of(dir), id, 2, small);
  const auto whole = std::chrono::steady_clock::now() - start;
  constexpr int attempts = 16;
  int old = 0, fresh = 0;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    write_checkpoint(dir_of(dir), id, 1, small);
    const pid_t child = start_child([&] { write_checkpoint(dir_of(dir), id, 2, small); });
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(whole * 1.25 * attempt / attempts);
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    const int64_t step = verify_checkpoint(dir_of(dir), id).step;  // throws if neither is valid
    EXPECT_TRUE(step == 1 || step == 2);
    (step == 1 ? old : fresh) += 1;
  }
  std::cout << "killed " << attempts << " times: " << old << " left step 1, " << fresh << " step 2\n";
}

}  // namespace
}  // namespace simtrain
