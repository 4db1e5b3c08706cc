#pragma once
// A kernel-profile database (sim/model/profile_database.hpp) from a live run's
// trace: what each compute op took when the Program ran for real, so that a
// simulation can be calibrated to the machine that ran it
// (`simtrain ... --profile <database>`).
#include <string>

#include <nlohmann/json.hpp>

#include "sim/model/profile_database.hpp"
#include "sim/program/trace_reader.hpp"

namespace simtrain {

// One entry per distinct (op name, shape, dtype) over every compute task of
// the trace: median, p10 and p90 of its measured seconds (kernels/profiler/
// timing.hpp's summarize), repetitions = the samples. Samples of 0 seconds
// (below the timer's resolution) are left out, and an op with no other
// sample has no entry. device_name is the live record's device; each entry's
// kernel "live run (<device>)"; source the trace's.
// Throws InputError for a trace without a live record ("... is a simulated
// trace: nothing was measured"), or without a single timed op.
ProfileDatabase calibration_database(const RecordedStep& live);

// The database as the profiler writes it (kernels/profiler/profile_document.hpp),
// its "method" saying the times come from a live run; parse_profile_database
// reads it back. `command_line` is recorded.
nlohmann::json calibration_document(const ProfileDatabase& database, const std::string& command_line);

}  // namespace simtrain
