# Real checkpoint I/O for live mode (live/checkpoint.hpp): shards written
# atomically with a SHA-256 each (OpenSSL's EVP), and a versioned manifest.
# Included from the top-level CMakeLists.txt until live/CMakeLists.txt takes it in.
if(SIMTRAIN_PROFILER_ONLY)
  find_package(OpenSSL COMPONENTS Crypto)  # optional on a bare GPU machine
else()
  find_package(OpenSSL REQUIRED COMPONENTS Crypto)
endif()
if(OpenSSL_FOUND)
  add_library(simtrain_checkpoint STATIC ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp)
  target_include_directories(simtrain_checkpoint PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(simtrain_checkpoint PUBLIC simtrain_core PRIVATE OpenSSL::Crypto)
  target_compile_options(simtrain_checkpoint PRIVATE -Wall -Wextra)
endif()
