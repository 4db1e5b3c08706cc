// Short forms of tasks: exact texts, round trips through the parser, and one
// task per short form on every rank of every shipped scenario.
#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/program/program_builder.hpp"
#include "sim/program/short_form.hpp"
#include "test_support.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

Program program_of(const nlohmann::json& document) {
  const Scenario scenario = fixtures::scenario_from(document);
  return build_program(scenario, build_workload(scenario));
}

// tp x pp x dp GPUs, 4 layers, 2 micro-batches, 1F1B, with the fields of `parallelism` added.
nlohmann::json small_scenario(int tp, int pp, int dp, const nlohmann::json& parallelism = nlohmann::json::object(),
                              const std::string& schedule = "1f1b") {
  nlohmann::json document = fixtures::scenario_json(tp, pp, dp, 4, schedule, 0, 2);
  if (parallelism.is_object()) document["parallelism"].update(parallelism);
  return document;
}

// The short forms of a rank's tasks that match `kind`.
std::vector<std::string> forms_of_kind(const Program& program, int rank, TaskKind kind) {
  std::vector<std::string> forms;
  const std::vector<std::string> all = short_forms(program, rank);
  for (size_t i = 0; i < all.size(); ++i)
    if (program.tasks[program.rank_tasks(rank)[i]].kind == kind) forms.push_back(all[i]);
  return forms;
}

// Every task of `rank` prints a form that reads back to its key, that no other
// task of the rank prints, and that find_task turns back into its id.
void expect_forms_identify_tasks(const Program& program, int rank, const std::string& label) {
  const std::vector<TaskKey> keys = task_keys(program, rank);
  const std::vector<std::string> forms = short_forms(program, rank);
  ASSERT_EQ(keys.size(), program.rank_tasks(rank).size());
  const std::set<std::string> distinct(forms.begin(), forms.end());
  EXPECT_EQ(distinct.size(), forms.size()) << label << " rank " << rank;
  for (size_t i = 0; i < forms.size(); ++i) {
    ASSERT_EQ(parse_task_key(forms[i]), keys[i]) << label << " rank " << rank << ": " << forms[i];
    ASSERT_EQ(find_task(program, rank, forms[i]), program.rank_tasks(rank)[i]) << label << ": " << forms[i];
  }
}

// All ranks of a Program of up to 256 GPUs; of a larger one (a tenth of a
// second a rank for GPT-3's), the first and the last of each pipeline stage.
std::vector<int> ranks_to_check(const Program& program) {
  if (program.world_size <= 256) {
    std::vector<int> all(program.world_size);
    for (int rank = 0; rank < program.world_size; ++rank) all[rank] = rank;
    return all;
  }
  std::vector<int> first(program.pipeline_size, -1), last(program.pipeline_size, -1);
  for (int rank = 0; rank < program.world_size; ++rank) {
    const int pp = program.coords[rank].pp;
    if (first[pp] < 0) first[pp] = rank;
    last[pp] = rank;
  }
  std::set<int> ranks(first.begin(), first.end());
  ranks.insert(last.begin(), last.end());
  return {ranks.begin(), ranks.end()};
}

TEST(ShortForm, ExactFormsOfTheFirstStageWithTensorAndDataParallelism) {
  const Program program = program_of(small_scenario(2, 2, 2));
  EXPECT_EQ(short_forms(program, 0), (std::vector<std::string>{"s0 F mb0",
                                                                "s0 ALLREDUCE_F mb0 tp0 512KiB x5",
                                                                "s0 SEND_F mb0 ->s1",
                                                                "s0 F mb1",
                                                                "s0 ALLREDUCE_F mb1 tp0 512KiB x5",
                                                                "s0 SEND_F mb1 ->s1",
                                                                "s0 RECV_B mb0 <-s1",
                                                                "s0 B mb0",
                                                                "s0 ALLREDUCE_B mb0 tp0 512KiB x4",
                                                                "s0 RECV_B mb1 <-s1",
                                                                "s0 B mb1",
                                                                "s0 ALLREDUCE_B mb1 tp0 512KiB x4",
                                                                "s0 ALLREDUCE dp4 17MiB",
                                                                "ALLREDUCE emb8 4MiB",
                                                                "OPT"}));
  // The last stage receives activations and sends gradients back.
  EXPECT_EQ(forms_of_kind(program, 7, TaskKind::RECV),
            (std::vector<std::string>{"s1 RECV_F mb0 <-s0", "s1 RECV_F mb1 <-s0"}));
  EXPECT_EQ(forms_of_kind(program, 7, TaskKind::SEND),
            (std::vector<std::string>{"s1 SEND_B mb0 ->s0", "s1 SEND_B mb1 ->s0"}));
}

TEST(ShortForm, ParameterServersPushAndPull) {
  const Program program =
      program_of(small_scenario(1, 2, 2, {{"dp_sync", "parameter_server"}, {"parameter_servers", 2}}));
  EXPECT_EQ(forms_of_kind(program, 0, TaskKind::REDUCESCATTER), std::vector<std::string>{"s0 PUSH ps0 33.1MiB"});
  EXPECT_EQ(forms_of_kind(program, 0, TaskKind::ALLGATHER), std::vector<std::string>{"s0 PULL ps0 33.1MiB"});
}

// ZB-H1's weight-gradient pass, split where its gradient buckets close, each
// bucket compressed before its all-reduce and decompressed before the optimizer;
// the head (its copy of the tied word embeddings, 4096 x 512 fp32 gradients) a bucket alone.
TEST(ShortForm, BucketPiecesAndCodecs) {
  const Program program = program_of(small_scenario(
      1, 2, 2, {{"dp_compression_ratio", 4}, {"overlap_grad_reduce", true}, {"ddp_bucket_size", 1e6}}, "zb_h1"));
  const std::vector<std::string> forms = short_forms(program, 2);
  EXPECT_EQ(std::vector<std::string>(forms.begin() + 8, forms.end()), (std::vector<std::string>{
                                                                           "s1 W mb0",
                                                                           "s1 W mb1 Lnone",
                                                                           "s1 COMPRESS 8MiB /4",
                                                                           "s1 ALLREDUCE dp1 2MiB",
                                                                           "s1 W mb1 L3-3",
                                                                           "s1 COMPRESS 12MiB /4",
                                                                           "s1 ALLREDUCE dp1 3.01MiB",
                                                                           "s1 W mb1 L2-2",
                                                                           "s1 COMPRESS 12MiB /4 #2",
                                                                           "s1 ALLREDUCE dp1 3.01MiB #2",
                                                                           "ALLREDUCE emb2 8MiB",
                                                                           "s1 DECOMPRESS 8MiB /4",
                                                                           "s1 DECOMPRESS 12MiB /4",
                                                                           "s1 DECOMPRESS 12MiB /4 #2",
                                                                           "OPT",
                                                                       }));
}

// ZeRO-3 gathers a stage's parameters before every pass: alike but for their place in the list.
TEST(ShortForm, AlikeTasksAreNumberedInListOrder) {
  const Program program = program_of(small_scenario(1, 1, 2, {{"zero_stage", 3}}));
  EXPECT_EQ(short_forms(program, 0), (std::vector<std::string>{"s0 ALLGATHER dp0 28.6MiB",
                                                                "s0 F mb0",
                                                                "s0 ALLGATHER dp0 28.6MiB #2",
                                                                "s0 B mb0",
                                                                "s0 REDUCESCATTER dp0 57.1MiB",
                                                                "s0 ALLGATHER dp0 28.6MiB #3",
                                                                "s0 F mb1",
                                                                "s0 ALLGATHER dp0 28.6MiB #4",
                                                                "s0 B mb1",
                                                                "s0 REDUCESCATTER dp0 57.1MiB #2",
                                                                "OPT"}));
}

TEST(ShortForm, ParseReadsEveryField) {
  TaskKey send;
  send.stage = 2;
  send.kind = TaskKind::SEND;
  send.pass = TaskKind::B;
  send.microbatch = 7;
  send.peer_stage = 1;
  EXPECT_EQ(parse_task_key("s2 SEND_B mb7 ->s1"), send);

  TaskKey tp;
  tp.stage = 0;
  tp.kind = TaskKind::ALLREDUCE;
  tp.pass = TaskKind::R;
  tp.microbatch = 3;
  tp.group = "tp0";
  tp.size = "1.5GiB";
  tp.count = 4;
  tp.occurrence = 2;
  EXPECT_EQ(parse_task_key("s0 ALLREDUCE_R mb3 tp0 1.5GiB x4 #2"), tp);

  TaskKey piece;
  piece.stage = 3;
  piece.kind = TaskKind::B;
  piece.microbatch = 0;
  piece.layers = std::make_pair(10, 16);
  EXPECT_EQ(parse_task_key("s3 B mb0 L10-15"), piece);
  piece.layers = std::make_pair(0, 0);
  EXPECT_EQ(parse_task_key("s3  B mb0 Lnone "), piece);  // spaces do not matter

  TaskKey pull;
  pull.kind = TaskKind::ALLGATHER;
  pull.through_servers = true;
  pull.group = "ps1";
  pull.size = "512B";
  EXPECT_EQ(parse_task_key("PULL ps1 512B"), pull);

  TaskKey codec;
  codec.stage = 1;
  codec.kind = TaskKind::DECOMPRESS;
  codec.size = "12MiB";
  codec.ratio = "2.5";
  EXPECT_EQ(parse_task_key("s1 DECOMPRESS 12MiB /2.5"), codec);
  EXPECT_EQ(to_string(codec), "s1 DECOMPRESS 12MiB /2.5");
}

std::string parse_error(const std::string& text) {
  try {
    parse_task_key(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "read \"" << text << "\"";
  return "";
}

TEST(ShortForm, BadTextsSayWhatIsWrong) {
  EXPECT_THAT(parse_error(""), HasSubstr("short form \"\": empty; the fields are, in order: s<stage> KIND[_PASS]"));
  EXPECT_THAT(parse_error("s2"), HasSubstr("no task kind after the stage"));
  EXPECT_THAT(parse_error("s2 FWD mb7"), HasSubstr("\"FWD\" is not a task kind (F, B, W, R, OPT, SEND, RECV,"));
  EXPECT_THAT(parse_error("s2 SEND_X mb7"), HasSubstr("\"X\" in \"SEND_X\" is not a compute pass (F, B, W or R)"));
  EXPECT_THAT(parse_error("s2 F_B mb7"), HasSubstr("only transfers and collectives carry a pass, not F"));
  EXPECT_THAT(parse_error("s2 F mbx"), HasSubstr("cannot read \"mbx\" there; the fields are, in order"));
  EXPECT_THAT(parse_error("s2 SEND_F mb7 ->3"), HasSubstr("\"->3\" names no stage"));
  EXPECT_THAT(parse_error("s2 RECV_F mb7 ->s3"), HasSubstr("\"->s3\" needs a SEND"));
  EXPECT_THAT(parse_error("s2 B mb7 L5-3"), HasSubstr("cannot read \"L5-3\""));
  EXPECT_THAT(parse_error("ALLREDUCE 24MiB tp0"), HasSubstr("cannot read \"tp0\" there"));
  EXPECT_THAT(parse_error("ALLREDUCE tp0 24MiB x0"), HasSubstr("counts and occurrences start at 1"));
}

std::string find_error(const Program& program, int rank, const std::string& text) {
  try {
    find_task(program, rank, text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "found \"" << text << "\" on rank " << rank;
  return "";
}

TEST(ShortForm, FindTaskSaysWhatIsMissing) {
  const Program program = program_of(small_scenario(2, 2, 2));
  EXPECT_EQ(find_error(program, 0, "s0 F mb9"),
            "rank 0 has no task \"s0 F mb9\"; of that kind and stage it has \"s0 F mb0\" ... \"s0 F mb1\" (2 tasks)");
  EXPECT_EQ(find_error(program, 0, "s1 F mb0"), "rank 0 has no task \"s1 F mb0\", nor any of that kind and stage");
  EXPECT_EQ(find_error(program, 8, "OPT"), "rank 8 is not in the Program (world size 8)");
  EXPECT_THAT(find_error(program, 0, "s0 F mb0 bogus"), HasSubstr("cannot read \"bogus\" there"));
  EXPECT_EQ(find_task(program, 0, "OPT"), program.rank_tasks(0).back());
}

// Small Programs of many shapes: every scheduling, synchronisation and sharding option the builder knows.
TEST(ShortForm, IdentifyEveryTaskOfSmallPrograms) {
  nlohmann::json recomputing = small_scenario(2, 2, 2, {}, "gpipe");
  recomputing["training"]["recompute_granularity"] = "full";
  nlohmann::json experts = small_scenario(2, 2, 2, {{"expert_model_parallel_size", 2}, {"sequence_parallel", true}});
  experts["model"].update({{"num_experts", 8}, {"num_experts_per_tok", 2}});
  const std::vector<std::pair<std::string, nlohmann::json>> shapes = {
      {"1f1b tp2 pp2 dp2", small_scenario(2, 2, 2)},
      {"gpipe full recompute", recomputing},
      {"zb_h1 buckets", small_scenario(1, 4, 2, {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 1e6}}, "zb_h1")},
      {"1f1b buckets compression",
       small_scenario(2, 2, 2, {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 1e5}, {"dp_compression_ratio", 8}})},
      {"one stage buckets", small_scenario(1, 1, 2, {{"overlap_grad_reduce", true}, {"ddp_bucket_size", 1e5}})},
      {"zero 1", small_scenario(1, 2, 2, {{"zero_stage", 1}})},
      {"zero 3", small_scenario(2, 2, 2, {{"zero_stage", 3}})},
      {"parameter servers", small_scenario(2, 2, 2, {{"dp_sync", "parameter_server"}, {"parameter_servers", 3}})},
      {"hierarchical", small_scenario(1, 1, 16, {{"dp_sync", "hierarchical"}})},
      {"p2p stream", small_scenario(1, 4, 1, {{"overlap_p2p_communication", true}})},
      {"interleaved", fixtures::scenario_json(2, 2, 2, 8, "interleaved_1f1b", 2, 4)},
      {"experts ep2", experts},
      {"context cp2 p2p", small_scenario(2, 2, 2, {{"context_parallel_size", 2}})},
      {"context cp2 all_gather",
       small_scenario(1, 2, 4, {{"context_parallel_size", 2}, {"cp_comm_type", "all_gather"}, {"zero_stage", 1}})},
  };
  for (const auto& [label, document] : shapes) {
    const Program program = program_of(document);
    for (int rank = 0; rank < program.world_size; ++rank) expect_forms_identify_tasks(program, rank, label);
  }
}

TEST(ShortForm, IdentifyEveryTaskOfTheShippedScenarios) {
  for (const fixtures::ListedScenario& shipped : fixtures::unit_tested_scenarios()) {
    const std::string& name = shipped.name;
    const Scenario scenario = load_scenario(name);
    const Program program = build_program(scenario, build_workload(scenario));
    for (int rank : ranks_to_check(program)) expect_forms_identify_tasks(program, rank, name);
  }
}

}  // namespace
