# vtrn._nki: the NKI interpreter (programs, checks, runs, modeled time) from Python. No torch.
# The bindings live in nki_bindings.cc (bind_nki) so another module can include them as is.
pybind11_add_module(_nki ${CMAKE_CURRENT_LIST_DIR}/nki_module.cc ${CMAKE_CURRENT_LIST_DIR}/nki_bindings.cc)
target_link_libraries(_nki PRIVATE vtrn_nki)
install(TARGETS _nki DESTINATION vtrn)
