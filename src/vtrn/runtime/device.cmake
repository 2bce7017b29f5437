# vtrn_runtime_device: which cores this process sees, their HBM budgets, streams and events.
add_library(vtrn_runtime_device STATIC
  ${CMAKE_CURRENT_LIST_DIR}/device_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_memory.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream.cc)
find_package(Threads REQUIRED)
target_link_libraries(vtrn_runtime_device PUBLIC vtrn_hw Threads::Threads)

vtrn_add_test(vtrn_runtime_device_config_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_config_test.cc LIBS vtrn_runtime_device)
vtrn_add_test(vtrn_runtime_device_memory_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_memory_test.cc LIBS vtrn_runtime_device)
vtrn_add_test(vtrn_runtime_stream_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/stream_test.cc LIBS vtrn_runtime_device)
