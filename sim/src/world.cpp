// The World: bodies in generation-checked slots, queued inputs, and the fixed-dt step
//   inputs → speculative margins → broadphase → narrowphase (manifolds reused or collided) →
//   warm-start match → prepare → substeps × (velocities → warm start → biased passes → speed
//   clamps → positions → relax passes → restitution → speed clamps) → bullets → events →
//   contact cache → islands → state hash; World::step calls one function per stage.
// Position correction as designed is Box2D v3's soft step (contact_solver.cpp has the rows):
// the biased passes push overlaps out through a soft, heavily damped spring whose target is
// recomputed from how far the bodies moved since the step began, the positions integrate, and
// the relax passes solve the same rows rigidly without the push, so the velocities carried on no
// longer hold it (without them a stack is pushed apart every substep, falls back and rocks).
// Prepare (anchors, masses, inverse inertias) runs once per step; the substeps reuse it.
// Sleeping (island.h): islands of bodies at rest sleep; a sleeping body is neither integrated nor
// swept, and keeps its contacts and warm start until something wakes its island.
// All memory is taken in World::create; nothing here allocates afterwards.
#include "lockstep/sim/world.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <utility>

#include "broadphase.h"
#include "collide.h"
#include "island.h"
#include "shape.h"
#include "solver/contact_solver.h"
#include "state_stream.h"
#include "time_of_impact.h"
#include "world_data.h"

namespace lockstep::sim {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t elapsed_ns(Clock::time_point from, Clock::time_point to) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// Fixed-point input limit: the largest |integer| whose value (integer · 2^-kInputScaleLog2) does
// not exceed `max`. Computed once, so queue_input compares integers only.
int64_t fixed_point_limit(float max) {
  const float scaled = max * static_cast<float>(1 << kInputScaleLog2);  // exact: power of two
  if (scaled >= 2147483648.0f) return int64_t{1} << 31;
  return static_cast<int64_t>(scaled);  // truncation = floor for values ≥ 0
}

// 2^-kInputScaleLog2 as a float: multiplying by it is exact (no rounding beyond int→float).
constexpr float kInputScale = 1.0f / static_cast<float>(1 << kInputScaleLog2);

bool within_coordinates(Vec3 p) {
  return std::fabs(p.x) <= kMaxCoordinate && std::fabs(p.y) <= kMaxCoordinate &&
         std::fabs(p.z) <= kMaxCoordinate;
}

Error resolve(const WorldData& w, BodyId id, uint32_t* slot) {
  if (id.is_null()) return Error::null_handle;
  const uint32_t s = id.index1 - 1;
  if (s >= w.slot_count) return Error::stale_handle;
  const BodyRecord& r = w.bodies[s];
  if (!r.alive || r.generation != id.generation) return Error::stale_handle;
  *slot = s;
  return Error::none;
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

Vec3 clamp_speed(Vec3 v, float max) {
  const float len2 = length_squared(v);
  if (len2 <= max * max) return v;
  const float scale = max / std::sqrt(len2);
  return v * scale;
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

BodyId body_id(const WorldData& w, uint32_t slot) {
  return BodyId{slot + 1, w.bodies[slot].generation};
}

}  // namespace

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
  s.inv_inertia_world = rotate_diagonal(to_mat3(r.orientation), inv_local);
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
uint64_t world_memory_bytes(const WorldDef& def) {
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
  n += uint64_t{def.max_inputs_per_tick} * element_bytes<decltype(D::inputs)>();
  n += uint64_t{def.max_commands_per_tick} *
       (element_bytes<decltype(D::commands)>() + element_bytes<decltype(D::command_results)>());
  n += uint64_t{kMaxPlayers} * sizeof(int32_t);
  n += uint64_t{def.max_events} *
       (element_bytes<decltype(D::events)>() + element_bytes<decltype(D::sensor_events)>());
  n += pairs * 3 * sizeof(uint64_t);  // sensor pairs, found, next
  n += max_encoded_state_size(def);   // the hash's scratch
  const uint64_t tree = bodies > 0 ? bodies : 1;
  n += tree *
       (sizeof(QueryItem) + sizeof(QueryNode) + sizeof(uint64_t) + sizeof(Aabb) + sizeof(uint32_t));
  return n;
}

std::unique_ptr<World> World::create(const WorldDef& def, Error* error) {
  const Error e = validate_world_def(def);
  if (error != nullptr) *error = e;
  if (e != Error::none) return nullptr;

  auto d = std::make_unique<WorldData>();
  d->def = def;
  d->def_fingerprint = world_def_fingerprint(def);
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
  d->inputs.assign(def.max_inputs_per_tick, Input{});
  d->input_linear_limit = fixed_point_limit(def.max_input_linear_impulse);
  d->input_angular_limit = fixed_point_limit(def.max_input_angular_impulse);
  d->input_linear_velocity_limit = fixed_point_limit(def.max_input_linear_velocity);
  d->input_angular_velocity_limit = fixed_point_limit(def.max_input_angular_velocity);
  d->commands.assign(def.max_commands_per_tick, Command{});
  d->command_results.assign(def.max_commands_per_tick, CommandResult{});
  d->scores.assign(kMaxPlayers, 0);
  d->events.assign(def.max_events, ContactEvent{});
  d->sensor_events.assign(def.max_events, SensorEvent{});
  d->sensor_pairs.assign(def.max_contact_pairs, 0);
  d->sensor_found.assign(def.max_contact_pairs, 0);
  d->sensor_next.assign(def.max_contact_pairs, 0);
  d->scratch.assign(max_encoded_state_size(def), 0);
  d->restore_slots.assign(def.max_bodies, RestoreSlot{});
  query_tree_init(&d->query_tree, def.max_bodies);
  d->hash_dirty = true;
  return std::unique_ptr<World>(new World(std::move(d)));
}

const WorldDef& World::def() const {
  return data_->def;
}

// ---- bodies ---------------------------------------------------------------------------------

namespace {

Error validate_body_def(const WorldDef& wd, const BodyDef& def, Quat* orientation,
                        MassProperties* mass) {
  if (def.type != BodyType::static_body && def.type != BodyType::kinematic &&
      def.type != BodyType::dynamic) {
    return Error::invalid_argument;
  }
  if (!is_finite(def.position) || !is_finite(def.orientation) || !is_finite(def.linear_velocity) ||
      !is_finite(def.angular_velocity) || !std::isfinite(def.linear_damping) ||
      !std::isfinite(def.angular_damping)) {
    return Error::non_finite;
  }
  const Error shape_error = validate_shape(def.shape);
  if (shape_error != Error::none) return shape_error;
  if (def.shape.type == ShapeType::plane && def.type != BodyType::static_body) {
    return Error::wrong_body_type;
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
    *mass = compute_mass_properties(def.shape);
    if (!std::isfinite(mass->mass) || !(mass->mass > 0.0f) || !is_finite(mass->inertia) ||
        !(mass->inertia.x > 0.0f) || !(mass->inertia.y > 0.0f) || !(mass->inertia.z > 0.0f)) {
      return Error::invalid_argument;
    }
  }
  return Error::none;
}

}  // namespace

namespace {

// create_body and spawn commands: checks, then the lowest free slot. Counts nothing.
Error add_body(WorldData& w, const BodyDef& def, BodyId* out_id) {
  Quat orientation{};
  MassProperties mass{};
  const Error e = validate_body_def(w.def, def, &orientation, &mass);
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
  const Error e = resolve(w, id, &slot);
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

}  // namespace

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
  return resolve(*data_, id, &slot) == Error::none;
}

Error World::get_body(BodyId id, BodyView* out) const {
  const WorldData& w = *data_;
  uint32_t slot = 0;
  const Error e = resolve(w, id, &slot);
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
  const Error e = resolve(w, id, slot);
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
  Error e = resolve(w, id, &slot);
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
  Error e = resolve(w, id, &slot);
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

Error World::debug_perturb_position(BodyId id, Vec3 delta) {
  WorldData& w = *data_;
  uint32_t slot = 0;
  Error e = resolve(w, id, &slot);
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
  Error e = resolve(w, input.body, &slot);
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
  if (e == Error::none && command.type == CommandType::destroy) e = resolve(w, command.body, &slot);
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

// ---- step -----------------------------------------------------------------------------------
//
// World::step is the list of stages below, each a function that reads as one idea. They share
// WorldData and the step's counters (StepStats, StepStatus, SolverCounters); StageTimer times
// them when WorldDef::measure_stage_times is set (never part of the state).

namespace {

class StageTimer {
 public:
  explicit StageTimer(bool on) : on_(on), start_(on ? Clock::now() : Clock::time_point{}) {
    mark_ = start_;
  }
  // The time since the last lap into *out (replacing it), or added to *total.
  void lap(uint64_t* out) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    *out = elapsed_ns(mark_, now);
    mark_ = now;
  }
  void lap_add(uint64_t* total) {
    uint64_t ns = 0;
    lap(&ns);
    *total += ns;
  }
  uint64_t total_ns() const { return on_ ? elapsed_ns(start_, mark_) : 0; }

 private:
  bool on_;
  Clock::time_point start_;
  Clock::time_point mark_;
};

// 0. Commands, already in command_less order: spawns take the lowest free slots in that order,
// destroys end their bodies (a body destroyed twice: the second fails with stale_handle).
void apply_commands(WorldData& w, StepStats& st) {
  for (uint32_t i = 0; i < w.command_count; ++i) {
    const Command& c = w.commands[i];
    CommandResult& result = w.command_results[i];
    result = CommandResult{c.sequence, c.type, Error::none, BodyId{}};
    if (c.type == CommandType::spawn) {
      result.error = add_body(w, spawn_body_def(w.def, c), &result.body);
    } else if (c.type == CommandType::add_score) {
      // Saturating, so no sequence of commands overflows (a defined result on every machine).
      int32_t& score = w.scores[c.owner_player - 1];
      const int64_t sum = int64_t{score} + c.score_delta;
      score = static_cast<int32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
    } else {
      result.error = remove_body(w, c.body);
      if (result.error == Error::none) result.body = c.body;
    }
    if (result.error == Error::none) {
      ++st.commands_applied;
    } else {
      ++st.commands_failed;
      ++w.counters.commands_failed;
    }
  }
  w.command_result_count = w.command_count;
  w.command_count = 0;
}

// 1. Inputs, already in the total input order: target velocities replace the body's, then
// impulses add to them (kinematic bodies take no impulses: check_input_fields).
void apply_inputs(WorldData& w, StepStats& st) {
  auto fixed = [](const int32_t(&v)[3]) {
    return Vec3{static_cast<float>(v[0]) * kInputScale, static_cast<float>(v[1]) * kInputScale,
                static_cast<float>(v[2]) * kInputScale};
  };
  for (uint32_t i = 0; i < w.input_count; ++i) {
    const Input& in = w.inputs[i];
    uint32_t slot = 0;
    if (resolve(w, in.body, &slot) != Error::none) continue;
    const BodyType type = w.bodies[slot].type;
    if (type == BodyType::static_body) continue;
    BodySolverState& s = w.solver_bodies[slot];
    if ((in.flags & input_sets_linear_velocity) != 0) s.linear_velocity = fixed(in.linear_velocity);
    if ((in.flags & input_sets_angular_velocity) != 0) {
      s.angular_velocity = fixed(in.angular_velocity);
    }
    if (type == BodyType::dynamic) {
      s.linear_velocity += s.inv_mass * fixed(in.linear_impulse);
      s.angular_velocity += s.inv_inertia_world * fixed(in.angular_impulse);
    }
    ++st.inputs_applied;
  }
  w.input_count = 0;
}

// 2. Speculative margins: how far each body can move this step, |v|·dt + |ω|·r·dt (with this
// step's gravity, `gravity_step` = |g|·dt), so that a pair's contact exists before its shapes can
// pass each other. Bounded: max_speculative_margin_m for the pair (collide_pairs).
void size_speculative_margins(WorldData& w, float gravity_step) {
  const WorldDef& def = w.def;
  const float spare_margin = def.max_speculative_margin_m - def.contact_margin_m;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    float margin = 0.0f;
    if (r.alive && r.type != BodyType::static_body) {
      const BodySolverState& s = w.solver_bodies[slot];
      float speed =
          length(s.linear_velocity) + length(s.angular_velocity) * bounding_radius(r.shape);
      if (r.type == BodyType::dynamic) speed += gravity_step;
      margin = speed * def.dt_s;
      if (!(margin <= spare_margin)) margin = spare_margin;
    }
    w.speculative_margins[slot] = margin;
  }
}

// 3. Broadphase: the bodies' boxes, then the sweep. [sleep] Sleeping bodies keep the box they
// fell asleep with; sweep_and_wake sweeps the awake bodies and wakes the islands they touch
// (island.h). A bullet's box covers its whole travel, so that every static body it could reach
// is a candidate for its time of impact (sweep_bullets); its contacts keep the bounded margin.
// Returns the number of bullets.
uint32_t update_broadphase(WorldData& w, float gravity_step, StepStats& st, StepStatus& status) {
  const WorldDef& def = w.def;
  uint32_t bullets = 0;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (!r.alive || r.asleep) continue;
    float margin = def.contact_margin_m + w.speculative_margins[slot];
    if (r.bullet && r.type == BodyType::dynamic) {
      const BodySolverState& s = w.solver_bodies[slot];
      const float travel = (length(s.linear_velocity) + gravity_step) * def.dt_s;
      if (travel > margin) margin = travel;
      ++bullets;
    }
    w.aabbs[slot] = compute_aabb(r.shape, Transform{r.position, r.orientation}, margin);
  }
  sweep_and_wake(w);
  st.candidate_pairs = w.broadphase.pair_count;
  st.dropped_candidate_pairs = w.broadphase.dropped_pairs;
  if (st.dropped_candidate_pairs > 0) status.overflow |= overflow_candidate_pairs;
  return bullets;
}

// A pair's manifold as the narrowphase stage builds it, with what manifold reuse needs: the
// reference pose, and per point its anchor in A's frame and its separation at that pose.
struct FoundManifold {
  Manifold m;
  ManifoldReference reference;
  Vec3 local_anchor[kMaxManifoldPoints];
  float reference_separation[kMaxManifoldPoints];
};

// The manifold reuse bounds of a world: the squared distance and the cosine of half the angle.
struct ReuseBounds {
  bool on = false;
  float distance2 = 0;
  float half_cos = 1;
};
ReuseBounds reuse_bounds(const WorldDef& def) {
  ReuseBounds b;
  b.on = def.contact_reuse_distance_m > 0.0f && def.contact_reuse_angle_rad > 0.0f;
  b.distance2 = def.contact_reuse_distance_m * def.contact_reuse_distance_m;
  // The cosine of θ/2 by its Taylor series (θ ≤ 0.5 rad: the first omitted term is below 1e-9):
  // the quaternions of two rotations θ apart have |dot| equal to it. No libm: the same bits
  // everywhere.
  const float half_angle = 0.5f * def.contact_reuse_angle_rad;
  const float half2 = half_angle * half_angle;
  b.half_cos = 1.0f - half2 * (0.5f - half2 * (1.0f / 24.0f - half2 * (1.0f / 720.0f)));
  return b;
}

// Whether a shape can roll: a sphere or a capsule touches with the point of its surface nearest
// the other shape, whichever of its material points that is.
bool rolls(const ShapeDef& shape) {
  return shape.type == ShapeType::sphere || shape.type == ShapeType::capsule;
}

// The point of a round shape's surface in direction `towards` (world, unit), from the point
// `local_surface` of it found at the reference pose (body frame): the centre of a sphere, or the
// point of a capsule's segment level with it (a capsule's segment is its local y axis), plus the
// radius. Spin about the centre or the axis moves neither, as it moves no contact.
Vec3 round_surface_point(const BodyRecord& r, Vec3 local_surface, Vec3 towards) {
  Vec3 core{0, 0, 0};
  if (r.shape.type == ShapeType::capsule) {
    const float hh = r.shape.half_height;
    core.y = local_surface.y < -hh ? -hh : (local_surface.y > hh ? hh : local_surface.y);
  }
  return r.position + rotate(r.orientation, core) + r.shape.radius * towards;
}

// Manifold reuse: when the pair has hardly moved relative to itself since its points were found
// (within `bounds` of the cached reference pose), the same material points, moved with their
// bodies, with their separations measured again; points beyond `margin` are dropped.
//
// A round body (sphere or capsule) rolls: its material point that touched is carried up and
// behind as it turns, the support's material point stays behind as it rolls on, and a support
// pushing at a point behind the body's centre pushes it on (a ball left on the ground with a spin
// of 1e-6 rad/s rolled 0.7 m in 20 s; a capsule across a pillar rolled off it). So on a round
// body the point is its surface point nearest the other body, along the normal, the normal is
// carried with the other body (the face that was found), and the other body's point is straight
// across from it. Two round bodies are never reused (collide_pairs): their normal turns with both.
bool reuse_manifold(const ContactCache& cache, const CachedManifold& cm, const BodyRecord& ra,
                    const BodyRecord& rb, const Vec3& relative_position,
                    const Quat& relative_rotation, float margin, const ReuseBounds& bounds,
                    FoundManifold* found) {
  const Vec3 moved = relative_position - cm.reference.position;
  float turned = dot(relative_rotation, cm.reference.rotation);
  if (turned < 0.0f) turned = -turned;
  if (!(dot(moved, moved) <= bounds.distance2 && turned >= bounds.half_cos)) return false;
  Manifold& m = found->m;
  const ManifoldReference& reference = cm.reference;
  found->reference = reference;
  const bool round_a = rolls(ra.shape), round_b = rolls(rb.shape);
  // The normal (from B towards A) carried with B when A rolls, else with A.
  m.normal = round_a ? rotate(rb.orientation, inv_rotate(reference.rotation, reference.normal))
                     : rotate(ra.orientation, reference.normal);
  for (uint32_t k = 0; k < cm.point_count; ++k) {
    // The point on A's surface and the one on B's, midpoint ± half the separation along the
    // normal at the reference pose, each carried into its own body's frame.
    const CachedPoint& cp = cache.points[cm.first_point + k];
    const Vec3 half = (0.5f * cp.reference_separation_m) * reference.normal;
    const Vec3 local_pa = cp.local_anchor_a + half;
    const Vec3 local_pb =
        inv_rotate(reference.rotation, (cp.local_anchor_a - half) - reference.position);
    // Material points first, replaced below for a round body. Not `round ? a : b`: g++ 12 at
    // -march=x86-64-v3 compiled that form with a fused vfmsubadd despite -ffp-contract=off, and
    // the pyramid's hash differed from every other target's at tick 60 (the matrix caught it).
    Vec3 pa = ra.position + rotate(ra.orientation, local_pa);
    Vec3 pb = rb.position + rotate(rb.orientation, local_pb);
    if (round_a) pa = round_surface_point(ra, local_pa, -m.normal);
    if (round_b) pb = round_surface_point(rb, local_pb, m.normal);
    const float separation = dot(m.normal, pa - pb);
    // Facing a round body, the other body's point is straight across the gap from it: a face has
    // the same normal everywhere, and its material point found at the reference lies behind a
    // body that has rolled on since.
    if (round_a) pb = pa - separation * m.normal;
    if (round_b) pa = pb + separation * m.normal;
    if (!(separation <= margin)) continue;
    found->local_anchor[m.count] = cp.local_anchor_a;
    found->reference_separation[m.count] = cp.reference_separation_m;
    ManifoldPoint& mp = m.points[m.count++];
    mp.position = 0.5f * (pa + pb);
    mp.separation = separation;
    mp.feature = cp.feature;
  }
  return true;
}

// The narrowphase proper: collide() the shapes (keeping last step's corners first, `cm`) and
// record the pose it ran at as the new reference.
void collide_manifold(const ContactCache& cache, const CachedManifold* cm, const BodyRecord& ra,
                      const BodyRecord& rb, const Vec3& relative_position,
                      const Quat& relative_rotation, float margin, FoundManifold* found) {
  Manifold& m = found->m;
  if (cm != nullptr) {
    m.previous_count = static_cast<int>(cm->point_count);
    for (uint32_t k = 0; k < cm->point_count; ++k)
      m.previous_features[k] = cache.points[cm->first_point + k].feature;
  }
  collide(ra.shape, Transform{ra.position, ra.orientation}, rb.shape,
          Transform{rb.position, rb.orientation}, margin, &m);
  found->reference.position = relative_position;
  found->reference.rotation = relative_rotation;
  found->reference.normal = inv_rotate(ra.orientation, m.normal);
  for (int k = 0; k < m.count; ++k) {
    found->local_anchor[k] = inv_rotate(ra.orientation, m.points[k].position - ra.position);
    found->reference_separation[k] = m.points[k].separation;
  }
}

// Appends a found manifold as a constraint and its points; false (and counted) when the
// capacities are full: overflow keeps the lowest keys, as the pairs come in key order.
void add_constraint(WorldData& w, uint64_t key, const FoundManifold& found, StepStats& st,
                    StepStatus& status) {
  const WorldDef& def = w.def;
  const Manifold& m = found.m;
  const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
  const BodyRecord& ra = w.bodies[sa];
  const BodyRecord& rb = w.bodies[sb];
  const uint32_t count = static_cast<uint32_t>(m.count);
  if (w.constraint_count >= def.max_contact_pairs) {
    ++st.dropped_contact_pairs;
    status.overflow |= overflow_contact_pairs;
    return;
  }
  const uint32_t room = def.max_contact_points - w.point_count;
  const uint32_t take = count < room ? count : room;
  if (take < count) {
    st.dropped_contact_points += count - take;
    status.overflow |= overflow_contact_points;
  }
  if (take == 0) return;
  ContactConstraint& c = w.constraints[w.constraint_count++];
  c.key = key;
  c.slot_a = sa;
  c.slot_b = sb;
  c.normal = m.normal;
  tangent_basis(c.normal, &c.tangent1, &c.tangent2);
  c.friction = combine_friction(ra.shape.friction, rb.shape.friction);
  c.restitution = combine_restitution(ra.shape.restitution, rb.shape.restitution);
  c.first_point = w.point_count;
  c.point_count = take;
  c.reference = found.reference;
  for (uint32_t k = 0; k < take; ++k) {
    ContactPoint& p = w.points[w.point_count++];
    p = ContactPoint{};
    p.anchor_a = m.points[k].position - ra.position;
    p.local_anchor_a = found.local_anchor[k];
    p.anchor_b = m.points[k].position - rb.position;
    p.separation_m = m.points[k].separation;
    p.feature = m.points[k].feature;
    p.reference_separation_m = found.reference_separation[k];
  }
}

// A sensor pair of the sweep: its overlap is tested at the end of the step (the sweep's boxes
// include how far the bodies can move in it). Found in key order, so the list stays sorted; past
// capacity the highest keys are dropped.
void add_sensor_candidate(WorldData& w, uint64_t key, StepStats& st, StepStatus& status) {
  if (w.sensor_found_count >= w.sensor_found.size()) {
    ++st.dropped_sensor_overlaps;
    status.overflow |= overflow_sensor_overlaps;
    return;
  }
  w.sensor_found[w.sensor_found_count++] = key;
}

// 4. Narrowphase, in pair-key order: each candidate pair's manifold, reused or collided, into the
// constraints. A pair whose relative pose is within the reuse bounds of where its points were
// found keeps those points.
void collide_pairs(WorldData& w, StepStats& st, StepStatus& status) {
  const WorldDef& def = w.def;
  const ReuseBounds bounds = reuse_bounds(def);
  w.constraint_count = 0;
  w.point_count = 0;
  w.sensor_found_count = 0;
  uint32_t cached = 0;
  for (uint32_t i = 0; i < w.broadphase.pair_count; ++i) {
    const uint64_t key = w.broadphase.pairs[i];
    const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
    const BodyRecord& ra = w.bodies[sa];
    const BodyRecord& rb = w.bodies[sb];
    if (ra.shape.sensor || rb.shape.sensor) {
      if (!(ra.shape.sensor && rb.shape.sensor)) add_sensor_candidate(w, key, st, status);
      continue;  // a sensor never makes a contact
    }
    float margin = def.contact_margin_m + (w.speculative_margins[sa] + w.speculative_margins[sb]);
    if (!(margin <= def.max_speculative_margin_m)) margin = def.max_speculative_margin_m;
    // Last step's manifold of this pair (merge join: pairs and cache are both in key order).
    while (cached < w.cache.manifold_count && w.cache.manifolds[cached].key < key)
      ++cached;
    const CachedManifold* cm = nullptr;
    if (cached < w.cache.manifold_count && w.cache.manifolds[cached].key == key) {
      cm = &w.cache.manifolds[cached];
    }
    const Vec3 relative_position = inv_rotate(ra.orientation, rb.position - ra.position);
    const Quat relative_rotation = conjugate(ra.orientation) * rb.orientation;
    FoundManifold found;
    if (cm != nullptr && bounds.on && !(rolls(ra.shape) && rolls(rb.shape)) &&
        reuse_manifold(w.cache, *cm, ra, rb, relative_position, relative_rotation, margin, bounds,
                       &found)) {
      ++st.reused_manifolds;
    } else {
      collide_manifold(w.cache, cm, ra, rb, relative_position, relative_rotation, margin, &found);
    }
    if (found.m.count <= 0) continue;
    add_constraint(w, key, found, st, status);
  }
  st.manifolds = w.constraint_count;
  st.contact_points = w.point_count;
}

// [sleep] Counts the awake dynamic bodies (those a contact woke during the broadphase take part
// from here on). False when nothing can move (every dynamic body asleep, no kinematic body): the
// substeps are then skipped.
bool count_awake_bodies(const WorldData& w, StepStats& st) {
  uint32_t kinematic_bodies = 0;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (r.alive && r.type == BodyType::dynamic && !r.asleep) ++st.awake_dynamic_bodies;
    if (r.alive && r.type == BodyType::kinematic) ++kinematic_bodies;
  }
  return st.awake_dynamic_bodies + kinematic_bodies > 0;
}

// Velocities of a substep h: gravity and damping, dynamic bodies only. v *= 1/(1 + h·c): a
// Padé-like damping without exp, exact when c = 0.
void integrate_velocities(const WorldData& w, std::span<SolverVelocity> velocities, float h) {
  const Vec3 gravity_h = h * w.def.gravity;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (!w.dynamic_flags[slot] || r.asleep) continue;  // [sleep] not integrated
    SolverVelocity& v = velocities[slot];
    v.linear += gravity_h;
    v.linear = v.linear * (1.0f / (1.0f + h * r.linear_damping));
    v.angular = v.angular * (1.0f / (1.0f + h * r.angular_damping));
  }
}

// The speed clamps of the WorldDef, after each pass of a substep.
void clamp_speeds(const WorldData& w, std::span<SolverVelocity> velocities) {
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    if (!w.dynamic_flags[slot]) continue;
    SolverVelocity& v = velocities[slot];
    v.linear = clamp_speed(v.linear, w.def.max_linear_speed);
    v.angular = clamp_speed(v.angular, w.def.max_angular_speed);
  }
}

// Positions of a substep h: semi-implicit Euler; q += ½h·(ω⊗q), then normalize. Kinematic bodies
// move by their velocity too; static bodies never move. Δp and Δθ feed the rows' separations.
void integrate_positions(WorldData& w, std::span<const SolverVelocity> velocities,
                         std::span<SolverVelocity> deltas, float h) {
  const float half_h = 0.5f * h;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    BodyRecord& r = w.bodies[slot];
    // [sleep] Sleeping bodies do not move (normalize would change the bits of their rotation).
    if (!r.alive || r.type == BodyType::static_body || r.asleep) continue;
    const SolverVelocity& v = velocities[slot];
    r.position += h * v.linear;
    const Vec3 omega = v.angular;
    const Quat spin = Quat{omega.x, omega.y, omega.z, 0.0f} * r.orientation;
    const Quat q = r.orientation;
    r.orientation = normalize(Quat{q.x + half_h * spin.x, q.y + half_h * spin.y,
                                   q.z + half_h * spin.z, q.w + half_h * spin.w});
    SolverVelocity& d = deltas[slot];
    d.linear += h * v.linear;
    d.angular += h * omega;
  }
}

// 5–9. Warm-start match and prepare (with the velocities before this step's gravity); then, when
// anything can move, the substeps: velocities, warm start, biased passes, speed clamps,
// positions, relax passes (the same rows without the bias, with prepare's anchors and masses),
// restitution, speed clamps; the velocities back into the bodies.
void solve_contacts(WorldData& w, float gravity_step, bool moving, StepStats& st,
                    SolverCounters& sc, StageTimer& timer) {
  const WorldDef& def = w.def;
  const uint32_t slots = w.slot_count;
  const std::span<ContactConstraint> constraints(w.constraints.data(), w.constraint_count);
  const std::span<ContactPoint> points(w.points.data(), w.point_count);
  const std::span<BodySolverState> bodies(w.solver_bodies.data(), slots);
  match_warm_start(constraints, points, w.cache, &sc);
  SolverSettings settings =
      make_solver_settings(def.dt_s, def.substeps, def.contact_hertz, def.contact_damping_ratio,
                           def.linear_slop_m, def.max_bias_velocity, def.restitution_threshold);
  settings.gravity_step = gravity_step;
  settings.up = normalize_or(-def.gravity, Vec3{});
  settings.support_speed = 2.0f * gravity_step;
  build_contact_lanes(constraints, bodies, slots, &w.lanes);
  prepare_contact_lanes(constraints, points, bodies, settings, &w.lanes, &sc);
  if (!moving) return;
  const std::span<SolverVelocity> velocities(w.solver_velocities.data(), slots);
  const std::span<SolverVelocity> deltas(w.solver_deltas.data(), slots);
  gather_velocities(bodies, velocities);
  for (SolverVelocity& d : deltas)
    d = SolverVelocity{};
  const float h = settings.substep_s;
  for (uint32_t sub = 0; sub < def.substeps; ++sub) {
    integrate_velocities(w, velocities, h);
    warm_start_lanes(w.lanes, velocities);
    for (uint32_t it = 0; it < def.velocity_iterations; ++it) {
      solve_lanes(&w.lanes, velocities, deltas, true, &sc);
    }
    clamp_speeds(w, velocities);
    timer.lap_add(&st.ns_solve);
    integrate_positions(w, velocities, deltas, h);
    timer.lap_add(&st.ns_integrate_positions);
    for (uint32_t it = 0; it < def.relax_iterations; ++it) {
      solve_lanes(&w.lanes, velocities, deltas, false, &sc);
    }
    restitute_lanes(&w.lanes, velocities);
    clamp_speeds(w, velocities);
    timer.lap_add(&st.ns_solve);
  }
  scatter_velocities(velocities, bodies);
  for (uint32_t slot = 0; slot < slots; ++slot) {
    if (w.dynamic_flags[slot] && !w.bodies[slot].asleep) refresh_body_derived(w, slot);
  }
}

// 9c. Bullets: each one's motion of the step (from where it started, end − Δp, to where it
// ended) is swept against the static bodies its box met; at a hit it goes back to the pose of
// the first one, keeping its velocity (time_of_impact.cpp). Pairs in key order.
void sweep_bullets(WorldData& w, StepStats& st) {
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    BodyRecord& r = w.bodies[slot];
    if (!r.alive || !r.bullet || r.type != BodyType::dynamic || r.asleep) continue;
    const Vec3 end = r.position;
    const Vec3 start = end - w.solver_deltas[slot].linear;
    float first = 1.0f;
    for (uint32_t i = 0; i < w.broadphase.pair_count; ++i) {
      const uint64_t key = w.broadphase.pairs[i];
      const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
      if (sa != slot && sb != slot) continue;
      const BodyRecord& other = w.bodies[sa == slot ? sb : sa];
      if (other.type != BodyType::static_body) continue;
      const float t =
          time_of_impact(r.shape, start, end, r.orientation, other.shape,
                         Transform{other.position, other.orientation}, w.def.linear_slop_m);
      if (t < first) first = t;
    }
    if (first < 1.0f) {
      r.position = start + first * (end - start);
      ++st.bullet_impacts;
    }
  }
}

// 10. Contact events: a merge join of last step's touching pairs with this step's. Events beyond
// capacity are dropped (the highest keys, as the join runs in key order); begin_events and
// end_events count the buffered ones.
void emit_contact_events(WorldData& w, StepStats& st, StepStatus& status) {
  uint32_t i = 0, j = 0, n_events = 0;
  const ContactCache& old = w.cache;
  auto emit = [&](ContactEventType type, uint64_t key) {
    if (n_events >= w.def.max_events) {
      ++st.dropped_events;
      status.overflow |= overflow_events;
      return;
    }
    if (type == ContactEventType::begin) {
      ++st.begin_events;
    } else {
      ++st.end_events;
    }
    ContactEvent& ev = w.events[n_events++];
    ev.type = type;
    ev.a = body_id(w, pair_slot_a(key));
    ev.b = body_id(w, pair_slot_b(key));
  };
  while (i < w.constraint_count || j < old.manifold_count) {
    const bool has_new = i < w.constraint_count;
    const bool has_old = j < old.manifold_count;
    const uint64_t k_new = has_new ? w.constraints[i].key : 0;
    const uint64_t k_old = has_old ? old.manifolds[j].key : 0;
    if (has_new && (!has_old || k_new < k_old)) {
      emit(ContactEventType::begin, k_new);
      ++i;
    } else if (has_old && (!has_new || k_old < k_new)) {
      // [sleep] A contact of a sleeping body is held, not ended (island.h).
      if (!contact_pair_asleep(w, k_old)) emit(ContactEventType::end, k_old);
      ++j;
    } else {
      ++i;
      ++j;
    }
  }
  w.event_count = n_events;
}

// 10. Sensor events: a merge join of last step's overlapping sensor pairs with this step's. An
// overlap whose visitor sleeps is held (the sweep does not report pairs with a sleeping body): it
// stays in the list with no event, as a sleeping body's contacts do. Events beyond capacity are
// dropped (the highest keys).
void update_sensor_overlaps(WorldData& w, StepStats& st, StepStatus& status) {
  // This step's overlaps: the candidates whose shapes touch or interpenetrate where the step left
  // them (no speculative margin).
  uint32_t found = 0;
  for (uint32_t c = 0; c < w.sensor_found_count; ++c) {
    const uint64_t key = w.sensor_found[c];
    const BodyRecord& ra = w.bodies[pair_slot_a(key)];
    const BodyRecord& rb = w.bodies[pair_slot_b(key)];
    Manifold m;
    collide(ra.shape, Transform{ra.position, ra.orientation}, rb.shape,
            Transform{rb.position, rb.orientation}, 0.0f, &m);
    bool touching = false;
    for (int k = 0; k < m.count; ++k)
      touching = touching || m.points[k].separation <= 0.0f;
    if (touching) w.sensor_found[found++] = key;
  }
  w.sensor_found_count = found;
  uint32_t i = 0, j = 0, out = 0, n_events = 0;
  auto emit = [&](ContactEventType type, uint64_t key) {
    if (n_events >= w.def.max_events) {
      ++st.dropped_events;
      status.overflow |= overflow_events;
      return;
    }
    const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
    const bool a_is_sensor = w.bodies[sa].shape.sensor;
    SensorEvent& ev = w.sensor_events[n_events++];
    ev.type = type;
    ev.sensor = body_id(w, a_is_sensor ? sa : sb);
    ev.visitor = body_id(w, a_is_sensor ? sb : sa);
    if (type == ContactEventType::begin) {
      ++st.sensor_begin_events;
    } else {
      ++st.sensor_end_events;
    }
  };
  const uint32_t capacity = static_cast<uint32_t>(w.sensor_next.size());
  auto keep = [&](uint64_t key) {
    if (out < capacity) {
      w.sensor_next[out++] = key;
    } else {
      ++st.dropped_sensor_overlaps;
      status.overflow |= overflow_sensor_overlaps;
    }
  };
  const uint32_t n_new = w.sensor_found_count, n_old = w.sensor_pair_count;
  while (i < n_new || j < n_old) {
    const uint64_t k_new = i < n_new ? w.sensor_found[i] : ~uint64_t{0};
    const uint64_t k_old = j < n_old ? w.sensor_pairs[j] : ~uint64_t{0};
    if (i < n_new && (j >= n_old || k_new < k_old)) {
      emit(ContactEventType::begin, k_new);
      keep(k_new);
      ++i;
    } else if (i >= n_new || k_old < k_new) {
      if (contact_pair_asleep(w, k_old)) {
        keep(k_old);  // held: the visitor sleeps inside
      } else {
        emit(ContactEventType::end, k_old);
      }
      ++j;
    } else {
      keep(k_new);
      ++i;
      ++j;
    }
  }
  std::swap(w.sensor_pairs, w.sensor_next);
  w.sensor_pair_count = out;
  w.sensor_event_count = n_events;
  st.sensor_overlaps = out;
}

// 10a. The step's impulses back into its points, and the points into the warm-start cache
// (with the held contacts of sleeping bodies carried over).
void store_contacts(WorldData& w, StepStats& st, StepStatus& status) {
  const std::span<ContactConstraint> constraints(w.constraints.data(), w.constraint_count);
  const std::span<ContactPoint> points(w.points.data(), w.point_count);
  unpack_contact_lanes(w.lanes, points);
  store_contact_cache(constraints, points, &w.next_cache);
  carry_sleeping_contacts(w, &st, &status);  // [sleep] held contacts keep their warm start
  std::swap(w.cache, w.next_cache);
}

}  // namespace

StepStatus World::step() {
  WorldData& w = *data_;
  const WorldDef& def = w.def;
  StageTimer timer(def.measure_stage_times);
  StepStats st{};
  StepStatus status{};
  SolverCounters sc{};
  const float gravity_step = length(def.gravity) * def.dt_s;

  apply_commands(w, st);
  apply_inputs(w, st);
  size_speculative_margins(w, gravity_step);
  timer.lap(&st.ns_inputs_integrate);
  const uint32_t bullets = update_broadphase(w, gravity_step, st, status);
  timer.lap(&st.ns_broadphase);
  collide_pairs(w, st, status);
  timer.lap(&st.ns_narrowphase);
  const bool moving = count_awake_bodies(w, st);
  solve_contacts(w, gravity_step, moving, st, sc, timer);
  if (moving && bullets > 0) sweep_bullets(w, st);
  st.velocity_iterations = def.substeps * (def.velocity_iterations + def.relax_iterations);
  timer.lap_add(&st.ns_solve);
  emit_contact_events(w, st, status);
  update_sensor_overlaps(w, st, status);
  store_contacts(w, st, status);
  timer.lap(&st.ns_contacts);
  update_islands(w, &st);  // 10b. [sleep] rest timers, islands, islands falling asleep
  timer.lap(&st.ns_islands);

  ++w.tick;
  st.tick = w.tick;
  st.bodies = w.body_count;
  st.warm_started_points = sc.warm_started_points;
  st.skipped_normal_rows = sc.skipped_normal_rows;
  st.skipped_friction_rows = sc.skipped_friction_rows;
  if (!status.ok()) ++w.counters.overflow_steps;
  update_state_hash(w);  // 11.
  timer.lap(&st.ns_hash);
  st.ns_total = timer.total_ns();
  w.stats = st;
  return status;
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

std::span<const SensorEvent> World::sensor_events() const {
  return {data_->sensor_events.data(), data_->sensor_event_count};
}

float World::normal_impulse_sum(BodyId id) const {
  const WorldData& w = *data_;
  uint32_t slot = 0;
  if (resolve(w, id, &slot) != Error::none) return 0.0f;
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
