#include "vtrn/hlo/text_lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "vtrn/hlo/parser.h"

namespace vtrn::hlo {

void TextLexer::error(const std::string& msg, std::size_t at) const {
  std::size_t pos = at == kNpos ? p_ : at;
  if (pos > t_.size()) pos = t_.size();
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < pos; ++i)
    if (t_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  const int col = static_cast<int>(pos - line_start) + 1;
  std::size_t line_end = t_.find('\n', line_start);
  if (line_end == kNpos) line_end = t_.size();
  std::string text(t_.substr(line_start, std::min<std::size_t>(line_end - line_start, 200)));
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = ' ';
  std::string full = "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " +
                     msg + "\n  " + text + "\n  " +
                     std::string(static_cast<std::size_t>(std::min(col - 1, 200)), ' ') + "^";
  throw ParseError(full, line, col);
}

std::string TextLexer::snippet() const {
  std::string s(t_.substr(p_, 30));
  const std::size_t nl = s.find('\n');
  return nl == kNpos ? s : s.substr(0, nl);
}

void TextLexer::ws() {
  while (p_ < t_.size()) {
    const char c = t_[p_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p_;
    } else if (c == '/' && peek_at(1) == '/') {
      while (p_ < t_.size() && t_[p_] != '\n') ++p_;
    } else {
      break;
    }
  }
}

bool TextLexer::peek(std::string_view s) {
  ws();
  return t_.substr(p_, s.size()) == s;
}

bool TextLexer::accept(std::string_view s) {
  if (!peek(s)) return false;
  p_ += s.size();
  return true;
}

void TextLexer::expect(std::string_view s, const std::string& what) {
  if (accept(s)) return;
  if (at_end()) error("unexpected end of input, expected " + what);
  error("expected " + what + ", found '" + snippet() + "'");
}

bool TextLexer::ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool TextLexer::ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

bool TextLexer::peek_word(std::string_view w) {
  ws();
  return t_.substr(p_, w.size()) == w && !ident_char(peek_at(w.size()));
}

bool TextLexer::accept_word(std::string_view w) {
  if (!peek_word(w)) return false;
  p_ += w.size();
  return true;
}

std::string TextLexer::ident(const char* what) {
  ws();
  if (!ident_start(peek_char())) {
    if (at_end()) error(std::string("unexpected end of input, expected ") + what);
    error(std::string("expected ") + what + ", found '" + snippet() + "'");
  }
  const std::size_t s = p_;
  while (p_ < t_.size() && ident_char(t_[p_])) ++p_;
  return std::string(t_.substr(s, p_ - s));
}

std::string TextLexer::string_lit() {
  ws();
  if (peek_char() != '"') error("expected a string literal");
  ++p_;
  std::string out;
  while (true) {
    if (at_end()) error("unexpected end of input inside a string literal");
    char c = t_[p_++];
    if (c == '"') break;
    if (c == '\\') {
      if (at_end()) error("unexpected end of input inside a string literal");
      char n = t_[p_++];
      if (n == 'n')
        out += '\n';
      else if (n == 't')
        out += '\t';
      else if (n == '"' || n == '\\')
        out += n;
      else if (std::isxdigit(static_cast<unsigned char>(n)) &&
               std::isxdigit(static_cast<unsigned char>(peek_char()))) {
        const char h[3] = {n, t_[p_++], 0};
        out += static_cast<char>(std::strtol(h, nullptr, 16));
      } else {
        out += n;
      }
    } else {
      out += c;
    }
  }
  return out;
}

std::string TextLexer::symbol() {
  ws();
  if (peek_char() != '@') error("expected a symbol name such as @main");
  ++p_;
  if (peek_char() == '"') return string_lit();
  const std::size_t s = p_;
  while (p_ < t_.size() && (ident_char(t_[p_]) || t_[p_] == '-')) ++p_;
  if (s == p_) error("expected a symbol name after '@'");
  return std::string(t_.substr(s, p_ - s));
}

std::int64_t TextLexer::integer() {
  ws();
  const std::size_t s = p_;
  if (peek_char() == '-' || peek_char() == '+') ++p_;
  if (!std::isdigit(static_cast<unsigned char>(peek_char()))) {
    p_ = s;
    if (at_end()) error("unexpected end of input, expected an integer");
    error("expected an integer, found '" + snippet() + "'");
  }
  while (p_ < t_.size() && std::isalnum(static_cast<unsigned char>(t_[p_]))) ++p_;
  const std::string tok(t_.substr(s, p_ - s));
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(tok.c_str(), &end, 0);
  if (errno == ERANGE || *end != '\0') error("invalid integer '" + tok + "'", s);
  return v;
}

std::vector<std::int64_t> TextLexer::int_list() {
  expect("[", "'[' to open a list of integers");
  std::vector<std::int64_t> v;
  if (accept("]")) return v;
  do {
    v.push_back(integer());
  } while (accept(","));
  expect("]", "']' to close the list of integers");
  return v;
}

void TextLexer::skip_balanced_from_here(char open) {
  ws();
  if (peek_char() != open) error(std::string("expected '") + open + "'");
  std::vector<char> stack;
  while (true) {
    if (at_end()) error("unexpected end of input: unbalanced '" + std::string(1, open) + "'");
    const char c = t_[p_];
    if (c == '"') {
      string_lit();
      continue;
    }
    if (c == '-' && peek_at(1) == '>') {
      p_ += 2;
      continue;
    }
    ++p_;
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (stack.size() > 4096) error("nesting too deep");
      stack.push_back(c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>');
    } else if (c == ')' || c == ']' || c == '}' || c == '>') {
      if (stack.empty() || stack.back() != c) error(std::string("unbalanced '") + c + "'", p_ - 1);
      stack.pop_back();
      if (stack.empty()) return;
    }
  }
}

void TextLexer::skip_loc() {
  if (peek_word("loc")) {
    accept_word("loc");
    skip_balanced_from_here('(');
  }
}

std::string TextLexer::value_def_name() {
  ws();
  if (at_end()) error("unexpected end of input, expected a value name such as %0");
  if (peek_char() != '%') error("expected a value name such as %0");
  ++p_;
  const std::size_t s = p_;
  while (p_ < t_.size() && (ident_char(t_[p_]) || t_[p_] == '-')) ++p_;
  if (s == p_) error("expected a value name after '%'");
  return std::string(t_.substr(s, p_ - s));
}

}  // namespace vtrn::hlo
