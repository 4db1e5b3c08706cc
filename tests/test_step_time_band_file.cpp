// The band file compiled into simtrain (sim/step/bands/step_time_bands.json)
// is what the validation rows give now: their classes, rows and step-time
// errors (to the 0.01 % the file keeps). Where GPU figures, the cost model or
// the replay change, the rows move and this fails until the file is written
// again (docs/validation.md).
#include <gtest/gtest.h>

#include <cmath>

#include "bench/validation_rows.hpp"
#include "sim/step/step_time_band.hpp"

namespace simtrain {
namespace {

constexpr const char* kRegenerate =
    "\nthe validation rows moved: write the band file again with\n"
    "  build/simtrain_bench_validation --write-bands sim/step/bands/step_time_bands.json\n"
    "and rebuild (docs/validation.md)";

TEST(StepTimeBandFile, IsWhatTheValidationRowsGiveNow) {
  const std::vector<StepTimeBand> now = derive_step_time_bands(band_rows(end_to_end_validation_tables()));
  const std::vector<StepTimeBand>& committed = committed_step_time_bands();
  ASSERT_EQ(committed.size(), now.size()) << kRegenerate;
  for (size_t c = 0; c < now.size(); ++c) {
    EXPECT_EQ(committed[c].band_class, now[c].band_class) << to_string(now[c].band_class) << kRegenerate;
    ASSERT_EQ(committed[c].rows.size(), now[c].rows.size()) << to_string(now[c].band_class) << kRegenerate;
    for (size_t r = 0; r < now[c].rows.size(); ++r) {
      const BandRow &was = committed[c].rows[r], &is = now[c].rows[r];
      EXPECT_EQ(was.name, is.name) << kRegenerate;
      EXPECT_EQ(was.gpu, is.gpu) << is.name << kRegenerate;
      EXPECT_LE(std::abs(was.step_time_error - is.step_time_error), 0.6e-4)
          << is.name << ": file " << was.step_time_error << ", now " << is.step_time_error << kRegenerate;
    }
  }
}

}  // namespace
}  // namespace simtrain
