#pragma once
// Ranks of one pipeline coordinate lower to the same task list but for the
// ranks and groups it names: the rank itself, its pipeline peers (same tp
// and dp coordinates, another pp) and its group of each kind. build_program
// lowers the first rank of each pipeline coordinate and numbers the others
// from its list, translated: a 3,072-GPU job is lowered 64 times, not 3,072.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "sim/program/lowering.hpp"

namespace simtrain {

class RankTranslation {
public:
  // From `from`'s list to `to`'s, both of one pipeline coordinate; none where
  // their groups differ in more than their members (a hierarchical data-parallel
  // group split over unequal nodes): `to` is then lowered in full.
  static std::optional<RankTranslation> between(const LoweringContext& context, int from, int to);

  // `task` of `from`'s list as `to`'s list holds it.
  Task translated(Task task) const;
  // The transfer key of a SEND or RECV of `from`'s list as `to`'s list holds it.
  uint64_t translated_transfer(uint64_t key) const;

private:
  RankTranslation(const LoweringContext& context, int to) : context_(context), to_(to) {}
  // The rank of `to`'s tp and dp coordinates at `rank`'s pipeline coordinate.
  int translated_rank(int rank) const;

  const LoweringContext& context_;
  int to_;
  std::vector<std::pair<int, int>> groups_;  // `from`'s group of each kind, and `to`'s
};

}  // namespace simtrain
