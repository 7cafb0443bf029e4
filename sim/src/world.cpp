// The World: bodies in generation-checked slots, the queues of inputs and commands, the edits
// allowed between steps, and the read-only views. The step itself, one function per stage, is
// in step.cpp. All memory is taken in World::create; nothing here allocates afterwards.
#include "lockstep/sim/world.h"
#include "lockstep/sim/testing.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "broadphase.h"
#include "collide.h"
#include "island.h"
#include "shape.h"
#include "solver/contact_solver.h"
#include "state_stream.h"
#include "world_data.h"

namespace lockstep::sim {

namespace {

// Fixed-point input limit: the largest |integer| whose value (integer · 2^-kInputScaleLog2) does
// not exceed `max`. Computed once, so queue_input compares integers only.
int64_t fixed_point_limit(float max) {
  const float scaled = max * static_cast<float>(1 << kInputScaleLog2);  // exact: power of two
  if (scaled >= 2147483648.0f) return int64_t{1} << 31;
  return static_cast<int64_t>(scaled);  // truncation = floor for values ≥ 0
}

bool within_coordinates(Vec3 p) {
  return std::fabs(p.x) <= kMaxCoordinate && std::fabs(p.y) <= kMaxCoordinate &&
         std::fabs(p.z) <= kMaxCoordinate;
}

// Non-zero finite quaternion → normalized; otherwise an error.
Error checked_orientation(Quat q, Quat* out) {
  if (!is_finite(q)) return Error::non_finite;
  if (!(dot(q, q) >= 1.0e-6f)) return Error::invalid_argument;
  *out = normalize(q);
  return Error::none;
}

bool speed_within(Vec3 v, float max) {
  return length_squared(v) <= max * max;
}

// Remove every sensor overlap that involves `slot` (no event: the body is gone).
void remove_sensor_pairs(WorldData& w, uint32_t slot) {
  uint32_t out = 0;
  for (uint32_t i = 0; i < w.sensor_pair_count; ++i) {
    const uint64_t key = w.sensor_pairs[i];
    if (pair_slot_a(key) == slot || pair_slot_b(key) == slot) continue;
    w.sensor_pairs[out++] = key;
  }
  w.sensor_pair_count = out;
}

// Remove every cache manifold that involves `slot`, compacting manifolds and points in place.
void remove_cache_entries(ContactCache& cache, uint32_t slot) {
  uint32_t m_out = 0, p_out = 0;
  for (uint32_t m = 0; m < cache.manifold_count; ++m) {
    const CachedManifold cm = cache.manifolds[m];
    if (pair_slot_a(cm.key) == slot || pair_slot_b(cm.key) == slot) continue;
    CachedManifold& dst = cache.manifolds[m_out++];
    dst.key = cm.key;
    dst.first_point = p_out;
    dst.point_count = cm.point_count;
    dst.reference = cm.reference;
    for (uint32_t i = 0; i < cm.point_count; ++i) {
      cache.points[p_out++] = cache.points[cm.first_point + i];
    }
  }
  cache.manifold_count = m_out;
  cache.point_count = p_out;
}

}  // namespace

Error resolve_body(const WorldData& w, BodyId id, uint32_t* slot) {
  if (id.is_null()) return Error::null_handle;
  const uint32_t s = id.index1 - 1;
  if (s >= w.slot_count) return Error::stale_handle;
  const BodyRecord& r = w.bodies[s];
  if (!r.alive || r.generation != id.generation) return Error::stale_handle;
  *slot = s;
  return Error::none;
}

BodyId body_id(const WorldData& w, uint32_t slot) {
  return BodyId{slot + 1, w.bodies[slot].generation};
}

bool input_less(const Input& a, const Input& b) {
  if (a.player != b.player) return a.player < b.player;
  if (a.sequence != b.sequence) return a.sequence < b.sequence;
  if (a.body.index1 != b.body.index1) return a.body.index1 < b.body.index1;
  if (a.body.generation != b.body.generation) return a.body.generation < b.body.generation;
  for (int i = 0; i < 3; ++i) {
    if (a.linear_impulse[i] != b.linear_impulse[i])
      return a.linear_impulse[i] < b.linear_impulse[i];
  }
  for (int i = 0; i < 3; ++i) {
    if (a.angular_impulse[i] != b.angular_impulse[i]) {
      return a.angular_impulse[i] < b.angular_impulse[i];
    }
  }
  if (a.buttons != b.buttons) return a.buttons < b.buttons;
  if (a.flags != b.flags) return a.flags < b.flags;
  for (int i = 0; i < 3; ++i) {
    if (a.linear_velocity[i] != b.linear_velocity[i]) {
      return a.linear_velocity[i] < b.linear_velocity[i];
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (a.angular_velocity[i] != b.angular_velocity[i]) {
      return a.angular_velocity[i] < b.angular_velocity[i];
    }
  }
  return false;
}

namespace {

bool within_limit(const int32_t (&v)[3], int64_t limit) {
  for (int i = 0; i < 3; ++i) {
    const int64_t x = v[i];  // |INT32_MIN| fits in int64
    if ((x < 0 ? -x : x) > limit) return false;
  }
  return true;
}

bool all_zero(const int32_t (&v)[3]) {
  return v[0] == 0 && v[1] == 0 && v[2] == 0;
}

}  // namespace

Error check_input_fields(const WorldData& w, const Input& input, BodyType type,
                         uint32_t owner_player) {
  if (type == BodyType::static_body) return Error::wrong_body_type;
  // A kinematic body has no mass for an impulse to act on: it only takes target velocities.
  if (type == BodyType::kinematic &&
      (!all_zero(input.linear_impulse) || !all_zero(input.angular_impulse))) {
    return Error::wrong_body_type;
  }
  if (owner_player != 0 && owner_player != input.player) return Error::invalid_argument;
  if ((input.flags & ~uint32_t{input_flags_known}) != 0) return Error::invalid_argument;
  // Velocities without their flag must be zero, so one input has one encoding.
  if ((input.flags & input_sets_linear_velocity) == 0 && !all_zero(input.linear_velocity)) {
    return Error::invalid_argument;
  }
  if ((input.flags & input_sets_angular_velocity) == 0 && !all_zero(input.angular_velocity)) {
    return Error::invalid_argument;
  }
  if (!within_limit(input.linear_impulse, w.input_linear_limit) ||
      !within_limit(input.angular_impulse, w.input_angular_limit) ||
      !within_limit(input.linear_velocity, w.input_linear_velocity_limit) ||
      !within_limit(input.angular_velocity, w.input_angular_velocity_limit)) {
    return Error::input_out_of_range;
  }
  return Error::none;
}

bool command_less(const Command& a, const Command& b) {
  if (a.sequence != b.sequence) return a.sequence < b.sequence;
  if (a.type != b.type) return a.type < b.type;
  // The remaining fields as u32 (floats by their bits): any total order serves, this one is cheap.
  const auto key = [](const Command& c, uint32_t out[21]) {
    const float f[] = {c.position.x,        c.position.y,         c.position.z,
                       c.orientation.x,     c.orientation.y,      c.orientation.z,
                       c.orientation.w,     c.linear_velocity.x,  c.linear_velocity.y,
                       c.linear_velocity.z, c.angular_velocity.x, c.angular_velocity.y,
                       c.angular_velocity.z};
    out[0] = c.template_index;
    for (int i = 0; i < 13; ++i)
      out[1 + i] = std::bit_cast<uint32_t>(f[i]);
    out[14] = c.owner_player;
    out[15] = c.body.index1;
    out[16] = c.body.generation;
    out[17] = static_cast<uint32_t>(c.score_delta) ^ 0x8000'0000u;  // signed order
    for (int i = 18; i < 21; ++i)
      out[i] = 0;
  };
  uint32_t ka[21], kb[21];
  key(a, ka);
  key(b, kb);
  for (int i = 0; i < 21; ++i) {
    if (ka[i] != kb[i]) return ka[i] < kb[i];
  }
  return false;
}

Error check_command_fields(const WorldDef& def, const Command& c) {
  if (c.type == CommandType::destroy) {
    if (c.body.is_null()) return Error::null_handle;
    return Error::none;
  }
  if (c.type == CommandType::add_score) {
    if (c.owner_player < 1 || c.owner_player > kMaxPlayers) return Error::unknown_player;
    return Error::none;
  }
  if (is_body_command(c.type)) return check_body_command_fields(def, c);
  if (is_state_command(c.type)) return check_state_command_fields(c);
  if (c.type == CommandType::emit_event) {
    return c.owner_player <= kMaxPlayers ? Error::none : Error::unknown_player;
  }
  if (c.type != CommandType::spawn) return Error::invalid_argument;
  if (c.template_index >= def.template_count) return Error::unknown_template;
  if (!is_finite(c.position) || !is_finite(c.orientation) || !is_finite(c.linear_velocity) ||
      !is_finite(c.angular_velocity)) {
    return Error::non_finite;
  }
  if (!within_coordinates(c.position)) return Error::invalid_argument;
  if (!(dot(c.orientation, c.orientation) >= 1.0e-6f)) return Error::invalid_argument;
  const BodyTemplate& t = def.templates[c.template_index];
  if (t.type == BodyType::static_body &&
      (!(c.linear_velocity == Vec3{}) || !(c.angular_velocity == Vec3{}))) {
    return Error::wrong_body_type;
  }
  if (!speed_within(c.linear_velocity, def.max_linear_speed) ||
      !speed_within(c.angular_velocity, def.max_angular_speed)) {
    return Error::invalid_argument;
  }
  return Error::none;
}

BodyDef spawn_body_def(const WorldDef& def, const Command& c) {
  BodyDef b = template_body_def(def.templates[c.template_index]);
  b.position = c.position;
  b.orientation = c.orientation;
  b.linear_velocity = c.linear_velocity;
  b.angular_velocity = c.angular_velocity;
  b.owner_player = c.owner_player;
  return b;
}

void refresh_body_derived(WorldData& w, uint32_t slot) {
  const BodyRecord& r = w.bodies[slot];
  BodySolverState& s = w.solver_bodies[slot];
  const bool dynamic = r.alive && r.type == BodyType::dynamic;
  w.dynamic_flags[slot] = dynamic ? 1 : 0;
  if (!dynamic) {
    s.inv_mass = 0.0f;
    s.inv_inertia_world = Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    w.bodies[slot].inv_inertia_local = Vec3{};
    return;
  }
  s.inv_mass = 1.0f / r.mass_kg;
  const Vec3 inv_local{1.0f / r.inertia.x, 1.0f / r.inertia.y, 1.0f / r.inertia.z};
  w.bodies[slot].inv_inertia_local = inv_local;
  // A hull's or compound's principal axes are turned in its body frame (hull.h, compound.h); the
  // others' are the body axes.
  Mat3 axes = to_mat3(r.orientation);
  if (r.shape.type == ShapeType::hull || r.shape.type == ShapeType::compound)
    axes = axes * to_mat3(compute_mass_properties(r.shape, w.library()).principal_frame);
  s.inv_inertia_world = rotate_diagonal(axes, inv_local);
}

World::World(std::unique_ptr<WorldData> data) : data_(std::move(data)) {}
World::~World() = default;

namespace {
template <class Vector>
constexpr uint64_t element_bytes() {
  return sizeof(typename Vector::value_type);
}
}  // namespace

// Mirrors World::create and the *_init functions it calls, vector by vector, in 64-bit arithmetic
// so that capacities near UINT32_MAX cannot wrap.
uint64_t world_memory_bytes(const WorldDef& requested) {
  auto resolved = std::make_unique<WorldDef>(requested);  // 34 KB: not on a small stack
  resolve_capacities(resolved.get());
  const WorldDef& def = *resolved;
  const uint64_t bodies = def.max_bodies;
  const uint64_t pairs = def.max_contact_pairs;
  using D = WorldData;
  uint64_t n = sizeof(WorldData);
  n +=
      bodies * (element_bytes<decltype(D::bodies)>() + element_bytes<decltype(D::solver_bodies)>() +
                element_bytes<decltype(D::aabbs)>() + element_bytes<decltype(D::dynamic_flags)>() +
                element_bytes<decltype(D::speculative_margins)>() +
                element_bytes<decltype(D::restore_slots)>());
  n += (bodies + 1) * 2 * element_bytes<decltype(D::solver_velocities)>();
  n += broadphase_memory_bytes(bodies, def.max_candidate_pairs);
  n += bodies * (sizeof(uint32_t) + 3 * sizeof(uint8_t));  // islands_init
  n += pairs * element_bytes<decltype(D::constraints)>() +
       uint64_t{def.max_contact_points} * element_bytes<decltype(D::points)>();
  // contact_lanes_init (a zero point capacity means four per manifold there).
  const uint32_t lane_points = def.max_contact_points != 0
                                   ? def.max_contact_points
                                   : def.max_contact_pairs * uint32_t{kMaxManifoldPoints};
  const uint64_t batches = max_manifold_lanes(def.max_contact_pairs);
  const uint64_t rows = max_point_lane_rows(lane_points);
  n += batches * sizeof(ManifoldLanes) + rows * (sizeof(PointLanes) + sizeof(EigenLanes)) +
       bodies * sizeof(uint64_t) + pairs * sizeof(uint8_t);
  n += 2 * (pairs * element_bytes<decltype(ContactCache::manifolds)>() +
            uint64_t{def.max_contact_points} * element_bytes<decltype(ContactCache::points)>());
  n += 2 * uint64_t{separation_hint_capacity(def)} * (sizeof(uint64_t) + sizeof(uint32_t));
  n += uint64_t{def.max_inputs_per_tick} * element_bytes<decltype(D::inputs)>();
  n += uint64_t{def.max_commands_per_tick} *
       (element_bytes<decltype(D::commands)>() + element_bytes<decltype(D::command_results)>());
  n += uint64_t{kMaxPlayers} * sizeof(int32_t);
  n += uint64_t{def.max_commands_per_tick} * sizeof(GameEvent);
  n += uint64_t{kMaxStateFields} * kMaxStatePlayers * sizeof(int32_t);  // game state values
  n += uint64_t{def.max_events} *
       (element_bytes<decltype(D::events)>() + element_bytes<decltype(D::sensor_events)>());
  n += pairs * 3 * sizeof(uint64_t);  // sensor pairs, found, next
  n += state_hash_scratch_bytes();    // the hash's scratch
  const uint64_t tree = bodies > 0 ? bodies : 1;
  n += tree *
       (sizeof(QueryItem) + sizeof(QueryNode) + sizeof(uint64_t) + sizeof(Aabb) + sizeof(uint32_t));
  n += uint64_t{def.hull_count <= kMaxHulls ? def.hull_count : kMaxHulls} * sizeof(HullGeometry);
  n += uint64_t{def.compound_count <= kMaxCompounds ? def.compound_count : kMaxCompounds} *
       sizeof(CompoundGeometry);
  return n;
}

std::unique_ptr<World> World::create(const WorldDef& requested, Error* error) {
  return create(requested, LevelDef{}, error);
}

std::unique_ptr<World> World::create(const WorldDef& requested, const LevelDef& level,
                                     Error* error) {
  auto d = std::make_unique<WorldData>();
  Error e = validate_world_def_and_build(requested, &d->hulls, &d->compounds);
  if (e == Error::none) e = build_level(level, &d->meshes, &d->heightfields, &d->level_stats);
  if (error != nullptr) *error = e;
  if (e != Error::none) return nullptr;
  d->def = requested;
  resolve_capacities(&d->def);
  const WorldDef& def = d->def;
  d->def_fingerprint = world_def_fingerprint(def);
  // A level's content belongs to the world's identity: a snapshot fits only the same level.
  if (d->level_stats.digest != 0) {
    const uint64_t parts[2] = {d->def_fingerprint, d->level_stats.digest};
    uint8_t bytes[16];
    for (int i = 0; i < 16; ++i)
      bytes[i] = static_cast<uint8_t>(parts[i / 8] >> (8 * (i % 8)));
    d->def_fingerprint = XXH3_64bits(bytes, sizeof bytes);
  }
  d->bodies.assign(def.max_bodies, BodyRecord{});
  d->solver_bodies.assign(def.max_bodies, BodySolverState{});
  d->aabbs.assign(def.max_bodies, Aabb{});
  d->dynamic_flags.assign(def.max_bodies, 0);
  broadphase_init(d->broadphase, def.max_bodies, def.max_candidate_pairs);
  islands_init(&d->islands, def.max_bodies);
  d->constraints.assign(def.max_contact_pairs, ContactConstraint{});
  d->points.assign(def.max_contact_points, ContactPoint{});
  d->solver_velocities.assign(def.max_bodies + 1, SolverVelocity{});  // + the zero slot
  d->solver_deltas.assign(def.max_bodies + 1, SolverVelocity{});
  d->speculative_margins.assign(def.max_bodies, 0.0f);
  contact_lanes_init(&d->lanes, def.max_bodies, def.max_contact_pairs, def.max_contact_points);
  for (ContactCache* c : {&d->cache, &d->next_cache}) {
    c->manifolds.assign(def.max_contact_pairs, CachedManifold{});
    c->points.assign(def.max_contact_points, CachedPoint{});
  }
  // Room for half the candidate pairs to be near misses; a pair past that goes without a hint.
  const uint32_t hint_capacity = separation_hint_capacity(def);
  for (SeparationHints* h : {&d->hints, &d->next_hints}) {
    h->keys.reset(new uint64_t[hint_capacity]);  // not written here: see WorldData
    h->codes.reset(new uint32_t[hint_capacity]);
    h->capacity = hint_capacity;
  }
  d->inputs.assign(def.max_inputs_per_tick, Input{});
  d->input_linear_limit = fixed_point_limit(def.max_input_linear_impulse);
  d->input_angular_limit = fixed_point_limit(def.max_input_angular_impulse);
  d->input_linear_velocity_limit = fixed_point_limit(def.max_input_linear_velocity);
  d->input_angular_velocity_limit = fixed_point_limit(def.max_input_angular_velocity);
  d->commands.assign(def.max_commands_per_tick, Command{});
  d->command_results.assign(def.max_commands_per_tick, CommandResult{});
  d->game_events.assign(def.max_commands_per_tick, GameEvent{});
  d->scores.assign(kMaxPlayers, 0);
  d->state_values.assign(size_t{kMaxStateFields} * kMaxStatePlayers, 0);
  d->events.assign(def.max_events, ContactEvent{});
  d->sensor_events.assign(def.max_events, SensorEvent{});
  d->sensor_pairs.assign(def.max_contact_pairs, 0);
  d->sensor_found.assign(def.max_contact_pairs, 0);
  d->sensor_next.assign(def.max_contact_pairs, 0);
  d->scratch.assign(state_hash_scratch_bytes(), 0);
  d->restore_slots.assign(def.max_bodies, RestoreSlot{});
  query_tree_init(&d->query_tree, def.max_bodies);
  d->hash_dirty = true;
  return std::unique_ptr<World>(new World(std::move(d)));
}

std::unique_ptr<World> World::create_like(const World& other, Error* error) {
  // The resolved WorldDef resolves to itself, so the fingerprint before the level is other's.
  std::unique_ptr<World> world = create(other.def(), error);
  if (world == nullptr) return nullptr;
  WorldData& d = *world->data_;
  const WorldData& o = *other.data_;
  d.meshes = o.meshes;
  d.heightfields = o.heightfields;
  d.level_stats = o.level_stats;
  d.def_fingerprint = o.def_fingerprint;
  return world;
}

const WorldDef& World::def() const {
  return data_->def;
}

// ---- bodies ---------------------------------------------------------------------------------

namespace {

Error validate_body_def(const WorldDef& wd, const ShapeLibrary& library, const BodyDef& def,
                        Quat* orientation, MassProperties* mass) {
  if (def.type != BodyType::static_body && def.type != BodyType::kinematic &&
      def.type != BodyType::dynamic) {
    return Error::invalid_argument;
  }
  if (!is_finite(def.position) || !is_finite(def.orientation) || !is_finite(def.linear_velocity) ||
      !is_finite(def.angular_velocity) || !std::isfinite(def.linear_damping) ||
      !std::isfinite(def.angular_damping)) {
    return Error::non_finite;
  }
  const Error shape_error = validate_shape(def.shape, library);
  if (shape_error != Error::none) return shape_error;
  if (def.shape.type == ShapeType::plane && def.type != BodyType::static_body) {
    return Error::wrong_body_type;
  }
  // Level geometry is static: its tree is built in its own frame once, and a sensor of it would
  // need a whole-shape overlap test the level does not have.
  if ((def.shape.type == ShapeType::mesh || def.shape.type == ShapeType::heightfield) &&
      (def.type != BodyType::static_body || def.shape.sensor)) {
    return Error::unknown_mesh;
  }
  if (def.type == BodyType::static_body &&
      (!(def.linear_velocity == Vec3{}) || !(def.angular_velocity == Vec3{}))) {
    return Error::wrong_body_type;
  }
  if (!within_coordinates(def.position)) return Error::invalid_argument;
  const Error q_error = checked_orientation(def.orientation, orientation);
  if (q_error != Error::none) return q_error;
  if (!(def.linear_damping >= 0.0f && def.linear_damping <= kMaxDamping) ||
      !(def.angular_damping >= 0.0f && def.angular_damping <= kMaxDamping)) {
    return Error::invalid_argument;
  }
  if (!speed_within(def.linear_velocity, wd.max_linear_speed) ||
      !speed_within(def.angular_velocity, wd.max_angular_speed)) {
    return Error::invalid_argument;
  }
  *mass = MassProperties{};
  if (def.type == BodyType::dynamic) {
    *mass = compute_mass_properties(def.shape, library);
    if (!std::isfinite(mass->mass) || !(mass->mass > 0.0f) || !is_finite(mass->inertia) ||
        !(mass->inertia.x > 0.0f) || !(mass->inertia.y > 0.0f) || !(mass->inertia.z > 0.0f)) {
      return Error::invalid_argument;
    }
  }
  return Error::none;
}

}  // namespace

// create_body and spawn commands: checks, then the lowest free slot. Counts nothing.
Error add_body(WorldData& w, const BodyDef& def, BodyId* out_id) {
  Quat orientation{};
  MassProperties mass{};
  const Error e = validate_body_def(w.def, w.library(), def, &orientation, &mass);
  if (e != Error::none) return e;
  if (w.body_count >= w.def.max_bodies) return Error::capacity_bodies;

  // Lowest free slot: a function of the alive flags only, so snapshots need no free list.
  uint32_t slot = 0;
  while (w.bodies[slot].alive)
    ++slot;

  BodyRecord& r = w.bodies[slot];
  r.alive = true;
  r.type = def.type;
  r.owner_player = def.owner_player;
  r.shape = def.shape;
  r.linear_damping = def.linear_damping;
  r.angular_damping = def.angular_damping;
  r.position = def.position;
  r.orientation = orientation;
  r.mass_kg = mass.mass;
  r.inertia = mass.inertia;
  r.allow_sleep = def.allow_sleep;
  r.bullet = def.bullet;
  BodySolverState& s = w.solver_bodies[slot];
  s.linear_velocity = def.linear_velocity;
  s.angular_velocity = def.angular_velocity;
  refresh_body_derived(w, slot);
  // Sleeping: a static or kinematic body appearing among sleeping bodies wakes them (a dynamic
  // one does so by contact in the next step).
  if (def.type != BodyType::dynamic) wake_overlapping(w, slot);

  ++w.body_count;
  if (slot + 1 > w.slot_count) w.slot_count = slot + 1;
  broadphase_insert(w.broadphase, slot, pack_filter(def.shape.category, def.shape.mask));
  w.hash_dirty = true;
  *out_id = body_id(w, slot);
  return Error::none;
}

// destroy_body and destroy commands. Counts nothing.
Error remove_body(WorldData& w, BodyId id) {
  uint32_t slot = 0;
  const Error e = resolve_body(w, id, &slot);
  if (e != Error::none) return e;
  wake_contacts_of(w, slot);  // sleeping: its island and the islands it supported
  BodyRecord& r = w.bodies[slot];
  const uint32_t generation = r.generation + 1 == 0 ? 1 : r.generation + 1;
  r = BodyRecord{};
  r.generation = generation;
  w.solver_bodies[slot] = BodySolverState{};
  refresh_body_derived(w, slot);
  w.aabbs[slot] = Aabb{};
  --w.body_count;
  broadphase_remove(w.broadphase, slot);
  remove_cache_entries(w.cache, slot);
  remove_sensor_pairs(w, slot);
  // Queued inputs for the body go with it (they would be rejected at the step anyway).
  uint32_t kept = 0;
  for (uint32_t i = 0; i < w.input_count; ++i) {
    if (w.inputs[i].body == id) continue;
    w.inputs[kept++] = w.inputs[i];
  }
  w.input_count = kept;
  w.hash_dirty = true;
  return Error::none;
}

Error World::create_body(const BodyDef& def, BodyId* out_id) {
  WorldData& w = *data_;
  const Error e = out_id == nullptr ? Error::invalid_argument : add_body(w, def, out_id);
  if (e != Error::none) ++w.counters.api_calls_rejected;
  return e;
}

Error World::destroy_body(BodyId id) {
  WorldData& w = *data_;
  const Error e = remove_body(w, id);
  if (e != Error::none) ++w.counters.api_calls_rejected;
  return e;
}

bool World::is_alive(BodyId id) const {
  uint32_t slot = 0;
  return resolve_body(*data_, id, &slot) == Error::none;
}

Error World::get_hull(uint32_t index, HullView* out) const {
  const WorldData& w = *data_;
  if (out == nullptr || index >= w.hulls.size()) return Error::invalid_argument;
  const HullGeometry& h = w.hulls[index];
  out->vertex_count = h.vertex_count;
  out->face_count = h.face_count;
  out->vertices = h.vertices;
  out->face_sizes = h.face_size;
  out->face_indices = h.face_vertices;
  return Error::none;
}

LevelStats World::level_stats() const {
  return data_->level_stats;
}

Error World::get_compound(uint32_t index, CompoundView* out) const {
  const WorldData& w = *data_;
  if (out == nullptr || index >= w.compounds.size()) return Error::invalid_argument;
  const CompoundGeometry& c = w.compounds[index];
  *out = CompoundView{};
  out->child_count = c.child_count;
  for (uint32_t i = 0; i < c.child_count; ++i) {
    out->children[i] = c.children[i];
    out->positions[i] = c.poses[i].p;
    out->orientations[i] = c.poses[i].q;
  }
  return Error::none;
}

Error World::get_body(BodyId id, BodyView* out) const {
  const WorldData& w = *data_;
  uint32_t slot = 0;
  const Error e = resolve_body(w, id, &slot);
  if (e != Error::none) return e;
  if (out == nullptr) return Error::invalid_argument;
  const BodyRecord& r = w.bodies[slot];
  const BodySolverState& s = w.solver_bodies[slot];
  out->id = id;
  out->type = r.type;
  out->shape = r.shape;
  out->position = r.position;
  out->orientation = r.orientation;
  out->linear_velocity = s.linear_velocity;
  out->angular_velocity = s.angular_velocity;
  out->mass_kg = r.mass_kg;
  out->owner_player = r.owner_player;
  out->allow_sleep = r.allow_sleep;
  out->bullet = r.bullet;
  out->asleep = r.asleep;
  out->sleep_timer_s = r.sleep_timer_s;
  return Error::none;
}

namespace {

// Shared checks of the velocity setters; `max` is the WorldDef speed limit.
Error check_velocity_edit(const WorldData& w, BodyId id, Vec3 v, float max, uint32_t* slot) {
  const Error e = resolve_body(w, id, slot);
  if (e != Error::none) return e;
  if (!is_finite(v)) return Error::non_finite;
  if (w.bodies[*slot].type == BodyType::static_body) return Error::wrong_body_type;
  if (!speed_within(v, max)) return Error::invalid_argument;
  return Error::none;
}

}  // namespace

Error World::set_linear_velocity(BodyId id, Vec3 velocity) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  const Error e = check_velocity_edit(w, id, velocity, w.def.max_linear_speed, &slot);
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  w.solver_bodies[slot].linear_velocity = velocity;
  wake_body(w, slot);
  w.hash_dirty = true;
  return Error::none;
}

Error World::set_angular_velocity(BodyId id, Vec3 velocity) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  const Error e = check_velocity_edit(w, id, velocity, w.def.max_angular_speed, &slot);
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  w.solver_bodies[slot].angular_velocity = velocity;
  wake_body(w, slot);
  w.hash_dirty = true;
  return Error::none;
}

Error World::set_transform(BodyId id, Vec3 position, Quat orientation) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  Quat q{};
  Error e = resolve_body(w, id, &slot);
  if (e == Error::none && !is_finite(position)) e = Error::non_finite;
  if (e == Error::none) e = checked_orientation(orientation, &q);
  if (e == Error::none && !within_coordinates(position)) e = Error::invalid_argument;
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  // Sleeping: a dynamic body wakes its island; a static or kinematic one wakes what it touched
  // where it was and what sleeps where it lands.
  if (w.bodies[slot].type == BodyType::dynamic) {
    wake_body(w, slot);
  } else {
    wake_contacts_of(w, slot);
  }
  w.bodies[slot].position = position;
  w.bodies[slot].orientation = q;
  refresh_body_derived(w, slot);
  if (w.bodies[slot].type != BodyType::dynamic) wake_overlapping(w, slot);
  w.hash_dirty = true;
  return Error::none;
}

Error World::apply_impulse(BodyId id, Vec3 impulse, Vec3 world_point) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  Error e = resolve_body(w, id, &slot);
  if (e == Error::none && (!is_finite(impulse) || !is_finite(world_point))) e = Error::non_finite;
  if (e == Error::none && w.bodies[slot].type != BodyType::dynamic) e = Error::wrong_body_type;
  Vec3 v{}, omega{};
  if (e == Error::none) {
    const BodySolverState& s = w.solver_bodies[slot];
    const Vec3 r = world_point - w.bodies[slot].position;
    v = s.linear_velocity + s.inv_mass * impulse;
    omega = s.angular_velocity + s.inv_inertia_world * cross(r, impulse);
    // An impulse so large the velocity overflows is an out-of-range argument.
    if (!is_finite(v) || !is_finite(omega)) e = Error::invalid_argument;
  }
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  w.solver_bodies[slot].linear_velocity = v;
  w.solver_bodies[slot].angular_velocity = omega;
  wake_body(w, slot);
  w.hash_dirty = true;
  return Error::none;
}

uint32_t World::body_count() const {
  return data_->body_count;
}

uint32_t World::list_bodies(std::span<BodyId> out) const {
  const WorldData& w = *data_;
  uint32_t n = 0;
  for (uint32_t slot = 0; slot < w.slot_count && n < out.size(); ++slot) {
    if (w.bodies[slot].alive) out[n++] = body_id(w, slot);
  }
  return n;
}

Error debug_perturb_position(World& world, BodyId id, Vec3 delta) {
  WorldData& w = world_data(world);
  uint32_t slot = 0;
  Error e = resolve_body(w, id, &slot);
  if (e == Error::none && !is_finite(delta)) e = Error::non_finite;
  if (e == Error::none && !is_finite(w.bodies[slot].position + delta)) e = Error::non_finite;
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  w.bodies[slot].position += delta;
  refresh_sleeping_box(w, slot);  // stays asleep: the hook changes nothing else
  w.hash_dirty = true;
  return Error::none;
}

// ---- inputs ---------------------------------------------------------------------------------

Error World::queue_input(const Input& input) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  Error e = resolve_body(w, input.body, &slot);
  if (e == Error::none) {
    e = check_input_fields(w, input, w.bodies[slot].type, w.bodies[slot].owner_player);
  }
  if (e == Error::none && w.input_count >= w.def.max_inputs_per_tick) e = Error::capacity_inputs;
  if (e != Error::none) {
    ++w.counters.inputs_rejected;
    return e;
  }
  // Sorted insert (stable: equal inputs keep queue order, and are identical anyway).
  uint32_t j = w.input_count;
  while (j > 0 && input_less(input, w.inputs[j - 1])) {
    w.inputs[j] = w.inputs[j - 1];
    --j;
  }
  w.inputs[j] = input;
  ++w.input_count;
  ++w.counters.inputs_accepted;
  wake_body(w, slot);  // sleeping: an input wakes the body's island now, before its step
  w.hash_dirty = true;
  return Error::none;
}

// ---- commands -------------------------------------------------------------------------------

Error World::queue_command(const Command& command) {
  WorldData& w = *data_;
  Error e = check_command_fields(w.def, command);
  uint32_t slot = 0;
  if (e == Error::none && (command.type == CommandType::destroy || is_body_command(command.type)))
    e = resolve_body(w, command.body, &slot);
  if (e == Error::none && is_body_command(command.type))
    e = check_body_command_target(command, w.bodies[slot].type);
  if (e == Error::none && is_state_command(command.type)) e = check_state_command(w, command);
  if (e == Error::none && w.command_count >= w.def.max_commands_per_tick) {
    e = Error::capacity_commands;
  }
  if (e != Error::none) {
    ++w.counters.commands_rejected;
    return e;
  }
  uint32_t j = w.command_count;  // sorted insert, as queue_input
  while (j > 0 && command_less(command, w.commands[j - 1])) {
    w.commands[j] = w.commands[j - 1];
    --j;
  }
  w.commands[j] = command;
  ++w.command_count;
  ++w.counters.commands_accepted;
  w.hash_dirty = true;
  return Error::none;
}

std::span<const CommandResult> World::command_results() const {
  return {data_->command_results.data(), data_->command_result_count};
}

int32_t World::score(uint32_t player) const {
  if (player < 1 || player > kMaxPlayers) return 0;
  return data_->scores[player - 1];
}

uint64_t World::tick() const {
  return data_->tick;
}

const StepStats& World::last_step_stats() const {
  return data_->stats;
}

const WorldCounters& World::counters() const {
  return data_->counters;
}

std::span<const ContactEvent> World::events() const {
  return {data_->events.data(), data_->event_count};
}

std::span<const GameEvent> World::game_events() const {
  return {data_->game_events.data(), data_->game_event_count};
}

std::span<const SensorEvent> World::sensor_events() const {
  return {data_->sensor_events.data(), data_->sensor_event_count};
}

float World::normal_impulse_sum(BodyId id) const {
  const WorldData& w = *data_;
  uint32_t slot = 0;
  if (resolve_body(w, id, &slot) != Error::none) return 0.0f;
  float sum = 0.0f;
  for (uint32_t m = 0; m < w.cache.manifold_count; ++m) {
    const CachedManifold& cm = w.cache.manifolds[m];
    if (pair_slot_a(cm.key) != slot && pair_slot_b(cm.key) != slot) continue;
    for (uint32_t i = 0; i < cm.point_count; ++i) {
      sum += w.cache.points[cm.first_point + i].normal_impulse;
    }
  }
  return sum;
}

}  // namespace lockstep::sim
