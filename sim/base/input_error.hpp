#pragma once
// Errors in what the user wrote: a scenario, a topology, a flag.
// The message names the file, the field and the reason on one line; the CLI
// prints it and exits with code 2.
#include <stdexcept>
#include <string>

namespace simtrain {

class InputError : public std::runtime_error {
public:
  InputError(const std::string& file, const std::string& field, const std::string& reason)
      : std::runtime_error(file + ": " + (field.empty() ? "" : field + ": ") + reason),
        file_(file), field_(field), reason_(reason) {}

  // The parts of the message, for a caller that says it again in its own terms.
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

private:
  std::string file_, field_, reason_;
};

}  // namespace simtrain
