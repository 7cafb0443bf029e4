// One-line descriptions of the sim's errors.
#include "lockstep/sim/types.h"

namespace lockstep::sim {

const char* error_message(Error error) {
  switch (error) {
    case Error::none:
      return "no error";
    case Error::invalid_argument:
      return "a value is out of its documented range";
    case Error::non_finite:
      return "a NaN or infinite value was passed in";
    case Error::capacity_bodies:
      return "WorldDef::max_bodies reached";
    case Error::capacity_inputs:
      return "WorldDef::max_inputs_per_tick reached for this tick";
    case Error::null_handle:
      return "null body handle";
    case Error::stale_handle:
      return "the body was destroyed or never existed";
    case Error::wrong_body_type:
      return "the operation is not allowed for this body type";
    case Error::input_out_of_range:
      return "an input exceeds the WorldDef input limits";
    case Error::buffer_too_small:
      return "the buffer cannot hold the snapshot";
    case Error::snapshot_truncated:
      return "the snapshot is shorter than its header announces";
    case Error::snapshot_bad_magic:
      return "not a lockstep snapshot";
    case Error::snapshot_version:
      return "snapshot format version not supported by this build";
    case Error::snapshot_mismatch:
      return "snapshot made by a world with a different WorldDef";
    case Error::snapshot_corrupt:
      return "snapshot checksum or structure check failed";
    case Error::capacity_commands:
      return "WorldDef::max_commands_per_tick reached for this tick";
    case Error::unknown_template:
      return "a spawn command names a template the WorldDef does not have";
    case Error::unknown_player:
      return "a player index outside 1..kMaxPlayers";
    case Error::degenerate_hull:
      return "hull points with fewer than 4 distinct points, all coplanar, or no volume";
    case Error::unknown_hull:
      return "a hull shape names a hull the WorldDef does not have";
    case Error::unknown_state_field:
      return "a game state command names a field the world has not declared";
    case Error::capacity_state_fields:
      return "kMaxStateFields game state fields declared already, or a bad or repeated name";
    case Error::invalid_compound:
      return "a compound with no child or more than 8, a plane or compound child, or a bad child "
             "pose";
    case Error::unknown_compound:
      return "a compound shape names a compound the WorldDef does not have";
    case Error::invalid_mesh:
      return "level geometry: a non-finite value, an index out of range, no triangle or a bad grid";
    case Error::capacity_mesh:
      return "level geometry over its triangle capacity (LevelDef::max_triangles, kMaxMeshes)";
    case Error::unknown_mesh:
      return "a mesh or heightfield shape names geometry the level does not have, or moves";
  }
  return "unknown error";
}

}  // namespace lockstep::sim
