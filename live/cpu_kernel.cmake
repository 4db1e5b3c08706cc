# The host backend's compute (live/cpu_kernel.hpp): kernel calls run by the
# CPU references of kernels/reference/. Included from the top-level
# CMakeLists.txt until live/CMakeLists.txt takes it into simtrain_live_core.
add_library(simtrain_cpu_kernel STATIC ${CMAKE_CURRENT_LIST_DIR}/cpu_kernel.cpp)
target_include_directories(simtrain_cpu_kernel PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(simtrain_cpu_kernel PUBLIC simtrain_kernels_cpu)
target_compile_options(simtrain_cpu_kernel PRIVATE -Wall -Wextra)
