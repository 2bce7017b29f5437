// The torch-free extension module vtrn._core and its submodules, one per bound layer group.
// Each bind_* function fills one submodule; core_module.cc creates them. Results come back as
// plain dicts and lists; bad input raises ValueError with the C++ layer's message.
#pragma once

#include <pybind11/pybind11.h>

namespace vtrn::bindings {

/// vtrn._core.topology: instances, clusters, meshes, routes and collective times (hw/topo/coll).
void bind_topology(pybind11::module_& m);
/// vtrn._core.nki: the NKI interpreter (programs, checks, runs, modeled time).
void bind_nki(pybind11::module_& m);
/// vtrn._core.plan: the planner (per-rank memory, step time, layout search).
void bind_plan(pybind11::module_& m);
/// vtrn._core.hlo: the StableHLO parser, compiler, compile cache and executor.
void bind_hlo(pybind11::module_& m);

}  // namespace vtrn::bindings
