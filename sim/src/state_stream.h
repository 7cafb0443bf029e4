// The canonical state encoding shared by the state hash and snapshots (state_stream.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "world_data.h"

namespace lockstep::sim {

/// Bytes of the canonical encoding of the current state.
size_t encoded_state_size(const WorldData& w);
/// Bytes enough for the canonical encoding of any state of a world with this def.
size_t max_encoded_state_size(const WorldDef& def);
/// The bytes update_state_hash writes into WorldData::scratch at most (a chunk and a record: it
/// streams the encoding, whatever the world's size).
size_t state_hash_scratch_bytes();
/// Recomputes w.state_hash from the canonical encoding (allocation-free, uses w.scratch).
void update_state_hash(const WorldData& w);

}  // namespace lockstep::sim
