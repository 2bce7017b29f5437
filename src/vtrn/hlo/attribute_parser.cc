#include "vtrn/hlo/attribute_parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/syntax.h"

namespace vtrn::hlo {
namespace {

constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

}  // namespace

void AttributeParser::skip_aliases() {
  for (;;) {
    if (skip_sdy_mesh()) continue;
    if (!peek("#")) return;
    ++p_;
    ident("an alias name");
    expect("=", "'=' in an attribute alias");
    parse_attr();
  }
}

TensorType AttributeParser::tensor_type() {
  ws();
  const std::size_t s = p_;
  if (peek_char() == '!') error("type '" + snippet() + "' is not supported by vtrn (tensors only)");
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
      if (d > kMaxElements) error("dimension too large: more than 2^40 (1099511627776)", ds);
    }
    // Checked before multiplying: total and d are each at most 2^40, so their product could
    // wrap int64 (2^40 x 2^24 is 2^64, which wraps to 0) and slip under the limit.
    const std::int64_t factor = std::max<std::int64_t>(d, 1);
    if (total > kMaxElements / factor)
      error(
          "tensor has too many elements: the dimensions so far multiply to more than 2^40 "
          "(1099511627776), the most vtrn supports",
          ds);
    total *= factor;
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

std::vector<TensorType> AttributeParser::type_list_in_parens() {
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

AttrDict AttributeParser::parse_dict() {
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

bool AttributeParser::scalar_type_word_ahead() {
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

Attr AttributeParser::number_attr() {
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

std::shared_ptr<DenseBody> AttributeParser::dense_body() {
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

void AttributeParser::dense_elems(DenseBody& body, int depth) {
  if (depth > kMaxParseDepth) error("nesting too deep");
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

Attr AttributeParser::parse_attr() {
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
    if (name == syntax::kConvDimensionNumbersAttr) {
      // Its own syntax ([b, f, 0]x[o, i, 0]->[b, f, 0]); parse_conv_dimension_numbers reads it.
      p_ = inner - 1;
      skip_balanced_from_here('<');
      a.kind = Attr::kConvDims;
      a.s = std::string(t_.substr(inner, p_ - 1 - inner));
      return a;
    }
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

std::vector<std::int64_t> AttributeParser::ints_of(const Attr& a, const std::string& what,
                                                   std::size_t pos) const {
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

void AttributeParser::store_elem(const std::string& e, DType d, std::uint8_t* dst,
                                 std::size_t pos) const {
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

Literal AttributeParser::make_literal(const DenseBody& body, const TensorType& type) const {
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

// Shardy's `sdy.mesh @m = <["x"=1]> {...}` (or its generic form) at module level: a device
// mesh, which a single-device program does not need. Returns whether one was skipped.
bool AttributeParser::skip_sdy_mesh() {
  if (accept_word("sdy.mesh")) {
    symbol();
    expect("=", "'=' after the mesh name");
    skip_balanced_from_here('<');
  } else if (accept("\"sdy.mesh\"")) {
    skip_balanced_from_here('(');
    if (peek("<")) skip_balanced_from_here('<');
    if (peek("{")) parse_dict();
    expect(":", "':'");
    type_list_in_parens();
    expect("->", "'->'");
    type_list_in_parens();
  } else {
    return false;
  }
  if (peek("{")) parse_dict();
  skip_loc();
  return true;
}

int arg_donation(const AttrDict& attrs) {
  int d = Block::kNotDonated;
  for (const auto& [k, v] : attrs) {
    if (k == "tf.aliasing_output" && v.kind == Attr::kInt && v.i >= 0 && v.i < (1 << 30))
      return static_cast<int>(v.i);
    if (k == "jax.buffer_donor" && v.kind == Attr::kBool && v.i) d = Block::kAnyResult;
  }
  return d;
}

std::vector<int> arg_donations(const Attr& arg_attrs) {
  std::vector<int> d;
  bool any = false;
  for (const Attr& a : arg_attrs.items) {
    AttrDict attrs;
    for (std::size_t i = 0; i < a.field_names.size(); ++i)
      attrs.emplace_back(a.field_names[i], a.field_values[i]);
    d.push_back(arg_donation(attrs));
    any = any || d.back() != Block::kNotDonated;
  }
  return any ? d : std::vector<int>{};
}

void set_last_arg_donation(Block& block, int donation) {
  if (donation == Block::kNotDonated && block.donation.empty()) return;
  block.donation.resize(block.args.size(), Block::kNotDonated);
  block.donation.back() = donation;
}

}  // namespace vtrn::hlo
