# vtrn_runtime_exec: the executor (fused loops, OpenBLAS dot_general, data movement) and the
# compile cache. Included by src/vtrn/runtime/CMakeLists.txt.
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR OpenBLAS)
endif()
find_package(BLAS REQUIRED)
find_package(Threads REQUIRED)
find_path(VTRN_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)
add_library(vtrn_runtime_exec STATIC
  ${CMAKE_CURRENT_LIST_DIR}/executor.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_fused.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_data.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_dot.cc
  ${CMAKE_CURRENT_LIST_DIR}/compile_cache.cc)
target_include_directories(vtrn_runtime_exec PRIVATE ${VTRN_CBLAS_INCLUDE})
target_link_libraries(vtrn_runtime_exec PUBLIC vtrn_compiler PRIVATE ${BLAS_LIBRARIES} Threads::Threads ${CMAKE_DL_LIBS})

vtrn_add_test(vtrn_runtime_executor_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/executor_test.cc LIBS vtrn_runtime_exec)
vtrn_add_test(vtrn_runtime_compile_cache_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/compile_cache_test.cc LIBS vtrn_runtime_exec)
