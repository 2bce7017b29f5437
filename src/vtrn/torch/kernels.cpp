// The native ATen kernels of the `neuron` device and the CPU fallback for every other op.
//
// Device memory is host memory, so each kernel runs PyTorch's CPU implementation on a CPU
// tensor that aliases the device bytes (no copy). Kernels that compute are queued on the
// current stream; host reads wait for it. Later issues replace the CPU implementations with
// lowered, compiled executables.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include <ATen/EmptyTensor.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/fallback.h"
#include "vtrn/torch/generator.h"
#include "vtrn/torch/op_tracking.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

// Records the op once per tracking epoch; |name| must be a string literal.
#define VTRN_RECORD_OP(name)                         \
  do {                                               \
    static std::atomic<uint64_t> vtrn_seen_epoch{0}; \
    record_executed("aten::" name, vtrn_seen_epoch); \
  } while (false)

/// Gives a CPU alias the conjugate/negative view bits of the device tensor it stands for, so
/// CPU kernels see the logical values.
at::Tensor with_view_bits(at::Tensor alias, bool conj, bool neg) {
  if (conj) alias = at::_conj(alias);
  if (neg) alias = at::_neg_view(alias);
  return alias;
}

/// A CPU tensor over the same bytes as |t| (device memory is host memory).
at::Tensor cpu_alias(const at::Tensor& t) {
  return with_view_bits(
      at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU)),
      t.is_conj(), t.is_neg());
}

/// What queued work needs to find a tensor's bytes later: its storage (kept alive) and the
/// metadata as it was at enqueue time, so later set_/as_strided_ on the tensor cannot move it.
struct DeviceView {
  c10::Storage storage;
  c10::SmallVector<int64_t, 6> sizes;
  c10::SmallVector<int64_t, 6> strides;
  int64_t offset;
  at::ScalarType dtype;
  bool conj, neg;  // conjugate / negative view bits

  explicit DeviceView(const at::Tensor& t)
      : storage(t.storage()),
        sizes(t.sizes().begin(), t.sizes().end()),
        strides(t.strides().begin(), t.strides().end()),
        offset(t.storage_offset()),
        dtype(t.scalar_type()),
        conj(t.is_conj()),
        neg(t.is_neg()) {}

  at::Tensor cpu() const {
    auto* base = static_cast<char*>(storage.mutable_data()) +
                 offset * static_cast<int64_t>(c10::elementSize(dtype));
    return with_view_bits(at::from_blob(base, sizes, strides, at::TensorOptions().dtype(dtype)),
                          conj, neg);
  }
};

c10::DeviceIndex index_of(const at::Tensor& t) { return t.device().index(); }

void check_dtype_supported(at::ScalarType dtype) {
  if (c10::isFloat8Type(dtype)) {
    const auto& config = device_config();
    TORCH_CHECK(config.instance->chip->name == "Trainium3", "FP8 requires Trainium3: ", dtype,
                " tensors cannot be created on ", config.describe(),
                ". Set NEURON_RT_FAKE_INSTANCE_TYPE to a trn3 instance, or use bfloat16.");
  }
}

void check_neuron_factory_args(c10::Device device, std::optional<c10::Layout> layout,
                               std::optional<bool> pin_memory, at::ScalarType dtype) {
  TORCH_CHECK(device.is_privateuseone(), "Expected neuron device, got ", device.str());
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron tensors must be strided; got layout ", c10::layout_or_default(layout),
              ". Create the tensor on cpu, or use torch.strided.");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              "pin_memory=True applies to cpu tensors only; a neuron tensor is device memory. "
              "Pin the cpu tensor you copy from instead.");
  check_dtype_supported(dtype);
}

//===----------------------------------------------------------------------===//
// Factories, views and metadata (no queued work)
//===----------------------------------------------------------------------===//

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  VTRN_RECORD_OP("empty.memory_format");
  const c10::Device target = c10::device_or_default(device);
  check_neuron_factory_args(target, layout, pin_memory, c10::dtype_or_default(dtype));
  const c10::DeviceGuard guard(target);
  return at::detail::empty_generic(size, at::GetAllocator(at::kPrivateUse1),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  VTRN_RECORD_OP("empty_strided");
  const c10::Device target = c10::device_or_default(device);
  check_neuron_factory_args(target, layout, pin_memory, c10::dtype_or_default(dtype));
  const c10::DeviceGuard guard(target);
  return at::detail::empty_strided_generic(size, stride, at::GetAllocator(at::kPrivateUse1),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  VTRN_RECORD_OP("as_strided");
  return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  VTRN_RECORD_OP("view");
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  VTRN_RECORD_OP("_reshape_alias");
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  VTRN_RECORD_OP("resize_");
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  const int64_t numel = c10::multiply_integers(sizes);
  const uint64_t needed =
      static_cast<uint64_t>(self.storage_offset() + numel) * self.element_size();
  // Growing reallocates the storage: queued work on the old bytes must finish first.
  if (self.storage().nbytes() < needed) synchronize(index_of(self));
  const c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, sizes, memory_format);
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  VTRN_RECORD_OP("set_.source_Tensor");
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  VTRN_RECORD_OP("set_.source_Storage");
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_storage_offset(at::Tensor& self, at::Storage source, c10::SymInt offset,
                                      c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  VTRN_RECORD_OP("set_.source_Storage_storage_offset");
  return at::cpu::set__symint(self, std::move(source), std::move(offset), size, stride);
}

// Queued work holds its tensors' storage until it has run, so a tensor used on another
// stream is never freed early; there is nothing to record.
void record_stream(at::Tensor& self, c10::Stream stream) {
  VTRN_RECORD_OP("record_stream");
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a neuron stream, got ", stream.device_type());
}

//===----------------------------------------------------------------------===//
// Copies, fills and host reads
//===----------------------------------------------------------------------===//

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  VTRN_RECORD_OP("_copy_from");
  TORCH_CHECK(self.defined() && dst.defined(),
              "_copy_from: source and destination must be defined");
  if (self.numel() == 0) return dst;
  if (!self.is_cpu() && !dst.is_cpu()) {
    // neuron -> neuron: queued on the destination's stream, after the source's producer.
    if (index_of(self) != index_of(dst)) sync_current_stream(index_of(self));
    enqueue(index_of(dst), "aten::_copy_from", [src = DeviceView(self), out = DeviceView(dst)] {
      at::Tensor out_cpu = out.cpu();
      at::native::copy_(out_cpu, src.cpu(), false);
    });
  } else if (!dst.is_cpu()) {
    // cpu -> neuron. A non-blocking copy from pinned memory is queued; otherwise the host
    // buffer may be reused as soon as copy_ returns, so copy now, after queued work on dst.
    if (non_blocking && self.is_pinned()) {
      enqueue(index_of(dst), "aten::_copy_from", [src = self, out = DeviceView(dst)] {
        at::Tensor out_cpu = out.cpu();
        at::native::copy_(out_cpu, src, false);
      });
    } else {
      sync_current_stream(index_of(dst));
      at::Tensor dst_cpu = cpu_alias(dst);
      at::native::copy_(dst_cpu, self, false);
    }
  } else {
    // neuron -> cpu: a host read.
    sync_current_stream(index_of(self));
    at::Tensor dst_cpu = dst;
    at::native::copy_(dst_cpu, cpu_alias(self), false);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  VTRN_RECORD_OP("_copy_from_and_resize");
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  VTRN_RECORD_OP("fill_.Scalar");
  if (self.numel() == 0) return self;
  enqueue(index_of(self), "aten::fill_.Scalar", [out = DeviceView(self), value] {
    at::Tensor alias = out.cpu();
    at::native::fill_(alias, value);
  });
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  VTRN_RECORD_OP("fill_.Tensor");
  TORCH_CHECK(value.dim() == 0,
              "fill_ only supports a 0-dimension value tensor, but got a tensor with ", value.dim(),
              " dimensions.");
  if (self.numel() == 0) return self;
  if (value.is_cpu()) return fill_scalar(self, value.item());
  if (index_of(value) != index_of(self)) sync_current_stream(index_of(value));
  enqueue(index_of(self), "aten::fill_.Tensor", [out = DeviceView(self), v = DeviceView(value)] {
    at::Tensor alias = out.cpu();
    at::native::fill_(alias, v.cpu());
  });
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  VTRN_RECORD_OP("zero_");
  if (self.numel() == 0) return self;
  enqueue(index_of(self), "aten::zero_", [out = DeviceView(self)] {
    at::Tensor alias = out.cpu();
    at::native::zero_(alias);
  });
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  VTRN_RECORD_OP("_local_scalar_dense");
  sync_current_stream(index_of(self));
  return at::native::_local_scalar_dense_cpu(cpu_alias(self));
}

//===----------------------------------------------------------------------===//
// Random ops: Philox counters reserved in program order, values generated by queued work
//===----------------------------------------------------------------------===//

struct PhiloxDraws {
  uint32_t a, b;
};

PhiloxDraws philox(const PhiloxRange& range, uint64_t i) {
  at::Philox4_32 engine(range.seed, /*subsequence=*/0, /*offset=*/range.offset + i);
  const uint32_t a = engine();
  const uint32_t b = engine();
  return {a, b};
}

/// Uniform in [0, 1) with 24 random bits (53 for double), as PyTorch's CPU kernels draw.
double uniform01(const PhiloxDraws& d, bool is_double) {
  if (is_double) {
    const uint64_t bits = (static_cast<uint64_t>(d.b) << 32 | d.a) & ((1ull << 53) - 1);
    return std::ldexp(static_cast<double>(bits), -53);
  }
  return std::ldexp(static_cast<double>(d.a & ((1u << 24) - 1)), -24);
}

/// Fills |self| element by element (in logical order) with gen(i, draws).
template <typename Gen>
void queue_random_fill(at::Tensor& self, const char* op,
                       const std::optional<at::Generator>& generator, Gen gen,
                       at::ScalarType compute_dtype) {
  if (self.numel() == 0) return;
  const PhiloxRange range =
      reserve_philox(generator, index_of(self), static_cast<uint64_t>(self.numel()));
  enqueue(index_of(self), op, [out = DeviceView(self), range, gen, compute_dtype] {
    at::Tensor alias = out.cpu();
    const int64_t n = alias.numel();
    at::Tensor values = at::empty({n}, at::TensorOptions().dtype(compute_dtype));
    if (compute_dtype == at::kDouble) {
      double* p = values.data_ptr<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = gen(philox(range, i), true);
    } else if (compute_dtype == at::kFloat) {
      float* p = values.data_ptr<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(gen(philox(range, i), false));
    } else {
      int64_t* p = values.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(gen(philox(range, i), false));
    }
    at::native::copy_(alias, values.view(alias.sizes()), false);
  });
}

at::ScalarType float_compute_dtype(const at::Tensor& self, const char* op) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), op,
              " on neuron expects a floating-point tensor, got ", self.scalar_type(), ".");
  return self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor& uniform(at::Tensor& self, double from, double to,
                    std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("uniform_");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  queue_random_fill(
      self, "aten::uniform_", generator,
      [from, to](const PhiloxDraws& d, bool dbl) { return from + uniform01(d, dbl) * (to - from); },
      float_compute_dtype(self, "uniform_"));
  return self;
}

at::Tensor& normal(at::Tensor& self, double mean, double std,
                   std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("normal_");
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  // Box-Muller on the element's two draws.
  queue_random_fill(
      self, "aten::normal_", generator,
      [mean, std](const PhiloxDraws& d, bool) {
        const double u1 = 1.0 - std::ldexp(static_cast<double>(d.a), -32);  // (0, 1]
        const double u2 = std::ldexp(static_cast<double>(d.b), -32);
        return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      },
      float_compute_dtype(self, "normal_"));
  return self;
}

at::ScalarType draw_dtype(const at::Tensor& self) {
  return at::isFloatingType(self.scalar_type()) ? float_compute_dtype(self, "random") : at::kLong;
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("bernoulli_.float");
  TORCH_CHECK(0.0 <= p && p <= 1.0, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  queue_random_fill(
      self, "aten::bernoulli_.float", generator,
      [p](const PhiloxDraws& d, bool) { return uniform01(d, false) < p ? 1.0 : 0.0; },
      draw_dtype(self));
  return self;
}

/// Draws integers in [from, from + range) (range 0: the full 64-bit range).
at::Tensor& random_in(at::Tensor& self, const char* op, int64_t from, uint64_t range,
                      std::optional<at::Generator> generator) {
  queue_random_fill(
      self, op, generator,
      [from, range](const PhiloxDraws& d, bool) {
        const uint64_t bits = static_cast<uint64_t>(d.b) << 32 | d.a;
        return static_cast<double>(from + static_cast<int64_t>(range == 0 ? bits : bits % range));
      },
      at::isFloatingType(self.scalar_type()) ? at::kDouble : at::kLong);
  return self;
}

/// The largest value random_() draws for |dtype| (inclusive): 2^digits for floating types,
/// the type's maximum for integers, as PyTorch defines it.
int64_t random_max(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBool:
      return 1;
    case at::kByte:
      return 255;
    case at::kChar:
      return 127;
    case at::kShort:
      return 32767;
    case at::kInt:
      return 2147483647;
    case at::kLong:
      return std::numeric_limits<int64_t>::max();
    case at::kHalf:
      return 1 << 11;
    case at::kBFloat16:
      return 1 << 8;
    case at::kFloat:
      return 1 << 24;
    case at::kDouble:
      return int64_t{1} << 53;
    default:
      TORCH_CHECK(false, "random_ on neuron does not support ", dtype);
  }
}

at::Tensor& random_full(at::Tensor& self, std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("random_");
  const int64_t max = random_max(self.scalar_type());
  return random_in(self, "aten::random_", 0,
                   max == std::numeric_limits<int64_t>::max() ? 0 : max + 1, generator);
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("random_.to");
  TORCH_CHECK(to > 0, "random_ expects 'from' to be less than 'to', but got from=0 >= to=", to);
  return random_in(self, "aten::random_.to", 0, static_cast<uint64_t>(to), generator);
}

at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                        std::optional<at::Generator> generator) {
  VTRN_RECORD_OP("random_.from");
  const int64_t upper = to.has_value() ? *to : random_max(self.scalar_type());
  TORCH_CHECK(from < upper, "random_ expects 'from' to be less than 'to', but got from=", from,
              " >= to=", upper);
  const uint64_t range =
      static_cast<uint64_t>(upper) - static_cast<uint64_t>(from) + (to.has_value() ? 0 : 1);
  return random_in(self, "aten::random_.from", from, range, generator);
}

at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> generator, at::Tensor& out) {
  VTRN_RECORD_OP("randperm.generator_out");
  TORCH_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  at::native::resize_(out, {n}, std::nullopt);
  if (n == 0) return out;
  const PhiloxRange range = reserve_philox(generator, index_of(out), static_cast<uint64_t>(n));
  enqueue(index_of(out), "aten::randperm.generator_out", [dst = DeviceView(out), range, n] {
    std::vector<uint64_t> keys(n);
    for (int64_t i = 0; i < n; ++i) {
      const PhiloxDraws d = philox(range, static_cast<uint64_t>(i));
      keys[i] = static_cast<uint64_t>(d.b) << 32 | d.a;
    }
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return keys[x] < keys[y]; });
    at::Tensor alias = dst.cpu();
    at::native::copy_(alias, at::from_blob(order.data(), {n}, at::TensorOptions().dtype(at::kLong)),
                      false);
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  VTRN_RECORD_OP("native_dropout");
  TORCH_CHECK(0.0 <= p && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  const bool drop = train.value_or(true) && p > 0.0;
  if (input.numel() == 0) return {output, mask};
  const PhiloxRange range =
      drop ? reserve_philox(std::nullopt, index_of(input), static_cast<uint64_t>(input.numel()))
           : PhiloxRange{0, 0};
  enqueue(index_of(input), "aten::native_dropout",
          [in = DeviceView(input), out = DeviceView(output), m = DeviceView(mask), range, p, drop] {
            at::Tensor x = in.cpu();
            at::Tensor y = out.cpu();
            at::Tensor keep = m.cpu();
            const int64_t n = x.numel();
            at::Tensor keep_values = at::empty({n}, at::TensorOptions().dtype(at::kBool));
            bool* k = keep_values.data_ptr<bool>();
            for (int64_t i = 0; i < n; ++i) k[i] = !drop || uniform01(philox(range, i), false) >= p;
            at::native::copy_(keep, keep_values.view(keep.sizes()), false);
            const double scale = drop ? (p == 1.0 ? 0.0 : 1.0 / (1.0 - p)) : 1.0;
            at::Tensor result = x.mul(keep).mul_(scale);
            at::native::copy_(y, result, false);
          });
  return {output, mask};
}

//===----------------------------------------------------------------------===//
// The CPU fallback
//===----------------------------------------------------------------------===//

bool fallback_is_error() {
  static const bool value = [] {
    const char* v = std::getenv("VTRN_FALLBACK");
    return v != nullptr && std::strcmp(v, "error") == 0;
  }();
  return value;
}

template <typename Fn>
void for_each_tensor_arg(torch::jit::Stack* stack, size_t first, size_t count, Fn fn) {
  for (size_t i = first; i < first + count; ++i) {
    c10::IValue& value = (*stack)[i];
    if (value.isTensor()) {
      fn(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) fn(t);
    } else if (value.isOptionalTensorList()) {
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorList()) {
        if (t.has_value()) fn(*t);
      }
    }
  }
}

void warn_float64_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    TORCH_WARN(
        "neuron computes float64 as float32 and stores the result as float64, as Trainium does: "
        "expect "
        "float32 precision. Use float32 explicitly to silence this warning.");
  });
}

// Trainium has no float64 arithmetic: float64 inputs are computed as float32 and the results
// stored back as float64. Mutated float64 arguments get the float32 result written back.
void fallback_as_float32(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t first) {
  const auto& arguments = op.schema().arguments();
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (float64 original, float32 stand-in)
  for (size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue& value = (*stack)[first + i];
    if (!value.isTensor()) continue;
    const at::Tensor& t = value.toTensor();
    if (!t.defined() || t.is_cpu() || t.scalar_type() != at::kDouble) continue;
    at::Tensor stand_in = t.to(at::kFloat);
    const auto* alias = arguments[i].alias_info();
    if (alias != nullptr && alias->isWrite()) written.emplace_back(t, stand_in);
    value = stand_in;
  }
  at::native::cpu_fallback(op, stack);
  for (auto& [original, stand_in] : written) original.copy_(stand_in);
  const size_t returns = op.schema().returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    c10::IValue& value = (*stack)[i];
    if (!value.isTensor()) continue;
    const at::Tensor& t = value.toTensor();
    bool replaced = false;
    for (auto& [original, stand_in] : written) {
      if (t.is_same(stand_in)) {
        value = original;
        replaced = true;
        break;
      }
    }
    if (!replaced && t.defined() && t.scalar_type() == at::kFloat) value = t.to(at::kDouble);
  }
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  count_fallback();
  const std::string name = c10::toString(op.operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(
      !fallback_is_error(), "CPU fallback is disabled for operation=", name,
      ": VTRN_FALLBACK=error makes an op without a native neuron implementation an error. "
      "Unset VTRN_FALLBACK to run it on the CPU.");
  const size_t num_args = op.schema().arguments().size();
  const size_t first = stack->size() - num_args;
  // The CPU reads device memory directly: wait for the work that produces the inputs.
  bool has_float64 = false;
  std::vector<c10::DeviceIndex> devices;
  for_each_tensor_arg(stack, first, num_args, [&](const at::Tensor& t) {
    if (!t.defined() || t.is_cpu()) return;
    if (std::find(devices.begin(), devices.end(), index_of(t)) == devices.end())
      devices.push_back(index_of(t));
    has_float64 = has_float64 || t.scalar_type() == at::kDouble;
  });
  for (c10::DeviceIndex d : devices) sync_current_stream(d);
  record_fallback(name);
  if (has_float64) {
    warn_float64_once();
    fallback_as_float32(op, stack, first);
  } else {
    at::native::cpu_fallback(op, stack);
  }
}

namespace {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("record_stream", record_stream);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", zero);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("uniform_", uniform);
  m.impl("normal_", normal);
  m.impl("bernoulli_.float", bernoulli_float);
  m.impl("random_", random_full);
  m.impl("random_.to", random_to);
  m.impl("random_.from", random_from);
  m.impl("randperm.generator_out", randperm_out);
  m.impl("native_dropout", native_dropout);
}

// The copies handle the conjugate and negative bits themselves (the aliases carry them).
// Without this the Conjugate key's fallback would materialize the source through clone(),
// which copies through _copy_from again, forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace
}  // namespace vtrn::torch_adapter
