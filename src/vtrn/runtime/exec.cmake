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
  ${CMAKE_CURRENT_LIST_DIR}/kernels_elementwise.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_reduce.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_data.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_dot.cc
  ${CMAKE_CURRENT_LIST_DIR}/compile_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/thread_pool.cc)
target_include_directories(vtrn_runtime_exec PRIVATE ${VTRN_CBLAS_INCLUDE})
# The fused loops rely on auto-vectorization, which GCC's -O2 cost model mostly skips.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/kernels_fused.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernels_elementwise.cc ${CMAKE_CURRENT_LIST_DIR}/kernels_reduce.cc
  PROPERTIES COMPILE_OPTIONS "-O3")
target_link_libraries(vtrn_runtime_exec PUBLIC vtrn_compiler PRIVATE ${BLAS_LIBRARIES} Threads::Threads ${CMAKE_DL_LIBS})

vtrn_add_test(vtrn_runtime_executor_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/executor_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/executor_elementwise_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/executor_reduce_test.cc
  LIBS vtrn_runtime_exec)
vtrn_add_test(vtrn_runtime_compile_cache_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/compile_cache_test.cc LIBS vtrn_runtime_exec)

# bench/bench_compiler.cc: cmake -DVTRN_BUILD_BENCH=ON, then build vtrn_bench_compiler.
option(VTRN_BUILD_BENCH "Build the C++ benchmarks under bench/" OFF)
if(VTRN_BUILD_BENCH)
  add_executable(vtrn_bench_compiler ${PROJECT_SOURCE_DIR}/bench/bench_compiler.cc)
  target_include_directories(vtrn_bench_compiler PRIVATE ${VTRN_CBLAS_INCLUDE})
  target_link_libraries(vtrn_bench_compiler PRIVATE vtrn_runtime_exec ${BLAS_LIBRARIES})
endif()
vtrn_add_test(vtrn_runtime_thread_pool_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/thread_pool_test.cc LIBS vtrn_runtime_exec)
