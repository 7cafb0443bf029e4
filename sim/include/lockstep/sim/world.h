// The simulation world: a fixed-dt, allocation-free rigid-body step with a state hash.
//
// Usage: create a World from a WorldDef, add bodies, then per tick call step() with the tick's
// commands and inputs (a TickInput).
// Between steps everything may be read; nothing runs inside a step but the simulation itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "lockstep/sim/level.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

struct WorldData;  // internal; see sim/src/world_data.h

/// Read-only view of a body between steps.
/// A hull as the world built it (WorldDef::hulls[i]), for drawing and export: vertices in body
/// space with the centre of mass at the origin, and faces as vertex index lists, each
/// counter-clockwise seen from outside, one after another. Valid while the world lives.
struct HullView {
  uint32_t vertex_count = 0;
  uint32_t face_count = 0;
  const Vec3* vertices = nullptr;
  const uint8_t* face_sizes = nullptr;    // face_count entries
  const uint8_t* face_indices = nullptr;  // the sum of face_sizes entries
};

/// A compound as the world built it (WorldDef::compounds[i]): each child's shape (its geometry
/// fields; a hull child names a hull get_hull draws) at its pose in the body frame, whose origin
/// is the compound's centre of mass.
struct CompoundView {
  uint32_t child_count = 0;
  ShapeDef children[kMaxCompoundChildren] = {};
  Vec3 positions[kMaxCompoundChildren] = {};
  Quat orientations[kMaxCompoundChildren] = {};
};

struct BodyView {
  BodyId id{};
  BodyType type = BodyType::dynamic;
  ShapeDef shape{};
  Vec3 position{};
  Quat orientation{};
  Vec3 linear_velocity{};
  Vec3 angular_velocity{};
  float mass_kg = 0;  // 0 for static and kinematic bodies
  uint32_t owner_player = 0;
  bool allow_sleep = true;
  bool bullet = false;
  bool asleep = false;      // sleeping: not stepped until its island wakes
  float sleep_timer_s = 0;  // time at rest (s), up to WorldDef::time_to_sleep_s
};

/// Checks a WorldDef; Error::none when a world can be made from it.
Error validate_world_def(const WorldDef& def);

/// Replaces every contact capacity of *def left 0 by its value derived from max_bodies
/// (WorldDef's rule, each within its limit). World::create does this to its copy: World::def(),
/// the fingerprint, snapshots and the state hash see the derived values, so a def with zeros and
/// one with the derived values written out make the same world.
void resolve_capacities(WorldDef* def);

/// The heap bytes World::create(def) takes, computed from the capacities alone (nothing is
/// allocated): a tool reading a WorldDef from an untrusted file checks it against a budget first.
/// Exact up to the allocator's rounding.
uint64_t world_memory_bytes(const WorldDef& def);

/// Everything one tick consumes: the commands and the inputs stamped for it (World::step).
struct TickInput {
  std::span<const Command> commands;
  std::span<const Input> inputs;
};

/// What each command and input of a TickInput met when it was queued: Error::none, or why the
/// world refused it (queue_command's and queue_input's errors). A span shorter than its list
/// reports its first entries only; empty spans report nothing.
struct TickErrors {
  std::span<Error> commands;
  std::span<Error> inputs;
};

class World final {
 public:
  /// Makes a world, taking all its memory now; null (and *error set) when `def` is invalid.
  static std::unique_ptr<World> create(const WorldDef& def, Error* error = nullptr);
  /// The same with level geometry (level.h): its meshes and heightfields are copied into the
  /// world and their trees built now; the spans may go when this returns. Errors also
  /// invalid_mesh and capacity_mesh.
  static std::unique_ptr<World> create(const WorldDef& def, const LevelDef& level,
                                       Error* error = nullptr);
  /// A world of `other`'s WorldDef and level (its built meshes and heightfields copied, so the
  /// same fingerprint), with no bodies: what a rollback, prediction or comparison copy restores
  /// `other`'s snapshots into. World::create(other.def()) would lack the level, and refuse them.
  static std::unique_ptr<World> create_like(const World& other, Error* error = nullptr);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const WorldDef& def() const;

  // ---- bodies (between steps only) ------------------------------------------------------------
  // Sleeping (WorldDef::enable_sleep): every call below that changes a dynamic body, and
  // queue_input, wakes the body's island and restarts its rest timer; destroy_body wakes the
  // islands the body touched; a static or kinematic body created or moved by set_transform
  // wakes what it touched and what sleeps where it lands (docs/design-decisions.md, Sleeping).
  /// Adds a body; the same call sequence gives the same handles on every machine.
  Error create_body(const BodyDef& def, BodyId* out_id);
  Error destroy_body(BodyId id);
  bool is_alive(BodyId id) const;
  /// Fills *out for a live body.
  Error get_body(BodyId id, BodyView* out) const;
  /// The built hull WorldDef::hulls[index] (invalid_argument past hull_count).
  Error get_hull(uint32_t index, HullView* out) const;
  /// The built compound WorldDef::compounds[index] (invalid_argument past compound_count).
  Error get_compound(uint32_t index, CompoundView* out) const;
  /// What creation made of the level: triangles kept and dropped, memory, digest.
  LevelStats level_stats() const;
  Error set_linear_velocity(BodyId id, Vec3 velocity);
  Error set_angular_velocity(BodyId id, Vec3 velocity);
  Error set_transform(BodyId id, Vec3 position, Quat orientation);
  /// Applies an impulse (N·s) at a world point to a dynamic body, immediately.
  Error apply_impulse(BodyId id, Vec3 impulse, Vec3 world_point);
  uint32_t body_count() const;
  /// Live bodies in slot order, for iteration: ids written to `out`, count returned.
  uint32_t list_bodies(std::span<BodyId> out) const;

  // ---- inputs ---------------------------------------------------------------------------------
  /// Queues an input for the next step; rejected (and counted) when it names a dead body, a body
  /// another player owns, exceeds the WorldDef limits, or the tick's input capacity is full.
  Error queue_input(const Input& input);

  // ---- commands -------------------------------------------------------------------------------
  /// Queues a spawn or destroy for the next step; rejected (and counted) when it names a template
  /// the WorldDef lacks, a dead body, values out of range, or the tick's capacity is full.
  Error queue_command(const Command& command);
  /// What the last step's commands did, in the order they were applied.
  std::span<const CommandResult> command_results() const;
  /// A player's score (state: hashed, in snapshots), changed only by add_score commands; 0 for
  /// a player index outside 1..kMaxPlayers.
  int32_t score(uint32_t player) const;

  // ---- game state -----------------------------------------------------------------------------
  /// Declares a game state field (building a world, like create_body): hashed and in snapshots
  /// from now on, every value at its default; a snapshot carries the declarations with it.
  /// capacity_state_fields for a bad or repeated name ("score" included) or beyond
  /// kMaxStateFields; invalid_argument for a bad scope or type.
  Error declare_state_field(const StateFieldDef& field);
  /// The declared fields, in declaration order (the field index is the position).
  std::span<const StateFieldDef> state_fields() const;
  /// The index of the field named `name` (kScoreStateField for "score"), else kNoStateField.
  uint32_t find_state_field(std::string_view name) const;
  /// A field's raw value: a room field ignores `player`; a player field's for players
  /// 1..kMaxStatePlayers (the score: 1..kMaxPlayers). 0 for an unknown field or player.
  /// Changed only by set_state and add_state commands.
  int32_t state(uint32_t field, uint32_t player = 0) const;

  // ---- step -----------------------------------------------------------------------------------
  /// Advances one fixed dt through the stages of StepStage (types.h), in order: apply_commands →
  /// apply_inputs → size_margins → update_broadphase → collide_pairs → prepare_contacts →
  /// `substeps` × (integrate_velocities → warm_start → solve → integrate_positions → relax →
  /// restitute) → store_velocities → sweep_bullets → emit_contact_events →
  /// update_sensor_overlaps → store_contacts → update_islands → update_state_hash.
  /// Never allocates; docs/physics.md has the maths.
  StepStatus step();
  /// Applies a tick: queues its commands, then its inputs (each refusal counted, and reported in
  /// *errors when given), then step(). The one order every caller that applies a tick shares.
  StepStatus step(const TickInput& tick, const TickErrors& errors = {});
  uint64_t tick() const;
  /// XXH3-64 of the canonical state, as of the end of the last step (or creation/restore/edit).
  uint64_t state_hash() const;
  const StepStats& last_step_stats() const;
  const WorldCounters& counters() const;
  /// Contact begin/end events of the last step, in a deterministic order.
  std::span<const ContactEvent> events() const;
  /// Sensor begin/end events of the last step, in pair-key order (ShapeDef::sensor).
  std::span<const SensorEvent> sensor_events() const;
  /// The game events the last step's emit_event commands carried, in the order they were applied
  /// (command_less). Not state: like contact events, they describe the step that made this tick.
  std::span<const GameEvent> game_events() const;
  /// Sum of accumulated normal impulses of the last step's contacts touching `id` (N·s, over one
  /// substep: a resting body's is m·g·dt/substeps); for a sleeping body, those its held contacts
  /// had when it fell asleep.
  float normal_impulse_sum(BodyId id) const;

  /// The contact points of the last step touching `id` (the warm-start cache, so also after a
  /// restore): up to out.size() written, the number that exist returned. For tools and
  /// debugging views; not on the tick path. 0 for a dead or null handle.
  uint32_t contact_points(BodyId id, std::span<ContactPointView> out) const;

  // ---- snapshots ------------------------------------------------------------------------------
  /// Bytes needed by save_snapshot for the current state.
  size_t snapshot_size() const;
  /// Bytes enough for any state this world can hold (for preallocating buffers).
  size_t max_snapshot_size() const;
  /// Writes the canonical little-endian, versioned, checksummed state into `buffer`.
  Error save_snapshot(std::span<uint8_t> buffer, size_t* written) const;
  /// Replaces the state with a snapshot from a world with the same WorldDef. On any error the
  /// world is left untouched.
  Error restore_snapshot(std::span<const uint8_t> bytes);

 private:
  friend struct WorldAccess;  // the library's own translation units (sim/src/world_data.h)
  explicit World(std::unique_ptr<WorldData> data);
  std::unique_ptr<WorldData> data_;
};

/// Index of the template named `name` in def.templates, or -1.
int find_template(const WorldDef& def, std::string_view name);
/// The body a template makes (its type, shape, damping and flags), at the origin, at rest,
/// without an owner: what a spawn command starts from.
BodyDef template_body_def(const BodyTemplate& tmpl);
/// The other way: a template's type, shape, damping and flags from a body's (name untouched).
void set_template_properties(BodyTemplate* tmpl, const BodyDef& body);
/// Writes `name` into a template (NUL-padded); false when it is empty, too long or has a byte
/// outside [A-Za-z0-9_.-].
bool set_template_name(BodyTemplate* tmpl, std::string_view name);

/// Index of the compound with this name in def, or -1.
int find_compound(const WorldDef& def, std::string_view name);
/// Sets a compound's name (NUL-padded); false for an empty, too long or badly spelt name.
bool set_compound_name(CompoundDef* compound, std::string_view name);

/// Fingerprint of a WorldDef (XXH3-64 of its canonical encoding, with the contact capacities as
/// resolve_capacities gives them); equal defs, equal prints.
uint64_t world_def_fingerprint(const WorldDef& def);

}  // namespace lockstep::sim
