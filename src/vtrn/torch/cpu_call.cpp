// The CPU kernel of an op over the device tensors' own bytes (see cpu_call.h).
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/cpu_call.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include <ATen/MemoryOverlap.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/CPUAllocator.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/device_view.h"

namespace vtrn::torch_adapter {
namespace {

bool is_wide(at::ScalarType t) { return t == at::kDouble || t == at::kComplexDouble; }
at::ScalarType narrowed(at::ScalarType t) {
  return t == at::kDouble ? at::kFloat : at::kComplexFloat;
}

/// A tensor of |dtype| over |storage| with |like|'s sizes, strides and view bits.
at::Tensor tensor_over(const c10::Storage& storage, c10::DispatchKey key, at::ScalarType dtype,
                       const at::Tensor& like, int64_t offset) {
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(key), c10::scalarTypeToTypeMeta(dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(), offset);
  t.unsafeGetTensorImpl()->_set_conj(like.is_conj());
  t.unsafeGetTensorImpl()->_set_neg(like.is_neg());
  return t;
}

bool is_dtype(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind() == c10::TypeKind::ScalarTypeType;
}

/// [first, last) element offsets |t| can touch.
std::pair<int64_t, int64_t> element_range(const at::Tensor& t) {
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return {t.storage_offset(), t.storage_offset()};
    last += (t.size(d) - 1) * t.stride(d);
  }
  return {t.storage_offset(), last + 1};
}

/// A device tensor argument and what the CPU kernel got instead.
struct Replaced {
  at::Tensor device;
  at::Tensor cpu;
  bool written;
  bool stand_in;
};

/// The CPU tensors that stand for an op's device tensors.
class CpuArguments {
 public:
  CpuArguments(const c10::FunctionSchema& schema, torch::jit::Stack& stack, size_t first,
               bool stand_ins)
      : stand_ins_(stand_ins) {
    const auto& args = schema.arguments();
    if (stand_ins_) {
      for_each_device_tensor(stack, first, args.size(), [&](const at::Tensor& t) {
        if (!is_wide(t.scalar_type())) return;
        auto [lo, hi] = element_range(t);
        auto [it, fresh] = wide_ranges_.try_emplace(key(t), lo, hi);
        // An empty view reads nothing: it must not stretch the range (v[1:] of an empty
        // storage starts past its end, and the copy would read there).
        auto& [a, b] = it->second;
        if (!fresh && lo != hi)
          it->second = a == b ? std::pair{lo, hi} : std::pair{std::min(a, lo), std::max(b, hi)};
      });
    }
    for (size_t i = 0; i < args.size(); ++i) {
      c10::IValue& v = stack[first + i];
      const bool written = args[i].alias_info() != nullptr && args[i].alias_info()->isWrite();
      if (v.isTensor()) {
        v = replace(v.toTensor(), written);
      } else if (v.isTensorList()) {
        c10::List<at::Tensor> list;
        for (const at::Tensor& t : v.toTensorList()) list.push_back(replace(t, written));
        v = std::move(list);
      } else if (v.isOptionalTensorList()) {
        c10::List<std::optional<at::Tensor>> list;
        for (const std::optional<at::Tensor>& t : v.toOptionalTensorList())
          list.push_back(t.has_value() ? std::optional<at::Tensor>(replace(*t, written)) : t);
        v = std::move(list);
      } else if (v.isDevice() && v.toDevice().is_privateuseone()) {
        target_ = v.toDevice();
        v = c10::Device(c10::kCPU);
      } else if (stand_ins_ && v.isInt() && is_dtype(args[i])) {
        // dtype=torch.float64 computes as float32 too (the stand-in out= tensors are float32).
        const auto dtype = static_cast<at::ScalarType>(v.toInt());
        if (is_wide(dtype)) v = static_cast<int64_t>(narrowed(dtype));
      }
    }
  }

  const std::vector<Replaced>& replaced() const { return replaced_; }
  std::optional<c10::Device> target() const { return target_; }

  /// The device storage |cpu| views, when it is one of the CPU storages over device bytes.
  const c10::Storage* device_storage_of(const at::Tensor& cpu) const {
    if (!cpu.has_storage()) return nullptr;
    auto it = device_of_cpu_.find(cpu.storage().unsafeGetStorageImpl());
    if (it == device_of_cpu_.end()) return nullptr;
    // A storage the kernel grew holds new host memory, no longer the device bytes.
    if (cpu.storage().data() != it->second.data()) return nullptr;
    return &it->second;
  }

 private:
  using Key = std::pair<const c10::StorageImpl*, at::ScalarType>;
  static Key key(const at::Tensor& t) {
    return {t.storage().unsafeGetStorageImpl(), t.scalar_type()};
  }

  template <typename Fn>
  static void for_each_device_tensor(const torch::jit::Stack& stack, size_t first, size_t count,
                                     Fn fn) {
    auto visit = [&](const at::Tensor& t) {
      if (t.defined() && t.is_privateuseone()) fn(t);
    };
    for (size_t i = first; i < first + count; ++i) {
      const c10::IValue& v = stack[i];
      if (v.isTensor()) {
        visit(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList()) visit(t);
      } else if (v.isOptionalTensorList()) {
        for (const std::optional<at::Tensor>& t : v.toOptionalTensorList())
          if (t.has_value()) visit(*t);
      }
    }
  }

  at::Tensor replace(const at::Tensor& t, bool written) {
    if (!t.defined()) return t;
    if (!t.is_privateuseone()) {
      // A float64 CPU tensor (a 0-d one) read with float32 stand-ins is one too, so dtype
      // checks compare what they compared; a Python number stays a Python number.
      if (stand_ins_ && !written && is_wide(t.scalar_type()) &&
          !t.unsafeGetTensorImpl()->is_wrapped_number())
        return t.to(narrowed(t.scalar_type()));
      return t;
    }
    if (!target_) target_ = t.device();
    // The same tensor passed twice is one CPU tensor: identity is part of aliasing (a kernel's
    // overlap check sees `out` is `self`).
    auto seen = replaced_of_.find(t.unsafeGetTensorImpl());
    if (seen != replaced_of_.end()) {
      Replaced& r = replaced_[seen->second];
      r.written = r.written || written;
      return r.cpu;
    }
    const bool stand_in = stand_ins_ && is_wide(t.scalar_type());
    at::Tensor cpu;
    if (stand_in) {
      auto& [lo, buffer] = stand_in_buffer(t);
      cpu = tensor_over(buffer.storage(), c10::DispatchKey::CPU, buffer.scalar_type(), t,
                        t.storage_offset() - lo);
    } else {
      cpu = tensor_over(alias_storage(t.storage()), c10::DispatchKey::CPU, t.scalar_type(), t,
                        t.storage_offset());
    }
    replaced_of_.emplace(t.unsafeGetTensorImpl(), replaced_.size());
    replaced_.push_back({t, cpu, written, stand_in});
    return cpu;
  }

  // One CPU storage per device storage, over the same bytes. It keeps the device storage alive,
  // and is resizable: a kernel that grows an out= argument gets new host memory.
  const c10::Storage& alias_storage(const c10::Storage& device) {
    auto it = cpu_of_device_.find(device.unsafeGetStorageImpl());
    if (it != cpu_of_device_.end()) return it->second;
    auto* keep = new c10::Storage(device);
    c10::DataPtr bytes(
        device.mutable_data(), keep, [](void* ctx) { delete static_cast<c10::Storage*>(ctx); },
        c10::Device(c10::kCPU));
    c10::Storage cpu(c10::Storage::use_byte_size_t(), device.nbytes(), std::move(bytes),
                     c10::GetCPUAllocator(), /*resizable=*/true);
    device_of_cpu_.emplace(cpu.unsafeGetStorageImpl(), device);
    return cpu_of_device_.emplace(device.unsafeGetStorageImpl(), std::move(cpu)).first->second;
  }

  // The float32/complex64 copy of the part of a float64/complex128 storage the arguments view.
  std::pair<int64_t, at::Tensor>& stand_in_buffer(const at::Tensor& t) {
    auto it = buffers_.find(key(t));
    if (it != buffers_.end()) return it->second;
    const auto [lo, hi] = wide_ranges_.at(key(t));
    auto* base = static_cast<char*>(t.storage().mutable_data()) +
                 lo * static_cast<int64_t>(t.element_size());
    at::Tensor range = at::from_blob(base, {hi - lo}, at::TensorOptions().dtype(t.scalar_type()));
    return buffers_.emplace(key(t), std::make_pair(lo, range.to(narrowed(t.scalar_type()))))
        .first->second;
  }

  bool stand_ins_;
  std::optional<c10::Device> target_;
  std::vector<Replaced> replaced_;
  std::unordered_map<const c10::TensorImpl*, size_t> replaced_of_;
  std::unordered_map<const c10::StorageImpl*, c10::Storage> cpu_of_device_;
  std::unordered_map<const c10::StorageImpl*, c10::Storage> device_of_cpu_;
  std::map<Key, std::pair<int64_t, int64_t>> wide_ranges_;
  std::map<Key, std::pair<int64_t, at::Tensor>> buffers_;
};

/// Gives a written device argument what the CPU kernel left in its stand-in: a stand-in's
/// values, or the size and bytes of a view the kernel resized.
void write_back(const Replaced& r) {
  const at::Tensor& cpu = r.cpu;
  const at::Tensor& dev = r.device;
  if (cpu.sizes() != dev.sizes()) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    dev.resize_(cpu.sizes());
  }
  const bool same_bytes = cpu.storage().data() == dev.storage().data();
  if (!r.stand_in && same_bytes && cpu.strides() == dev.strides() &&
      cpu.storage_offset() == dev.storage_offset())
    return;  // written in place
  at::Tensor alias = cpu_alias(dev);
  at::Tensor from = !r.stand_in && same_bytes ? cpu.clone() : cpu;
  // An expanded destination (masked_fill_ writes one): each element once.
  if (at::has_internal_overlap(alias) == at::MemOverlap::Yes) {
    std::vector<int64_t> sizes = alias.sizes().vec();
    for (size_t d = 0; d < sizes.size(); ++d)
      if (alias.stride(static_cast<int64_t>(d)) == 0) sizes[d] = std::min<int64_t>(sizes[d], 1);
    alias = alias.as_strided(sizes, alias.strides());
    from = from.as_strided(sizes, from.strides());
  }
  alias.copy_(from);
}

at::Tensor round_wide(const at::Tensor& t) {
  return is_wide(t.scalar_type()) ? t.to(narrowed(t.scalar_type())).to(t.scalar_type()) : t;
}

}  // namespace

void call_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                     const Float64Policy& policy) {
  const c10::FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t first = stack->size() - args.size();
  const std::vector<c10::IValue> originals(stack->begin() + static_cast<ptrdiff_t>(first),
                                           stack->end());
  CpuArguments cpu(schema, *stack, first, policy.stand_in_returns != nullptr);

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  for (const Replaced& r : cpu.replaced())
    if (r.written) write_back(r);

  const auto& returns = schema.returns();
  const size_t returns_first = stack->size() - returns.size();
  for (size_t k = 0; k < returns.size(); ++k) {
    c10::IValue& v = (*stack)[returns_first + k];
    const c10::AliasInfo* alias = returns[k].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].alias_info() != nullptr &&
            args[i].alias_info()->beforeSets() == alias->beforeSets()) {
          v = originals[i];
          break;
        }
      }
      continue;
    }
    size_t n = 0;  // tensors of this return so far
    auto finish = [&](const at::Tensor& t) -> at::Tensor {
      const size_t index = n++;
      if (!t.defined() || !t.is_cpu()) return t;
      if (const c10::Storage* device = cpu.device_storage_of(t))
        return tensor_over(*device, c10::DispatchKey::PrivateUse1, t.scalar_type(), t,
                           t.storage_offset());
      at::Tensor out = t;
      if (policy.stand_in_returns != nullptr) {
        const auto& want = policy.stand_in_returns->at(k);
        if (index < want.size() && want[index] != out.scalar_type()) out = out.to(want[index]);
      } else if (policy.round_results) {
        out = round_wide(out);
      }
      return cpu.target() ? out.to(*cpu.target()) : out;
    };
    if (v.isTensor()) {
      v = finish(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) list.push_back(finish(t));
      v = std::move(list);
    }
  }
}

namespace {

/// The last |count| values of |stack| with each tensor (in lists too) replaced by |fn|'s, and
/// each device argument by |device|.
template <typename Fn>
torch::jit::Stack replaced_arguments(const torch::jit::Stack& stack, size_t count,
                                     c10::Device device, Fn fn) {
  torch::jit::Stack out(stack.end() - static_cast<ptrdiff_t>(count), stack.end());
  for (c10::IValue& v : out) {
    if (v.isTensor()) {
      v = fn(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) list.push_back(fn(t));
      v = std::move(list);
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> list;
      for (const std::optional<at::Tensor>& t : v.toOptionalTensorList())
        list.push_back(t.has_value() ? std::optional<at::Tensor>(fn(*t)) : t);
      v = std::move(list);
    } else if (v.isDevice() && v.toDevice().is_privateuseone()) {
      v = device;
    }
  }
  return out;
}

ReturnDtypes return_dtypes(const torch::jit::Stack& stack, size_t num_returns) {
  ReturnDtypes dtypes;
  for (size_t k = stack.size() - num_returns; k < stack.size(); ++k) {
    std::vector<at::ScalarType> d;
    if (stack[k].isTensor()) {
      if (stack[k].toTensor().defined()) d.push_back(stack[k].toTensor().scalar_type());
    } else if (stack[k].isTensorList()) {
      for (const at::Tensor& t : stack[k].toTensorList()) d.push_back(t.scalar_type());
    }
    dtypes.push_back(std::move(d));
  }
  return dtypes;
}

}  // namespace

std::optional<ReturnDtypes> meta_return_dtypes(const c10::OperatorHandle& op,
                                               const torch::jit::Stack& stack) {
  const c10::FunctionSchema& schema = op.schema();
  // CPU scalars stay on the CPU: shape functions take them as scalars (and a wrapped number
  // must be a CPU tensor to reach a shape function written in Python).
  torch::jit::Stack meta = replaced_arguments(
      stack, schema.arguments().size(), c10::Device(c10::kMeta), [](const at::Tensor& t) {
        if (!t.defined() || (t.is_cpu() && t.dim() == 0)) return t;
        return at::empty_strided(t.sizes(), t.strides(),
                                 t.options().device(c10::kMeta).pinned_memory(false));
      });
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (...) {  // no shape function, or one that needs the data (or rejects the call)
    return std::nullopt;
  }
  return return_dtypes(meta, schema.returns().size());
}

bool call_meta_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t first = stack->size() - args.size();
  c10::Device device(c10::kPrivateUse1, current_device());
  bool found = false;
  for (size_t i = first; i < stack->size() && !found; ++i) {
    if ((*stack)[i].isTensor() && (*stack)[i].toTensor().is_privateuseone()) {
      device = (*stack)[i].toTensor().device();
      found = true;
    }
  }
  torch::jit::Stack meta =
      replaced_arguments(*stack, args.size(), c10::Device(c10::kMeta), [](const at::Tensor& t) {
        if (!t.defined() || (t.is_cpu() && t.dim() == 0)) return t;
        return at::empty_strided(t.sizes(), t.strides(),
                                 t.options().device(c10::kMeta).pinned_memory(false));
      });
  const std::vector<c10::IValue> originals(stack->begin() + static_cast<ptrdiff_t>(first),
                                           stack->end());
  const std::vector<c10::IValue> meta_args = meta;
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (...) {  // no shape function, or one that needs the data
    return false;
  }
  // The argument a return aliases (by its alias set), if any.
  const auto aliased_argument = [&](const c10::AliasInfo* alias) -> std::optional<size_t> {
    if (alias == nullptr) return std::nullopt;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].alias_info() != nullptr &&
          args[i].alias_info()->beforeSets() == alias->beforeSets())
        return i;
    }
    return std::nullopt;
  };
  // Written arguments the shape function resized (out= tensors) are resized on the device.
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].alias_info() == nullptr || !args[i].alias_info()->isWrite()) continue;
    if (!originals[i].isTensor() || !meta_args[i].isTensor()) continue;
    at::Tensor dst = originals[i].toTensor();
    const at::Tensor& shaped = meta_args[i].toTensor();
    if (dst.defined() && dst.is_privateuseone() && !dst.sizes().equals(shaped.sizes()))
      dst.resize_(shaped.sizes());
  }
  const auto& returns = schema.returns();
  std::vector<c10::IValue> results;
  for (size_t k = 0; k < returns.size(); ++k) {
    const c10::IValue& v = meta[meta.size() - returns.size() + k];
    const std::optional<size_t> arg = aliased_argument(returns[k].alias_info());
    if (arg && returns[k].alias_info()->isWrite()) {
      results.push_back(originals[*arg]);
      continue;
    }
    auto make = [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_meta()) return t;
      if (arg && originals[*arg].isTensor()) {  // a view of its argument
        return originals[*arg].toTensor().as_strided(t.sizes(), t.strides(), t.storage_offset());
      }
      return at::empty_strided(t.sizes(), t.strides(), t.options().device(device));
    };
    if (v.isTensor()) {
      results.emplace_back(make(v.toTensor()));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) list.push_back(make(t));
      results.emplace_back(std::move(list));
    } else {
      results.push_back(v);
    }
  }
  torch::jit::drop(*stack, args.size());
  for (c10::IValue& r : results) stack->push_back(std::move(r));
  return true;
}

ReturnDtypes cpu_return_dtypes(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const c10::FunctionSchema& schema = op.schema();
  // Copies, one per tensor (a tensor passed twice stays one tensor).
  std::unordered_map<const c10::TensorImpl*, at::Tensor> copies;
  torch::jit::Stack cpu = replaced_arguments(
      stack, schema.arguments().size(), c10::Device(c10::kCPU), [&](const at::Tensor& t) {
        if (!t.defined() || !t.is_privateuseone()) return t;
        auto [it, fresh] = copies.try_emplace(t.unsafeGetTensorImpl());
        if (fresh) it->second = cpu_alias(t).clone(at::MemoryFormat::Preserve);
        return it->second;
      });
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
  return return_dtypes(cpu, schema.returns().size());
}

}  // namespace vtrn::torch_adapter
