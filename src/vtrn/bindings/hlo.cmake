# vtrn._hlo: the StableHLO parser, compiler, compile cache and executor from Python. No torch.
pybind11_add_module(_hlo ${CMAKE_CURRENT_LIST_DIR}/hlo_module.cc)
target_link_libraries(_hlo PRIVATE vtrn_runtime_exec)
install(TARGETS _hlo DESTINATION vtrn)
