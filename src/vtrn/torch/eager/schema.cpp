#include "vtrn/torch/eager/schema.h"

#include <algorithm>

namespace vtrn::torch_adapter::eager {

namespace {

bool is_tensor_type(const c10::TypePtr& t) { return t->kind() == c10::TypeKind::TensorType; }

}  // namespace

SchemaInfo classify(const c10::FunctionSchema& schema, const lowering::OpLowering& entry) {
  SchemaInfo info;
  const auto& args = schema.arguments();
  info.num_args = args.size();
  info.complex_pairs = entry.complex_pairs;
  info.reads_stored_transposed = entry.reads_stored_transposed;
  auto contains = [](const std::vector<int>& v, int i) {
    return std::find(v.begin(), v.end(), i) != v.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Argument& a = args[i];
    // real_type(): ScalarType arguments have type int in the schema, ScalarType in real_type.
    c10::TypePtr t = a.real_type();
    if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
    const bool writes = a.alias_info() != nullptr && a.alias_info()->isWrite();
    info.mutable_input.push_back(writes && !a.is_out());
    Slot s = Slot::kIgnoredIfNone;
    if (is_tensor_type(t)) {
      s = a.is_out() ? Slot::kOut : Slot::kTensor;
    } else if (auto list = t->cast<c10::ListType>()) {
      const auto elem = list->getElementType();
      const auto opt_elem = elem->cast<c10::OptionalType>();
      if (is_tensor_type(elem))
        s = a.is_out() ? Slot::kOutList : Slot::kTensorList;
      else if (opt_elem && is_tensor_type(opt_elem->getElementType()) && !a.is_out())
        s = Slot::kOptionalTensorList;
      else if (elem->kind() == c10::TypeKind::NumberType)
        s = Slot::kScalarList;
      else if (elem->kind() == c10::TypeKind::IntType || elem->kind() == c10::TypeKind::SymIntType)
        s = Slot::kInts;
      else if (elem->kind() == c10::TypeKind::BoolType)
        s = Slot::kBools;
    } else {
      switch (t->kind()) {
        case c10::TypeKind::NumberType:
          s = contains(entry.static_scalars, static_cast<int>(i))    ? Slot::kStaticScalar
              : contains(entry.checked_scalars, static_cast<int>(i)) ? Slot::kCheckedScalar
                                                                     : Slot::kScalar;
          break;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          s = Slot::kInt;
          break;
        case c10::TypeKind::FloatType:
          s = contains(entry.runtime_floats, static_cast<int>(i)) ? Slot::kRuntimeFloat
                                                                  : Slot::kFloat;
          break;
        case c10::TypeKind::BoolType:
          s = Slot::kBool;
          break;
        case c10::TypeKind::StringType:
          s = Slot::kString;
          break;
        case c10::TypeKind::ScalarTypeType:
          s = Slot::kDType;
          break;
        default:
          s = Slot::kIgnoredIfNone;
          break;
      }
    }
    info.slots.push_back(s);
  }
  const auto& returns = schema.returns();
  info.num_returns = returns.size();
  info.returns_list = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  for (const c10::Argument& r : returns) {
    int alias = -1;
    if (r.alias_info() != nullptr && r.alias_info()->isWrite()) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].alias_info() != nullptr &&
            args[i].alias_info()->beforeSets() == r.alias_info()->beforeSets()) {
          alias = static_cast<int>(i);
          break;
        }
      }
    }
    info.return_alias.push_back(alias);
  }
  return info;
}

}  // namespace vtrn::torch_adapter::eager
