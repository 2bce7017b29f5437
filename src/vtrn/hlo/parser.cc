#include "vtrn/hlo/parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

constexpr std::size_t kNpos = std::string::npos;
constexpr int kMaxDepth = 128;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

struct DenseBody {
  bool hex = false;
  std::string hex_digits;
  std::vector<std::string> elems;
  bool bracketed = false;
  std::size_t pos = 0;
};

struct Attr {
  enum Kind {
    kNone,
    kInt,
    kFloat,
    kString,
    kBool,
    kList,
    kEnum,
    kStruct,
    kDict,
    kDense,
    kOther
  } kind = kNone;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Attr> items;
  // Struct fields and dictionary entries (two vectors: a vector of pair<string, Attr> would need
  // Attr to be complete here).
  std::vector<std::string> field_names;
  std::vector<Attr> field_values;
  std::shared_ptr<DenseBody> dense;
  std::optional<TensorType> dense_type;
  std::vector<TensorType> fn_results;  // function_type attributes

  const Attr* field(std::string_view name) const {
    for (std::size_t i = 0; i < field_names.size(); ++i)
      if (field_names[i] == name) return &field_values[i];
    return nullptr;
  }
};

struct Scope {
  Block* block = nullptr;
  std::map<std::string, int> names;
  const Scope* parent = nullptr;
};

struct RawOp {
  std::string name;  // full name, e.g. "stablehlo.add"
  OpKind kind = OpKind::kAdd;
  bool is_dot = false;  // stablehlo.dot (mapped to dot_general)
  std::size_t pos = 0;
  std::vector<int> operands;
  std::vector<std::string> operand_names;
  std::vector<std::pair<std::string, Attr>> attrs;
  std::vector<std::string> positional;
  std::vector<std::shared_ptr<Block>> regions;
  std::optional<ReduceKind> applies;
  bool have_types = false;
  bool functional = false;
  std::vector<TensorType> in_types, out_types;
  std::vector<std::int64_t> slice_start, slice_limit, slice_strides;
  bool has_slice_spec = false;

  const Attr* attr(std::string_view n) const {
    for (const auto& [k, v] : attrs)
      if (k == n) return &v;
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Module parse() {
    Module m;
    skip_aliases();
    bool in_module = false;
    bool generic_module = false;
    if (accept("\"builtin.module\"")) {
      // "builtin.module"() <{sym_name = "m"}> ({ funcs }) {attrs} : () -> ()
      generic_module = in_module = true;
      expect("(", "'('");
      expect(")", "')'");
      if (accept("<")) {
        for (const auto& [k, v] : parse_dict())
          if (k == "sym_name") m.name = v.s;
        expect(">", "'>'");
      }
      expect("(", "'(' and the module region");
      expect("{", "'{'");
    } else if (accept_word("module")) {
      in_module = true;
      ws();
      if (peek_char() == '@') m.name = symbol();
      if (accept_word("attributes")) parse_dict();
      expect("{", "'{' to open the module body");
    }
    // First pass: find each function and skip its body.
    for (;;) {
      skip_aliases();
      ws();
      if (in_module && accept("}")) {
        if (generic_module) {
          expect(")", "')' after the module region");
          if (peek("{")) parse_dict();
          expect(":", "':'");
          type_list_in_parens();
          expect("->", "'->'");
          type_list_in_parens();
        }
        skip_loc();  // `} loc(#loc)` after the module
        break;
      }
      if (at_end()) {
        if (in_module) error("unexpected end of input: the module is not closed with '}'");
        break;
      }
      const std::size_t start = p_;
      std::string name;
      if (peek("\"func.func\"")) {
        name = generic_function_header(nullptr, nullptr);
        skip_balanced_from_here('{');
        generic_function_trailer();
      } else {
        name = function_header(nullptr, nullptr);
        skip_balanced_from_here('{');
        skip_loc();  // `} loc(#loc)` after the body (as_text(debug_info=True))
      }
      if (funcs_.count(name)) error("function @" + name + " is defined twice", start);
      funcs_[name] = start;
      order_.push_back(name);
    }
    skip_aliases();
    ws();
    if (!at_end()) error("unexpected text after the module: '" + snippet() + "'");
    if (order_.empty()) error("no function found: expected 'func.func @main(...)'", 0);
    std::string main_name;
    if (funcs_.count("main"))
      main_name = "main";
    else if (order_.size() == 1)
      main_name = order_[0];
    else
      error("no function named @main among " + std::to_string(order_.size()) + " functions", 0);
    m.main = *function(main_name);
    try {
      verify_module(m);
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      error(e.what(), 0);
    }
    return m;
  }

 private:
  //===--------------------------------------------------------------------===//
  // Errors and lexing
  //===--------------------------------------------------------------------===//

  [[noreturn]] void error(const std::string& msg, std::size_t at = kNpos) const {
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

  bool at_end() const { return p_ >= t_.size(); }
  char peek_char() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  char peek_at(std::size_t k) const { return p_ + k < t_.size() ? t_[p_ + k] : '\0'; }

  std::string snippet() const {
    std::string s(t_.substr(p_, 30));
    const std::size_t nl = s.find('\n');
    return nl == kNpos ? s : s.substr(0, nl);
  }

  void ws() {
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

  bool peek(std::string_view s) {
    ws();
    return t_.substr(p_, s.size()) == s;
  }

  bool accept(std::string_view s) {
    if (!peek(s)) return false;
    p_ += s.size();
    return true;
  }

  void expect(std::string_view s, const std::string& what) {
    if (accept(s)) return;
    if (at_end()) error("unexpected end of input, expected " + what);
    error("expected " + what + ", found '" + snippet() + "'");
  }

  static bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  }

  bool peek_word(std::string_view w) {
    ws();
    return t_.substr(p_, w.size()) == w && !ident_char(peek_at(w.size()));
  }

  bool accept_word(std::string_view w) {
    if (!peek_word(w)) return false;
    p_ += w.size();
    return true;
  }

  std::string ident(const char* what = "an identifier") {
    ws();
    if (!ident_start(peek_char())) {
      if (at_end()) error(std::string("unexpected end of input, expected ") + what);
      error(std::string("expected ") + what + ", found '" + snippet() + "'");
    }
    const std::size_t s = p_;
    while (p_ < t_.size() && ident_char(t_[p_])) ++p_;
    return std::string(t_.substr(s, p_ - s));
  }

  std::string string_lit() {
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

  std::string symbol() {
    ws();
    if (peek_char() != '@') error("expected a symbol name such as @main");
    ++p_;
    if (peek_char() == '"') return string_lit();
    const std::size_t s = p_;
    while (p_ < t_.size() && (ident_char(t_[p_]) || t_[p_] == '-')) ++p_;
    if (s == p_) error("expected a symbol name after '@'");
    return std::string(t_.substr(s, p_ - s));
  }

  std::int64_t integer() {
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

  std::vector<std::int64_t> int_list() {
    expect("[", "'[' to open a list of integers");
    std::vector<std::int64_t> v;
    if (accept("]")) return v;
    do {
      v.push_back(integer());
    } while (accept(","));
    expect("]", "']' to close the list of integers");
    return v;
  }

  // Skips a bracketed construct whose opening char is at p_ (after ws).
  void skip_balanced_from_here(char open) {
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
        if (stack.empty() || stack.back() != c)
          error(std::string("unbalanced '") + c + "'", p_ - 1);
        stack.pop_back();
        if (stack.empty()) return;
      }
    }
  }

  void skip_aliases() {
    // `#loc1 = loc(...)` and other attribute aliases at the top level.
    while (peek("#")) {
      ++p_;
      ident("an alias name");
      expect("=", "'=' in an attribute alias");
      parse_attr();
    }
  }

  void skip_loc() {
    if (peek_word("loc")) {
      accept_word("loc");
      skip_balanced_from_here('(');
    }
  }

  //===--------------------------------------------------------------------===//
  // Types
  //===--------------------------------------------------------------------===//

  TensorType tensor_type() {
    ws();
    const std::size_t s = p_;
    if (peek_char() == '!')
      error("type '" + snippet() + "' is not supported by vtrn (tensors only)");
    const std::string w = ident("a tensor type");
    if (w != "tensor") {
      if (dtype_from_name(w)) return TensorType(*dtype_from_name(w), {});
      if (w == "complex" && accept("<")) {
        const std::string e = ident("an element type");
        expect(">", "'>'");
        if (e == "f32") return TensorType(DType::kC64, {});
        error("element type complex<" + e + "> is not supported by vtrn", s);
      }
      error("expected a tensor type such as tensor<2x3xf32>, found '" + w + "'", s);
    }
    if (peek_char() != '<') error("expected '<' after 'tensor'");
    ++p_;
    TensorType t;
    std::int64_t total = 1;
    while (true) {
      if (peek_char() == '?')
        error("dynamic dimensions ('?') are not supported by vtrn; shapes must be static");
      if (!std::isdigit(static_cast<unsigned char>(peek_char()))) break;
      const std::size_t ds = p_;
      std::int64_t d = 0;
      while (std::isdigit(static_cast<unsigned char>(peek_char()))) {
        d = d * 10 + (t_[p_++] - '0');
        if (d > kMaxElements) error("dimension too large", ds);
      }
      total *= std::max<std::int64_t>(d, 1);
      if (total > kMaxElements) error("tensor has too many elements (more than 2^40)", ds);
      t.dims.push_back(d);
      if (peek_char() != 'x') error("expected 'x' after a dimension size in a tensor type");
      ++p_;
      if (t.dims.size() > 64) error("tensor rank above 64 is not supported");
    }
    const std::size_t es = p_;
    std::string e;
    while (p_ < t_.size() && std::isalnum(static_cast<unsigned char>(t_[p_]))) e += t_[p_++];
    if (e == "complex") {
      expect("<", "'<' after complex");
      const std::string inner = ident("an element type");
      expect(">", "'>'");
      if (inner != "f32") error("element type complex<" + inner + "> is not supported by vtrn", es);
      t.dtype = DType::kC64;
    } else {
      const auto d = dtype_from_name(e);
      if (!d) {
        if (e.empty()) {
          if (at_end()) error("unexpected end of input inside a tensor type");
          error("expected an element type in the tensor type, found '" + snippet() + "'");
        }
        error("element type '" + e +
                  "' is not supported by vtrn (supported: i1, i8, i16, i32, i64, ui8, ui16, ui32, "
                  "ui64, f16, bf16, f32, f64, complex<f32>)",
              es);
      }
      t.dtype = *d;
    }
    if (accept(",")) error("tensor encodings are not supported by vtrn");
    expect(">", "'>' to close the tensor type");
    return t;
  }

  std::vector<TensorType> type_list_in_parens() {
    expect("(", "'('");
    std::vector<TensorType> v;
    if (accept(")")) return v;
    do {
      v.push_back(tensor_type());
      if (peek("{")) parse_dict();  // result attributes
    } while (accept(","));
    expect(")", "')' to close the type list");
    return v;
  }

  // `: T`, `: T, T`, or `: (T, ...) -> T | (T, ...)` after an op.
  void op_types(RawOp& r) {
    expect(":", "':' and the op's types");
    r.have_types = true;
    if (peek("(")) {
      r.functional = true;
      r.in_types = type_list_in_parens();
      expect("->", "'->' in the function type");
      if (peek("("))
        r.out_types = type_list_in_parens();
      else
        r.out_types.push_back(tensor_type());
      return;
    }
    do {
      r.in_types.push_back(tensor_type());
    } while (accept(","));
  }

  //===--------------------------------------------------------------------===//
  // Attributes
  //===--------------------------------------------------------------------===//

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.error("nesting too deep");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  std::vector<std::pair<std::string, Attr>> parse_dict() {
    DepthGuard g(*this);
    expect("{", "'{'");
    std::vector<std::pair<std::string, Attr>> out;
    if (accept("}")) return out;
    do {
      ws();
      std::string key = peek_char() == '"' ? string_lit() : ident("an attribute name");
      Attr v;
      v.kind = Attr::kBool;
      v.i = 1;  // unit attribute
      if (accept("=")) v = parse_attr();
      out.emplace_back(std::move(key), std::move(v));
    } while (accept(","));
    expect("}", "'}' to close the attribute dictionary");
    return out;
  }

  bool scalar_type_word_ahead() {
    // After a number: is there `: i64` (a typed integer) rather than the op's `: tensor<...>`?
    const std::size_t save = p_;
    if (!accept(":")) return false;
    ws();
    const std::size_t s = p_;
    while (p_ < t_.size() && std::isalnum(static_cast<unsigned char>(t_[p_]))) ++p_;
    const std::string w(t_.substr(s, p_ - s));
    const bool yes = w == "index" || (dtype_from_name(w) && w != "tensor");
    if (!yes) p_ = save;
    return yes;
  }

  Attr number_attr() {
    ws();
    const std::size_t s = p_;
    if (peek_char() == '-' || peek_char() == '+') ++p_;
    bool is_float = false;
    if (peek_char() == '0' && (peek_at(1) == 'x' || peek_at(1) == 'X')) {
      p_ += 2;
      while (std::isxdigit(static_cast<unsigned char>(peek_char()))) ++p_;
    } else {
      while (p_ < t_.size()) {
        const char c = t_[p_];
        if (std::isdigit(static_cast<unsigned char>(c)))
          ++p_;
        else if (c == '.' || c == 'e' || c == 'E') {
          is_float = true;
          ++p_;
          if ((c == 'e' || c == 'E') && (peek_char() == '-' || peek_char() == '+')) ++p_;
        } else
          break;
      }
    }
    const std::string tok(t_.substr(s, p_ - s));
    Attr a;
    char* end = nullptr;
    errno = 0;
    if (is_float) {
      a.kind = Attr::kFloat;
      a.f = std::strtod(tok.c_str(), &end);
    } else {
      a.kind = Attr::kInt;
      a.i = std::strtoll(tok.c_str(), &end, 0);
      a.f = static_cast<double>(a.i);
    }
    if (tok.empty() || end == tok.c_str() || *end != '\0' || errno == ERANGE)
      error("invalid number '" + tok + "'", s);
    scalar_type_word_ahead();
    return a;
  }

  std::shared_ptr<DenseBody> dense_body() {
    // After `dense<`.
    auto body = std::make_shared<DenseBody>();
    body->pos = p_;
    ws();
    if (peek_char() == '>') {
      ++p_;
      return body;
    }
    if (peek_char() == '"') {
      const std::size_t s = p_;
      std::string h = string_lit();
      if (h.size() < 2 || h[0] != '0' || (h[1] != 'x' && h[1] != 'X'))
        error("expected a hex string \"0x...\" in dense<...>", s);
      body->hex = true;
      body->hex_digits = h.substr(2);
      expect(">", "'>' to close dense<...>");
      return body;
    }
    dense_elems(*body, 0);
    expect(">", "'>' to close dense<...>");
    return body;
  }

  void dense_elems(DenseBody& body, int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    ws();
    if (peek_char() == '[') {
      body.bracketed = true;
      ++p_;
      if (accept("]")) return;
      do {
        dense_elems(body, depth + 1);
      } while (accept(","));
      expect("]", "']' in the dense literal");
      return;
    }
    const std::size_t s = p_;
    if (peek_char() == '(') {
      skip_balanced_from_here('(');
    } else {
      while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '.' ||
                                t_[p_] == '-' || t_[p_] == '+'))
        ++p_;
    }
    if (s == p_) {
      if (at_end()) error("unexpected end of input inside dense<...>");
      error("expected a number in dense<...>, found '" + snippet() + "'");
    }
    body.elems.emplace_back(t_.substr(s, p_ - s));
  }

  Attr parse_attr() {
    DepthGuard g(*this);
    ws();
    const char c = peek_char();
    const std::size_t s = p_;
    Attr a;
    if (c == '"') {
      a.kind = Attr::kString;
      a.s = string_lit();
      scalar_type_word_ahead();
      return a;
    }
    if (c == '[') {
      ++p_;
      a.kind = Attr::kList;
      if (accept("]")) return a;
      do {
        a.items.push_back(parse_attr());
      } while (accept(","));
      expect("]", "']' to close the list");
      return a;
    }
    if (c == '{') {
      a.kind = Attr::kDict;
      for (auto& [k, v] : parse_dict()) {
        a.field_names.push_back(k);
        a.field_values.push_back(std::move(v));
      }
      return a;
    }
    if (c == '@') {
      a.kind = Attr::kString;
      a.s = symbol();
      return a;
    }
    if (c == '#') {
      ++p_;
      const std::string name = ident("an attribute name after '#'");
      if (peek_char() != '<') {
        a.kind = Attr::kOther;
        return a;
      }
      ++p_;
      // #dialect.kind<key = value, ...> or #dialect<kind VALUE>
      const std::size_t inner = p_;
      ws();
      if (ident_start(peek_char())) {
        const std::string w = ident();
        if (peek("=")) {
          p_ = inner;
          a.kind = Attr::kStruct;
          a.s = name;
          ws();
          if (peek_char() != '>') {
            do {
              const std::string key = ident("a field name");
              expect("=", "'=' after field '" + key + "'");
              a.field_values.push_back(parse_attr());
              a.field_names.push_back(key);
            } while (accept(","));
          }
          expect(">", "'>' to close #" + name + "<...>");
          return a;
        }
        a.kind = Attr::kEnum;
        a.s = w;
        ws();
        while (ident_start(peek_char())) a.s = ident();
        if (accept(">")) return a;
      }
      p_ = inner - 1;
      skip_balanced_from_here('<');
      a.kind = Attr::kOther;
      return a;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return number_attr();
    if (c == '(') {
      // A function type `(T, ...) -> T | (T, ...)`, or something vtrn skips.
      const std::size_t save = p_;
      try {
        type_list_in_parens();
        if (accept("->")) {
          if (peek("("))
            a.fn_results = type_list_in_parens();
          else
            a.fn_results.push_back(tensor_type());
        }
      } catch (const ParseError&) {
        p_ = save;
        skip_balanced_from_here('(');
        if (accept("->")) {
          if (peek("("))
            skip_balanced_from_here('(');
          else
            parse_attr();
        }
      }
      a.kind = Attr::kOther;
      return a;
    }
    if (!ident_start(c)) {
      if (at_end()) error("unexpected end of input, expected an attribute value");
      error("expected an attribute value, found '" + snippet() + "'");
    }
    const std::string w = ident();
    if (w == "true" || w == "false") {
      a.kind = Attr::kBool;
      a.i = w == "true";
      scalar_type_word_ahead();
      return a;
    }
    if (w == "unit") {
      a.kind = Attr::kBool;
      a.i = 1;
      return a;
    }
    if (w == "dense" && peek_char() == '<') {
      ++p_;
      a.kind = Attr::kDense;
      a.dense = dense_body();
      if (peek(":")) {
        const std::size_t save = p_;
        accept(":");
        ws();
        if (peek_word("tensor"))
          a.dense_type = tensor_type();
        else
          p_ = save;
      }
      return a;
    }
    if (w == "array" && peek_char() == '<') {
      ++p_;
      a.kind = Attr::kList;
      const std::string et = ident("an element type");
      if (accept(":")) {
        do {
          ws();
          if (ident_start(peek_char())) {
            Attr b;
            b.kind = Attr::kInt;
            b.i = ident() == "true";
            a.items.push_back(b);
          } else {
            a.items.push_back(number_attr());
          }
        } while (accept(","));
      }
      expect(">", "'>' to close array<...>");
      return a;
    }
    if (w == "loc" && peek_char() == '(') {
      skip_balanced_from_here('(');
      a.kind = Attr::kOther;
      return a;
    }
    if (peek_char() == '<') {
      p_ = s + w.size();
      skip_balanced_from_here('<');
      a.kind = Attr::kOther;
      return a;
    }
    a.kind = Attr::kEnum;
    a.s = w;
    return a;
  }

  std::vector<std::int64_t> ints_of(const Attr& a, const std::string& what, std::size_t pos) {
    std::vector<std::int64_t> v;
    if (a.kind == Attr::kList) {
      for (const Attr& x : a.items) {
        if (x.kind != Attr::kInt) error("attribute " + what + " must be a list of integers", pos);
        v.push_back(x.i);
      }
      return v;
    }
    if (a.kind == Attr::kInt) return {a.i};
    if (a.kind == Attr::kDense) {
      for (const std::string& e : a.dense->elems) {
        char* end = nullptr;
        v.push_back(std::strtoll(e.c_str(), &end, 0));
        if (*end) error("attribute " + what + " must hold integers", pos);
      }
      if (a.dense->hex) error("attribute " + what + ": hex dense form is not supported here", pos);
      if (v.size() == 1 && !a.dense->bracketed && a.dense_type && a.dense_type->num_elements() != 1)
        v.assign(static_cast<std::size_t>(std::min<std::int64_t>(a.dense_type->num_elements(), 64)),
                 v[0]);
      return v;
    }
    error("attribute " + what + " must be a list of integers", pos);
  }

  //===--------------------------------------------------------------------===//
  // Literals
  //===--------------------------------------------------------------------===//

  void store_elem(const std::string& e, DType d, std::uint8_t* dst, std::size_t pos) {
    auto bad = [&]() {
      error("invalid " + std::string(dtype_name(d)) + " element '" + e + "' in dense<...>", pos);
    };
    if (d == DType::kPred) {
      if (e == "true" || e == "1")
        *dst = 1;
      else if (e == "false" || e == "0")
        *dst = 0;
      else
        bad();
      return;
    }
    if (d == DType::kC64) {
      if (e.size() < 5 || e.front() != '(' || e.back() != ')') bad();
      const std::string inner = e.substr(1, e.size() - 2);
      const std::size_t comma = inner.find(',');
      if (comma == kNpos) bad();
      float c[2];
      const std::string parts[2] = {inner.substr(0, comma), inner.substr(comma + 1)};
      for (int k = 0; k < 2; ++k) {
        std::uint8_t tmp[4];
        store_elem(trim(parts[k]), DType::kF32, tmp, pos);
        std::memcpy(&c[k], tmp, 4);
      }
      std::memcpy(dst, c, 8);
      return;
    }
    const bool hex = e.size() > 2 && e[0] == '0' && (e[1] == 'x' || e[1] == 'X');
    char* end = nullptr;
    errno = 0;
    if (is_float(d)) {
      if (hex) {
        const unsigned long long bits = std::strtoull(e.c_str(), &end, 16);
        if (*end || errno) bad();
        std::memcpy(dst, &bits, static_cast<std::size_t>(dtype_size(d)));
        return;
      }
      double v;
      if (e == "inf" || e == "+inf")
        v = INFINITY;
      else if (e == "-inf")
        v = -INFINITY;
      else if (e == "nan")
        v = NAN;
      else {
        v = std::strtod(e.c_str(), &end);
        if (e.empty() || *end) bad();
      }
      store_double(d, v, dst);
      return;
    }
    if (e == "true" || e == "false") {
      store_double(d, e == "true" ? 1 : 0, dst);
      return;
    }
    if (d == DType::kU64 && e[0] != '-') {
      const unsigned long long u = std::strtoull(e.c_str(), &end, 0);
      if (e.empty() || *end || errno) bad();
      std::memcpy(dst, &u, 8);
      return;
    }
    const long long v = std::strtoll(e.c_str(), &end, 0);
    if (e.empty() || *end || errno) bad();
    const int es = dtype_size(d);
    std::memcpy(dst, &v, static_cast<std::size_t>(es));  // little-endian truncation wraps
  }

  static std::string trim(const std::string& s) {
    std::size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
  }

  Literal make_literal(const DenseBody& body, const TensorType& type) {
    Literal lit;
    lit.type = type;
    const std::int64_t n = type.num_elements();
    const int es = dtype_size(type.dtype);
    if (body.hex) {
      if (body.hex_digits.size() % 2)
        error("hex dense literal has an odd number of digits", body.pos);
      std::vector<std::uint8_t> bytes;
      for (std::size_t i = 0; i < body.hex_digits.size(); i += 2) {
        const char h[3] = {body.hex_digits[i], body.hex_digits[i + 1], 0};
        char* end = nullptr;
        bytes.push_back(static_cast<std::uint8_t>(std::strtoul(h, &end, 16)));
        if (*end) error("invalid hex digit in dense literal", body.pos);
      }
      if (static_cast<std::int64_t>(bytes.size()) == es && n != 1) {
        lit.splat = true;
      } else if (static_cast<std::int64_t>(bytes.size()) != n * es) {
        error("hex dense literal has " + std::to_string(bytes.size()) + " bytes, expected " +
                  std::to_string(n * es) + " for " + type.str(),
              body.pos);
      }
      lit.data = std::move(bytes);
      return lit;
    }
    const std::int64_t count = static_cast<std::int64_t>(body.elems.size());
    if (count == 1 && !body.bracketed && n != 1) {
      lit.splat = true;
      lit.data.resize(static_cast<std::size_t>(es));
      store_elem(body.elems[0], type.dtype, lit.data.data(), body.pos);
      return lit;
    }
    if (count != n)
      error("dense literal has " + std::to_string(count) + " elements, expected " +
                std::to_string(n) + " for " + type.str(),
            body.pos);
    lit.data.resize(static_cast<std::size_t>(n * es));
    for (std::int64_t i = 0; i < n; ++i)
      store_elem(body.elems[i], type.dtype, lit.data.data() + i * es, body.pos);
    return lit;
  }

  //===--------------------------------------------------------------------===//
  // Functions and blocks
  //===--------------------------------------------------------------------===//

  // Parses `func.func [vis] @name(args) [-> results] [attributes {...}]` up to the body's '{'.
  // With |block|, adds the arguments to it and their names to |scope|.
  std::string function_header(Block* block, Scope* scope,
                              std::vector<TensorType>* results = nullptr) {
    const std::size_t s = p_;
    ws();
    if (!(accept_word("func.func") || accept_word("func"))) {
      if (at_end()) error("unexpected end of input, expected 'func.func'");
      const std::size_t w = p_;
      std::string word = ident_start(peek_char()) ? ident() : snippet();
      error("expected 'func.func', found '" + word + "'", w);
    }
    (void)s;
    accept_word("public") || accept_word("private") || accept_word("nested");
    const std::string name = symbol();
    expect("(", "'(' to open the argument list of @" + name);
    if (!accept(")")) {
      do {
        ws();
        const std::size_t vp = p_;
        const std::string v = value_def_name();
        expect(":", "':' and the type of argument %" + v);
        TensorType t = tensor_type();
        if (peek("{")) parse_dict();
        skip_loc();
        if (block) {
          const int id = block->add_value(t);
          block->args.push_back(id);
          if (!scope->names.emplace(v, id).second)
            error("argument %" + v + " is defined twice", vp);
        }
      } while (accept(","));
      expect(")", "')' to close the argument list");
    }
    if (accept("->")) {
      std::vector<TensorType> res;
      if (peek("("))
        res = type_list_in_parens();
      else
        res.push_back(tensor_type());
      if (results) *results = res;
    }
    if (accept_word("attributes")) parse_dict();
    skip_loc();
    ws();
    if (peek_char() != '{') error("expected '{' to open the body of @" + name);
    return name;
  }

  // "func.func"() <{function_type = (T) -> T, sym_name = "main", ...}> ({ ^bb0(...): ... }) : () ->
  // () Parses up to the region's '{'.
  std::string generic_function_header(Block*, Scope*, std::vector<TensorType>* results = nullptr) {
    expect("\"func.func\"", "\"func.func\"");
    expect("(", "'('");
    expect(")", "')'");
    std::string name;
    expect("<", "'<{' and the function's properties");
    for (const auto& [k, v] : parse_dict()) {
      if (k == "sym_name") name = v.s;
      if (k == "function_type" && results) *results = v.fn_results;
    }
    expect(">", "'>'");
    if (name.empty()) error("\"func.func\" without sym_name");
    expect("(", "'(' and the function's region");
    ws();
    if (peek_char() != '{') error("expected '{' to open the function's region");
    return name;
  }

  void generic_function_trailer() {
    expect(")", "')' after the function's region");
    if (peek("{")) parse_dict();
    expect(":", "':'");
    type_list_in_parens();
    expect("->", "'->'");
    type_list_in_parens();
    skip_loc();
  }

  void region_args(Block& block, Scope& scope) {
    ws();
    if (peek_char() != '^') return;
    ++p_;
    ident("a block label");
    if (accept("(") && !accept(")")) {
      do {
        ws();
        const std::size_t vp = p_;
        const std::string v = value_def_name();
        expect(":", "':' and the type of block argument %" + v);
        const int id = block.add_value(tensor_type());
        skip_loc();
        block.args.push_back(id);
        if (!scope.names.emplace(v, id).second)
          error("block argument %" + v + " is defined twice", vp);
      } while (accept(","));
      expect(")", "')'");
    }
    expect(":", "':' after the block label");
  }

  std::string value_def_name() {
    ws();
    if (at_end()) error("unexpected end of input, expected a value name such as %0");
    if (peek_char() != '%') error("expected a value name such as %0");
    ++p_;
    const std::size_t s = p_;
    while (p_ < t_.size() && (ident_char(t_[p_]) || t_[p_] == '-')) ++p_;
    if (s == p_) error("expected a value name after '%'");
    return std::string(t_.substr(s, p_ - s));
  }

  int value_use(const Scope& scope, std::string* spelled = nullptr) {
    ws();
    const std::size_t s = p_;
    std::string n = value_def_name();
    if (peek_char() == '#') {
      ++p_;
      n += "#" + std::to_string(integer());
    }
    if (spelled) *spelled = "%" + n;
    auto it = scope.names.find(n);
    if (it != scope.names.end()) return it->second;
    for (const Scope* p = scope.parent; p; p = p->parent)
      if (p->names.count(n))
        error("%" + n +
                  " is defined outside this region; vtrn needs regions that use only their own "
                  "arguments",
              s);
    error("use of undefined value %" + n, s);
  }

  std::shared_ptr<Block> function(const std::string& name) {
    auto cached = parsed_.find(name);
    if (cached != parsed_.end()) return cached->second;
    auto it = funcs_.find(name);
    if (it == funcs_.end()) error("call to unknown function @" + name);
    if (in_progress_.count(name)) error("recursive call to @" + name + " is not supported");
    in_progress_.insert(name);
    const std::size_t save = p_;
    p_ = it->second;
    auto block = std::make_shared<Block>();
    Scope scope;
    scope.block = block.get();
    std::vector<TensorType> declared;
    const bool generic = peek("\"func.func\"");
    if (generic) {
      generic_function_header(block.get(), &scope, &declared);
      expect("{", "'{'");
      region_args(*block, scope);
      body(scope, /*region=*/false);
      generic_function_trailer();
    } else {
      function_header(block.get(), &scope, &declared);
      expect("{", "'{'");
      body(scope, /*region=*/false);
    }
    if (declared.size() != block->results.size())
      error("@" + name + " returns " + std::to_string(block->results.size()) +
                " values, but its signature has " + std::to_string(declared.size()),
            it->second);
    for (std::size_t i = 0; i < declared.size(); ++i)
      if (declared[i] != block->type(block->results[i]))
        error("@" + name + " returns " + block->type(block->results[i]).str() + " as result " +
                  std::to_string(i) + ", but its signature says " + declared[i].str(),
              it->second);
    p_ = save;
    in_progress_.erase(name);
    parsed_[name] = block;
    return block;
  }

  // Parses statements until the terminator and the closing '}'.
  void body(Scope& scope, bool region) {
    DepthGuard g(*this);
    Block& b = *scope.block;
    while (true) {
      ws();
      if (at_end())
        error(region ? "unexpected end of input inside a region"
                     : "unexpected end of input inside a function body");
      if (peek_char() == '}')
        error(region ? "region ends without 'stablehlo.return'"
                     : "function body ends without 'return'");
      // Result names.
      std::vector<std::pair<std::string, int>> defs;
      const std::size_t stmt = p_;
      if (peek_char() == '%') {
        do {
          const std::string n = value_def_name();
          int count = 1;
          if (peek_char() == ':') {
            ++p_;
            count = static_cast<int>(integer());
            if (count < 1 || count > 1024) error("invalid result count", stmt);
          }
          defs.emplace_back(n, count);
        } while (accept(","));
        expect("=", "'=' after the result names");
      }
      ws();
      const std::size_t op_pos = p_;
      std::string name;
      const bool generic = peek_char() == '"';
      if (generic)
        name = string_lit();
      else
        name = ident("an op name");

      if (name == "return" || name == "func.return" || name == "stablehlo.return") {
        if (!defs.empty()) error("'" + name + "' has no results", stmt);
        std::vector<int> vals;
        if (generic) {
          expect("(", "'('");
          if (!accept(")")) {
            do vals.push_back(value_use(scope));
            while (accept(","));
            expect(")", "')'");
          }
          if (peek("{")) parse_dict();
          expect(":", "':'");
          type_list_in_parens();
          expect("->", "'->'");
          type_list_in_parens();
        } else {
          ws();
          if (peek_char() == '%') {
            do vals.push_back(value_use(scope));
            while (accept(","));
            expect(":", "':' and the returned types");
            std::vector<TensorType> ts;
            do ts.push_back(tensor_type());
            while (accept(","));
            if (ts.size() != vals.size())
              error("'" + name + "' lists " + std::to_string(ts.size()) + " types for " +
                        std::to_string(vals.size()) + " values",
                    op_pos);
            for (std::size_t i = 0; i < ts.size(); ++i)
              if (ts[i] != b.type(vals[i]))
                error("returned value " + std::to_string(i) + " has type " + b.type(vals[i]).str() +
                          ", but '" + name + "' says " + ts[i].str(),
                      op_pos);
          }
        }
        skip_loc();
        b.results = vals;
        expect("}", "'}' after '" + name + "'");
        return;
      }

      std::vector<int> results;
      if (name == "call" || name == "func.call") {
        results = inline_call(scope, generic);
      } else {
        RawOp r;
        r.name = name;
        r.pos = op_pos;
        const std::string_view prefix = "stablehlo.";
        if (name.rfind(prefix, 0) != 0)
          error("op '" + name + "' is not supported by vtrn (only stablehlo ops and func.call)",
                op_pos);
        const std::string short_name = name.substr(prefix.size());
        if (short_name == "dot") {
          r.is_dot = true;
          r.kind = OpKind::kDotGeneral;
        } else if (!op_from_name(short_name, &r.kind) || r.kind == OpKind::kReturn) {
          error("op '" + name + "' is not supported by vtrn", op_pos);
        }
        if (generic)
          generic_op(r, scope);
        else
          pretty_op(r, scope);
        results = build(r, b);
      }
      skip_loc();
      // Bind names.
      int total = 0;
      for (const auto& d : defs) total += d.second;
      if (total != static_cast<int>(results.size()))
        error("the op defines " + std::to_string(results.size()) + " result(s), but " +
                  std::to_string(total) + " name(s) are given",
              stmt);
      std::size_t k = 0;
      for (const auto& [n, count] : defs) {
        for (int i = 0; i < count; ++i) {
          const std::string key = count == 1 ? n : n + "#" + std::to_string(i);
          if (!scope.names.emplace(key, results[k++]).second)
            error("value %" + key + " is defined twice", stmt);
        }
      }
    }
  }

  // `call @f(%a, %b) : ...` or, in generic form, `"func.call"(%a, %b) <{callee = @f}> : ...`
  // (older MLIR puts the callee in the `{...}` dictionary instead).
  std::vector<int> inline_call(Scope& scope, bool generic) {
    const std::size_t pos = p_;
    std::string callee;
    if (!generic) callee = symbol();
    std::vector<int> args;
    expect("(", generic ? "'(' and the operands of func.call" : "'(' after the callee");
    if (!accept(")")) {
      do args.push_back(value_use(scope));
      while (accept(","));
      expect(")", "')'");
    }
    auto take_callee = [&](const std::vector<std::pair<std::string, Attr>>& dict) {
      for (const auto& [k, v] : dict)
        if (k == "callee") callee = v.s;
    };
    if (generic && accept("<")) {
      take_callee(parse_dict());
      expect(">", "'>' after the properties");
    }
    if (peek("{")) take_callee(parse_dict());
    if (callee.empty()) error("func.call without a callee: expected <{callee = @name}>", pos);
    RawOp r;
    op_types(r);
    std::shared_ptr<Block> f = function(callee);
    Block& b = *scope.block;
    if (f->args.size() != args.size())
      error("@" + callee + " takes " + std::to_string(f->args.size()) + " arguments, " +
                std::to_string(args.size()) + " given",
            pos);
    std::vector<int> map(f->types.size(), -1);
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (b.type(args[i]) != f->type(f->args[i]))
        error("argument " + std::to_string(i) + " of @" + callee + " has type " +
                  b.type(args[i]).str() + ", expected " + f->type(f->args[i]).str(),
              pos);
      map[f->args[i]] = args[i];
    }
    for (const Op& op : f->ops) {
      Op c = op;
      for (int& v : c.operands) v = map[v];
      for (int& v : c.results) {
        const int nv = b.add_value(f->type(v));
        map[v] = nv;
        v = nv;
      }
      b.ops.push_back(std::move(c));
    }
    std::vector<int> out;
    for (int v : f->results) out.push_back(map[v]);
    return out;
  }

  void generic_op(RawOp& r, Scope& scope) {
    expect("(", "'(' and the operands of '" + r.name + "'");
    if (!accept(")")) {
      do {
        std::string sp;
        r.operands.push_back(value_use(scope, &sp));
        r.operand_names.push_back(sp);
      } while (accept(","));
      expect(")", "')' to close the operands");
    }
    if (accept("<")) {
      auto props = parse_dict();
      r.attrs.insert(r.attrs.end(), props.begin(), props.end());
      expect(">", "'>' after the properties");
    }
    if (peek("(")) {
      expect("(", "'('");
      do r.regions.push_back(region(scope));
      while (accept(","));
      expect(")", "')' after the regions");
    }
    if (peek("{")) {
      auto d = parse_dict();
      r.attrs.insert(r.attrs.end(), d.begin(), d.end());
    }
    op_types(r);
  }

  std::shared_ptr<Block> region(const Scope& parent) {
    DepthGuard g(*this);
    auto block = std::make_shared<Block>();
    Scope scope;
    scope.block = block.get();
    scope.parent = &parent;
    expect("{", "'{' to open a region");
    region_args(*block, scope);
    body(scope, true);
    return block;
  }

  void pretty_op(RawOp& r, Scope& scope) {
    if (r.kind == OpKind::kReduce) {
      pretty_reduce(r, scope);
      return;
    }
    if (r.kind == OpKind::kCustomCall) {
      Attr t;
      t.kind = Attr::kString;
      t.s = symbol();
      r.attrs.emplace_back("call_target_name", t);
      expect("(", "'(' and the operands of the custom_call");
      if (!accept(")")) {
        do r.operands.push_back(value_use(scope));
        while (accept(","));
        expect(")", "')'");
      }
      if (peek("{")) {
        auto d = parse_dict();
        r.attrs.insert(r.attrs.end(), d.begin(), d.end());
      }
      op_types(r);
      return;
    }
    if (r.kind == OpKind::kConstant) {
      if (peek("{")) {
        auto d = parse_dict();
        r.attrs.insert(r.attrs.end(), d.begin(), d.end());
      }
      ws();
      const std::size_t s = p_;
      Attr v = parse_attr();
      if (v.kind != Attr::kDense) error("expected dense<...> after stablehlo.constant", s);
      if (!v.dense_type) error("expected ': tensor<...>' after the constant's value");
      r.attrs.emplace_back("value", v);
      r.have_types = true;
      r.out_types = {*v.dense_type};
      return;
    }
    // Items: operands, `key = value`, bare enum words, a slice spec `[a:b:c, ...]`.
    while (true) {
      ws();
      const char c = peek_char();
      if (c == '%') {
        std::string sp;
        r.operands.push_back(value_use(scope, &sp));
        r.operand_names.push_back(sp);
      } else if (c == '[' && r.kind == OpKind::kSlice) {
        ++p_;
        r.has_slice_spec = true;
        if (!accept("]")) {
          do {
            r.slice_start.push_back(integer());
            expect(":", "':' in the slice range");
            r.slice_limit.push_back(integer());
            r.slice_strides.push_back(accept(":") ? integer() : 1);
          } while (accept(","));
          expect("]", "']' to close the slice ranges");
        }
      } else if (ident_start(c)) {
        const std::size_t s = p_;
        const std::string w = ident();
        if (accept("=")) {
          if ((w == "batching_dims" || w == "contracting_dims") && peek("[")) {
            Attr lhs, rhs;
            lhs.kind = rhs.kind = Attr::kList;
            for (std::int64_t v : int_list()) lhs.items.push_back(int_attr(v));
            if (!accept_word("x"))
              error("expected 'x' between the lhs and rhs dimension lists of " + w);
            for (std::int64_t v : int_list()) rhs.items.push_back(int_attr(v));
            r.attrs.emplace_back(w + "_lhs", lhs);
            r.attrs.emplace_back(w + "_rhs", rhs);
          } else {
            r.attrs.emplace_back(w, parse_attr());
          }
        } else {
          (void)s;
          r.positional.push_back(w);
        }
      } else {
        break;
      }
      if (r.kind == OpKind::kSlice && peek("[")) continue;
      if (!accept(",")) break;
    }
    if (peek("{")) {
      auto d = parse_dict();
      r.attrs.insert(r.attrs.end(), d.begin(), d.end());
    }
    op_types(r);
  }

  static Attr int_attr(std::int64_t v) {
    Attr a;
    a.kind = Attr::kInt;
    a.i = v;
    return a;
  }

  void pretty_reduce(RawOp& r, Scope& scope) {
    // stablehlo.reduce(%x init: %c), (...) applies stablehlo.add across dimensions = [1] : types
    // stablehlo.reduce(%x init: %c) across dimensions = [1] : types reducer(%a: T, %b: T) {...}
    std::vector<int> inputs, inits;
    do {
      expect("(", "'(' and '%input init: %value' in stablehlo.reduce");
      inputs.push_back(value_use(scope));
      if (!accept_word("init")) error("expected 'init:' in stablehlo.reduce");
      expect(":", "':' after 'init'");
      inits.push_back(value_use(scope));
      expect(")", "')'");
    } while (accept(","));
    r.operands = inputs;
    r.operands.insert(r.operands.end(), inits.begin(), inits.end());
    std::string applies;
    if (accept_word("applies")) {
      ws();
      const std::size_t s = p_;
      applies = ident("the combiner op");
      OpKind k;
      const std::string pre = "stablehlo.";
      if (applies.rfind(pre, 0) != 0 || !op_from_name(applies.substr(pre.size()), &k))
        error("unknown combiner '" + applies + "'", s);
      switch (k) {
        case OpKind::kAdd:
          r.applies = ReduceKind::kAdd;
          break;
        case OpKind::kMultiply:
          r.applies = ReduceKind::kMul;
          break;
        case OpKind::kMaximum:
          r.applies = ReduceKind::kMax;
          break;
        case OpKind::kMinimum:
          r.applies = ReduceKind::kMin;
          break;
        case OpKind::kAnd:
          r.applies = ReduceKind::kAnd;
          break;
        case OpKind::kOr:
          r.applies = ReduceKind::kOr;
          break;
        default:
          error("combiner '" + applies +
                    "' is not supported by vtrn (add, multiply, maximum, minimum, and, or)",
                s);
      }
    }
    if (!accept_word("across")) error("expected 'across dimensions = [...]' in stablehlo.reduce");
    if (!accept_word("dimensions")) error("expected 'dimensions' after 'across'");
    expect("=", "'='");
    Attr d;
    d.kind = Attr::kList;
    for (std::int64_t v : int_list()) d.items.push_back(int_attr(v));
    r.attrs.emplace_back("dimensions", d);
    if (peek("{")) parse_dict();
    op_types(r);
    if (r.applies) return;
    if (!accept_word("reducer"))
      error("expected 'applies <op>' or 'reducer(...)' in stablehlo.reduce");
    const std::size_t n = inputs.size();
    auto block = std::make_shared<Block>();
    Scope rs;
    rs.block = block.get();
    rs.parent = &scope;
    std::vector<std::pair<std::string, TensorType>> lhs, rhs;
    for (std::size_t i = 0; i < n; ++i) {
      expect("(", "'(' and the reducer arguments");
      for (int k = 0; k < 2; ++k) {
        if (k) expect(",", "','");
        const std::string v = value_def_name();
        expect(":", "':'");
        TensorType t = tensor_type();
        skip_loc();
        (k == 0 ? lhs : rhs).emplace_back(v, t);
      }
      expect(")", "')'");
    }
    for (auto* side : {&lhs, &rhs})
      for (auto& [v, t] : *side) {
        const int id = block->add_value(t);
        block->args.push_back(id);
        if (!rs.names.emplace(v, id).second) error("reducer argument %" + v + " is defined twice");
      }
    expect("{", "'{' to open the reducer body");
    body(rs, true);
    r.regions.push_back(block);
  }

  //===--------------------------------------------------------------------===//
  // Op construction
  //===--------------------------------------------------------------------===//

  std::vector<std::int64_t> need_ints(const RawOp& r, std::initializer_list<const char*> names,
                                      bool required = true) {
    for (const char* n : names)
      if (const Attr* a = r.attr(n)) return ints_of(*a, n, r.pos);
    if (required) error(r.name + ": missing attribute '" + *names.begin() + "'", r.pos);
    return {};
  }

  std::int64_t need_int(const RawOp& r, std::initializer_list<const char*> names,
                        std::optional<std::int64_t> def = std::nullopt) {
    for (const char* n : names)
      if (const Attr* a = r.attr(n)) {
        if (a->kind != Attr::kInt)
          error(r.name + ": attribute '" + n + "' must be an integer", r.pos);
        return a->i;
      }
    if (def) return *def;
    error(r.name + ": missing attribute '" + *names.begin() + "'", r.pos);
  }

  bool get_bool(const RawOp& r, const char* n) {
    const Attr* a = r.attr(n);
    return a && (a->kind == Attr::kBool || a->kind == Attr::kInt) && a->i;
  }

  std::vector<std::int64_t> struct_ints(const RawOp& r, const Attr& st, const char* field) {
    if (const Attr* f = st.field(field)) return ints_of(*f, field, r.pos);
    return {};
  }

  std::vector<int> build(RawOp& r, Block& b) {
    Op op;
    op.kind = r.kind;
    op.operands = r.operands;
    op.regions = r.regions;
    std::vector<TensorType> in;
    for (int v : r.operands) in.push_back(b.type(v));
    const std::string& n = r.name;
    switch (r.kind) {
      case OpKind::kCompare: {
        std::string dir, type;
        if (const Attr* a = r.attr("comparison_direction")) dir = a->s;
        if (const Attr* a = r.attr("compare_type")) type = a->s;
        if (!r.positional.empty()) dir = r.positional[0];
        if (r.positional.size() > 1) type = r.positional[1];
        static const char* kDirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
        bool found = false;
        for (int i = 0; i < 6; ++i)
          if (dir == kDirs[i]) {
            op.comparison = static_cast<Comparison>(i);
            found = true;
          }
        if (!found)
          error(n + ": comparison direction '" + dir + "' is not one of EQ, NE, GE, GT, LE, LT",
                r.pos);
        static const char* kTypes[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
        if (!type.empty()) {
          found = false;
          for (int i = 0; i < 5; ++i)
            if (type == kTypes[i]) {
              op.compare_type = static_cast<CompareType>(i);
              found = true;
            }
          if (!found)
            error(n + ": compare type '" + type +
                      "' is not one of FLOAT, TOTALORDER, SIGNED, UNSIGNED",
                  r.pos);
        }
        break;
      }
      case OpKind::kConstant: {
        const Attr* v = r.attr("value");
        if (!v || v->kind != Attr::kDense) error(n + ": missing dense 'value' attribute", r.pos);
        TensorType t =
            v->dense_type ? *v->dense_type : (r.out_types.empty() ? TensorType() : r.out_types[0]);
        op.literal = make_literal(*v->dense, t);
        break;
      }
      case OpKind::kIota:
        op.dimension = need_int(r, {"iota_dimension", "dim"});
        break;
      case OpKind::kBroadcastInDim:
        op.dims = need_ints(r, {"broadcast_dimensions", "dims"});
        break;
      case OpKind::kTranspose:
        op.dims = need_ints(r, {"permutation", "dims"});
        break;
      case OpKind::kReverse:
      case OpKind::kReduce:
        op.dims = need_ints(r, {"dimensions", "dims"});
        break;
      case OpKind::kSlice:
        if (r.has_slice_spec) {
          op.start = r.slice_start;
          op.limit = r.slice_limit;
          op.strides = r.slice_strides;
        } else {
          op.start = need_ints(r, {"start_indices"});
          op.limit = need_ints(r, {"limit_indices"});
          op.strides = need_ints(r, {"strides"}, false);
          if (op.strides.empty()) op.strides.assign(op.start.size(), 1);
        }
        break;
      case OpKind::kDynamicSlice:
        op.dims = need_ints(r, {"slice_sizes", "sizes"});
        break;
      case OpKind::kConcatenate:
        op.dimension = need_int(r, {"dimension", "dim"});
        break;
      case OpKind::kPad:
        op.start = need_ints(r, {"edge_padding_low", "low"});
        op.limit = need_ints(r, {"edge_padding_high", "high"});
        op.strides = need_ints(r, {"interior_padding", "interior"});
        break;
      case OpKind::kDotGeneral:
        if (r.is_dot) {
          if (in.size() != 2 || in[0].rank() < 1 || in[1].rank() < 1)
            error(n + ": expected two operands of rank 1 or 2", r.pos);
          op.dot.lhs_contracting = {in[0].rank() - 1};
          op.dot.rhs_contracting = {0};
        } else if (const Attr* d = r.attr("dot_dimension_numbers")) {
          op.dot.lhs_batch = struct_ints(r, *d, "lhs_batching_dimensions");
          op.dot.rhs_batch = struct_ints(r, *d, "rhs_batching_dimensions");
          op.dot.lhs_contracting = struct_ints(r, *d, "lhs_contracting_dimensions");
          op.dot.rhs_contracting = struct_ints(r, *d, "rhs_contracting_dimensions");
        } else {
          op.dot.lhs_batch = need_ints(r, {"batching_dims_lhs"}, false);
          op.dot.rhs_batch = need_ints(r, {"batching_dims_rhs"}, false);
          op.dot.lhs_contracting = need_ints(r, {"contracting_dims_lhs"});
          op.dot.rhs_contracting = need_ints(r, {"contracting_dims_rhs"});
        }
        break;
      case OpKind::kGather: {
        const Attr* d = r.attr("dimension_numbers");
        if (!d || d->kind != Attr::kStruct)
          error(n + ": missing 'dimension_numbers = #stablehlo.gather<...>'", r.pos);
        if (d->field("operand_batching_dims") &&
            !struct_ints(r, *d, "operand_batching_dims").empty())
          error(n + ": operand_batching_dims are not supported by vtrn", r.pos);
        op.gather.offset_dims = struct_ints(r, *d, "offset_dims");
        op.gather.collapsed_slice_dims = struct_ints(r, *d, "collapsed_slice_dims");
        op.gather.start_index_map = struct_ints(r, *d, "start_index_map");
        const Attr* ivd = d->field("index_vector_dim");
        op.gather.index_vector_dim = ivd ? ivd->i : 0;
        op.dims = need_ints(r, {"slice_sizes"});
        op.flag = get_bool(r, "indices_are_sorted");
        break;
      }
      case OpKind::kScatter: {
        const Attr* d = r.attr("scatter_dimension_numbers");
        if (!d || d->kind != Attr::kStruct)
          error(n + ": missing 'scatter_dimension_numbers = #stablehlo.scatter<...>'", r.pos);
        if (d->field("input_batching_dims") && !struct_ints(r, *d, "input_batching_dims").empty())
          error(n + ": input_batching_dims are not supported by vtrn", r.pos);
        op.scatter.update_window_dims = struct_ints(r, *d, "update_window_dims");
        op.scatter.inserted_window_dims = struct_ints(r, *d, "inserted_window_dims");
        op.scatter.scatter_dims_to_operand_dims =
            struct_ints(r, *d, "scatter_dims_to_operand_dims");
        const Attr* ivd = d->field("index_vector_dim");
        op.scatter.index_vector_dim = ivd ? ivd->i : 0;
        op.flag = get_bool(r, "indices_are_sorted");
        op.flag2 = get_bool(r, "unique_indices");
        if (op.regions.size() == 1 && match_scatter_region(*op.regions[0]) == ScatterKind::kOther)
          error(n + ": the update region must return the update (replace) or add the two "
                    "arguments; other update functions are not supported by vtrn",
                r.pos);
        break;
      }
      case OpKind::kSort: {
        op.dimension = need_int(r, {"dimension"}, -1);
        if (op.dimension < 0 && !in.empty()) op.dimension += in[0].rank();
        op.flag = get_bool(r, "is_stable");
        break;
      }
      case OpKind::kRngBitGenerator: {
        const Attr* a = r.attr("rng_algorithm");
        if (!a) a = r.attr("algorithm");
        op.target = a ? a->s : "DEFAULT";
        if (op.target != "DEFAULT" && op.target != "THREE_FRY" && op.target != "PHILOX")
          error(n + ": rng algorithm '" + op.target + "' is not one of DEFAULT, THREE_FRY, PHILOX",
                r.pos);
        break;
      }
      case OpKind::kCustomCall: {
        const Attr* t = r.attr("call_target_name");
        if (!t || t->kind != Attr::kString) error(n + ": missing call_target_name", r.pos);
        op.target = t->s;
        if (const Attr* c = r.attr("backend_config"); c && c->kind == Attr::kString)
          op.backend_config = c->s;
        break;
      }
      default:
        break;
    }
    if (r.kind == OpKind::kReduce) {
      if (r.applies) {
        const std::size_t ninputs = in.size() / 2;
        if (ninputs != 1)
          error(n + ": 'applies' with several inputs is not supported by vtrn", r.pos);
        op.regions = {make_reduce_region(*r.applies, in[0].dtype)};
      }
      if (op.regions.size() == 1 && in.size() == 2 &&
          match_reduce_region(*op.regions[0]) == ReduceKind::kOther)
        error(n + ": the reducer must be one of add, multiply, maximum, minimum, and, or; other "
                  "reducers are not supported by vtrn",
              r.pos);
      if (in.size() != 2)
        error(n + ": reductions of several inputs at once are not supported by vtrn", r.pos);
    }
    if (r.kind == OpKind::kSort && op.regions.size() == 1) {
      int key;
      bool desc;
      if (!match_sort_region(*op.regions[0], &key, &desc))
        error(n + ": the comparator must be a single 'compare LT' or 'compare GT' of one operand's "
                  "two arguments; other comparators are not supported by vtrn",
              r.pos);
    }

    // Types after the colon.
    std::vector<TensorType> declared;
    const std::vector<TensorType>* decl = nullptr;
    if (r.functional) {
      if (r.in_types.size() != in.size())
        error(n + ": the type lists " + std::to_string(r.in_types.size()) +
                  " operand type(s) for " + std::to_string(in.size()) + " operand(s)",
              r.pos);
      for (std::size_t i = 0; i < in.size(); ++i)
        if (r.in_types[i] != in[i])
          error(n + ": operand " + std::to_string(i) +
                    (i < r.operand_names.size() ? " (" + r.operand_names[i] + ")" : "") +
                    " has type " + in[i].str() + ", but the op's type says " + r.in_types[i].str(),
                r.pos);
      declared = r.out_types;
      decl = &declared;
    } else if (r.kind == OpKind::kConstant) {
      declared = r.out_types;
      decl = &declared;
    } else if (r.have_types) {
      // Pretty short form: `: T` (operands and result), or `: tensor<i1>, T` for select.
      std::vector<TensorType> expect_in;
      if (r.kind == OpKind::kSelect && r.in_types.size() == 2) {
        expect_in = {r.in_types[0], r.in_types[1], r.in_types[1]};
      } else if (r.in_types.size() == 1) {
        expect_in.assign(in.size(), r.in_types[0]);
        if (in.empty() || r.kind == OpKind::kCompare) {
          // iota etc.: the type is the result's.
        }
      } else {
        error(n + ": expected ': T' or ': (operand types) -> result type'", r.pos);
      }
      if (in.empty()) {
        declared = {r.in_types[0]};
        decl = &declared;
      } else {
        for (std::size_t i = 0; i < in.size(); ++i)
          if (expect_in[i] != in[i] && !(r.kind == OpKind::kClamp && in[i].rank() == 0))
            error(n + ": operand " + std::to_string(i) +
                      (i < r.operand_names.size() ? " (" + r.operand_names[i] + ")" : "") +
                      " has type " + in[i].str() + ", but the op's type says " + expect_in[i].str(),
                  r.pos);
        if (r.kind != OpKind::kCompare && r.kind != OpKind::kSelect && r.kind != OpKind::kClamp) {
          declared = {expect_in.empty() ? r.in_types[0] : r.in_types.back()};
          decl = &declared;
        }
      }
    }
    std::vector<TensorType> out;
    try {
      out = infer_result_types(op, in, decl);
    } catch (const Error& e) {
      error(e.what(), r.pos);
    }
    if (decl) {
      if (decl->size() != out.size())
        error(n + ": the type lists " + std::to_string(decl->size()) + " result(s), expected " +
                  std::to_string(out.size()),
              r.pos);
      for (std::size_t i = 0; i < out.size(); ++i)
        if ((*decl)[i] != out[i])
          error(n + ": result " + std::to_string(i) + " has type " + (*decl)[i].str() +
                    ", expected " + out[i].str(),
                r.pos);
    }
    for (TensorType& t : out) op.results.push_back(b.add_value(t));
    std::vector<int> res = op.results;
    b.ops.push_back(std::move(op));
    return res;
  }

  std::string_view t_;
  std::size_t p_ = 0;
  int depth_ = 0;
  std::map<std::string, std::size_t> funcs_;
  std::vector<std::string> order_;
  std::map<std::string, std::shared_ptr<Block>> parsed_;
  std::set<std::string> in_progress_;
};

}  // namespace

Module parse_module(std::string_view text) { return Parser(text).parse(); }

}  // namespace vtrn::hlo
