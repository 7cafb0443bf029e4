// Body-by-body, field-by-field comparison of two worlds: what a desync or a failed sync test
// names. Not for the tick path (it allocates its result).
#pragma once

#include <cstddef>
#include <vector>

#include "lockstep/sim/types.h"

namespace lockstep::sim {

class World;

/// One field of one body that differs between two worlds.
struct BodyFieldDiff {
  BodyId body{};
  const char* field = "";  // "position.x", "orientation.w", "linear_velocity.y", "alive", ...
  double value_a = 0;
  double value_b = 0;
  bool is_float = false;  // value_a and value_b are floats (their bits differ)
};

/// Compares two worlds body by body (matched by slot, in slot order) and field by field, in a
/// fixed field order; at most `max_fields` results.
std::vector<BodyFieldDiff> diff_bodies(const World& a, const World& b, size_t max_fields = 1000);

}  // namespace lockstep::sim
