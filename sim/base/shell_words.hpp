#pragma once
// A command line as a POSIX shell splits it into words, for arguments pasted
// from a launch script (`simtrain from-megatron "..."`): words split at
// unquoted blanks and newlines; '...' literal; "..." with \" \\ \$ \` and
// backslash-newline escaped; a backslash outside quotes escapes the next
// character (backslash-newline continues the line); # at the start of a
// word comments out the rest of its line. Nothing is expanded: an unquoted
// or double-quoted $ (a variable, an array of the script) is refused, since
// its value is not in the text.
#include <string>
#include <vector>

namespace simtrain {

// Throws InputError naming `source` for an unterminated quote or a $.
std::vector<std::string> shell_words(const std::string& text, const std::string& source);

}  // namespace simtrain
