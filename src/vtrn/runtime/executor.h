// The executor: runs a compiled executable on host buffers, kernel by kernel.
//
// Fused kernels run as loops over 1024-element chunks: each op of the kernel is one tight loop
// over the chunk (vectorized by the C++ compiler), so intermediates stay in cache. float16 and
// bfloat16 are computed in float32 and rounded to nearest even on every store (each op's result
// is rounded to its dtype, so fusion does not change results); reductions accumulate in
// float32 (float64 for f64, int64 for integers), float sums in a fixed pairwise tree
// (kernels_reduce.h). dot_general runs through OpenBLAS sgemm/dgemm.
// Large kernels are split over the thread budget (executor_threads()).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vtrn/compiler/executable.h"

namespace vtrn::runtime {

/// A host tensor: its type and its bytes (row-major, little-endian, dtype storage).
struct HostTensor {
  hlo::TensorType type;
  std::vector<std::uint8_t> data;

  HostTensor() = default;
  explicit HostTensor(hlo::TensorType t)
      : type(std::move(t)), data(static_cast<std::size_t>(type.byte_size())) {}
  /// Elements from doubles (bf16/f16 rounded to nearest even).
  static HostTensor from_doubles(hlo::TensorType t, const std::vector<double>& values);
  double get(std::int64_t i) const {
    return hlo::load_double(type.dtype, data.data() + i * hlo::dtype_size(type.dtype));
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
};

/// Raised when an executable cannot run (unsupported dtype for an op, unknown custom call,
/// wrong input count or type).
class ExecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A custom_call implementation: reads |inputs| and writes every output buffer.
struct CustomCallArgs {
  const std::string& backend_config;
  const std::vector<hlo::TensorType>& input_types;
  const std::vector<const void*>& inputs;
  const std::vector<hlo::TensorType>& output_types;
  const std::vector<void*>& outputs;
};
using CustomCallFn = std::function<void(const CustomCallArgs&)>;
/// Registers |fn| for `stablehlo.custom_call @target` (replacing an earlier one).
void register_custom_call(const std::string& target, CustomCallFn fn);

class LoadedExecutable {
 public:
  /// Prepares |exe| to run: builds the fused loops. Constants are expanded on the first run(),
  /// so loading an executable that is never run keeps splat constants one element long.
  explicit LoadedExecutable(compiler::Executable exe);
  ~LoadedExecutable();

  const compiler::Executable& executable() const;
  std::vector<hlo::TensorType> input_types() const;
  std::vector<hlo::TensorType> output_types() const;

  /// Runs with one buffer per input and output, each of the declared type. Thread-safe.
  /// Intermediates live in one arena per run, at the buffer assignment's offsets. An output
  /// buffer that overlaps an input is written in place only when it is that very input and
  /// the assignment allows it (BufferAssignment::can_write_over); otherwise the result is
  /// computed in scratch and copied in after every kernel has run, so the results are the
  /// same as with separate buffers.
  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const;
  /// As above, with |input_strides| empty or one entry per input: nullptr for a dense input,
  /// else the element strides (non-negative) of each dim of its declared type, the buffer
  /// pointing at its first element: a view of a larger buffer (a slice with a step, a
  /// transpose, an expand). The fused loops read such a view where it lies; an input that any
  /// other kernel reads, or that is returned, is first copied to a dense buffer.
  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           std::span<const std::int64_t* const> input_strides) const;
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs) const;
  /// Runs with the module's donations: each result the buffer assignment gives a donated input
  /// (BufferAssignment::donor_of_result) is computed in place in that input's storage, which
  /// it takes over; the other results get storage of their own.
  std::vector<HostTensor> run_donating(std::vector<HostTensor> inputs) const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// The thread budget the executor shares with its libraries: its pool splits large kernels
/// into this many parts (the calling thread included), and OpenBLAS and oneDNN use as many
/// threads. VTRN_NUM_THREADS fixes it; otherwise it starts at OMP_NUM_THREADS (else the number
/// of CPUs) and follows set_executor_threads(). Always at least 1.
int executor_threads();

/// Sets the budget (values below 1 count as 1); ignored when VTRN_NUM_THREADS is set. The
/// torch adapter calls it with torch.get_num_threads().
void set_executor_threads(int n);

}  // namespace vtrn::runtime
