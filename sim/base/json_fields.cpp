#include "sim/base/json_fields.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string type_name(const nlohmann::json& value) {
  return value.is_null() ? "null" : value.type_name();
}

// The first byte of `read` (nlohmann's "last read", which writes control
// characters as <U+001F>) that is not text: a control character, DEL, or a
// byte outside well-formed UTF-8; -1 if all is text.
int first_byte_not_text(const std::string& read) {
  for (size_t i = 0; i < read.size();) {
    const auto byte = static_cast<unsigned char>(read[i]);
    if (read.compare(i, 5, "<U+00") == 0 && i + 8 <= read.size() && read[i + 7] == '>')
      return std::stoi(read.substr(i + 5, 2), nullptr, 16);
    if (byte == 0x7F) return byte;
    const size_t length = byte < 0x80 ? 1 : (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : (byte & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || i + length > read.size()) return byte;
    for (size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(read[i + k]) & 0xC0) != 0x80) return byte;
    i += length;
  }
  return -1;
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object())
    throw InputError(file_, path_.empty() ? "" : path_.substr(0, path_.size() - 1),
                     "expected a JSON object, got " + type_name(object_));
}

bool JsonFields::has(const std::string& key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const nlohmann::json* JsonFields::find(const std::string& key) {
  read_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json& JsonFields::raw(const std::string& key) {
  const nlohmann::json* value = find(key);
  if (!value) fail(key, "missing");
  return *value;
}

void JsonFields::fail(const std::string& key, const std::string& reason) const {
  throw InputError(file_, path_ + key, reason);
}

std::optional<int64_t> JsonFields::integer(const std::string& key, int64_t min_value) {
  const nlohmann::json* value = find(key);
  if (!value) return std::nullopt;
  int64_t result = 0;
  if (value->is_number_integer()) {
    result = value->get<int64_t>();
  } else if (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>() &&
             std::abs(value->get<double>()) < 9e18) {
    result = static_cast<int64_t>(value->get<double>());
  } else {
    fail(key, "expected an integer, got " + value->dump());
  }
  if (result < min_value) fail(key, "must be at least " + number_text(double(min_value)) + ", got " + std::to_string(result));
  if (result > limits::max_integer)
    fail(key, "must be at most " + number_text(double(limits::max_integer)) + ", got " + std::to_string(result));
  return result;
}

std::optional<double> JsonFields::number(const std::string& key, double min_value) {
  const nlohmann::json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_number()) fail(key, "expected a number, got " + value->dump());
  double result = value->get<double>();
  if (!std::isfinite(result) || result < min_value) {
    std::ostringstream message;
    message << "must be a finite number of at least " << min_value << ", got " << value->dump();
    fail(key, message.str());
  }
  return result;
}

std::optional<bool> JsonFields::boolean(const std::string& key) {
  const nlohmann::json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) fail(key, "expected true or false, got " + value->dump());
  return value->get<bool>();
}

std::optional<std::string> JsonFields::text(const std::string& key) {
  const nlohmann::json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_string()) fail(key, "expected a string, got " + value->dump());
  return value->get<std::string>();
}

std::optional<std::string> JsonFields::choice(const std::string& key, const std::vector<std::string>& choices) {
  std::optional<std::string> value = text(key);
  if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
    fail(key, "'" + *value + "' is not one of: " + joined(choices));
  }
  return value;
}

int64_t JsonFields::required_integer(const std::string& key, int64_t min_value) {
  std::optional<int64_t> value = integer(key, min_value);
  if (!value) fail(key, "missing");
  return *value;
}

double JsonFields::required_number(const std::string& key, double min_value) {
  std::optional<double> value = number(key, min_value);
  if (!value) fail(key, "missing");
  return *value;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 4;  // suggest only near misses
  for (const std::string& candidate : known) {
    const size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) best_distance = distance, best = candidate;
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  const std::string best = closest_name(name, known);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::vector<std::string> close_names(const std::string& name, const std::vector<std::string>& known, size_t at_most) {
  const std::string wanted = to_lower(name);
  const size_t allowed_edits = std::min<size_t>(3, wanted.size() / 2);
  std::vector<std::string> containing;
  std::vector<std::pair<size_t, std::string>> near;  // edits, name
  for (const std::string& candidate : known) {
    const std::string lower = to_lower(candidate);
    if (wanted.size() >= 3 && lower.find(wanted) != std::string::npos) {
      containing.push_back(candidate);
      continue;
    }
    const size_t edits = std::min(edit_distance(wanted, lower), edit_distance(wanted, lower.substr(0, wanted.size())));
    if (edits <= allowed_edits) near.emplace_back(edits, candidate);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [edits, candidate] : near) containing.push_back(candidate);
  if (containing.size() > at_most) containing.resize(at_most);
  return containing;
}

void JsonFields::reject_unknown(const std::vector<std::string>& also_known) const {
  for (const auto& [key, value] : object_.items()) {
    if (read_.count(key) || std::find(also_known.begin(), also_known.end(), key) != also_known.end()) continue;
    fail(key, "unknown field" + did_you_mean(key, {read_.begin(), read_.end()}));
  }
}

nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& field) {
  // Checked while parsing: nlohmann copies and prints nested values
  // recursively, and keeps the last of two equal keys without a word.
  struct OpenObject {
    std::string path;  // "model.", or "" at the top
    std::set<std::string> keys;
    std::string last_key;
  };
  std::vector<OpenObject> open_objects;
  const auto checked = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth > limits::max_json_depth)
      throw InputError(file, field, "nested more than " + std::to_string(limits::max_json_depth) + " levels deep");
    if (event == Event::object_start) {
      const std::string top = field.empty() ? "" : field + ".";
      const std::string path = open_objects.empty() ? top : open_objects.back().path + open_objects.back().last_key + ".";
      open_objects.push_back({path, {}, ""});
    }
    if (event == Event::object_end) open_objects.pop_back();
    if (event == Event::key) {
      OpenObject& object = open_objects.back();
      object.last_key = parsed.get<std::string>();
      if (!object.keys.insert(object.last_key).second)
        throw InputError(file, object.path + object.last_key, "given twice in one object; keep one");
    }
    return true;
  };
  return nlohmann::json::parse(text, checked);
}

void check_input_file(const std::string& path) {
  std::error_code error;  // the throwing overloads fail on names such as an over-long path
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found || status.type() == std::filesystem::file_type::none)
    throw InputError(path, "", "no such file");
  if (status.type() == std::filesystem::file_type::directory) throw InputError(path, "", "is a directory, not a file");
  if (status.type() != std::filesystem::file_type::regular)
    throw InputError(path, "", "not a regular file (a device, FIFO or socket); give a file");
  if (::access(path.c_str(), R_OK) != 0) throw InputError(path, "", std::string("cannot be read: ") + std::strerror(errno));
}

std::string read_input_file(const std::string& path) {
  check_input_file(path);
  std::error_code error;
  const std::string too_large = "larger than the limit of " + std::to_string(limits::max_file_bytes >> 20) + " MiB";
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (!error && size > limits::max_file_bytes) throw InputError(path, "", "is " + std::to_string(size) + " bytes, " + too_large);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read");
  // The size a file reports may be wrong (/proc) or change while it is read.
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > limits::max_file_bytes) throw InputError(path, "", too_large);
  }
  if (in.bad()) throw InputError(path, "", "cannot be read");
  return text;
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_input_file(path);
  try {
    return parse_json(text, path);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(path, "", json_error_reason(error));
  } catch (const nlohmann::json::exception& error) {  // a number beyond a double's range
    throw InputError(path, "", "malformed JSON: " + json_error_reason(error));
  }
}

std::string json_error_reason(const nlohmann::json::exception& error) {
  std::string message = error.what();
  if (message.starts_with("[json.exception.")) message.erase(0, message.find("] ") + 2);
  // "parse error at line 1, column 1: syntax error while parsing value - invalid literal; last read: 'x'"
  static const std::regex parse_error(R"(parse error at (line \d+, column \d+): (?:syntax error while parsing [^-]* - )?(.*?)(?:; last read: '(.*)')?)");
  std::smatch parts;
  if (!std::regex_match(message, parts, parse_error)) return message;
  const std::string at = parts[1], detail = parts[2], read = parts[3];
  if (const int byte = first_byte_not_text(read); byte >= 0) {
    char hex[16];  // "0x7F"; room for any int, so the compiler sees no truncation
    std::snprintf(hex, sizeof hex, "0x%02X", byte);
    return "not a JSON text file: byte " + std::string(hex) + " at " + at + " is not text";
  }
  std::string reason = "malformed JSON at " + at + ": " + detail;
  if (!read.empty()) reason += " (near '" + read + "')";
  if (detail.starts_with("unexpected end of input")) reason += " (is the file cut short?)";
  return reason;
}

}  // namespace simtrain
