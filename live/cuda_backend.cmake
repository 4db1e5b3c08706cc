# The CUDA backend of live runs (live/cuda_backend.hpp): NCCL + the kernels of
# kernels/cuda. Built where the kernels are (SIMTRAIN_BUILD_KERNELS) and NCCL
# is found; plain C++ calling the CUDA runtime and NCCL, no device code.
# Included from the top-level CMakeLists.txt until live/CMakeLists.txt takes
# it in. Its users also need live/communicator_plan.cpp (simtrain_live_core).
if(SIMTRAIN_BUILD_KERNELS)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    add_library(simtrain_cuda_backend STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp)
    target_include_directories(simtrain_cuda_backend PUBLIC ${CMAKE_CURRENT_LIST_DIR})
    target_include_directories(simtrain_cuda_backend PRIVATE ${NCCL_INCLUDE_DIR})
    target_link_libraries(simtrain_cuda_backend PUBLIC simtrain_profiler CUDA::cudart PRIVATE ${NCCL_LIBRARY})
    target_compile_options(simtrain_cuda_backend PRIVATE -Wall -Wextra)
  else()
    message(STATUS "NCCL not found (libnccl and nccl.h): live runs need NCCL for the CUDA backend; "
                   "only the host backend will be built")
  endif()
endif()
