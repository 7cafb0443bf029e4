// Sleeping with islands: touching dynamic bodies that have come to rest fall asleep together,
// cost nothing while they sleep, and wake together (Box2D v3, Jolt). island.cpp has the rules,
// the order of the step's sleeping stages and why.
//
// Per body (BodyRecord, state: hashed and saved): asleep, the rest timer, and the island of a
// sleeping body (the smallest slot in it), by which a whole island is woken at once.
#pragma once

#include <cstdint>
#include <vector>

#include "lockstep/sim/types.h"
#include "shape.h"

namespace lockstep::sim {

struct WorldData;

/// Scratch of the island pass and of waking, indexed by body slot (not state; sized at
/// creation, rebuilt whenever used).
struct IslandScratch {
  std::vector<uint32_t> parent;       // union-find over slots; a root is its island's min slot
  std::vector<uint8_t> marks;         // per slot: island flags (island.cpp)
  std::vector<uint8_t> sweep_active;  // per slot: 1 when the broadphase must find its pairs
  std::vector<uint8_t> pair_kind;     // per slot, for the pair pass: asleep, dynamic (island.cpp)
  uint32_t sleeping = 0;              // sleeping bodies, as of the last sweep_and_wake
};

/// Takes all memory: room for `max_bodies` slots.
void islands_init(IslandScratch* islands, uint32_t max_bodies);

// ---- the step's stages (World::step calls them in this order) ---------------------------------

/// The broadphase over the awake bodies, then waking: every sleeping island that an awake
/// dynamic or a moving kinematic body has a manifold with wakes before the narrowphase (the
/// sweep is repeated while that wakes any). Leaves only the pairs the narrowphase needs: no
/// sleeping body, at least one dynamic body. Sleeping bodies keep the boxes they fell asleep
/// with in w.aabbs.
void sweep_and_wake(WorldData& w);

/// True when either body of the pair is asleep: its contact is held, not ended (no `end`
/// event, and its warm-start entry is carried by carry_sleeping_contacts).
bool contact_pair_asleep(const WorldData& w, uint64_t key);

/// After store_contact_cache: merges the warm-start entries of sleeping pairs from w.cache into
/// w.next_cache (in key order), so an island wakes warm-started. Entries beyond capacity are
/// dropped, lowest keys kept, and counted as dropped contact pairs.
void carry_sleeping_contacts(WorldData& w, StepStats* stats, StepStatus* status);

/// After the solve and the contact stage: rest timers, islands of this step's manifolds, and
/// islands whose every body has rested time_to_sleep_s fall asleep (velocities zeroed).
void update_islands(WorldData& w, StepStats* stats);

// ---- waking between steps (API calls) ---------------------------------------------------------

/// A body touched by the game (input, set_* call, impulse): its rest timer restarts and, when
/// it sleeps, its whole island wakes.
void wake_body(WorldData& w, uint32_t slot);

/// The island of `slot` and every sleeping island in contact with it (warm-start cache): for a
/// body about to be destroyed or moved away.
void wake_contacts_of(WorldData& w, uint32_t slot);

/// Every sleeping island with a body whose box overlaps the box of `slot` at its pose: a static
/// or kinematic body created or moved there.
void wake_overlapping(WorldData& w, uint32_t slot);

/// Recomputes the box of a sleeping body (its pose changed without waking it, or a restore).
void refresh_sleeping_box(WorldData& w, uint32_t slot);

}  // namespace lockstep::sim
