// Field-by-field comparison of two worlds' states (every body's fields, then the players'
// scores): what a desync or a failed sync test names. Not for the tick path (it allocates its
// result).
#pragma once

#include <cstddef>
#include <vector>

#include "lockstep/sim/types.h"

namespace lockstep::sim {

class World;

/// One field that differs between two worlds: a body's, or a player's score.
struct StateFieldDiff {
  BodyId body{};           // null for a score
  uint32_t player = 0;     // the player, for a score
  const char* field = "";  // "position.x", "orientation.w", "linear_velocity.y", "alive", "score"
  double value_a = 0;
  double value_b = 0;
  bool is_float = false;  // value_a and value_b are floats (their bits differ)
};

/// Compares two worlds body by body (matched by slot, in slot order) and field by field, in a
/// fixed field order, then the scores of players 1 … kMaxPlayers; at most `max_fields` results.
std::vector<StateFieldDiff> diff_state(const World& a, const World& b, size_t max_fields = 1000);

}  // namespace lockstep::sim
