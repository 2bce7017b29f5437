#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/eager/signature_cache.h"

#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <ATen/core/Tensor.h>
#include <c10/core/DefaultDtype.h>

#include "vtrn/torch/eager/buffer_ref.h"
#include "vtrn/torch/eager/dtype_mapping.h"

namespace vtrn::torch_adapter::eager {

namespace {

// The words of a signature that are not plain values. A word that describes a tensor carries its
// dtype code (and, for a CPU scalar tensor, whether it is a wrapped Python number) on top of a
// base far above any dtype code, so no two kinds of argument in the same slot share a word.
enum class SignatureWord : int64_t {
  kDoubleScalar = -2,       // a Scalar (or Scalar[] element) holding a double
  kIntScalar = -3,          // ... an int
  kBoolScalar = -4,         // ... a bool
  kStoredTransposed = -5,   // after a tensor's sizes: it is read as stored (transposed)
  kDeviceTensor = 1000,     // + dtype; then the rank and the sizes
  kCpuScalarTensor = 2000,  // + 2 * dtype + (1 if a wrapped number): a 0-d CPU tensor
  kOutTensor = 3000,        // + dtype: an out= tensor (resized to the result, so no sizes)
};

// A Scalar the lowering bakes in: its kind, then its value (a double's bits).
enum class StaticScalarWord : int64_t { kDouble = 0, kIntegral = 1 };

constexpr int64_t kAbsent = -1;  // None, or an undefined tensor
// An absent optional int: every other int64 is a value the op may be called with.
constexpr int64_t kAbsentInt = std::numeric_limits<int64_t>::min();
constexpr int64_t kStringEnd = 0;  // after a string's characters

template <typename Word>
constexpr int64_t word(Word w) {
  return static_cast<int64_t>(w);
}

int64_t double_bits(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<WordKey, std::shared_ptr<const CompiledOp>, WordKeyHash>& signature_cache() {
  static auto* m =
      new std::unordered_map<WordKey, std::shared_ptr<const CompiledOp>, WordKeyHash>();
  return *m;
}

}  // namespace

bool describe_call(const SchemaInfo& info, torch::jit::Stack* stack, size_t first, WordKey& key,
                   c10::DeviceIndex& device, bool& empty_input) {
  auto add_tensor = [&](const at::Tensor& t) -> bool {
    if (!t.defined()) {
      key.push_back(kAbsent);
      return true;
    }
    const auto d = to_hlo(t.scalar_type(), info.complex_pairs);
    if (!d) return false;
    // A complex view with a pending conjugation or negation, or a complex CPU scalar: the CPU
    // fallback resolves those.
    if (hlo::is_complex(*d) && (t.is_cpu() || t.is_conj() || t.is_neg())) return false;
    if (t.is_cpu()) {
      if (t.dim() != 0) return false;
      key.push_back(word(SignatureWord::kCpuScalarTensor) + static_cast<int64_t>(*d) * 2 +
                    (t.unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 0));
      return true;
    }
    if (!t.is_privateuseone()) return false;
    if (device < 0)
      device = t.device().index();
    else if (device != t.device().index())
      return false;
    key.push_back(word(SignatureWord::kDeviceTensor) + static_cast<int64_t>(*d));
    key.push_back(t.dim());
    for (int64_t s : t.sizes()) key.push_back(s);
    // A stored-transposed operand lowers to another module (its parameter has the stored shape).
    if (info.reads_stored_transposed && BufferRef::is_stored_transposed(t))
      key.push_back(word(SignatureWord::kStoredTransposed));
    if (t.numel() == 0) empty_input = true;
    return true;
  };
  // Python floats and integer true division take the default dtype.
  key.push_back(static_cast<int64_t>(c10::get_default_dtype_as_scalartype()));
  for (size_t i = 0; i < info.num_args; ++i) {
    const c10::IValue& v = (*stack)[first + i];
    switch (info.slots[i]) {
      case Slot::kTensor:
        if (v.isNone())
          key.push_back(kAbsent);
        else if (!add_tensor(v.toTensor()))
          return false;
        break;
      case Slot::kTensorList: {
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        const auto list = v.toTensorList();
        key.push_back(static_cast<int64_t>(list.size()));
        for (const at::Tensor& t : list) {
          if (!t.defined() || t.is_cpu() || !add_tensor(t)) return false;
        }
        break;
      }
      case Slot::kOptionalTensorList: {
        if (v.isNone() || !v.isList()) return false;
        const auto list = v.toListRef();
        key.push_back(static_cast<int64_t>(list.size()));
        for (const c10::IValue& e : list) {
          // Python indexing passes an undefined tensor where a dimension is not indexed.
          if (e.isNone() || !e.toTensor().defined()) {
            key.push_back(kAbsent);
            continue;
          }
          const at::Tensor& t = e.toTensor();
          if (t.is_cpu() || !add_tensor(t)) return false;
        }
        break;
      }
      case Slot::kScalarList: {
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        if (!v.isList()) return false;
        const auto list = v.toListRef();
        key.push_back(static_cast<int64_t>(list.size()));
        for (const c10::IValue& e : list) {
          if (e.isDouble())
            key.push_back(word(SignatureWord::kDoubleScalar));
          else if (e.isInt())
            key.push_back(word(SignatureWord::kIntScalar));
          else if (e.isBool())
            key.push_back(word(SignatureWord::kBoolScalar));
          else
            return false;
        }
        break;
      }
      case Slot::kCheckedScalar:
        if (!v.isNone() && (v.isDouble() || v.isInt() || v.isBool()))
          key.push_back(fitting_dtypes(v));
        [[fallthrough]];
      case Slot::kScalar:
      case Slot::kRuntimeFloat:
        if (v.isNone())
          key.push_back(kAbsent);
        else if (v.isDouble())
          key.push_back(word(SignatureWord::kDoubleScalar));
        else if (v.isInt())
          key.push_back(word(SignatureWord::kIntScalar));
        else if (v.isBool())
          key.push_back(word(SignatureWord::kBoolScalar));
        else
          return false;
        break;
      case Slot::kStaticScalar:
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        if (!v.isDouble() && !v.isInt() && !v.isBool()) return false;
        key.push_back(word(v.isDouble() ? StaticScalarWord::kDouble : StaticScalarWord::kIntegral));
        key.push_back(v.isDouble() ? double_bits(v.toDouble())
                                   : (v.isInt() ? v.toInt() : v.toBool()));
        break;
      case Slot::kInt:
        if (v.isNone())
          key.push_back(kAbsentInt);
        else if (v.isInt())
          key.push_back(v.toInt());
        else
          return false;
        break;
      case Slot::kInts: {
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        if (!v.isIntList()) return false;
        const auto ints = v.toIntList();
        key.push_back(static_cast<int64_t>(ints.size()));
        for (int64_t x : ints) key.push_back(x);
        break;
      }
      case Slot::kBools: {
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        if (!v.isBoolList()) return false;
        const auto bools = v.toBoolList();
        key.push_back(static_cast<int64_t>(bools.size()));
        for (bool x : bools) key.push_back(x ? 1 : 0);
        break;
      }
      case Slot::kFloat:
        key.push_back(v.isNone() ? kAbsent : double_bits(v.toDouble()));
        break;
      case Slot::kBool:
        key.push_back(v.isNone() ? kAbsent : v.toBool());
        break;
      case Slot::kString:
        if (v.isNone()) {
          key.push_back(kAbsent);
          break;
        }
        for (char ch : v.toStringRef()) key.push_back(ch);
        key.push_back(kStringEnd);
        break;
      case Slot::kDType:
        key.push_back(v.isNone() ? kAbsent : v.toInt());
        break;
      case Slot::kIgnoredIfNone:
        if (!v.isNone()) return false;
        break;
      case Slot::kOut: {
        const at::Tensor& t = v.toTensor();
        if (!t.is_privateuseone() || (device >= 0 && t.device().index() != device)) return false;
        device = t.device().index();  // a factory's out= tensor alone names the device
        const auto d = to_hlo(t.scalar_type(), info.complex_pairs);
        if (!d || (hlo::is_complex(*d) && (t.is_conj() || t.is_neg()))) return false;
        key.push_back(word(SignatureWord::kOutTensor) + static_cast<int64_t>(*d));
        break;
      }
      case Slot::kOutList:
        return false;
    }
  }
  return device >= 0;
}

std::shared_ptr<const CompiledOp> find_compiled(const WordKey& key) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto it = signature_cache().find(key);
  return it != signature_cache().end() ? it->second : nullptr;
}

std::shared_ptr<const CompiledOp> insert_compiled(const WordKey& key,
                                                  std::shared_ptr<const CompiledOp> compiled) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  return signature_cache().emplace(key, std::move(compiled)).first->second;
}

}  // namespace vtrn::torch_adapter::eager
