#pragma once
// How OpenBLAS runs in this process: its threads, and its kernels.
#include <string>

namespace simtrain::host {

// OpenBLAS threads per process: `threads`, at least 1. Processes that share a
// host's cores each take their share, or OpenBLAS's spinning thread pools
// (one thread per core in every process) fight over the cores.
void set_threads(int threads);

// "" where OpenBLAS runs kernels for the vector units this CPU has; else
// what to do about it. OpenBLAS picks its kernels from the CPU's model
// number when it loads, and for a model it does not know (virtual machines'
// CPUs often) falls back to its SSE3 kernels ("Prescott"), several times
// slower on a CPU with AVX2 or AVX-512; OPENBLAS_CORETYPE chooses them, and
// must be set before the process starts.
std::string kernel_advice();

// Where OpenBLAS runs generic kernels on a CPU with AVX2 or AVX-512 and
// OPENBLAS_CORETYPE is not set: sets it to the kernels that fit and
// re-executes this program (argv, same process: an MPI rank stays that
// rank), so that the process runs them from its start. Returns where it
// does not (nothing to change, or exec failed).
void restart_with_fitting_kernels(char* const* argv);

}  // namespace simtrain::host
