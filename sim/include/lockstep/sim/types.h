// Plain definitions shared by the simulation's public API: handles, errors, shapes, bodies,
// world definitions, inputs, events and per-step stats.
#pragma once

#include <cstdint>

#include "lockstep/sim/math.h"

namespace lockstep::sim {

/// Handle to a body: slot index + 1 (0 = null) and the slot's generation when it was created.
struct BodyId {
  uint32_t index1 = 0;
  uint32_t generation = 0;
  constexpr bool is_null() const { return index1 == 0; }
  friend constexpr bool operator==(BodyId a, BodyId b) {
    return a.index1 == b.index1 && a.generation == b.generation;
  }
};

/// Every error a public function can report. `error_message` names each in one line.
enum class Error : uint8_t {
  none = 0,
  invalid_argument,       // a value out of its documented range
  non_finite,             // NaN or infinity passed in
  capacity_bodies,        // WorldDef::max_bodies reached
  capacity_inputs,        // WorldDef::max_inputs_per_tick reached for this tick
  null_handle,            // BodyId{} passed
  stale_handle,           // the body was destroyed (or never existed)
  wrong_body_type,        // e.g. velocity set on a static body
  input_out_of_range,     // an input's magnitudes exceed the WorldDef limits
  buffer_too_small,       // the caller's snapshot buffer cannot hold the state
  snapshot_truncated,     // fewer bytes than the snapshot header announces
  snapshot_bad_magic,     // not a lockstep snapshot
  snapshot_version,       // a snapshot format this build does not read
  snapshot_mismatch,      // made by a world with a different WorldDef
  snapshot_corrupt,       // checksum or structure check failed
  capacity_commands,      // WorldDef::max_commands_per_tick reached for this tick
  unknown_template,       // a spawn command names a template the WorldDef does not have
  unknown_player,         // a player index outside 1..kMaxPlayers (add_score commands)
  degenerate_hull,        // hull points: fewer than 4 distinct, all coplanar, or no volume
  unknown_hull,           // a hull shape names an index past WorldDef::hull_count
  unknown_state_field,    // a game state command names a field the world has not declared
  capacity_state_fields,  // kMaxStateFields declared already, or a bad or repeated field name
  invalid_compound,       // a compound with no child or too many, a child of a type a compound
                          // cannot hold (plane, compound), or a child pose out of range
  unknown_compound,       // a compound shape names an index past WorldDef::compound_count
  invalid_mesh,           // level geometry: a non-finite vertex or height, an index out of
                          // range, no triangle left, a grid too small, or a bad spacing
  capacity_mesh,          // level geometry over LevelDef::max_triangles or kMaxMeshes
  unknown_mesh,           // a mesh or heightfield shape names one the LevelDef does not have,
                          // or is not on a static body
};

/// One-line English description of an error (static storage).
const char* error_message(Error error);

enum class ShapeType : uint8_t {
  sphere = 0,
  box = 1,
  capsule = 2,
  plane = 3,
  hull = 4,
  compound = 5,
  mesh = 6,        // static only: LevelDef::meshes[ShapeDef::mesh]
  heightfield = 7  // static only: LevelDef::heightfields[ShapeDef::mesh]
};

/// A collision shape in body space. Capsules lie along the body's local y axis; planes are
/// only allowed on static bodies and are given in body space as {x : dot(normal, x) = offset}.
/// A hull is the convex hull of the points of WorldDef::hulls[hull], built once when the world
/// is created; its centre of mass is the body's origin (docs/physics.md, Convex hulls). A compound
/// is the rigid union of the children of WorldDef::compounds[compound], each a sphere, box,
/// capsule or hull with a pose of its own; its centre of mass is the body's origin too
/// (docs/physics.md, Compound bodies). The other fields (density, friction, restitution, filter,
/// sensor) are the whole compound's.
struct ShapeDef {
  ShapeType type = ShapeType::sphere;
  float radius = 0.5f;                  // sphere, capsule (m)
  Vec3 half_extents{0.5f, 0.5f, 0.5f};  // box (m)
  float half_height = 0.5f;             // capsule: half the segment length (m)
  Vec3 plane_normal{0, 1, 0};           // plane: unit normal
  float plane_offset = 0;               // plane (m)
  float density = 1000;                 // kg/m³
  float friction = 0.5f;                // Coulomb μ ≥ 0
  float restitution = 0;                // e in [0, 1]
  // Collision filter: two shapes touch only when each one's category has a bit in the other's
  // mask, (a.category & b.mask) != 0 and (b.category & a.mask) != 0. Filtered pairs never reach
  // the narrowphase: no contact, no event. The defaults touch everything.
  uint32_t category = 1;
  uint32_t mask = 0xffffffffu;
  // A sensor detects overlaps and never pushes: no contact, only begin/end events in
  // World::sensor_events(), with the bodies whose filters touch it in pairs that have a dynamic
  // body (never with another sensor). Usable on static and kinematic bodies (a goal zone, a
  // moving trigger).
  bool sensor = false;
  uint32_t hull = 0;      // hull: index into WorldDef::hulls
  uint32_t compound = 0;  // compound: index into WorldDef::compounds
  // mesh: index into LevelDef::meshes; heightfield: index into LevelDef::heightfields. Both only
  // on static bodies, whose pose places the level geometry (docs/physics.md, Level geometry).
  uint32_t mesh = 0;
};

enum class BodyType : uint8_t { static_body = 0, kinematic = 1, dynamic = 2 };

/// Body definition; start from default_body_def().
struct BodyDef {
  BodyType type = BodyType::dynamic;
  Vec3 position{};
  Quat orientation{};
  Vec3 linear_velocity{};     // m/s
  Vec3 angular_velocity{};    // rad/s
  float linear_damping = 0;   // 1/s
  float angular_damping = 0;  // 1/s
  ShapeDef shape{};
  // Player allowed to push it with inputs. 0: no owner; the sim lets any player push it, the
  // server only in a scene where no body has an owner (docs/scene-format.md, Ownership).
  uint32_t owner_player = 0;
  bool allow_sleep = true;  // false: never falls asleep, nor does any island it is part of
  // A projectile: after each step its motion is swept against static bodies and it is put back
  // where it first touched one (time of impact), so it cannot pass through a thin wall however
  // fast it goes. Without it a dynamic body is caught by speculative contacts up to
  // WorldDef::max_speculative_margin_m of travel per step.
  bool bullet = false;
};

/// Capacity of WorldDef::templates, and the longest template name in bytes.
inline constexpr uint32_t kMaxBodyTemplates = 16;
inline constexpr uint32_t kMaxTemplateNameBytes = 31;

/// What a spawn command creates: a BodyDef without pose, velocity or owner (the command gives
/// those). Part of the WorldDef, so every peer spawns the same bodies from the same command.
struct BodyTemplate {
  // 1..kMaxTemplateNameBytes of [A-Za-z0-9_.-], NUL-terminated and NUL-padded (the padding is
  // fingerprinted); unique within a WorldDef. set_template_name fills it.
  char name[kMaxTemplateNameBytes + 1] = {};
  BodyType type = BodyType::dynamic;
  ShapeDef shape{};           // shape, density (so mass and inertia), friction, filter, sensor
  float linear_damping = 0;   // 1/s
  float angular_damping = 0;  // 1/s
  bool allow_sleep = true;
  bool bullet = false;
};

/// Capacities of WorldDef::hulls: hull definitions, and points in one.
inline constexpr uint32_t kMaxHulls = 32;
inline constexpr uint32_t kMinHullPoints = 4;
inline constexpr uint32_t kMaxHullPoints = 64;

/// The points whose convex hull a hull shape is, in body space (m). Points closer together than
/// a thousandth of the hull's size count as one, points inside the hull or on a face's interior
/// are dropped; the hull must keep at least 4 points off one plane. The centre of mass of the
/// solid hull becomes the body's origin: the builder moves the points by it (the frame is not
/// rotated), so a body placed at p has its centre of mass at p (docs/physics.md, Convex hulls).
struct HullDef {
  uint32_t point_count = 0;  // kMinHullPoints..kMaxHullPoints
  Vec3 points[kMaxHullPoints] = {};
};

/// Capacities of WorldDef::compounds: compound definitions, and children in one.
inline constexpr uint32_t kMaxCompounds = 16;
inline constexpr uint32_t kMaxCompoundChildren = 8;
inline constexpr uint32_t kMaxCompoundNameBytes = 31;

/// One child of a compound: a sphere, box, capsule or hull (ShapeDef's fields of the same names)
/// at a pose in the compound's frame as given (before the centre of mass is moved to the origin).
/// A sphere, box or capsule is centred on `position`; a hull's points (WorldDef::hulls[hull]) are
/// moved by the pose as they were given, so points around the origin sit around `position`.
struct CompoundChild {
  ShapeType type = ShapeType::box;
  float radius = 0.5f;                  // sphere, capsule (m)
  Vec3 half_extents{0.5f, 0.5f, 0.5f};  // box (m)
  float half_height = 0.5f;             // capsule (m)
  uint32_t hull = 0;                    // hull: index into WorldDef::hulls
  Vec3 position{};                      // m
  Quat orientation{};                   // unit
};

/// A compound: 1..kMaxCompoundChildren children, one rigid body. Its mass is the children's at
/// the body's density, summed (overlapping children count twice), about their common centre of
/// mass, which becomes the body's origin: the builder moves the children by it, without turning
/// them, as it does a hull's points. Contacts are found per child, so each child keeps its own
/// manifold and warm start.
struct CompoundDef {
  // 1..kMaxCompoundNameBytes of [A-Za-z0-9_.-], NUL-padded, unique: how the scene text names it.
  char name[kMaxCompoundNameBytes + 1] = {};
  uint32_t child_count = 0;
  CompoundChild children[kMaxCompoundChildren] = {};
};

/// World definition; start from default_world_def(). Everything is fixed at creation.
struct WorldDef {
  float dt_s = 1.0f / 60.0f;
  Vec3 gravity{0, -9.81f, 0};
  // The step is cut into `substeps` substeps (Box2D v3's soft step). Each one integrates
  // velocities, warm starts, runs `velocity_iterations` passes with the soft position bias,
  // integrates positions and runs `relax_iterations` passes without the bias (they take the bias
  // velocity back out so position correction feeds no energy into resting stacks). Restitution
  // has a pass of its own after each substep's relax.
  uint32_t substeps = 4;
  uint32_t velocity_iterations = 1;  // biased passes per substep
  uint32_t relax_iterations = 1;     // relax passes per substep
  // Soft contact: an overlap is pushed out like a damped spring of this stiffness (Hz; capped at
  // a quarter of the substep rate) and damping ratio, at most max_bias_velocity.
  float contact_hertz = 30.0f;
  float contact_damping_ratio = 10.0f;
  float linear_slop_m = 0.001f;        // penetration left alone
  float max_bias_velocity = 2.0f;      // m/s; push-out speed cap so deep overlaps separate gently
  float restitution_threshold = 1.0f;  // m/s; slower closing speeds do not bounce
  float contact_margin_m = 0.02f;      // speculative distance for manifold points at rest
  // A pair's speculative distance grows with how far its bodies can move in one step
  // (|v|·dt + |ω|·r·dt each), up to this bound; faster bodies can be flagged `bullet`.
  float max_speculative_margin_m = 1.0f;
  // Manifold reuse: while a touching pair's relative pose stays within this distance (m) and
  // angle (rad) of the pose its contact points were found at, the narrowphase keeps those points
  // (moved with the bodies, separations measured again) instead of colliding the shapes again.
  // 0 in either turns reuse off.
  float contact_reuse_distance_m = 0.001f;
  float contact_reuse_angle_rad = 0.0174533f;  // 1°; at most 0.5
  float max_angular_speed = 100.0f;            // rad/s; clamp after the solve
  float max_linear_speed = 500.0f;             // m/s; clamp after the solve
  // Sleeping (island.h): an island of touching dynamic bodies that have all been at rest for
  // time_to_sleep_s goes to sleep and costs nothing until woken. A body is at rest while
  // |v| ≤ threshold and |ω|·extent ≤ threshold, extent being the largest distance from its
  // centre to a point of its shape: no point of it moves faster than about the threshold.
  bool enable_sleep = true;
  float sleep_speed_threshold_mps = 0.05f;  // m/s
  float time_to_sleep_s = 0.5f;             // s of rest before an island sleeps
  // Input limits (in the world's units; fixed-point inputs beyond them are rejected).
  float max_input_linear_impulse = 1.0e4f;    // N·s per axis
  float max_input_angular_impulse = 1.0e4f;   // N·m·s per axis
  float max_input_linear_velocity = 100.0f;   // m/s per axis, target velocities of inputs
  float max_input_angular_velocity = 100.0f;  // rad/s per axis
  // Capacities: all memory is taken at creation. The four contact capacities may be left 0, and
  // are then derived from max_bodies when the world is created (resolve_capacities): room for a
  // dense packing of boxes, 7 manifolds per body, 3.5 points per manifold, 1.5 candidate pairs
  // per manifold and one event per manifold. World::def() reports the values in use; a step
  // that needs more drops what does not fit and reports it (StepStatus::overflow), as always.
  uint32_t max_bodies = 1024;
  uint32_t max_contact_pairs = 0;    // manifolds per step (0: 7 × max_bodies)
  uint32_t max_contact_points = 0;   // manifold points per step (0: 3.5 × max_contact_pairs)
  uint32_t max_candidate_pairs = 0;  // broadphase overlaps per step (0: 1.5 × max_contact_pairs)
  uint32_t max_events = 0;           // contact begin/end events per step (0: max_contact_pairs)
  uint32_t max_inputs_per_tick = 256;
  uint32_t max_commands_per_tick = 64;  // spawn/destroy commands queued for one step
  bool measure_stage_times = true;      // steady-clock timings in StepStats (never in the state)
  // Templates that spawn commands name by index (scene `template` lines, by name).
  uint32_t template_count = 0;
  BodyTemplate templates[kMaxBodyTemplates] = {};
  // Hulls that hull shapes name by index (scene `shape=hull points=...` keys add them).
  uint32_t hull_count = 0;
  HullDef hulls[kMaxHulls] = {};
  // Compounds that compound shapes name by index (scene `compound` and `child` lines).
  uint32_t compound_count = 0;
  CompoundDef compounds[kMaxCompounds] = {};
};

/// Sensible defaults for a world.
WorldDef default_world_def();
/// Sensible defaults for a dynamic unit-sphere body at the origin.
BodyDef default_body_def();

/// Fixed-point scale of input impulses: value = integer / 2^kInputScaleLog2 (exact in float).
inline constexpr int kInputScaleLog2 = 10;

/// Bits of Input::flags: which target velocities an input carries.
enum InputFlags : uint32_t {
  input_flags_none = 0,
  input_sets_linear_velocity = 1u << 0,   // Input::linear_velocity replaces the body's
  input_sets_angular_velocity = 1u << 1,  // Input::angular_velocity replaces the body's
  input_flags_known = input_sets_linear_velocity | input_sets_angular_velocity,
};

/// A player's input for one tick: plain integers, so nothing non-finite can cross the wire.
/// Applied at the start of the step, in input_less order: first the target velocities the flags
/// select replace the body's velocities, then the impulses are added. A dynamic body then feels
/// gravity, damping and contacts as usual (its velocity after the step is the target plus what
/// the step added); a kinematic body moves at the target until told otherwise. Kinematic bodies
/// accept inputs without impulses only (docs/gameplay.md, Velocity inputs).
struct Input {
  uint32_t player = 0;
  uint32_t sequence = 0;
  BodyId body{};
  int32_t linear_impulse[3] = {0, 0, 0};    // N·s · 2^kInputScaleLog2, applied at the centre
  int32_t angular_impulse[3] = {0, 0, 0};   // N·m·s · 2^kInputScaleLog2
  uint32_t buttons = 0;                     // game-defined bits, hashed but not interpreted
  uint32_t flags = input_flags_none;        // InputFlags; unknown bits are rejected
  int32_t linear_velocity[3] = {0, 0, 0};   // m/s · 2^kInputScaleLog2, with the linear flag
  int32_t angular_velocity[3] = {0, 0, 0};  // rad/s · 2^kInputScaleLog2, with the angular flag
};

/// The total order in which a tick's inputs are applied: player, sequence, body index,
/// generation, then every other field (impulses, buttons, flags, target velocities). Layers
/// above the sim use it to list inputs canonically.
bool input_less(const Input& a, const Input& b);

enum class CommandType : uint8_t {
  spawn = 0,
  destroy = 1,
  add_score = 2,
  set_pose = 3,        // body: position, orientation (velocities kept)
  set_velocity = 4,    // body: linear_velocity, angular_velocity (dynamic or kinematic)
  apply_impulse = 5,   // body (dynamic): linear_velocity = impulse (N·s) at the centre of mass,
                       // angular_velocity = angular impulse (N·m·s)
  move_kinematic = 6,  // body (kinematic): the velocities that reach position, orientation in
                       // this step
  respawn = 7,         // body: pose and velocities all replaced, woken; the handle stays
  set_state = 8,       // game state: template_index = field, owner_player = player (0: a room
                       // field), score_delta = the new value (raw)
  add_state = 9,       // the same, score_delta added (saturating)
  emit_event = 10,     // a game event: template_index = its type (the game's own numbering),
                       // owner_player = the player it is about (0: none), score_delta = a value
};
/// The last CommandType (wire and snapshot readers refuse larger values).
inline constexpr CommandType kLastCommandType = CommandType::emit_event;

/// A game event as its step applied it (World::game_events): what emit_event commands carry.
struct GameEvent {
  uint32_t type = 0;    // the game's own numbering ("took the hill", "round over", ...)
  uint32_t player = 0;  // the player it is about, 0 for none
  int32_t value = 0;
  uint32_t sequence = 0;  // the command's sequence (the order events were emitted in)
};

/// Replicated game state (World::declare_state_field, scene `state` lines): at most
/// kMaxStateFields fields, each one int32 per room or per player (players 1..kMaxStatePlayers).
inline constexpr uint32_t kMaxStateFields = 16;
inline constexpr uint32_t kMaxStatePlayers = 64;
inline constexpr uint32_t kMaxStateNameBytes = 31;
/// The players' scores as a game state field (the index set_state/add_state/World::state give
/// it); its values are World::score's.
inline constexpr uint32_t kScoreStateField = kMaxStateFields;
/// World::find_state_field of a name no field has.
inline constexpr uint32_t kNoStateField = 0xffffffffu;
/// Fixed-point game state: value = raw / 2^kStateFixedScaleLog2 (16.16).
inline constexpr int kStateFixedScaleLog2 = 16;

/// A fixed-point game state value as a double (exact).
constexpr double fixed_state_value(int32_t raw) {
  return static_cast<double>(raw) / static_cast<double>(1 << kStateFixedScaleLog2);
}

enum class StateScope : uint8_t { room = 0, player = 1 };
enum class StateType : uint8_t { int32 = 0, fixed = 1 };

/// One declared game state field.
struct StateFieldDef {
  // 1..kMaxStateNameBytes of [A-Za-z0-9_.-], NUL-padded; unique; "score" is taken.
  char name[kMaxStateNameBytes + 1] = {};
  StateScope scope = StateScope::room;
  StateType type = StateType::int32;
  int32_t default_value = 0;  // raw (a fixed field's 1.0 is 65536)
};
/// "spawn", "set_pose", ...; "?" outside the enum.
const char* command_type_name(CommandType type);

/// Player indices that carry a score: 1..kMaxPlayers (the server's largest room size).
inline constexpr uint32_t kMaxPlayers = 1024;

/// A change to the set of bodies, to a body's motion or to a player's score, stamped for a tick
/// like an input and applied at the start of that step, before the inputs, in command_less order:
/// spawned bodies take the lowest free slots in that order, so the same commands give the same
/// handles on every machine. Issued by the server's game rules (docs/gameplay.md, Commands); the
/// floats must be finite. The body commands (set_pose .. respawn) name `body` and reuse the pose
/// and velocity fields as CommandType says; a body command on a body gone by then, or of the
/// wrong type, fails (CommandResult::error) and changes nothing.
struct Command {
  CommandType type = CommandType::spawn;
  uint32_t sequence = 0;        // the issuer's order: the first key of command_less
  uint32_t template_index = 0;  // spawn: index into WorldDef::templates
  Vec3 position{};              // spawn (m)
  Quat orientation{};           // spawn; normalized when applied
  Vec3 linear_velocity{};       // spawn (m/s; zero for static templates)
  Vec3 angular_velocity{};      // spawn (rad/s)
  uint32_t owner_player = 0;    // spawn: BodyDef::owner_player; add_score: the player (1..)
  BodyId body{};                // destroy and the body commands: the body
  int32_t score_delta = 0;      // add_score: added to World::score(owner_player), saturating
};

/// The total order in which a tick's commands are applied: sequence, type, then every field
/// (floats by their bit patterns).
bool command_less(const Command& a, const Command& b);

/// What one command did when its step applied it (World::command_results).
struct CommandResult {
  uint32_t sequence = 0;
  CommandType type = CommandType::spawn;
  Error error = Error::none;  // e.g. capacity_bodies (spawn), stale_handle (destroyed already)
  BodyId body{};              // the spawned or destroyed body (null when a spawn failed)
};

enum class ContactEventType : uint8_t { begin = 0, end = 1 };

/// A contact beginning or ending during the last step (bodies in slot order, a before b).
struct ContactEvent {
  ContactEventType type = ContactEventType::begin;
  BodyId a{}, b{};
};

/// A body entering (begin) or leaving (end) a sensor during the last step. A body that is
/// destroyed while inside, or a sensor that is, ends its overlaps without an event; a body asleep
/// inside a sensor stays inside (no end) until it wakes and leaves.
struct SensorEvent {
  ContactEventType type = ContactEventType::begin;
  BodyId sensor{};   // the body whose shape is the sensor
  BodyId visitor{};  // the other body
};

/// One point of a contact manifold touching a body, as the last step left it
/// (World::contact_points).
struct ContactPointView {
  BodyId other{};            // the other body of the pair
  Vec3 point{};              // world (m): midway between the two surfaces where it was found
  Vec3 normal{0, 1, 0};      // world, unit, from `other` towards the body asked about
  float separation_m = 0;    // negative: overlap; positive: a speculative point not yet touching
  float normal_impulse = 0;  // accumulated over the last substep (N·s)
};

/// Bits of StepStatus::overflow naming the capacity that ran out during the step.
enum OverflowBits : uint32_t {
  overflow_none = 0,
  overflow_candidate_pairs = 1u << 0,
  overflow_contact_pairs = 1u << 1,
  overflow_contact_points = 1u << 2,
  overflow_events = 1u << 3,
  overflow_sensor_overlaps = 1u << 4,  // more overlapping sensor pairs than max_contact_pairs
};

/// What the step reports; overflow is nonzero when some capacity ran out (degraded, not grown).
struct StepStatus {
  uint32_t overflow = overflow_none;
  bool ok() const { return overflow == overflow_none; }
};

/// The stages of World::step, in the order they run: the one list of them. Each is a function
/// of the same name in sim/src/step.cpp, and its wall-clock time is StepStats::stage_ns[stage].
/// The six from integrate_velocities to restitute run once per substep (their times add up).
/// docs/design-decisions.md ("The step, stage by stage") says what each one does.
enum class StepStage : uint8_t {
  apply_commands,          // spawns, destroys and score changes queued for the tick
  apply_inputs,            // target velocities, then impulses, in the total input order
  size_margins,            // each body's speculative margin: how far it can move this step
  update_broadphase,       // the bodies' boxes, the sweep, waking islands by contact
  collide_pairs,           // the narrowphase: each candidate pair's manifold, reused or collided
  prepare_contacts,        // warm-start match, the lanes, anchors and effective masses
  integrate_velocities,    // per substep: gravity and damping
  warm_start,              // per substep: last impulses applied again
  solve,                   // per substep: the biased (soft) passes, then the speed clamps
  integrate_positions,     // per substep: positions and orientations
  relax,                   // per substep: the same rows rigid, without the push-out
  restitute,               // per substep: the bounce of new impacts, then the speed clamps
  store_velocities,        // the solver's velocities back into the bodies
  sweep_bullets,           // bullets put back to their time of impact against static bodies
  emit_contact_events,     // contact begin and end events
  update_sensor_overlaps,  // sensor overlaps and their events
  store_contacts,          // impulses back into the points, the warm-start cache
  update_islands,          // rest timers, islands, islands falling asleep
  update_state_hash,       // the state hash of the new tick
};
inline constexpr uint32_t kStepStageCount = static_cast<uint32_t>(StepStage::update_state_hash) + 1;
/// The stage's name as written in StepStage ("collide_pairs"); "?" outside the enum.
const char* step_stage_name(StepStage stage);

/// Counters and timings of the last step, written during the step and read after it.
struct StepStats {
  uint64_t tick = 0;
  uint32_t bodies = 0;
  uint32_t awake_dynamic_bodies = 0;  // dynamic bodies stepped (not asleep during the step)
  uint32_t sleeping_bodies = 0;       // dynamic bodies asleep at the end of the step
  uint32_t islands = 0;               // islands of the awake bodies this step (0: sleep off)
  uint32_t candidate_pairs = 0;
  uint32_t manifolds = 0;
  uint32_t contact_points = 0;
  uint32_t warm_started_points = 0;
  uint32_t reused_manifolds = 0;  // manifolds whose points were kept, not collided again
  uint32_t dropped_candidate_pairs = 0;
  uint32_t dropped_contact_pairs = 0;
  uint32_t dropped_contact_points = 0;
  uint32_t dropped_events = 0;
  uint32_t velocity_iterations = 0;
  uint32_t skipped_normal_rows = 0;    // K ≈ 0
  uint32_t skipped_friction_rows = 0;  // K_t not finite positive definite, or bad radius
  uint32_t inputs_applied = 0;
  uint32_t commands_applied = 0;  // commands applied without error
  uint32_t commands_failed = 0;   // commands refused when applied (CommandResult::error)
  uint32_t begin_events = 0;
  uint32_t end_events = 0;
  uint32_t bullet_impacts = 0;   // bullets put back to their time of impact this step
  uint32_t sensor_overlaps = 0;  // sensor pairs overlapping after the step (held ones included)
  uint32_t sensor_begin_events = 0;
  uint32_t sensor_end_events = 0;
  uint32_t dropped_sensor_overlaps = 0;  // overlaps beyond capacity (the highest keys)
  // Level triangles near a body past what one narrowphase visit takes (the last in tree order).
  uint32_t dropped_level_triangles = 0;
  // Wall-clock times in nanoseconds (zero when WorldDef::measure_stage_times is off): per stage,
  // indexed by StepStage, and the whole step (the sum of the stages).
  uint64_t stage_ns[kStepStageCount] = {};
  uint64_t ns_total = 0;

  /// The time of one stage (ns).
  uint64_t ns(StepStage stage) const { return stage_ns[static_cast<uint32_t>(stage)]; }
  /// The time of the stages from `first` to `last` inclusive, in StepStage order (ns).
  uint64_t ns(StepStage first, StepStage last) const {
    uint64_t sum = 0;
    for (uint32_t i = static_cast<uint32_t>(first); i <= static_cast<uint32_t>(last); ++i)
      sum += stage_ns[i];
    return sum;
  }
};

/// Totals since creation (or restore) that are not part of the simulated state.
struct WorldCounters {
  uint64_t inputs_accepted = 0;
  uint64_t inputs_rejected = 0;
  uint64_t commands_accepted = 0;  // queued by queue_command
  uint64_t commands_rejected = 0;  // refused by queue_command (bad, or capacity full)
  uint64_t commands_failed = 0;    // queued, then refused when applied (CommandResult::error)
  uint64_t api_calls_rejected = 0;
  uint64_t overflow_steps = 0;
};

}  // namespace lockstep::sim
