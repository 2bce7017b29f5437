// vtrn._C: the Python face of the torch adapter. Only plain values cross this boundary (ints,
// strings), so the module needs no torch_python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/op_tracking.h"

namespace py = pybind11;
namespace adapter = vtrn::torch_adapter;

PYBIND11_MODULE(_C, m) {
    m.doc() = "vtrn's PyTorch adapter: the `neuron` PrivateUse1 device.";
    // Python users see the message without the C++ backtrace; a bad device index is a
    // ValueError, as on TorchNeuron.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const c10::IndexError& e) {
            PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
        } catch (const c10::Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
        }
    });
    m.def("device_count", [] { return static_cast<int>(adapter::device_count()); });
    m.def("current_device", [] { return static_cast<int>(adapter::current_device()); });
    m.def("set_device", [](int index) { adapter::set_device(static_cast<c10::DeviceIndex>(index)); });
    m.def("synchronize", [](int index) { adapter::synchronize(static_cast<c10::DeviceIndex>(index)); });
    m.def("manual_seed", [](int index, uint64_t seed) {
        adapter::manual_seed(static_cast<c10::DeviceIndex>(index), seed);
    });
    m.def("get_executed_ops", &adapter::executed_ops);
    m.def("get_fallback_ops", &adapter::fallback_ops);
    m.def("clear_op_tracking", &adapter::clear_op_tracking);
}
