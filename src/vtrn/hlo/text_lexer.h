// The tokens of StableHLO MLIR text, for the parser (parser.h): whitespace and comments,
// punctuation, identifiers, string literals, symbols, value names and integers. Every error
// names the line and column, quotes the line and marks the column:
//   line 3, column 10: expected ')' to close the operands, found ']'
// Internal to the hlo parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vtrn::hlo {

inline constexpr std::size_t kNpos = std::string::npos;
/// Nesting bound of attributes, regions and dense literals: deeper text is an error, not a
/// stack overflow.
inline constexpr int kMaxParseDepth = 128;

class TextLexer {
 public:
  explicit TextLexer(std::string_view text) : t_(text) {}

  /// Throws ParseError with |msg| at offset |at| (default: the current position).
  [[noreturn]] void error(const std::string& msg, std::size_t at = kNpos) const;

  bool at_end() const { return p_ >= t_.size(); }
  char peek_char() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  char peek_at(std::size_t k) const { return p_ + k < t_.size() ? t_[p_ + k] : '\0'; }
  /// The rest of the current line, at most 30 characters, for "found '...'" messages.
  std::string snippet() const;

  /// Skips whitespace and `//` comments.
  void ws();
  /// After ws(): does the text continue with |s|? accept() also consumes it.
  bool peek(std::string_view s);
  bool accept(std::string_view s);
  /// accept(|s|) or an error "expected |what|, found '...'".
  void expect(std::string_view s, const std::string& what);

  static bool ident_start(char c);
  static bool ident_char(char c);
  /// Like peek/accept, but |w| must not continue as an identifier.
  bool peek_word(std::string_view w);
  bool accept_word(std::string_view w);

  std::string ident(const char* what = "an identifier");
  /// A "..." literal with MLIR's escapes (\n, \t, \", \\, \XX).
  std::string string_lit();
  /// @name or @"name", without the '@'.
  std::string symbol();
  /// %name (without the '%') where a value is defined.
  std::string value_def_name();
  std::int64_t integer();
  /// [1, 2, 3]
  std::vector<std::int64_t> int_list();
  /// Skips a bracketed construct whose opening char |open| is next (after ws).
  void skip_balanced_from_here(char open);
  /// Skips a `loc(...)` location, if one is next.
  void skip_loc();

 protected:
  /// Counts nesting for the lifetime of a recursive call; errors beyond kMaxParseDepth.
  class DepthGuard {
   public:
    explicit DepthGuard(TextLexer& lexer) : lexer_(lexer) {
      if (++lexer_.depth_ > kMaxParseDepth) lexer_.error("nesting too deep");
    }
    ~DepthGuard() { --lexer_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    TextLexer& lexer_;
  };

  std::string_view t_;  ///< the whole text
  std::size_t p_ = 0;   ///< the current offset in it
  int depth_ = 0;
};

}  // namespace vtrn::hlo
