# Comparing a simulated trace with a live one, and calibrating the cost model
# from a live trace (live/trace_comparison.hpp, live/calibration.hpp).
# The calibration database is written by the profiler's document writer, in
# simtrain_kernels_cpu (kernels/profiler/profile_document.hpp).
add_library(simtrain_comparison STATIC
  ${CMAKE_CURRENT_LIST_DIR}/trace_comparison.cpp
  ${CMAKE_CURRENT_LIST_DIR}/calibration.cpp)
target_include_directories(simtrain_comparison PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(simtrain_comparison PUBLIC simtrain_core simtrain_kernels_cpu)
target_compile_options(simtrain_comparison PRIVATE -Wall -Wextra)
