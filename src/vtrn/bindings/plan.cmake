# vtrn._plan: the planner (per-rank memory, step time, layout search) from Python. No torch.
pybind11_add_module(_plan ${CMAKE_CURRENT_LIST_DIR}/plan_module.cc)
target_link_libraries(_plan PRIVATE vtrn_plan)
install(TARGETS _plan DESTINATION vtrn)
