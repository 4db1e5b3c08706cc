#pragma once
// Typed reading of one JSON object of a user's file, with errors that name
// the file and the field, and a check that no unknown (mistyped) field is left.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

class JsonFields {
public:
  // `path` prefixes field names in messages ("parallelism.").
  JsonFields(const nlohmann::json& object, std::string file, std::string path);

  bool has(const std::string& key) const;
  const nlohmann::json& raw(const std::string& key);  // marks the key as read
  std::optional<int64_t> integer(const std::string& key, int64_t min_value = 1);
  std::optional<double> number(const std::string& key, double min_value = 0);
  std::optional<bool> boolean(const std::string& key);
  std::optional<std::string> text(const std::string& key);
  // One of `choices`; the message lists them.
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& choices);

  int64_t required_integer(const std::string& key, int64_t min_value = 1);
  double required_number(const std::string& key, double min_value = 0);

  // Throws for the first key never read, suggesting the closest known one.
  void reject_unknown(const std::vector<std::string>& also_known = {}) const;
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

private:
  const nlohmann::json* find(const std::string& key);
  const nlohmann::json& object_;
  std::string file_, path_;
  std::set<std::string> read_;
};

// The known name within 3 edits of `name` (the closest), or "".
std::string closest_name(const std::string& name, const std::vector<std::string>& known);
// " (did you mean 'x'?)" for the closest known name, or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);
// At most `at_most` known names close to `name` (letter case aside): first
// those that contain it (from 3 characters on), in their order in `known`;
// then those within a few edits of it, or whose beginning is (half its
// length, at most 3 edits), the closest first.
std::vector<std::string> close_names(const std::string& name, const std::vector<std::string>& known, size_t at_most = 5);

// Parses JSON text nested at most limits::max_json_depth deep, with no key twice in an object. Throws
// nlohmann::json::exception if malformed (a syntax error, or a number beyond
// a double's range), InputError (naming `file` and `field`) if nested deeper.
nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& field = "");

// Throws InputError unless `path` is a regular file this process can read,
// saying what it is instead ("no such file", "is a directory", a FIFO ...).
void check_input_file(const std::string& path);

// Reads a file of at most limits::max_file_bytes; throws InputError naming it.
std::string read_input_file(const std::string& path);

// Parses a file as JSON; throws InputError naming the file (and the line on a syntax error).
nlohmann::json read_json_file(const std::string& path);

// What nlohmann/json's exception means for the user, without the library's
// code ("[json.exception.parse_error.101]"): "malformed JSON at line 3,
// column 1: unexpected end of input; expected string literal (is the file cut
// short?)", or, where the parser stopped at a byte that is not text, "not a
// JSON text file: byte 0x7F at line 1, column 1 is not text". Other
// exceptions: their message without the code.
std::string json_error_reason(const nlohmann::json::exception& error);

}  // namespace simtrain
