#include "sim/program/short_form.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace simtrain {

namespace {

constexpr std::string_view kFieldOrder =
    "s<stage> KIND[_PASS] mb<micro-batch> L<first>-<last>|Lnone ->s<peer>|<-s<peer> <group> <size> /<ratio> "
    "x<count> #<occurrence>";

// A collective a compute task's layers issue, right after it (or beside it): TP's, EP's token
// exchange and CP's K/V exchange.
bool is_layer_collective(const Task& task) {
  return task.dim == CommDim::tp || task.dim == CommDim::ep || task.dim == CommDim::cp;
}

// The compute pass a transfer or TP collective carries, found along its
// dependencies: a SEND waits for the end of its pass (the pass itself or the
// TP collective after it), a TP collective for the task before it, a RECV for
// its SEND.
std::optional<TaskKind> carried_pass(const Program& program, const Task& task) {
  Task t = task;
  while (t.kind == TaskKind::SEND || t.kind == TaskKind::RECV || is_layer_collective(t)) {
    const TaskDeps deps = program.deps(t);
    if (deps.empty()) return std::nullopt;
    t = program.tasks.at(deps.front());
  }
  if (!is_model_pass(t.kind)) return std::nullopt;
  return t.kind;
}

// A transfer's other stage: forward activations flow to the next stage,
// gradients to the one before.
std::optional<int> peer_stage(const Task& task, std::optional<TaskKind> pass) {
  if (!pass || task.stage < 0) return std::nullopt;
  const int downstream = *pass == TaskKind::F ? 1 : -1;
  if (task.kind == TaskKind::SEND) return task.stage + downstream;
  if (task.kind == TaskKind::RECV) return task.stage - downstream;
  return std::nullopt;
}

// A codec's Work is named "compress 24MiB /4": the only place the Program
// keeps its gradient size and ratio.
void add_codec_fields(const Program& program, const Task& task, TaskKey& key) {
  if (task.work < 0) return;
  std::istringstream words(program.works.at(task.work).name);
  std::string verb, size, ratio;
  words >> verb >> size >> ratio;
  key.size = size;
  if (ratio.size() > 1 && ratio.front() == '/') key.ratio = ratio.substr(1);
}

// Everything but the occurrence; `piece` says whether the task is one of
// several that split a pass at gradient buckets.
TaskKey key_without_occurrence(const Program& program, const Task& task, bool piece) {
  TaskKey key;
  key.stage = task.stage;
  key.kind = task.kind;
  key.microbatch = task.microbatch;
  if (piece) key.layers = std::make_pair(task.layer_begin, task.layer_end);
  if (task.kind == TaskKind::SEND || task.kind == TaskKind::RECV || is_layer_collective(task)) {
    key.pass = carried_pass(program, task);
    key.peer_stage = peer_stage(task, key.pass);
  }
  if (task.group >= 0) {
    const Group& group = program.groups.at(task.group);
    key.group = group.name;
    key.size = format_bytes(task.bytes);
    key.through_servers =
        group.servers > 0 && (task.kind == TaskKind::REDUCESCATTER || task.kind == TaskKind::ALLGATHER);
  }
  if (task.kind == TaskKind::COMPRESS || task.kind == TaskKind::DECOMPRESS) add_codec_fields(program, task, key);
  key.count = task.count;
  return key;
}

std::string kind_word(const TaskKey& key) {
  if (key.through_servers) return key.kind == TaskKind::REDUCESCATTER ? "PUSH" : "PULL";
  return to_string(key.kind);
}

// ---- reading ----

[[noreturn]] void unreadable(std::string_view text, const std::string& reason) {
  throw std::invalid_argument("short form \"" + std::string(text) + "\": " + reason);
}

// A whole non-negative integer, or nothing.
std::optional<int> read_int(std::string_view digits) {
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || value < 0) return std::nullopt;
  return value;
}

// The integer after `prefix` in `word`, or nothing when `word` is not prefix + digits.
std::optional<int> after_prefix(std::string_view word, std::string_view prefix) {
  if (word.size() <= prefix.size() || word.substr(0, prefix.size()) != prefix) return std::nullopt;
  return read_int(word.substr(prefix.size()));
}

std::optional<TaskKind> read_kind(std::string_view word) {
  for (int k = 0; k <= static_cast<int>(TaskKind::ALLTOALL); ++k)
    if (to_string(static_cast<TaskKind>(k)) == word) return static_cast<TaskKind>(k);
  return std::nullopt;
}

std::string kind_names() {
  std::string names;
  for (int k = 0; k <= static_cast<int>(TaskKind::ALLTOALL); ++k) names += to_string(static_cast<TaskKind>(k)) + ", ";
  return names + "PUSH, PULL";
}

void read_kind_word(std::string_view text, std::string_view word, TaskKey& key) {
  const size_t underscore = word.find('_');
  const std::string_view name = word.substr(0, underscore);
  if (name == "PUSH" || name == "PULL") {
    key.kind = name == "PUSH" ? TaskKind::REDUCESCATTER : TaskKind::ALLGATHER;
    key.through_servers = true;
  } else if (const auto kind = read_kind(name)) {
    key.kind = *kind;
  } else {
    unreadable(text, "\"" + std::string(word) + "\" is not a task kind (" + kind_names() + ")");
  }
  if (underscore == std::string_view::npos) return;
  const auto pass = read_kind(word.substr(underscore + 1));
  if (!pass || !is_model_pass(*pass))
    unreadable(text, "\"" + std::string(word.substr(underscore + 1)) + "\" in \"" + std::string(word) +
                         "\" is not a compute pass (F, B, W or R)");
  if (key.kind != TaskKind::SEND && key.kind != TaskKind::RECV && !is_collective(key.kind))
    unreadable(text, "only transfers and collectives carry a pass, not " + std::string(name));
  key.pass = pass;
}

std::optional<std::pair<int, int>> read_layers(std::string_view word) {
  if (word == "Lnone") return std::make_pair(0, 0);
  const size_t dash = word.find('-');
  if (word.size() < 2 || word.front() != 'L' || dash == std::string_view::npos) return std::nullopt;
  const auto first = read_int(word.substr(1, dash - 1)), last = read_int(word.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return std::make_pair(*first, *last + 1);
}

// "->s3" after a SEND, "<-s2" after a RECV; nothing for a word that starts otherwise.
std::optional<int> read_peer_stage(std::string_view text, std::string_view word, TaskKind kind) {
  const bool sends = word.substr(0, 2) == "->";
  if (!sends && word.substr(0, 2) != "<-") return std::nullopt;
  const auto stage = after_prefix(word.substr(2), "s");
  if (!stage) unreadable(text, "\"" + std::string(word) + "\" names no stage");
  if (kind != (sends ? TaskKind::SEND : TaskKind::RECV))
    unreadable(text, "\"" + std::string(word) + "\" needs a " + (sends ? "SEND" : "RECV"));
  return stage;
}

bool is_group_name(std::string_view word) {
  const size_t digits = word.find_first_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || !read_int(word.substr(digits))) return false;
  for (char c : word.substr(0, digits))
    if (c < 'a' || c > 'z') return false;
  return true;
}

// A size as format_bytes prints it: a number and a binary unit.
bool is_size(std::string_view word) {
  const size_t unit = word.find_first_not_of("0123456789.");
  if (unit == 0 || unit == std::string_view::npos) return false;
  const std::string_view suffix = word.substr(unit);
  return suffix == "B" || suffix == "KiB" || suffix == "MiB" || suffix == "GiB" || suffix == "TiB";
}

bool is_ratio(std::string_view word) {
  return word.size() > 1 && word.front() == '/' &&
         word.find_first_not_of("0123456789.e+-", 1) == std::string_view::npos;  // as %g prints it
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  size_t begin = 0;
  while ((begin = text.find_first_not_of(' ', begin)) != std::string_view::npos) {
    const size_t end = std::min(text.find(' ', begin), text.size());
    words.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return words;
}

// The keys of `ids`, tasks of one rank in list order. Pieces and occurrences
// are told apart only among tasks of one kind, stage and micro-batch, so the
// keys are the same for any list that holds all such tasks of the rank.
template <class Ids>
std::vector<TaskKey> keys_of(const Program& program, const Ids& ids) {
  // A pass split at gradient buckets leaves several tasks of one kind, stage and micro-batch.
  std::map<std::tuple<TaskKind, int, int>, int> pass_tasks;
  for (int id : ids) {
    const Task& t = program.tasks[id];
    if (is_model_pass(t.kind) && t.work >= 0) ++pass_tasks[{t.kind, t.stage, t.microbatch}];
  }
  std::vector<TaskKey> keys;
  std::unordered_map<std::string, int> seen;
  for (int id : ids) {
    const Task& t = program.tasks[id];
    const bool piece = is_model_pass(t.kind) && t.work >= 0 && pass_tasks[{t.kind, t.stage, t.microbatch}] > 1;
    TaskKey key = key_without_occurrence(program, t, piece);
    key.occurrence = ++seen[to_string(key)];
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace

std::vector<TaskKey> task_keys(const Program& program, int rank) {
  return keys_of(program, program.rank_tasks(rank));
}

std::vector<std::string> short_forms(const Program& program, int rank) {
  std::vector<std::string> forms;
  for (const TaskKey& key : task_keys(program, rank)) forms.push_back(to_string(key));
  return forms;
}

std::string to_string(const TaskKey& key) {
  std::string text;
  auto add = [&text](std::string_view prefix, const std::string& value = "") {
    if (!text.empty()) text += ' ';
    text.append(prefix).append(value);
  };
  if (key.stage >= 0) add("s", std::to_string(key.stage));
  add(kind_word(key));
  if (key.pass) text.append("_").append(to_string(*key.pass));
  if (key.microbatch >= 0) add("mb", std::to_string(key.microbatch));
  if (key.layers) {
    const auto [begin, end] = *key.layers;
    add("L", end > begin ? std::to_string(begin) + "-" + std::to_string(end - 1) : "none");
  }
  if (key.peer_stage) add(key.kind == TaskKind::SEND ? "->s" : "<-s", std::to_string(*key.peer_stage));
  if (!key.group.empty()) add(key.group);
  if (!key.size.empty()) add(key.size);
  if (!key.ratio.empty()) add("/", key.ratio);
  if (key.count != 1) add("x", std::to_string(key.count));
  if (key.occurrence != 1) add("#", std::to_string(key.occurrence));
  return text;
}

TaskKey parse_task_key(std::string_view short_form) {
  const std::vector<std::string_view> words = words_of(short_form);
  if (words.empty()) unreadable(short_form, "empty; the fields are, in order: " + std::string(kFieldOrder));
  size_t next = 0;
  auto word = [&] { return next < words.size() ? words[next] : std::string_view(); };
  TaskKey key;
  if (const auto stage = after_prefix(word(), "s")) key.stage = *stage, ++next;
  if (word().empty()) unreadable(short_form, "no task kind after the stage");
  read_kind_word(short_form, word(), key);
  ++next;
  if (const auto microbatch = after_prefix(word(), "mb")) key.microbatch = *microbatch, ++next;
  if (const auto layers = read_layers(word())) key.layers = layers, ++next;
  if (const auto peer = read_peer_stage(short_form, word(), key.kind)) key.peer_stage = peer, ++next;
  if (is_group_name(word())) key.group = word(), ++next;
  if (is_size(word())) key.size = word(), ++next;
  if (is_ratio(word())) key.ratio = word().substr(1), ++next;
  if (const auto count = after_prefix(word(), "x")) key.count = *count, ++next;
  if (const auto occurrence = after_prefix(word(), "#")) key.occurrence = *occurrence, ++next;
  if (next < words.size())
    unreadable(short_form, "cannot read \"" + std::string(words[next]) + "\" there; the fields are, in order: " +
                               std::string(kFieldOrder));
  if (key.count < 1 || key.occurrence < 1) unreadable(short_form, "counts and occurrences start at 1");
  return key;
}

int find_task(const Program& program, int rank, std::string_view short_form) {
  const TaskKey wanted = parse_task_key(short_form);
  if (rank < 0 || rank >= program.world_size)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the Program (world size " +
                                std::to_string(program.world_size) + ")");
  std::vector<int> candidates;  // of the wanted kind, stage and micro-batch: see keys_of
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    if (t.kind == wanted.kind && t.stage == wanted.stage && t.microbatch == wanted.microbatch) candidates.push_back(id);
  }
  const std::vector<TaskKey> keys = keys_of(program, candidates);
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == wanted) return candidates[i];

  std::vector<std::string> alike;  // of the same kind on the same stage, to say what there is
  for (const TaskKey& key : task_keys(program, rank))
    if (key.kind == wanted.kind && key.stage == wanted.stage) alike.push_back(to_string(key));
  std::string message = "rank " + std::to_string(rank) + " has no task \"" + to_string(wanted) + "\"";
  if (alike.empty()) throw std::invalid_argument(message + ", nor any of that kind and stage");
  message += "; of that kind and stage it has \"" + alike.front() + "\"";
  if (alike.size() > 1) message += " ... \"" + alike.back() + "\" (" + std::to_string(alike.size()) + " tasks)";
  throw std::invalid_argument(message);
}

}  // namespace simtrain
