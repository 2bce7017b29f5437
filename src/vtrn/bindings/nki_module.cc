// vtrn._nki: the NKI interpreter (nki_bindings.cc) as its own extension module. No torch.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_nki(py::module_& m);

PYBIND11_MODULE(_nki, m) {
  m.doc() = "vtrn's NKI interpreter: traced kernel programs, their checks, runs and time";
  bind_nki(m);
}
