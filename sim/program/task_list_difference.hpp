#pragma once
// Where two ranks' task lists part. Executors run the TP ranks of a group in
// lockstep, the same kind of task at the same position of every list; when a
// Program breaks that, this says where, in short form
// (sim/program/short_form.hpp).
#include <string>

#include "sim/program/program.hpp"

namespace simtrain {

// "" when the two ranks' lists have the same length and the same kind of task
// at every position. Otherwise both lists side by side, three rows either
// side of the first position where they differ, that row marked (one row
// either side here):
//
//   rank 0 (14 tasks) and rank 1 (14 tasks) first differ at position 4:
//        rank 0                           rank 1
//     ...
//     3  s0 F mb1                         s0 F mb1
//   > 4  s0 ALLREDUCE_F mb1 tp0 512KiB x5 s0 SEND_F mb1 ->s1
//     5  s0 SEND_F mb1 ->s1               s0 ALLREDUCE_F mb1 tp0 512KiB x5
//     ...
std::string task_list_difference(const Program& program, int rank, int other_rank);

}  // namespace simtrain
