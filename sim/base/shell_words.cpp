#include "sim/base/shell_words.hpp"

#include <cctype>

#include "sim/base/input_error.hpp"

namespace simtrain {

std::vector<std::string> shell_words(const std::string& text, const std::string& source) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has begun (it may be empty: '')
  auto end_word = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  auto refuse_expansion = [&](size_t at) {
    size_t end = at + 1;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' ||
                                 text[end] == '{' || text[end] == '}' || text[end] == '[' || text[end] == ']' ||
                                 text[end] == '@'))
      ++end;
    throw InputError(source, "", "'" + text.substr(at, end - at) +
                                     "': shell variables are not expanded; paste the arguments with their values");
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      end_word();
    } else if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] != '\n') word += text[i + 1], in_word = true;
      ++i;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string::npos) throw InputError(source, "", "unterminated ' quote");
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= text.size()) throw InputError(source, "", "unterminated \" quote");
        if (text[i] == '"') break;
        if (text[i] == '$' || text[i] == '`') refuse_expansion(i);
        if (text[i] == '\\' && i + 1 < text.size() && std::string("\"\\$`\n").find(text[i + 1]) != std::string::npos) {
          if (text[++i] != '\n') word += text[i];
        } else {
          word += text[i];
        }
      }
    } else if (c == '$' || c == '`') {
      refuse_expansion(i);
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  return words;
}

}  // namespace simtrain
