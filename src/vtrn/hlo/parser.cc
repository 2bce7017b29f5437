#include "vtrn/hlo/parser.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vtrn/hlo/attribute_parser.h"
#include "vtrn/hlo/chlo.h"
#include "vtrn/hlo/parsed_op.h"
#include "vtrn/hlo/syntax.h"
#include "vtrn/hlo/verify.h"

namespace vtrn::hlo {
namespace {

// The values a block's text may name: its own, and (to report the mistake) its parents'.
struct Scope {
  Block* block = nullptr;
  std::map<std::string, int> names;
  const Scope* parent = nullptr;
};

// Modules, functions, blocks, regions and the statements in them; calls are inlined.
class Parser : public AttributeParser {
 public:
  using AttributeParser::AttributeParser;

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
  // `: T`, `: T, T`, or `: (T, ...) -> T | (T, ...)` after an op.
  void op_types(ParsedOp& r) {
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
        int donation = Block::kNotDonated;
        if (peek("{")) donation = arg_donation(parse_dict());
        skip_loc();
        if (block) {
          const int id = block->add_value(t);
          block->args.push_back(id);
          set_last_arg_donation(*block, donation);
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
  std::string generic_function_header(Block* block, Scope*,
                                      std::vector<TensorType>* results = nullptr) {
    expect("\"func.func\"", "\"func.func\"");
    expect("(", "'('");
    expect(")", "')'");
    std::string name;
    expect("<", "'<{' and the function's properties");
    for (const auto& [k, v] : parse_dict()) {
      if (k == "sym_name") name = v.s;
      if (k == "function_type" && results) *results = v.fn_results;
      if (k == "arg_attrs" && block) block->donation = arg_donations(v);
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
      if (!block->donation.empty() && block->donation.size() != block->args.size())
        error("@" + name + " has " + std::to_string(block->args.size()) + " arguments but " +
                  std::to_string(block->donation.size()) + " arg_attrs",
              it->second);
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
      } else if (name.rfind("chlo.", 0) == 0 || is_decomposable(name)) {
        results = chlo_op(scope, generic, name, op_pos);
      } else {
        ParsedOp r;
        r.name = name;
        r.pos = op_pos;
        const std::string_view prefix = syntax::kOpPrefix;
        std::string short_name;
        if (name == qualified_op_name(OpKind::kFma)) {
          r.kind = OpKind::kFma;
        } else {
          const std::string only = " (only stablehlo ops, math.fma and func.call)";
          if (name.rfind(prefix, 0) != 0)
            error("op '" + name + "' is not supported by vtrn" + only, op_pos);
          short_name = name.substr(prefix.size());
          if (short_name == "dot") {
            r.is_dot = true;
            r.kind = OpKind::kDotGeneral;
          } else if (short_name != "reduce_window" &&  // decomposed by build_parsed_op
                     (!op_from_name(short_name, &r.kind) || r.kind == OpKind::kReturn ||
                      r.kind == OpKind::kFma)) {
            error("op '" + name + "' is not supported by vtrn", op_pos);
          }
        }
        if (generic || short_name == "reduce_window")
          generic_op(r, scope);
        else
          pretty_op(r, scope);
        results = build_parsed_op(r, b, *this);
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
    ParsedOp r;
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

  // A CHLO op (or stablehlo.tan, or a Shardy hint), decomposed into StableHLO ops (chlo.h).
  // Pretty forms: `chlo.erf %x : T -> T`, `chlo.top_k(%x, k = 3) : T -> (T, T)`,
  // `sdy.sharding_constraint %x <@mesh, [...]> : T`; or the generic form.
  std::vector<int> chlo_op(Scope& scope, bool generic, const std::string& name, std::size_t pos) {
    ChloOp op;
    op.name = name;
    auto take_k = [&](const AttrDict& d) {
      for (const auto& [k, v] : d)
        if (k == "k") op.k = v.i;
    };
    const bool parens =
        generic ? (expect("(", "'(' and the operands of '" + name + "'"), true) : accept("(");
    ws();
    if (!(parens && accept(")"))) {
      do {
        ws();
        if (peek_char() == '%') {
          op.operands.push_back(value_use(scope));
        } else {
          const std::string key = ident("an operand or 'k = N'");
          expect("=", "'=' after " + key);
          const Attr a = parse_attr();
          if (key == "k") op.k = a.i;
        }
      } while (accept(","));
      if (parens) expect(")", "')' to close the operands");
    }
    if (!generic && peek("<")) skip_balanced_from_here('<');  // a Shardy sharding
    if (generic && accept("<")) {
      take_k(parse_dict());
      expect(">", "'>' after the properties");
    }
    if (peek("{")) take_k(parse_dict());
    ParsedOp types;
    op_types(types);
    if (!types.functional && accept("->")) {
      if (peek("("))
        types.out_types = type_list_in_parens();
      else
        types.out_types.push_back(tensor_type());
    } else if (!types.functional) {
      types.out_types = types.in_types;
    }
    Block& b = *scope.block;
    std::vector<int> results;
    try {
      results = decompose_chlo(op, b);
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      error(e.what(), pos);
    }
    if (types.out_types.size() != results.size())
      error(name + " has " + std::to_string(results.size()) + " result(s), but " +
                std::to_string(types.out_types.size()) + " type(s) are given",
            pos);
    for (std::size_t i = 0; i < results.size(); ++i)
      if (types.out_types[i] != b.type(results[i]))
        error(name + ": result " + std::to_string(i) + " has type " + b.type(results[i]).str() +
                  ", but the text says " + types.out_types[i].str(),
              pos);
    return results;
  }

  // `(%a, %b, ...)`: the operands of |r|, named |what| in errors.
  void operand_list(ParsedOp& r, Scope& scope, const std::string& what) {
    expect("(", "'(' and the operands of " + what);
    if (accept(")")) return;
    do {
      std::string sp;
      r.operands.push_back(value_use(scope, &sp));
      r.operand_names.push_back(sp);
    } while (accept(","));
    expect(")", "')' to close the operands");
  }

  // A dict of attributes after the op (or its `<{...}>` properties), added to the op's own.
  void read_attrs(ParsedOp& r) {
    const AttrDict d = parse_dict();
    r.attrs.insert(r.attrs.end(), d.begin(), d.end());
  }

  void generic_op(ParsedOp& r, Scope& scope) {
    operand_list(r, scope, "'" + r.name + "'");
    if (accept("<")) {
      read_attrs(r);
      expect(">", "'>' after the properties");
    }
    if (peek("(")) {
      expect("(", "'('");
      do r.regions.push_back(region(scope));
      while (accept(","));
      expect(")", "')' after the regions");
    }
    if (peek("{")) read_attrs(r);
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

  void pretty_op(ParsedOp& r, Scope& scope) {
    if (r.kind == OpKind::kReduce) {
      pretty_reduce(r, scope);
      return;
    }
    if (r.kind == OpKind::kConvolution) {
      pretty_convolution(r, scope);
      return;
    }
    if (r.kind == OpKind::kCustomCall) {
      Attr t;
      t.kind = Attr::kString;
      t.s = symbol();
      r.attrs.emplace_back(syntax::kCallTargetName, t);
      expect("(", "'(' and the operands of the custom_call");
      if (!accept(")")) {
        do r.operands.push_back(value_use(scope));
        while (accept(","));
        expect(")", "')'");
      }
      if (peek("{")) read_attrs(r);
      op_types(r);
      return;
    }
    if (r.kind == OpKind::kConstant) {
      if (peek("{")) read_attrs(r);
      ws();
      const std::size_t s = p_;
      Attr v = parse_attr();
      if (v.kind != Attr::kDense) error("expected dense<...> after stablehlo.constant", s);
      if (!v.dense_type) error("expected ': tensor<...>' after the constant's value");
      r.attrs.emplace_back(syntax::kValue, v);
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
            for (std::int64_t v : int_list()) lhs.items.push_back(Attr::integer(v));
            if (!accept_word("x"))
              error("expected 'x' between the lhs and rhs dimension lists of " + w);
            for (std::int64_t v : int_list()) rhs.items.push_back(Attr::integer(v));
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
    if (peek("{")) read_attrs(r);
    op_types(r);
  }

  void pretty_convolution(ParsedOp& r, Scope& scope) {
    // stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
    //   window = {stride = [2], pad = [[1, 1]], ...} {feature_group_count = 1 : i64, ...} : types
    operand_list(r, scope, "stablehlo.convolution");
    if (!accept_word(syntax::kPrettyDimNumbers))
      error("expected 'dim_numbers = [...]x[...]->[...]' in stablehlo.convolution");
    expect("=", "'=' after dim_numbers");
    ws();
    const std::size_t start = p_;
    skip_balanced_from_here('[');
    expect("x", "'x' between the input and kernel dims");
    skip_balanced_from_here('[');
    expect("->", "'->' before the output dims");
    skip_balanced_from_here('[');
    Attr dims;
    dims.kind = Attr::kConvDims;
    dims.s = std::string(t_.substr(start, p_ - start));
    r.attrs.emplace_back(syntax::kPrettyDimNumbers, dims);
    if (accept(",")) {
      if (!accept_word(syntax::kPrettyWindow))
        error("expected 'window = {...}' after the convolution's dim_numbers");
      expect("=", "'=' after window");
      r.attrs.emplace_back(syntax::kPrettyWindow, parse_attr());
    }
    if (peek("{")) read_attrs(r);
    op_types(r);
  }

  void pretty_reduce(ParsedOp& r, Scope& scope) {
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
      const std::string_view pre = syntax::kOpPrefix;
      if (applies.rfind(pre, 0) != 0 || !op_from_name(applies.substr(pre.size()), &k))
        error("unknown combiner '" + applies + "'", s);
      r.applies = reduce_kind_of(k);
      if (!r.applies)
        error("combiner '" + applies +
                  "' is not supported by vtrn (add, multiply, maximum, minimum, and, or)",
              s);
    }
    if (!accept_word("across")) error("expected 'across dimensions = [...]' in stablehlo.reduce");
    if (!accept_word("dimensions")) error("expected 'dimensions' after 'across'");
    expect("=", "'='");
    Attr d;
    d.kind = Attr::kList;
    for (std::int64_t v : int_list()) d.items.push_back(Attr::integer(v));
    r.attrs.emplace_back(syntax::kDimensions, d);
    if (peek("{")) read_attrs(r);
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

  std::map<std::string, std::size_t> funcs_;
  std::vector<std::string> order_;
  std::map<std::string, std::shared_ptr<Block>> parsed_;
  std::set<std::string> in_progress_;
};

}  // namespace

Module parse_module(std::string_view text) { return Parser(text).parse(); }

}  // namespace vtrn::hlo