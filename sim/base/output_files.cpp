#include "sim/base/output_files.hpp"

#include <filesystem>
#include <memory>

#include "sim/base/gzip_stream.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/interrupt_guard.hpp"

namespace simtrain {

namespace fs = std::filesystem;

namespace {

// What goes into a file: compressed where its name ends in ".gz".
ContentWriter file_content(const std::string& path, const ContentWriter& content) {
  return is_gzip_path(path) ? gzip_compressed(content) : content;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

}  // namespace

void OutputFiles::add(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  const std::string shown = option + " " + path;
  Output output{option, path, {}};
  if (path != "-") try {
      output.target = output_target(path);
    } catch (const InputError& error) {
      throw InputError(option, "", error.what());
    }
  for (const Output& other : outputs_) {
    const bool both_standard = path == "-" && other.path == "-";
    const bool both_files = path != "-" && other.path != "-" && same_file(output.target.path, other.target.path);
    if (both_standard || both_files)
      throw InputError(shown, "", "is also the output of " + other.option + "; give each output its own file");
  }
  if (existing_ == ExistingFiles::refuse && path != "-" && output.target.exists && !output.target.direct)
    throw InputError(shown, "", "exists (pass --force to replace it)");
  outputs_.push_back(output);
}

void OutputFiles::refuse_inputs(const std::vector<std::string>& input_paths) const {
  for (const Output& output : outputs_) {
    if (output.path == "-" || !output.target.exists) continue;
    for (const std::string& input : input_paths) {
      if (same_file(input, output.target.path))
        throw InputError(output.option + " " + output.path, "",
                         "is " + input + ", an input of this command: writing it would destroy it");
    }
  }
}

const OutputFiles::Output* OutputFiles::find(const std::string& option) const {
  for (const Output& output : outputs_)
    if (output.option == option) return &output;
  return nullptr;
}

bool OutputFiles::wanted(const std::string& option) const { return find(option) != nullptr; }

bool OutputFiles::writes_standard_output() const {
  for (const Output& output : outputs_)
    if (output.path == "-") return true;
  return false;
}

void OutputFiles::write(const std::vector<std::pair<std::string, ContentWriter>>& contents) const {
  std::vector<std::unique_ptr<StagedFile>> staged;
  for (const auto& [option, content] : contents)
    if (const Output* output = find(option); output && output->path != "-" && !output->target.direct)
      staged.push_back(std::make_unique<StagedFile>(output->target, file_content(output->path, content)));
  {
    const SignalsHeld held;  // an interruption now waits until every file is in place
    for (const auto& file : staged) file->commit();
    mark_outputs_written(OutputsWritten::files);
  }
  standard_output_.flush();  // what was printed before stays before
  for (const auto& [option, content] : contents) {
    const Output* output = find(option);
    if (!output) continue;
    if (output->path == "-")
      content(standard_output_);
    else if (output->target.direct)
      write_in_place(output->target, file_content(output->path, content));
  }
  mark_outputs_written(OutputsWritten::all);
}

}  // namespace simtrain
