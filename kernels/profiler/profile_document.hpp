#pragma once
// The database document the profiler writes: its measurements and the record
// of how, where and when they were taken. Plain C++.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/profile_database.hpp"
#include "profiler.hpp"

namespace simtrain {

// `device` is the GPU's description (its "name" is what databases are matched by);
// `skipped`: [{op, shape, reason}] for ops that could not be timed.
// `scenarios`: those whose kernels were timed (their names are recorded).
nlohmann::json profile_document(const std::vector<Scenario>& scenarios, const ProfileOptions& options, const nlohmann::json& device,
                                const std::vector<ProfileEntry>& entries, const nlohmann::json& skipped);

// Now, as 2025-01-31T12:00:00Z.
std::string utc_timestamp();

}  // namespace simtrain
