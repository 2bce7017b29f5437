// vtrn._C: the Python face of the torch adapter. The device, stream, RNG, metrics and op
// tracking functions exchange plain values (ints, strings, bytes, dicts). The module is built
// with torch's own pybind11 and links torch_python, because the c10d backend it binds
// (distributed.h) hands Python objects of types torch's bindings know.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/util/Exception.h>

#include "vtrn/runtime/aten_sum.h"
#include "vtrn/runtime/compile_cache.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/torch/aten_attention.h"
#include "vtrn/torch/aten_batch_norm.h"
#include "vtrn/torch/aten_conv2d.h"
#include "vtrn/torch/aten_gelu.h"
#include "vtrn/torch/aten_group_norm.h"
#include "vtrn/torch/aten_layer_norm.h"
#include "vtrn/torch/aten_mkl.h"
#include "vtrn/torch/aten_softmax.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/distributed.h"
#include "vtrn/torch/eager/launch.h"
#include "vtrn/torch/eager/metrics.h"
#include "vtrn/torch/eager/op_registration.h"
#include "vtrn/torch/eager/pending_group.h"
#include "vtrn/torch/export.h"
#include "vtrn/torch/generator.h"
#include "vtrn/torch/op_tracking.h"
#include "vtrn/torch/stream.h"

namespace py = pybind11;
namespace adapter = vtrn::torch_adapter;

PYBIND11_MODULE(_C, m) {
  m.doc() = "vtrn's PyTorch adapter: the `neuron` PrivateUse1 device.";
  // c10 errors reach Python as torch's own bindings raise them: the exception type of the
  // c10::Error subclass (IndexError, NotImplementedError, torch.OutOfMemoryError...), the
  // message without the C++ backtrace unless TORCH_SHOW_CPP_STACKTRACES=1. pybind11 shares
  // translators between the modules built with torch's pybind11, so this one also serves
  // torch's functions: it must not change what they raise.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const c10::Error&) {
      torch::translate_exception_to_python(std::current_exception());
    }
  });
  // Compile-cache warnings (a rejected entry, an unsafe cache directory) happen inside an op;
  // TORCH_WARN hands them to Python as UserWarning when the op was called from Python.
  vtrn::runtime::CompileCache::set_process_warning_handler(
      [](const std::string& msg) { TORCH_WARN(msg); });
  // torch.exp & co. on float32, and float32 mm and bmm, compute with the CPU's own functions
  // (runtime/aten_unary.h, runtime/aten_matmul.h).
  const std::vector<std::string> aten_mkl_functions = adapter::install_aten_mkl();
  // float32 gelu and its gradient compute with ATen's own kernel (runtime/aten_gelu.h).
  adapter::install_aten_gelu();
  // So does float32 attention's output (runtime/aten_attention.h).
  adapter::install_aten_attention();
  // And float32 layer norm's gradients (runtime/aten_layer_norm_backward.h).
  adapter::install_aten_layer_norm();
  // And float32 2-D convolutions (runtime/aten_conv2d.h).
  adapter::install_aten_conv2d();
  // And float32 batch and group norms and their gradients (runtime/aten_batch_norm.h,
  // runtime/aten_group_norm.h).
  adapter::install_aten_batch_norm();
  adapter::install_aten_group_norm();
  // And float32 softmax and log_softmax over the last dim (runtime/aten_softmax.h).
  adapter::install_aten_softmax();
  m.def(
      "_aten_mkl_functions", [aten_mkl_functions] { return aten_mkl_functions; },
      "The MKL functions of libtorch_cpu the executor computes as ATen does with: VML's "
      "vmsExp, vmsLn, vmsSqrt, vmsSin, vmsCos, vmsTanh and sgemm_, where torch links MKL; "
      "else none.");
  m.def(
      "_set_aten_vector_lanes", [](int lanes) { vtrn::runtime::aten_sum::set_vector_lanes(lanes); },
      "The float lanes of the vectors of ATen's kernels registered for AVX-512 (softmax, sigmoid, "
      "silu, pow) on this CPU (8 for AVX2, 16 for AVX-512): the order of softmax's float32 row "
      "sums and where the activations' scalar tails start (runtime/aten_sum.h).");
  m.def("_aten_vector_lanes", [] { return vtrn::runtime::aten_sum::vector_lanes(); });
  m.def("device_count", [] { return adapter::device_count(); });
  m.def("current_device", [] { return static_cast<int>(adapter::current_device()); });
  m.def("set_device", [](int index) { adapter::set_device(static_cast<c10::DeviceIndex>(index)); });
  m.def(
      "adopt_process_device",
      [](int index) {
        return static_cast<int>(
            adapter::adopt_process_device(static_cast<c10::DeviceIndex>(index)));
      },
      "Chooses the device of the threads that chose none (once): the caller's own if it chose "
      "one, else |index|. Returns the process's device.");
  m.def("process_device_chosen", [] { return adapter::process_device_chosen(); });
  // Every call that may wait for queued work releases the GIL: the work may drop the last
  // reference to a tensor that Python also knows, which takes the GIL on the worker thread.
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  m.def(
      "synchronize",
      [](int index) {
        adapter::synchronize(static_cast<c10::DeviceIndex>(index));
        adapter::host_wait_all(static_cast<c10::DeviceIndex>(index));
      },
      no_gil);
  m.def("_stream_priority", [](int64_t stream_id) { return adapter::stream_priority(stream_id); });
  m.def("_stream_priority_range", [] { return adapter::stream_priority_range(); });
  m.def("manual_seed", [](int index, uint64_t seed) {
    adapter::manual_seed(static_cast<c10::DeviceIndex>(index), seed);
  });
  m.def("config_error", [] { return adapter::device_config_error(); });
  m.def("config", [] {
    const auto& c = adapter::device_config();
    py::dict d;
    d["instance"] = std::string(c.instance->name);
    d["chip"] = std::string(c.instance->chip->name);
    d["core"] = std::string(c.instance->chip->core_name);
    d["lnc"] = c.lnc;
    d["cores_per_node"] = c.cores_per_node;
    d["logical_cores_per_chip"] = c.instance->ranks_per_chip(c.lnc);
    d["visible_cores"] = c.visible_cores;
    d["bank_bytes"] = c.bank_bytes;
    d["cores_per_bank"] = c.cores_per_bank;
    return d;
  });
  m.def("get_rng_state", [](int index) {
    auto state = adapter::rng_state(static_cast<c10::DeviceIndex>(index));
    return py::bytes(reinterpret_cast<const char*>(state.data()), state.size());
  });
  m.def("set_rng_state", [](int index, const py::bytes& state) {
    const std::string bytes = state;
    adapter::set_rng_state(static_cast<c10::DeviceIndex>(index), bytes);
  });
  // (seed, offset) of |count| elements from the default generator of device |index|, as
  // int64 bit patterns: what a random kernel reserves when it is issued (compiled graphs pass
  // them to vtrn::philox_* ops).
  m.def("_reserve_philox", [](int index, std::uint64_t count) {
    const adapter::PhiloxRange r =
        adapter::reserve_philox(std::nullopt, static_cast<c10::DeviceIndex>(index), count);
    return py::make_tuple(static_cast<std::int64_t>(r.seed), static_cast<std::int64_t>(r.offset));
  });
  m.def("initial_seed",
        [](int index) { return adapter::initial_seed(static_cast<c10::DeviceIndex>(index)); });
  // Test hooks, like torch.cuda._sleep: queued work that takes time, or that fails.
  m.def(
      "_sleep",
      [](int index, double seconds) {
        // As torch.cuda._sleep's spin kernel: |seconds| of device time, on the GpSimd engines.
        adapter::enqueue(
            static_cast<c10::DeviceIndex>(index), "vtrn::_sleep",
            vtrn::runtime::ModeledWork::on(vtrn::runtime::WorkKind::kKernel,
                                           vtrn::runtime::EngineClass::kGpSimd, seconds),
            [seconds] { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); });
      },
      no_gil);
  // A gate: queued work that waits until Python opens it (deterministic stream tests).
  struct Gate {
    std::mutex mutex;
    std::condition_variable opened_cv;
    bool opened = false;
  };
  py::class_<Gate, std::shared_ptr<Gate>>(m, "_Gate").def(py::init<>()).def("open", [](Gate& g) {
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.opened = true;
    }
    g.opened_cv.notify_all();
  });
  m.def(
      "_enqueue_gate",
      [](int index, std::shared_ptr<Gate> gate) {
        adapter::enqueue(static_cast<c10::DeviceIndex>(index), "vtrn::_gate", [gate] {
          std::unique_lock<std::mutex> lock(gate->mutex);
          gate->opened_cv.wait(lock, [&] { return gate->opened; });
        });
      },
      no_gil);
  m.def(
      "_enqueue_failure",
      [](int index, const std::string& message) {
        adapter::enqueue(static_cast<c10::DeviceIndex>(index), "vtrn::_fail",
                         [message] { throw std::runtime_error(message); });
      },
      no_gil);
  adapter::bind_distributed(m);
  m.def("get_executed_ops", &adapter::executed_ops);
  m.def("get_fallback_ops", &adapter::fallback_ops);
  m.def("clear_op_tracking", &adapter::clear_op_tracking);
  m.def("_native_ops", &adapter::native_ops);
  m.def("_metrics", [] {
    const adapter::EagerMetrics e = adapter::eager_metrics();
    py::dict d;
    d["compiles"] = e.compiles;
    d["memory_cache_hits"] = e.memory_cache_hits;
    d["disk_cache_hits"] = e.disk_cache_hits;
    d["executed_kernels"] = e.executed_kernels;
    d["fused_groups"] = e.fused_groups;
    d["fused_ops"] = e.fused_ops;
    d["fallbacks"] = e.fallbacks;
    d["skipped_kernels"] = e.skipped_kernels;
    d["modeled_device_time_us"] = e.modeled_device_time_us;
    d["planned_scratch_bytes"] = e.planned_scratch_bytes;
    d["intermediate_bytes"] = e.intermediate_bytes;
    return d;
  });
  m.def("_reset_metrics", &adapter::reset_eager_metrics);
  m.def("_clock", [](int index) {
    const vtrn::runtime::ClockUsage u =
        adapter::device_clock(static_cast<c10::DeviceIndex>(index)).usage();
    py::dict streams;
    for (const vtrn::runtime::StreamUsage& su : u.streams) {
      py::dict busy;
      for (int e = 0; e < vtrn::runtime::kEngineClassCount; ++e)
        busy[py::str(std::string(vtrn::runtime::engine_class_name(
            static_cast<vtrn::runtime::EngineClass>(e))))] = su.busy[e] * 1e6;
      py::dict d;
      d["busy_us"] = busy;
      d["busy_total_us"] = su.busy_s * 1e6;
      d["idle_us"] = su.idle_s * 1e6;
      d["end_us"] = su.end_s * 1e6;
      streams[py::int_(su.stream)] = d;
    }
    py::dict out;
    out["origin_us"] = u.origin_s * 1e6;
    out["end_us"] = u.end_s * 1e6;
    out["span_us"] = u.span_s() * 1e6;
    out["streams"] = streams;
    return out;
  });
  m.def("_reset_clock",
        [](int index) { adapter::device_clock(static_cast<c10::DeviceIndex>(index)).reset(); });
  m.def("_event_wall_elapsed_ms", [](int64_t start, int64_t end) {
    TORCH_CHECK(start != 0 && end != 0,
                "wall_elapsed_time needs both events recorded; record them on a neuron stream "
                "first.");
    try {
      return reinterpret_cast<const adapter::NeuronEvent*>(end)->elapsed_ms_since(
          *reinterpret_cast<const adapter::NeuronEvent*>(start));
    } catch (const std::logic_error& e) {
      TORCH_CHECK(false, e.what());
    }
  });
  m.def("_shapes_only", [] { return adapter::shapes_only(); });
  m.def("_host_reads", [] { return adapter::host_reads(); });
  m.def("_tensor_flops", [] { return adapter::eager::launched_tensor_flops(); });
  m.def("_executor_threads", [] { return vtrn::runtime::executor_threads(); });
  m.def("_compile_only", &adapter::compile_only);
  m.def("_set_compile_only", &adapter::set_compile_only);
  m.def("_begin_graph_capture", &adapter::begin_graph_capture);
  m.def("_end_graph_capture", &adapter::end_graph_capture, no_gil);
  m.def("_graph_capture_active", &adapter::graph_capture_active);
  m.def("_start_export_recording", &adapter::start_export_recording);
  m.def("_finish_export_recording", &adapter::finish_export_recording);
}
