// The World's internal data: every array is sized at creation and never grows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "broadphase.h"
#include "island.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"
#include "mesh.h"
#include "query_tree.h"
#include "shape.h"
#include "solver/contact_lanes.h"
#include "solver/contact_solver.h"

namespace lockstep::sim {

// Sane upper limits of WorldDef values (validate_world_def).
inline constexpr float kMaxGravity = 1.0e3f;  // m/s² per axis
inline constexpr uint32_t kMaxVelocityIterations = 256;
inline constexpr uint32_t kMaxSubsteps = 64;
inline constexpr uint32_t kMaxBodiesLimit = 1u << 20;
static_assert(kMaxBodiesLimit <= (1u << 26), "pair_key keeps 26 bits for slot b");
inline constexpr uint32_t kMaxContactPairsLimit = 1u << 22;
inline constexpr uint32_t kMaxContactPointsLimit = 1u << 24;
inline constexpr uint32_t kMaxCandidatePairsLimit = 1u << 24;
inline constexpr uint32_t kMaxEventsLimit = 1u << 22;
inline constexpr uint32_t kMaxInputsLimit = 1u << 16;
inline constexpr uint32_t kMaxCommandsLimit = 1u << 16;
inline constexpr float kMaxTimeToSleep = 1.0e4f;  // s
// Limits of body values (create_body, setters, snapshot restore).
inline constexpr float kMaxCoordinate = 1.0e5f;  // |position component| (m); planes span 1e6
inline constexpr float kMaxDamping = 1.0e3f;     // 1/s

/// Bookkeeping of one body slot (cold data: read by the narrowphase, integration and the state
/// stream, not by the solver iterations). Velocities live in BodySolverState.
struct BodyRecord {
  uint32_t generation = 0;  // bumped on destroy; never 0 again once the slot was used
  bool alive = false;
  BodyType type = BodyType::static_body;
  uint32_t owner_player = 0;
  ShapeDef shape{};
  float linear_damping = 0;   // 1/s
  float angular_damping = 0;  // 1/s
  Vec3 position{};
  Quat orientation{};
  float mass_kg = 0;         // 0 for static and kinematic bodies
  Vec3 inertia{};            // principal inertia, body axes (kg·m²); 0 when not dynamic
  Vec3 inv_inertia_local{};  // derived from inertia
  // Sleeping (island.h). Only dynamic bodies sleep; the others keep asleep false, timer 0.
  bool allow_sleep = true;
  bool bullet = false;      // time of impact against static bodies (time_of_impact.cpp)
  bool asleep = false;      // not stepped; velocities 0; contacts held (island.cpp)
  float sleep_timer_s = 0;  // time at rest (s), capped at WorldDef::time_to_sleep_s; 0 on waking
  uint32_t island = 0;      // asleep: the smallest slot of its island (which wakes at once)
};

struct RestoreSlot {
  uint32_t generation = 0;
  uint32_t owner_player = 0;
  bool alive = false;
  BodyType type = BodyType::static_body;
  bool asleep = false;
  bool sensor = false;
  uint32_t island = 0;
};

// Separation hints under their manifold keys (collide.h), in two arrays (12 bytes a pair).
struct SeparationHints {
  std::unique_ptr<uint64_t[]> keys;
  std::unique_ptr<uint32_t[]> codes;
  uint32_t count = 0;
  uint32_t capacity = 0;
};

/// How many separation hints a world keeps: half its candidate pairs, at least 16.
inline uint32_t separation_hint_capacity(const WorldDef& def) {
  return def.max_candidate_pairs / 2 > 16 ? def.max_candidate_pairs / 2 : 16;
}

struct WorldData {
  WorldDef def{};
  uint64_t def_fingerprint = 0;
  uint64_t tick = 0;

  // Bodies, indexed by slot.
  std::vector<BodyRecord> bodies;
  std::vector<BodySolverState> solver_bodies;
  std::vector<Aabb> aabbs;
  std::vector<uint8_t> dynamic_flags;  // 1 for dynamic bodies
  uint32_t body_count = 0;             // live bodies
  uint32_t slot_count = 0;             // 1 + highest slot ever used (alive or generation ≠ 0)

  Broadphase broadphase;
  IslandScratch islands;  // sleeping: islands, waking, what the sweep sees as awake

  // This step's contacts (constraints sorted by pair key).
  std::vector<ContactConstraint> constraints;
  uint32_t constraint_count = 0;
  std::vector<ContactPoint> points;
  uint32_t point_count = 0;
  std::vector<SolverVelocity> solver_velocities;  // per slot + the zero slot, during the passes
  std::vector<SolverVelocity> solver_deltas;  // Δp (linear), Δθ (angular) since the step began
  std::vector<float> speculative_margins;     // per slot: how far it may move this step (m)
  ContactLanes lanes;                         // the manifolds coloured, eight per batch

  // Warm-start cache: `cache` is last step's (state), `next_cache` is being written.
  ContactCache cache;
  ContactCache next_cache;

  // Separation hints (collide.h): the pairs the narrowphase found apart last step, ascending
  // manifold keys, each with the feature that held it apart; `next_hints` is being written, and
  // `hint_cursor` is the narrowphase's place in `hints`. Not state: a hint makes a near miss
  // cheaper to find again and never changes what is found, so a restored world, which starts
  // without them, steps to the same bits. Left uninitialized at creation (only what a step
  // writes is read), so untouched capacity costs no memory.
  SeparationHints hints;
  SeparationHints next_hints;
  uint32_t hint_cursor = 0;

  // Inputs queued for the next step, kept sorted by the total input order (state).
  std::vector<Input> inputs;
  uint32_t input_count = 0;
  int64_t input_linear_limit = 0;  // max |component| in fixed-point units
  int64_t input_angular_limit = 0;
  int64_t input_linear_velocity_limit = 0;
  int64_t input_angular_velocity_limit = 0;

  // Commands queued for the next step, kept sorted by command_less (state), and what the last
  // step's did (not state).
  std::vector<Command> commands;
  uint32_t command_count = 0;
  std::vector<CommandResult> command_results;
  uint32_t command_result_count = 0;

  // Players' scores, index player - 1 (state), kMaxPlayers entries.
  std::vector<int32_t> scores;
  // Game state (state): the declared fields, and their values: room fields one each, player
  // fields kMaxStatePlayers each (player p at [field · kMaxStatePlayers + p − 1]). All memory
  // taken at creation.
  uint32_t state_field_count = 0;
  StateFieldDef state_fields[kMaxStateFields] = {};
  std::vector<int32_t> state_values;  // kMaxStateFields · kMaxStatePlayers
  // Game events of the last step (emit_event commands), max_commands_per_tick entries.
  std::vector<GameEvent> game_events;
  uint32_t game_event_count = 0;

  // Sensor pairs overlapping after the last step, ascending keys (state), and this step's as the
  // narrowphase finds them and as they are merged (scratch).
  std::vector<uint64_t> sensor_pairs;
  uint32_t sensor_pair_count = 0;
  std::vector<uint64_t> sensor_found;
  uint32_t sensor_found_count = 0;
  std::vector<uint64_t> sensor_next;

  // Results of the last step (not state).
  std::vector<ContactEvent> events;
  uint32_t event_count = 0;
  std::vector<SensorEvent> sensor_events;
  uint32_t sensor_event_count = 0;
  StepStats stats{};
  WorldCounters counters{};

  // State hash, recomputed lazily after edits; scratch holds the canonical encoding in chunks
  // (state_hash_scratch_bytes).
  mutable uint64_t state_hash = 0;
  mutable bool hash_dirty = true;
  mutable std::vector<uint8_t> scratch;
  // Restore validation scratch: what the validating pass saw of each slot.
  std::vector<RestoreSlot> restore_slots;
  // Spatial queries' tree of the current poses (not state: rebuilt when the state changes).
  mutable QueryTree query_tree;
  // The WorldDef's hulls, built at creation (hull.h); shapes reach them through library().
  std::vector<HullGeometry> hulls;
  // The WorldDef's compounds, built at creation (compound.h).
  std::vector<CompoundGeometry> compounds;
  // The level's static geometry, copied and built at creation (mesh.h), and what it made.
  std::vector<MeshGeometry> meshes;
  std::vector<HeightfieldGeometry> heightfields;
  LevelStats level_stats{};

  ShapeLibrary library() const {
    return ShapeLibrary{hulls.data(),        static_cast<uint32_t>(hulls.size()),
                        compounds.data(),    static_cast<uint32_t>(compounds.size()),
                        meshes.data(),       static_cast<uint32_t>(meshes.size()),
                        heightfields.data(), static_cast<uint32_t>(heightfields.size())};
  }
};

/// Builds the first def.hull_count hulls of a WorldDef into *out (resized to fit): the first
/// error, or Error::none. validate_world_def runs it; World::create keeps what it built.
Error build_world_hulls(const WorldDef& def, std::vector<HullGeometry>* out);

/// Builds the first def.compound_count compounds of a WorldDef, their hull children reaching
/// `hulls`, into *out (resized to fit): the first error (invalid_compound for a bad or repeated
/// name), or Error::none.
Error build_world_compounds(const WorldDef& def, const std::vector<HullGeometry>& hulls,
                            std::vector<CompoundGeometry>* out);

/// validate_world_def, keeping the hulls and compounds it builds.
Error validate_world_def_and_build(const WorldDef& def, std::vector<HullGeometry>* hulls,
                                   std::vector<CompoundGeometry>* compounds);

/// The checks of an input that do not need the body's slot: its owner and type (the caller
/// resolved the handle), flags, and the fixed-point limits. Shared by queue_input and the
/// snapshot reader, so a restored queue holds only inputs queue_input would accept.
Error check_input_fields(const WorldData& w, const Input& input, BodyType type,
                         uint32_t owner_player);

/// The checks of a command that need no world state beyond the def: template index, finite and
/// in-range pose and velocities, type. Shared by queue_command and the snapshot reader.
Error check_command_fields(const WorldDef& def, const Command& command);

/// The body commands (body_commands.cpp): set_pose, set_velocity, apply_impulse,
/// move_kinematic, respawn.
bool is_body_command(CommandType type);
/// Their checks that need only the def (part of check_command_fields).
Error check_body_command_fields(const WorldDef& def, const Command& command);
/// Whether the command may move a body of `type` (wrong_body_type otherwise).
Error check_body_command_target(const Command& command, BodyType type);
/// Applies one in the step; the body may be gone by then (stale_handle). Counts nothing.
Error apply_body_command(WorldData& w, const Command& command);

/// Game state (game_state.cpp): a declaration's checks (name, scope, type; not repeating one of
/// `earlier`), and the set_state / add_state commands' checks and application.
Error check_state_field_def(const StateFieldDef& field, const StateFieldDef* earlier,
                            uint32_t earlier_count);
bool is_state_command(CommandType type);
/// The checks that need no world (part of check_command_fields).
Error check_state_command_fields(const Command& command);
/// The field is declared, the player fits its scope.
Error check_state_command(const WorldData& w, const Command& command);
/// Applies one in the step (checked again: a snapshot's queue is checked only by the def).
Error apply_state_command(WorldData& w, const Command& command);

/// The BodyDef a spawn command makes from its template.
BodyDef spawn_body_def(const WorldDef& def, const Command& command);

/// Recomputes derived per-body data (inverse mass and inertia, world inertia) from a record.
void refresh_body_derived(WorldData& w, uint32_t slot);

/// The slot of a live body's handle; null_handle or stale_handle otherwise.
Error resolve_body(const WorldData& w, BodyId id, uint32_t* slot);
/// The handle of the live body in `slot`.
BodyId body_id(const WorldData& w, uint32_t slot);
/// create_body and spawn commands: checks, then the lowest free slot. Counts nothing.
Error add_body(WorldData& w, const BodyDef& def, BodyId* out_id);
/// destroy_body and destroy commands: the body, its cache entries, sensor overlaps and queued
/// inputs go. Counts nothing.
Error remove_body(WorldData& w, BodyId id);

/// 2^-kInputScaleLog2 as a float: multiplying an input's integer by it is exact (no rounding
/// beyond int→float).
inline constexpr float kInputScale = 1.0f / static_cast<float>(1 << kInputScaleLog2);

/// A world's internal data, for the library's own translation units (queries, say) and the
/// white-box tests and benchmarks; not part of the public API (world.h names only the friend).
struct WorldAccess {
  static WorldData& data(World& world) { return *world.data_; }
  static const WorldData& data(const World& world) { return *world.data_; }
};
inline WorldData& world_data(World& world) {
  return WorldAccess::data(world);
}
inline const WorldData& world_data(const World& world) {
  return WorldAccess::data(world);
}

}  // namespace lockstep::sim
