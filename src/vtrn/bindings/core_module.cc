// vtrn._core: the one torch-free extension module. It links the shared library libvtrn_core
// (the layers hw ... runtime), which vtrn._C links too, so that a process has one of each: one
// compile cache, whether an executable is compiled through vtrn._core.hlo or by the device.
//
// Its submodules are registered in sys.modules, so that `import vtrn._core.hlo` works.
#include <pybind11/pybind11.h>

#include <string>

#include "vtrn/bindings/bindings.h"

namespace py = pybind11;

namespace {

// A submodule, importable by its dotted name; its bind_* function writes its docstring.
py::module_ submodule(py::module_& core, const char* name) {
  py::module_ sub = core.def_submodule(name);
  py::module_::import("sys").attr("modules")[py::str("vtrn._core." + std::string(name))] = sub;
  return sub;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "vtrn's torch-free native core: topology, nki, plan and hlo";
  py::module_ topology = submodule(m, "topology");
  vtrn::bindings::bind_topology(topology);
  py::module_ nki = submodule(m, "nki");
  vtrn::bindings::bind_nki(nki);
  py::module_ plan = submodule(m, "plan");
  vtrn::bindings::bind_plan(plan);
  py::module_ hlo = submodule(m, "hlo");
  vtrn::bindings::bind_hlo(hlo);
}
