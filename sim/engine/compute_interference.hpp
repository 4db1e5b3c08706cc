#pragma once
// Overlap is not free: a collective that runs beside compute on the same GPU
// runs on some of its SMs (a CTA each), which the compute's kernels cannot
// use meanwhile. The replay gives such a collective a share of its rank's
// GPU for as long as it runs, and the compute beside it runs on the rest.
#include "sim/program/task.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ComputeInterference {
  // Shares of the GPU's SMs (0 to 1) a collective beside compute takes:
  double nccl_sm_share = 0;                   // an NCCL collective, one CTA per channel
  double userbuffers_all_gather_sm_share = 0;  // Transformer Engine's userbuffers, by kind
  double userbuffers_reduce_scatter_sm_share = 0;
  double flex_sm_share = 0;  // the flex dispatcher's all-to-alls (0: NCCL's)
  bool tp_in_userbuffers = false;  // tp_comm_overlap: the TP collectives beside compute are TE's

  // What `task` takes from the compute beside it: 0 for one that does not
  // run beside compute (on the compute stream, or not a collective).
  double sm_share(const Task& task) const;
};

// The shares on the scenario's GPU (sources in compute_interference.cpp).
ComputeInterference compute_interference(const Scenario& scenario);

}  // namespace simtrain
