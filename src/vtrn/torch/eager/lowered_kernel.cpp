// The boxed kernel every lowered op runs on `neuron` (see lowered_kernel.h).
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/eager/lowered_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>

#include "vtrn/runtime/compile_cache.h"
#include "vtrn/torch/eager/buffer_ref.h"
#include "vtrn/torch/eager/compiled_op.h"
#include "vtrn/torch/eager/dtype_mapping.h"
#include "vtrn/torch/eager/launch.h"
#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/eager/pending_group.h"
#include "vtrn/torch/eager/schema.h"
#include "vtrn/torch/eager/signature_cache.h"
#include "vtrn/torch/eager/storage_order.h"
#include "vtrn/torch/fallback.h"
#include "vtrn/torch/grouped_mm_checks.h"
#include "vtrn/torch/mask_kernels.h"
#include "vtrn/torch/op_tracking.h"

namespace vtrn::torch_adapter::eager {

namespace {

using hlo::DType;

/// VTRN_EAGER_DEBUG=1 prints why a call falls back to the CPU.
bool debug_enabled() {
  static const bool on = std::getenv("VTRN_EAGER_DEBUG") != nullptr &&
                         std::strcmp(std::getenv("VTRN_EAGER_DEBUG"), "1") == 0;
  return on;
}

/// The factories whose CPU kernels resize their out= argument themselves, without
/// resize_output's deprecation warning.
bool is_factory(const lowering::OpLowering& entry) {
  return entry.name == "arange.start_out" || entry.name == "linspace.out" ||
         entry.name == "eye.out" || entry.name == "eye.m_out";
}

/// Resizes a factory's out= argument as its CPU kernel does: arange and linspace keep any
/// shape with the right element count (arange warns when it differs: a rounding error in its
/// bounds is the usual cause); eye always resizes, silently.
void resize_factory_output(const lowering::OpLowering& entry, at::Tensor& out,
                           c10::IntArrayRef dims) {
  if (out.sizes() == dims) return;
  const bool eye = entry.name == "eye.out" || entry.name == "eye.m_out";
  if (!eye && out.numel() == dims[0]) return;
  if (entry.name == "arange.start_out" && out.numel() > 0) {
    TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ",
               out.numel(), " which does not match the computed number of elements ", dims[0],
               ". Note that this may occur as a result of rounding error. "
               "The out tensor will be resized to a tensor of shape (",
               dims[0], ",).");
  }
  out.resize_(dims);
}

/// The row-major (contiguous) strides of |sizes|, size-1 dims included.
std::vector<int64_t> row_major(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    strides[k] = step;
    step *= std::max<int64_t>(sizes[k], 1);
  }
  return strides;
}

/// The strides the CPU gives a fresh output of |dims| (empty when contiguous ones): an
/// elementwise op's TensorIterator follows the layout of its inputs (a transposed or
/// channels_last input gives an output laid out the same way), and cat keeps the memory
/// format its inputs share. Computed by ATen itself, over meta tensors of the inputs' layouts.
std::vector<int64_t> cpu_output_strides(const lowering::OpLowering& entry,
                                        const torch::jit::Stack& stack, size_t first, size_t n,
                                        c10::IntArrayRef dims) {
  const bool cat = entry.name == "cat";
  if (!entry.elementwise && !cat) return {};
  if (dims.size() < 2) return {};
  // Exactly the default strides: is_contiguous() ignores the strides of size-1 dims, which
  // TensorIterator's layout follows too. (Checked without allocating: every eager op asks.)
  auto row_major_strides = [](const at::Tensor& t) {
    int64_t expect = 1;
    for (int64_t d = t.dim(); d-- > 0;) {
      if (t.stride(d) != expect) return false;
      expect *= t.size(d);
    }
    return true;
  };
  std::vector<at::Tensor> inputs;
  bool all_contiguous = true;
  auto take = [&](const at::Tensor& t) {
    if (!t.defined() || t.dim() == 0) return;
    inputs.push_back(t);
    all_contiguous = all_contiguous && row_major_strides(t);
  };
  for (size_t i = first; i < first + n && all_contiguous; ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      all_contiguous = !t.defined() || t.dim() == 0 || row_major_strides(t);
    } else if (cat && v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList())
        all_contiguous = all_contiguous && (!t.defined() || t.dim() == 0 || row_major_strides(t));
    }
  }
  if (all_contiguous) return {};
  for (size_t i = first; i < first + n; ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      take(v.toTensor());
    } else if (cat && v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) take(t);
    }
  }
  if (cat) {
    // ATen's cat: the first input's suggested memory format when every input (but the legacy
    // 1-d empty ones it skips) suggests the same one, else contiguous.
    std::optional<c10::MemoryFormat> format;
    for (const at::Tensor& t : inputs) {
      if (t.dim() == 1 && t.numel() == 0) continue;
      const c10::MemoryFormat f = t.suggest_memory_format();
      if (format && *format != f) return {};
      format = f;
    }
    if (!format || *format == c10::MemoryFormat::Contiguous) return {};
    at::Tensor probe =
        at::empty(dims, at::TensorOptions().device(c10::kMeta).memory_format(*format));
    return probe.strides().vec();
  }
  // The layout does not depend on the dtypes: one dtype for all keeps TensorIterator from
  // promoting. The config borrows its operands: they live until the iterator is built.
  at::Tensor result;
  std::vector<at::Tensor> metas;
  for (const at::Tensor& t : inputs)
    metas.push_back(at::empty_strided(t.sizes(), t.strides(),
                                      at::TensorOptions().dtype(at::kByte).device(c10::kMeta)));
  at::TensorIteratorConfig config;
  config.add_output(result);
  for (const at::Tensor& m : metas) config.add_const_input(m);
  at::TensorIterator iter = config.build();
  if (iter.output(0).sizes() != dims ||
      iter.output(0).strides() == c10::IntArrayRef(row_major(dims)))
    return {};
  return iter.output(0).strides().vec();
}

// Advanced indexing whose boolean masks become index tensors first (mask_kernels.h).
enum class MaskIndices : uint8_t { kNone, kIndex, kPut };

MaskIndices mask_indices_of(const std::string& name) {
  if (name == "index.Tensor" || name == "index.Tensor_out") return MaskIndices::kIndex;
  if (name == "_index_put_impl_" || name == "index_put_" || name == "index_put")
    return MaskIndices::kPut;
  return MaskIndices::kNone;
}

class LoweredKernel final : public c10::OperatorKernel {
 public:
  explicit LoweredKernel(const lowering::OpLowering* entry)
      : entry_(entry),
        qualified_name_(entry->name.find("::") == std::string::npos ? "aten::" + entry->name
                                                                    : entry->name),
        mask_indices_(mask_indices_of(entry->name)),
        grouped_mm_(entry->name == "_grouped_mm"),
        reduction_(entry->name == "sum.dim_IntList" || entry->name == "mean.dim"),
        sort_dim_arg_(entry->name == "sort" || entry->name == "sort.values"                 ? 1
                      : entry->name == "sort.stable" || entry->name == "sort.values_stable" ? 2
                                                                                            : 0) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    std::call_once(schema_once_, [&] {
      info_ = classify(op.schema(), *entry_);
      writes_arguments_ = writes_arguments(info_);
    });
    const size_t first = stack->size() - info_.num_args;
    if (mask_indices_ != MaskIndices::kNone)
      expand_boolean_indices(*stack, first, mask_indices_ == MaskIndices::kPut);
    if (grouped_mm_) check_grouped_mm(*stack, first);
    if (sort_dim_arg_ > 0 && (*stack)[first].isTensor() &&
        sorts_an_expanded_line((*stack)[first].toTensor(), (*stack)[first + sort_dim_arg_].toInt()))
      return fallback(op, stack);
    if (entry_->elementwise && !info_.returns_list && run_in_storage_order(stack, first)) return;
    if (reduction_ && run_reduction_in_storage_order(stack, first)) return;
    thread_local WordKey key;
    key.clear();
    key.push_back(reinterpret_cast<intptr_t>(entry_));
    c10::DeviceIndex device = -1;
    bool empty_input = false;
    if (!describe_call(info_, stack, first, key, device, empty_input)) return fallback(op, stack);

    std::shared_ptr<const CompiledOp> compiled = find_compiled(key);
    if (!compiled) {
      compiled = insert_compiled(key, compile(stack, first));
    } else if (compiled->executable) {
      count_memory_hit();
    }
    // Zero-size inputs: the CPU kernels define those edge cases (errors included), unless the
    // lowering says it reproduces them.
    if (!compiled->executable || (empty_input && !entry_->zero_size)) return fallback(op, stack);
    if (writes_arguments_ && overlap_is_cpus_call(*stack, first)) return fallback(op, stack);
    run(stack, first, compiled, device);
  }

 private:
  void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    cpu_fallback(op, stack);
  }

  // An elementwise call whose tensors share one dense layout other than row-major runs over
  // them in memory order: each is passed as its dense view in that order (a permute), so the
  // executable reads and writes them in place, and a fresh result is returned permuted back,
  // with the strides the CPU gives it (TensorIterator follows its inputs' layout). Otherwise
  // every input would be copied dense first and every output computed aside and copied back.
  // Returns false, the stack as it was, when the call takes the ordinary path.
  bool run_in_storage_order(torch::jit::Stack* stack, size_t first) {
    const at::Tensor* full = nullptr;
    bool broadcasts = false;
    const Permutation perm = elementwise_storage_order(info_, *stack, first, full, broadcasts);
    if (perm.empty()) return false;
    // With a broadcast operand, TensorIterator may lay the result out after another operand
    // than |full|: the path is taken only where the CPU's result has |full|'s strides.
    if (broadcasts && c10::IntArrayRef(cpu_output_strides(*entry_, *stack, first, info_.num_args,
                                                          full->sizes())) != full->strides())
      return false;
    const int64_t rank = full->dim();
    const Arguments original(stack->begin() + static_cast<ptrdiff_t>(first),
                             stack->begin() + static_cast<ptrdiff_t>(first + info_.num_args));
    for (size_t i = 0; i < info_.num_args; ++i) {
      c10::IValue& v = (*stack)[first + i];
      if ((info_.slots[i] == Slot::kTensor || info_.slots[i] == Slot::kOut) && v.isTensor() &&
          v.toTensor().defined() && v.toTensor().dim() > 0) {
        at::Tensor t = v.toTensor();
        while (t.dim() < rank) t = t.unsqueeze(0);  // a broadcast operand, to the full rank
        v = t.permute(perm);
      }
    }
    return run_permuted(stack, first, perm, original);
  }

  // sum and mean over a tensor laid out densely in another order than row-major add in the
  // order the CPU's loop does (eager/storage_order.h): the tensor is passed as its dense view in
  // memory order (a permute) and the dims renumbered, and a kept-dims result is permuted back.
  // (Qwen3's query and key norms' weight gradients sum a transposed product: summed in row-major
  // order, 12% of the elements were the CPU's.) False, the stack as it was, otherwise.
  bool run_reduction_in_storage_order(torch::jit::Stack* stack, size_t first) {
    c10::IValue& self = (*stack)[first];
    c10::IValue& dim_arg = (*stack)[first + 1];
    // Most sums are of row-major tensors: they take the ordinary path without reading the dims.
    if (!self.isTensor() || !self.toTensor().defined() || self.toTensor().dim() < 2 ||
        self.toTensor().is_contiguous())
      return false;
    const at::Tensor x = self.toTensor();
    std::optional<c10::IntArrayRef> dims;
    std::vector<int64_t> dim_list;
    if (!dim_arg.isNone()) {
      dim_list = dim_arg.toIntVector();
      dims = dim_list;
    }
    const Permutation perm = reduction_storage_order(x, dims);
    if (perm.empty()) return false;
    const Arguments original(stack->begin() + static_cast<ptrdiff_t>(first),
                             stack->begin() + static_cast<ptrdiff_t>(first + info_.num_args));
    self = x.permute(perm);
    if (dims && !dim_list.empty()) {
      for (int64_t& d : dim_list) {
        const int64_t wrapped = c10::maybe_wrap_dim(d, x.dim());
        d = std::find(perm.begin(), perm.end(), wrapped) - perm.begin();
      }
      dim_arg = c10::IValue(dim_list);
    }
    if (!run_permuted(stack, first, perm, original)) return false;
    // The CPU's result is row-major. A kept-dims one came back permuted: its kept dims are in
    // order (reduction_storage_order), so only its size-1 dims' strides are not the CPU's.
    c10::IValue& result = stack->back();
    if (result.isTensor() && result.toTensor().dim() == x.dim() &&
        result.toTensor().is_contiguous())
      result = result.toTensor().as_strided(result.toTensor().sizes(),
                                            row_major(result.toTensor().sizes()));
    return true;
  }

  using Arguments = c10::SmallVector<c10::IValue, 4>;

  // Runs the call whose arguments the stack holds permuted by |perm| (|original| as they came),
  // and permutes each fresh result of the full rank back, so that it has the CPU's strides. False,
  // the stack restored to |original|, when the call takes the ordinary path after all.
  bool run_permuted(torch::jit::Stack* stack, size_t first, const Permutation& perm,
                    const Arguments& original) {
    thread_local WordKey key;
    key.clear();
    key.push_back(reinterpret_cast<intptr_t>(entry_));
    c10::DeviceIndex device = -1;
    bool empty_input = false;
    std::shared_ptr<const CompiledOp> compiled;
    if (describe_call(info_, stack, first, key, device, empty_input)) {
      compiled = find_compiled(key);
      if (!compiled) {
        compiled = insert_compiled(key, compile(stack, first));
      } else if (compiled->executable) {
        count_memory_hit();
      }
    }
    if (!compiled || !compiled->executable || (empty_input && !entry_->zero_size) ||
        (writes_arguments_ && overlap_is_cpus_call(*stack, first))) {
      std::copy(original.begin(), original.end(), stack->begin() + static_cast<ptrdiff_t>(first));
      return false;
    }
    run(stack, first, compiled, device);
    Permutation inverse(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) inverse[static_cast<size_t>(perm[k])] = k;
    const size_t returns = stack->size() - info_.num_returns;
    for (size_t r = 0; r < info_.num_returns; ++r) {
      c10::IValue& v = (*stack)[returns + r];
      const int alias = info_.return_alias[r];
      if (alias >= 0) {
        v = original[static_cast<size_t>(alias)];  // the argument itself, not its view
      } else if (v.isTensor() && v.toTensor().defined() &&
                 v.toTensor().dim() == static_cast<int64_t>(perm.size())) {
        v = v.toTensor().permute(inverse);
      }
    }
    return true;
  }

  // Whether the calls of an op write arguments (in place or out=).
  static bool writes_arguments(const SchemaInfo& info) {
    for (size_t i = 0; i < info.num_args; ++i)
      if (info.mutable_input[i] || info.slots[i] == Slot::kOut) return true;
    return false;
  }

  // Whether a call's outputs share memory in a way the CPU kernel has its own rules for: an
  // output whose elements share memory (expanded), or one that overlaps an input other than
  // itself (partly; or fully, for a non-elementwise op). The CPU kernel then runs over the
  // device bytes and decides: TensorIterator raises "unsupported operation: ... refer to a
  // single memory location", cat and index_select refuse any overlap, masked_fill_ warns. A
  // foreach op compares index by index, as its per-tensor ops do.
  // Whether two views of one storage that TensorIterator cannot compare (either is not dense)
  // may share bytes. The CPU then accepts the call and reads each input element when its loop
  // reaches it, after earlier iterations wrote (x.mT[1:].add_(x.mT[:-1]) accumulates): only
  // its own kernel over the device bytes gives its result. The same view twice is
  // elementwise-safe.
  static bool extents_may_overlap(const at::Tensor& a, const at::Tensor& b) {
    if (!a.storage().is_alias_of(b.storage())) return false;
    if (a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
        a.strides() == b.strides() && a.dtype() == b.dtype())
      return false;
    auto extent = [](const at::Tensor& t) {
      int64_t lo = t.storage_offset(), hi = t.storage_offset();
      for (int64_t d = 0; d < t.dim(); ++d) {
        const int64_t span = (t.size(d) - 1) * t.stride(d);
        (span < 0 ? lo : hi) += span;
      }
      const int64_t item = static_cast<int64_t>(t.element_size());
      return std::pair<int64_t, int64_t>{lo * item, (hi + 1) * item};
    };
    const auto [a0, a1] = extent(a);
    const auto [b0, b1] = extent(b);
    return a0 < b1 && b0 < a1;
  }

  // Whether two indices of |t| may name one element (an as_strided view with strides (2, 3, 3)
  // does). TensorIterator calls that "too hard" and runs: its loop then reads an element it
  // already wrote, which only the CPU's kernel reproduces.
  static bool may_self_overlap(const at::Tensor& t) {
    if (t.is_non_overlapping_and_dense()) return false;  // cached on the tensor: the common case
    std::vector<std::pair<int64_t, int64_t>> dims;       // (|stride|, size) of dims longer than 1
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.size(d) > 1) dims.emplace_back(std::abs(t.stride(d)), t.size(d));
    std::sort(dims.begin(), dims.end());
    int64_t reach = 0;  // the farthest offset the smaller-stride dims reach
    for (const auto& [stride, size] : dims) {
      if (stride <= reach) return true;
      reach += stride * (size - 1);
    }
    return false;
  }

  // The broadcast shape of an elementwise call's tensor arguments: empty where they do not
  // broadcast (the CPU's call then raises its own error), none for a call on tensor lists
  // (foreach ops pair their lists' tensors by index).
  std::optional<c10::DimVector> elementwise_shape(const torch::jit::Stack& stack,
                                                  size_t first) const {
    c10::DimVector shape;
    for (size_t i = 0; i < info_.num_args; ++i) {
      if (info_.slots[i] == Slot::kTensorList) return std::nullopt;
      const c10::IValue& v = stack[first + i];
      if (info_.slots[i] != Slot::kTensor || !v.isTensor() || !v.toTensor().defined()) continue;
      try {
        shape = at::infer_size_dimvector(shape, v.toTensor().sizes());
      } catch (const c10::Error&) {
        return c10::DimVector{};
      }
    }
    return shape;
  }

  bool overlap_is_cpus_call(const torch::jit::Stack& stack, size_t first) const {
    bool found = false;
    // |out| is argument |out_arg|: the same tensor passed again as another argument (cat(
    // [x, y], out=x)) is an overlap, unless the op is elementwise.
    auto check = [&](const at::Tensor& out, size_t out_arg, std::optional<size_t> index) {
      if (found || !out.defined()) return;
      if (at::has_internal_overlap(out) == at::MemOverlap::Yes || may_self_overlap(out)) {
        found = true;
        return;
      }
      size_t arg = 0;
      auto against = [&](const at::Tensor& in) {
        if (found || !in.defined() || in.is_cpu()) return;
        if (in.is_same(out) && arg != out_arg && entry_->elementwise) {
          // An out= that is also an input is not resized: TensorIterator raises, with its text.
          const std::optional<c10::DimVector> shape = elementwise_shape(stack, first);
          if (!shape || out.sizes().equals(*shape)) return;
          found = shape->empty();  // the arguments do not broadcast: the CPU's call says so
          TORCH_CHECK(found, "output with shape ", out.sizes(),
                      " doesn't match the broadcast shape ", c10::IntArrayRef(*shape));
          return;
        }
        if (in.is_same(out) && arg == out_arg) return;
        const at::MemOverlapStatus s = at::get_overlap_status(out, in);
        found = s == at::MemOverlapStatus::Partial ||
                (s == at::MemOverlapStatus::Full && !entry_->elementwise) ||
                (s == at::MemOverlapStatus::TooHard && extents_may_overlap(out, in));
      };
      for (size_t i = 0; i < info_.num_args; ++i) {
        const c10::IValue& v = stack[first + i];
        arg = i;
        if (info_.slots[i] == Slot::kTensor && v.isTensor()) {
          against(v.toTensor());
        } else if (info_.slots[i] == Slot::kTensorList && v.isTensorList()) {
          const auto list = v.toTensorList();
          if (!index) {
            for (const at::Tensor& t : list) against(t);
          } else if (*index < list.size()) {
            against(list.get(*index));
          }
        }
      }
    };
    // Foreach and fused optimizer lists are aligned by index.
    const bool by_index =
        entry_->name.rfind("_foreach_", 0) == 0 || entry_->name.rfind("_fused_", 0) == 0;
    for (size_t i = 0; i < info_.num_args && !found; ++i) {
      if (!info_.mutable_input[i] && info_.slots[i] != Slot::kOut) continue;
      const c10::IValue& v = stack[first + i];
      // An out= that is part of a larger storage may be resized into its neighbours, which the
      // CPU checks after resizing (gather(ind.clone(), 0, ind[1:], out=ind[:1])): its call.
      // An elementwise op's out= already of the broadcast shape is not resized: it is written
      // where it lies, as an in-place op's view is.
      if (info_.slots[i] == Slot::kOut && v.isTensor() && v.toTensor().defined()) {
        const at::Tensor& out = v.toTensor();
        if (out.numel() > 0 && (out.storage_offset() != 0 || !out.is_contiguous() ||
                                out.storage().nbytes() != out.nbytes())) {
          const std::optional<c10::DimVector> shape =
              entry_->elementwise ? elementwise_shape(stack, first) : std::nullopt;
          if (!shape || !out.sizes().equals(*shape)) return true;
        }
      }
      if (v.isTensor()) {
        check(v.toTensor(), i, std::nullopt);
      } else if (v.isTensorList()) {
        const auto list = v.toTensorList();
        for (size_t j = 0; j < list.size(); ++j)
          check(list.get(j), i, by_index ? std::optional<size_t>(j) : std::nullopt);
      }
    }
    return found;
  }

  static hlo::TensorType scalar_type(const c10::IValue& v) {
    return hlo::TensorType(v.isDouble() ? DType::kF64 : (v.isBool() ? DType::kPred : DType::kI64),
                           {});
  }

  // The OpCall for the arguments on |stack| (built on a signature miss only).
  lowering::OpCall op_call(torch::jit::Stack* stack, size_t first) const {
    lowering::OpCall call;
    call.default_float = *to_hlo(c10::get_default_dtype_as_scalartype());
    for (size_t i = 0; i < info_.num_args; ++i)
      call.in_place = call.in_place || info_.mutable_input[i];
    // describe_call() accepted every dtype here.
    auto tensor_type = [this](const at::Tensor& t) {
      return hlo::TensorType(*to_hlo(t.scalar_type(), info_.complex_pairs), t.sizes().vec());
    };
    for (size_t i = 0; i < info_.num_args; ++i) {
      const c10::IValue& v = (*stack)[first + i];
      lowering::ArgSpec a;
      switch (info_.slots[i]) {
        case Slot::kTensor:
          if (v.isNone() || !v.toTensor().defined()) break;
          a.kind = lowering::ArgKind::kTensor;
          a.types = {tensor_type(v.toTensor())};
          a.stored_transposed =
              info_.reads_stored_transposed && BufferRef::is_stored_transposed(v.toTensor());
          if (v.toTensor().is_cpu()) {
            a.cpu_scalar_tensor = true;
            a.ints = {v.toTensor().unsafeGetTensorImpl()->is_wrapped_number() ? 1 : 0};
          }
          if (info_.mutable_input[i]) call.out_dtypes.push_back(a.types[0].dtype);
          break;
        case Slot::kTensorList:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kTensorList;
          for (const at::Tensor& t : v.toTensorList()) {
            a.types.push_back(tensor_type(t));
            if (info_.mutable_input[i]) call.out_dtypes.push_back(a.types.back().dtype);
          }
          break;
        case Slot::kOptionalTensorList:
          a.kind = lowering::ArgKind::kTensorList;
          for (const c10::IValue& e : v.toListRef()) {
            const bool present = !e.isNone() && e.toTensor().defined();
            a.ints.push_back(present ? 1 : 0);
            if (present) a.types.push_back(tensor_type(e.toTensor()));
          }
          break;
        case Slot::kScalar:
        case Slot::kRuntimeFloat:
        case Slot::kCheckedScalar:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kScalar;
          a.types = {scalar_type(v)};
          if (info_.slots[i] == Slot::kCheckedScalar) a.ints = {fitting_dtypes(v)};
          break;
        case Slot::kScalarList:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kScalarList;
          for (const c10::IValue& e : v.toListRef()) a.types.push_back(scalar_type(e));
          break;
        case Slot::kStaticScalar:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kFloat;
          a.real =
              v.isDouble() ? v.toDouble() : static_cast<double>(v.isInt() ? v.toInt() : v.toBool());
          a.ints = {v.isDouble() ? 0 : 1};
          break;
        case Slot::kInt:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kInt;
          a.ints = {v.toInt()};
          break;
        case Slot::kInts:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kInts;
          a.ints = v.toIntVector();
          break;
        case Slot::kBools:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kInts;
          for (bool x : v.toBoolList()) a.ints.push_back(x ? 1 : 0);
          break;
        case Slot::kFloat:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kFloat;
          a.real = v.toDouble();
          break;
        case Slot::kBool:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kBool;
          a.ints = {v.toBool() ? 1 : 0};
          break;
        case Slot::kString:
          if (v.isNone()) break;
          a.kind = lowering::ArgKind::kString;
          a.text = v.toStringRef();
          break;
        case Slot::kDType: {
          if (v.isNone()) break;
          const auto d = to_hlo(static_cast<at::ScalarType>(v.toInt()));
          if (!d) throw lowering::Unsupported("dtype argument");
          a.kind = lowering::ArgKind::kDType;
          a.dtype = *d;
          break;
        }
        case Slot::kOut:
          call.out_dtypes.push_back(*to_hlo(v.toTensor().scalar_type(), info_.complex_pairs));
          break;
        case Slot::kIgnoredIfNone:
        case Slot::kOutList:
          break;
      }
      call.args.push_back(std::move(a));
    }
    return call;
  }

  std::shared_ptr<const CompiledOp> compile(torch::jit::Stack* stack, size_t first) const {
    auto compiled = std::make_shared<CompiledOp>();
    compiled->entry = entry_;
    try {
      lowering::LoweredCall lowered = lowering::lower_call(*entry_, op_call(stack, first));
      compiled->written = lowered.written;
      compiled->complex = lowered.complex;
      for (int v : lowered.module.main.results)
        compiled->output_types.push_back(lowered.module.main.type(v));
      runtime::CacheResult r = runtime::CompileCache::global().get_or_compile(lowered.module);
      count_cache_result(r.source);
      compiled->executable = r.executable;
      compiled->modeled_seconds = r.executable->executable().modeled_time_s();
      compiled->aliasing = analyze_aliasing(r.executable->executable());
      compiled->module = std::make_shared<hlo::Module>(std::move(lowered.module));
    } catch (const lowering::Unsupported& e) {
      compiled->fallback_reason = e.what();
    } catch (const hlo::Error& e) {
      compiled->fallback_reason = e.what();
    }
    if (!compiled->executable && debug_enabled())
      std::fprintf(stderr, "[vtrn] %s falls back to the CPU: %s\n", qualified_name_.c_str(),
                   compiled->fallback_reason.c_str());
    return compiled;
  }

  // Allocates or resizes the outputs, queues the executable and leaves the returns on |stack|.
  void run(torch::jit::Stack* stack, size_t first,
           const std::shared_ptr<const CompiledOp>& compiled, c10::DeviceIndex device) {
    record_executed(qualified_name_.c_str(), seen_epoch_);
    const c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, device));
    Launch launch;
    launch.executable = compiled->executable;
    if (compiled->executable)
      launch.inputs.reserve(compiled->executable->executable().module.main.args.size());
    launch.outputs.reserve(compiled->written.size());
    // The call's outputs: mutable inputs and out= arguments, in argument order.
    c10::SmallVector<at::Tensor, 4> outputs;
    c10::SmallVector<bool, 4> resizable;
    c10::SmallVector<size_t, 8> first_output_of_arg(info_.num_args, 0);
    for (size_t i = 0; i < info_.num_args; ++i) {
      const c10::IValue& v = (*stack)[first + i];
      first_output_of_arg[i] = outputs.size();
      switch (info_.slots[i]) {
        case Slot::kTensor:
          if (v.isNone() || !v.toTensor().defined()) break;
          if (v.toTensor().is_cpu())
            launch.inputs.push_back(cpu_scalar_ref(v.toTensor()));
          else if (info_.reads_stored_transposed && BufferRef::is_stored_transposed(v.toTensor()))
            launch.inputs.push_back(BufferRef::of_stored_transposed(v.toTensor()));
          else
            launch.inputs.push_back(BufferRef::of_pairs(v.toTensor()));
          if (info_.mutable_input[i]) {
            outputs.push_back(v.toTensor());
            resizable.push_back(false);
          }
          break;
        case Slot::kTensorList:
          if (v.isNone()) break;
          for (const at::Tensor& t : v.toTensorList()) {
            launch.inputs.push_back(BufferRef::of_pairs(t));
            if (info_.mutable_input[i]) {
              outputs.push_back(t);
              resizable.push_back(false);
            }
          }
          break;
        case Slot::kOptionalTensorList:
          for (const c10::IValue& e : v.toListRef())
            if (!e.isNone() && e.toTensor().defined())
              launch.inputs.push_back(BufferRef::of_pairs(e.toTensor()));
          break;
        case Slot::kScalar:
        case Slot::kRuntimeFloat:
        case Slot::kCheckedScalar:
          if (!v.isNone()) launch.inputs.push_back(scalar_ref(v));
          break;
        case Slot::kScalarList:
          if (!v.isNone())
            for (const c10::IValue& e : v.toListRef()) launch.inputs.push_back(scalar_ref(e));
          break;
        case Slot::kOut:
          outputs.push_back(v.toTensor());
          resizable.push_back(true);
          break;
        default:
          break;
      }
    }
    const bool functional = outputs.empty();
    if (functional) {
      // A result the lowering does not compute (a gradient an output mask leaves out) is an
      // undefined tensor, as PyTorch's kernels return it.
      size_t k = 0;
      for (size_t j = 0; j < compiled->written.size(); ++j) {
        if (!compiled->written[j]) {
          outputs.emplace_back();
          continue;
        }
        const bool complex = compiled->complex[k];
        const hlo::TensorType& type = compiled->output_types[k++];
        // A complex64 result comes back as float32 pairs [..., 2].
        const c10::IntArrayRef dims(type.dims.data(), type.dims.size() - (complex ? 1 : 0));
        const auto options = at::TensorOptions()
                                 .dtype(complex ? at::kComplexFloat : to_torch(type.dtype))
                                 .device(c10::kPrivateUse1, device);
        // Inside a graph capture results stay dense, so that the ops reading views of them stay
        // in the module; the graph's outputs take their traced layout after it
        // (vtrn.compile's _view_or_copy).
        const std::vector<int64_t> strides =
            graph_capture_active()
                ? std::vector<int64_t>{}
                : cpu_output_strides(*entry_, *stack, first, info_.num_args, dims);
        // Straight from the allocator, not through the dispatcher: every functional op makes
        // its outputs here, on |device| (the guard above), in a dtype the lowering produced.
        const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
        c10::Allocator* allocator = at::GetAllocator(at::kPrivateUse1);
        outputs.push_back(
            strides.empty()
                ? at::detail::empty_generic(dims, allocator, keys,
                                            c10::typeMetaToScalarType(options.dtype()),
                                            std::nullopt)
                : at::detail::empty_strided_generic(dims, strides, allocator, keys,
                                                    c10::typeMetaToScalarType(options.dtype())));
        launch.outputs.push_back(BufferRef::of_pairs(outputs.back()));
        launch.outputs.back().fresh = true;
      }
    } else {
      TORCH_INTERNAL_ASSERT(compiled->written.size() == outputs.size(), entry_->name,
                            ": the lowering returned ", compiled->written.size(), " outputs for ",
                            outputs.size());
      size_t k = 0;
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (!compiled->written[j]) continue;
        const bool complex = compiled->complex[k];
        const hlo::TensorType& type = compiled->output_types[k++];
        const c10::IntArrayRef dims(type.dims.data(), type.dims.size() - (complex ? 1 : 0));
        at::Tensor& out = outputs[j];
        if (resizable[j] && is_factory(*entry_)) {
          resize_factory_output(*entry_, out, dims);
        } else if (resizable[j]) {
          at::native::resize_output(out, dims);
        } else {
          TORCH_CHECK(out.sizes() == dims, "output with shape ", out.sizes(),
                      " doesn't match the broadcast shape ", dims);
        }
        launch.outputs.push_back(BufferRef::of_pairs(out));
      }
    }
    bool any_output = false;
    for (const BufferRef& o : launch.outputs) any_output = any_output || o.numel() > 0;
    if (any_output) submit(compiled, std::move(launch), device, qualified_name_.c_str());
    torch::jit::drop(*stack, info_.num_args);
    if (info_.returns_list && info_.return_alias[0] < 0) {
      c10::List<at::Tensor> list;
      for (at::Tensor& t : outputs) list.push_back(std::move(t));
      stack->push_back(std::move(list));
      return;
    }
    size_t fresh = 0;
    for (size_t r = 0; r < info_.num_returns; ++r) {
      const int alias = info_.return_alias[r];
      stack->push_back(alias >= 0 ? outputs[first_output_of_arg[static_cast<size_t>(alias)]]
                                  : outputs[fresh++]);
    }
  }

  const lowering::OpLowering* entry_;
  std::string qualified_name_;
  MaskIndices mask_indices_;
  bool grouped_mm_;      // PyTorch's and TorchNeuron's argument checks first (grouped_mm_checks.h)
  bool reduction_;       // sum or mean over dims: summed in the input's storage order
  size_t sort_dim_arg_;  // a sort's dim argument (0: not a sort)
  std::once_flag schema_once_;
  SchemaInfo info_;
  bool writes_arguments_ = false;
  std::atomic<uint64_t> seen_epoch_{0};
};

}  // namespace

torch::CppFunction lowered_kernel(const lowering::OpLowering& e) {
  return torch::CppFunction::makeFromBoxedKernel(
      c10::BoxedKernel::makeFromFunctor(std::make_unique<LoweredKernel>(&e)));
}

}  // namespace vtrn::torch_adapter::eager
