// The step: World::step runs the stages of StepStage (types.h), in that order, one function of
// the same name per stage, and times each into StepStats::stage_ns when
// WorldDef::measure_stage_times is set (never part of the state). docs/design-decisions.md ("The
// step, stage by stage") says why the stages are in this order; docs/physics.md has the maths.
//
// Position correction is Box2D v3's soft step (contact_lanes_passes.inl has the rows):
// prepare_contacts runs once per step (anchors, masses, inverse inertias), then every substep
// integrates the velocities, warm starts, solves (the biased passes push overlaps out through a
// soft, heavily damped spring whose target is recomputed from how far the bodies moved since the
// step began), integrates the positions, relaxes (the same rows rigid, without the push, so the
// velocities carried on no longer hold it: without them a stack is pushed apart every substep,
// falls back and rocks) and restitutes. Sleeping (island.h, the `[sleep]` marks): islands of bodies
// at rest sleep; a sleeping body is neither integrated nor swept, and keeps its contacts and warm
// start until something wakes its island. The stages share WorldData and the step's counters
// (StepStats, StepStatus, SolverCounters). Nothing here allocates: every array was sized in
// World::create.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <utility>

#include "broadphase.h"
#include "collide.h"
#include "collide_mesh.h"
#include "island.h"
#include "lockstep/sim/world.h"
#include "shape.h"
#include "simd/wide_float.h"
#include "solver/contact_solver.h"
#include "state_stream.h"
#include "time_of_impact.h"
#include "world_data.h"

namespace lockstep::sim {

const char* step_stage_name(StepStage stage) {
  switch (stage) {
    case StepStage::apply_commands:
      return "apply_commands";
    case StepStage::apply_inputs:
      return "apply_inputs";
    case StepStage::size_margins:
      return "size_margins";
    case StepStage::update_broadphase:
      return "update_broadphase";
    case StepStage::collide_pairs:
      return "collide_pairs";
    case StepStage::prepare_contacts:
      return "prepare_contacts";
    case StepStage::integrate_velocities:
      return "integrate_velocities";
    case StepStage::warm_start:
      return "warm_start";
    case StepStage::solve:
      return "solve";
    case StepStage::integrate_positions:
      return "integrate_positions";
    case StepStage::relax:
      return "relax";
    case StepStage::restitute:
      return "restitute";
    case StepStage::store_velocities:
      return "store_velocities";
    case StepStage::sweep_bullets:
      return "sweep_bullets";
    case StepStage::emit_contact_events:
      return "emit_contact_events";
    case StepStage::update_sensor_overlaps:
      return "update_sensor_overlaps";
    case StepStage::store_contacts:
      return "store_contacts";
    case StepStage::update_islands:
      return "update_islands";
    case StepStage::update_state_hash:
      return "update_state_hash";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// Times the stages into StepStats::stage_ns: each end() adds the time since the last one to the
// stage's slot (the substep stages run several times a step), finish() the whole into ns_total.
class StageTimer {
 public:
  StageTimer(bool on, StepStats* stats) : on_(on), stats_(stats) {
    if (on_) start_ = mark_ = Clock::now();
  }
  void end(StepStage stage) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    stats_->stage_ns[static_cast<uint32_t>(stage)] += elapsed_ns(mark_, now);
    mark_ = now;
  }
  void finish() {
    if (on_) stats_->ns_total = elapsed_ns(start_, mark_);
  }

 private:
  static uint64_t elapsed_ns(Clock::time_point from, Clock::time_point to) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
  }
  bool on_;
  StepStats* stats_;
  Clock::time_point start_{};
  Clock::time_point mark_{};
};

Vec3 clamp_speed(Vec3 v, float max) {
  const float len2 = length_squared(v);
  if (len2 <= max * max) return v;
  const float scale = max / std::sqrt(len2);
  return v * scale;
}

// Commands, already in command_less order: spawns take the lowest free slots in that order,
// destroys end their bodies (a body destroyed twice: the second fails with stale_handle).
void apply_commands(WorldData& w, StepStats& st) {
  w.game_event_count = 0;
  for (uint32_t i = 0; i < w.command_count; ++i) {
    const Command& c = w.commands[i];
    CommandResult& result = w.command_results[i];
    result = CommandResult{c.sequence, c.type, Error::none, BodyId{}};
    if (c.type == CommandType::spawn) {
      result.error = add_body(w, spawn_body_def(w.def, c), &result.body);
    } else if (c.type == CommandType::emit_event) {
      // At most one per command: the list holds max_commands_per_tick.
      w.game_events[w.game_event_count++] =
          GameEvent{c.template_index, c.owner_player, c.score_delta, c.sequence};
    } else if (is_state_command(c.type)) {
      result.error = apply_state_command(w, c);
    } else if (is_body_command(c.type)) {
      result.error = apply_body_command(w, c);
      if (result.error == Error::none) result.body = c.body;
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

// Inputs, already in the total input order: target velocities replace the body's, then
// impulses add to them (kinematic bodies take no impulses: check_input_fields).
void apply_inputs(WorldData& w, StepStats& st) {
  auto fixed = [](const int32_t(&v)[3]) {
    return Vec3{static_cast<float>(v[0]) * kInputScale, static_cast<float>(v[1]) * kInputScale,
                static_cast<float>(v[2]) * kInputScale};
  };
  for (uint32_t i = 0; i < w.input_count; ++i) {
    const Input& in = w.inputs[i];
    uint32_t slot = 0;
    if (resolve_body(w, in.body, &slot) != Error::none) continue;
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

// Speculative margins: how far each body can move this step, |v|·dt + |ω|·r·dt (with this
// step's gravity, `gravity_step` = |g|·dt), so that a pair's contact exists before its shapes can
// pass each other. Bounded: max_speculative_margin_m for the pair (collide_pairs).
void size_margins(WorldData& w, float gravity_step) {
  const WorldDef& def = w.def;
  const float spare_margin = def.max_speculative_margin_m - def.contact_margin_m;
  const ShapeLibrary library = w.library();
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    float margin = 0.0f;
    if (r.alive && r.type != BodyType::static_body) {
      const BodySolverState& s = w.solver_bodies[slot];
      float speed = length(s.linear_velocity) +
                    length(s.angular_velocity) * bounding_radius(r.shape, library);
      if (r.type == BodyType::dynamic) speed += gravity_step;
      margin = speed * def.dt_s;
      if (!(margin <= spare_margin)) margin = spare_margin;
    }
    w.speculative_margins[slot] = margin;
  }
}

// Broadphase: the bodies' boxes, then the sweep. [sleep] Sleeping bodies keep the box they
// fell asleep with; sweep_and_wake sweeps the awake bodies and wakes the islands they touch
// (island.h). A bullet's box covers its whole travel, so that every static body it could reach
// is a candidate for its time of impact (sweep_bullets); its contacts keep the bounded margin.
// Returns the number of bullets.
uint32_t update_broadphase(WorldData& w, float gravity_step, StepStats& st, StepStatus& status) {
  const WorldDef& def = w.def;
  const ShapeLibrary library = w.library();
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
    w.aabbs[slot] = compute_aabb(r.shape, library, Transform{r.position, r.orientation}, margin);
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

// Vec3 arithmetic on four lanes at once (wide::W4), for reuse_points_wide: each lane performs
// math.h's float operations in their order, so each lane's value has the bits math.h gives.
struct Vec3x4 {
  wide::W4 x, y, z;
};
Vec3x4 splat3(Vec3 v) {
  return {wide::splat(v.x), wide::splat(v.y), wide::splat(v.z)};
}
Vec3x4 operator+(const Vec3x4& a, const Vec3x4& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
Vec3x4 operator-(const Vec3x4& a, const Vec3x4& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
Vec3x4 operator*(wide::W4 s, const Vec3x4& a) {
  return {s * a.x, s * a.y, s * a.z};
}
Vec3x4 cross(const Vec3x4& a, const Vec3x4& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
// rotate() of math.h: v + 2w(u×v) + 2u×(u×v), as v + w·t + u×t with t = 2·(u×v).
Vec3x4 rotate(Quat q, const Vec3x4& v) {
  const Vec3x4 u = splat3(Vec3{q.x, q.y, q.z});
  const Vec3x4 t = wide::splat(2.0f) * cross(u, v);
  return (v + wide::splat(q.w) * t) + cross(u, t);
}

// reuse_manifold's points for two bodies that do not roll, the four at once (lanes past
// cm.point_count repeat point 0 and are not read): the scalar loop's operations lane by lane,
// so the same bits. A resting pile reuses nearly every manifold every step, and the three
// rotations a point took one by one were the largest cost of its narrowphase.
void reuse_points_wide(const ContactCache& cache, const CachedManifold& cm, const BodyRecord& ra,
                       const BodyRecord& rb, float margin, FoundManifold* found) {
  const ManifoldReference& reference = cm.reference;
  alignas(16) float ax[4], ay[4], az[4], rs[4];
  for (uint32_t k = 0; k < 4; ++k) {
    const CachedPoint& cp = cache.points[cm.first_point + (k < cm.point_count ? k : 0)];
    ax[k] = cp.local_anchor_a.x;
    ay[k] = cp.local_anchor_a.y;
    az[k] = cp.local_anchor_a.z;
    rs[k] = cp.reference_separation_m;
  }
  const Vec3x4 anchor{wide::load(ax), wide::load(ay), wide::load(az)};
  const wide::W4 reference_separation = wide::load(rs);
  // half = (½·s₀)·n₀; A's point a + half, B's (a − half − p₀) in B's frame at the reference.
  const Vec3x4 half = (wide::splat(0.5f) * reference_separation) * splat3(reference.normal);
  const Vec3x4 local_pa = anchor + half;
  const Quat back = conjugate(reference.rotation);
  const Vec3x4 local_pb = rotate(back, (anchor - half) - splat3(reference.position));
  const Vec3x4 pa = splat3(ra.position) + rotate(ra.orientation, local_pa);
  const Vec3x4 pb = splat3(rb.position) + rotate(rb.orientation, local_pb);
  const Vec3x4 gap = pa - pb;
  const Vec3 n = found->m.normal;
  const wide::W4 separation =
      (wide::splat(n.x) * gap.x + wide::splat(n.y) * gap.y) + wide::splat(n.z) * gap.z;
  const Vec3x4 mid = wide::splat(0.5f) * (pa + pb);
  alignas(16) float sep[4], mx[4], my[4], mz[4];
  wide::store(sep, separation);
  wide::store(mx, mid.x);
  wide::store(my, mid.y);
  wide::store(mz, mid.z);
  Manifold& m = found->m;
  for (uint32_t k = 0; k < cm.point_count; ++k) {
    if (!(sep[k] <= margin)) continue;
    const CachedPoint& cp = cache.points[cm.first_point + k];
    found->local_anchor[m.count] = cp.local_anchor_a;
    found->reference_separation[m.count] = cp.reference_separation_m;
    ManifoldPoint& mp = m.points[m.count++];
    mp.position = Vec3{mx[k], my[k], mz[k]};
    mp.separation = sep[k];
    mp.feature = cp.feature;
  }
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
  if (!round_a && !round_b && cm.point_count <= 4) {
    reuse_points_wide(cache, cm, ra, rb, margin, found);
    return true;
  }
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

// The narrowphase proper: collide() two pieces of the bodies' shapes (the shapes themselves, or
// compound children; keeping last step's corners first, `cm`) and record the bodies' relative
// pose as the new reference.
void collide_manifold(const ContactCache& cache, const CachedManifold* cm, const BodyRecord& ra,
                      const ShapePiece& pa, const ShapePiece& pb, const Vec3& relative_position,
                      const Quat& relative_rotation, const ShapeLibrary& library, float margin,
                      FoundManifold* found, uint32_t* hint) {
  Manifold& m = found->m;
  if (cm != nullptr) {
    m.previous_count = static_cast<int>(cm->point_count);
    for (uint32_t k = 0; k < cm->point_count; ++k)
      m.previous_features[k] = cache.points[cm->first_point + k].feature;
  }
  collide(pa.shape, pa.xf, pb.shape, pb.xf, library, margin, &m, hint);
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

// The separation hint last step's narrowphase left for manifold key `key` (0: none). Keys are
// asked in ascending order, as the narrowphase meets them: a merge join with the sorted list.
uint32_t take_separation_hint(WorldData& w, uint64_t key) {
  const SeparationHints& h = w.hints;
  while (w.hint_cursor < h.count && h.keys[w.hint_cursor] < key)
    ++w.hint_cursor;
  return w.hint_cursor < h.count && h.keys[w.hint_cursor] == key ? h.codes[w.hint_cursor] : 0;
}

// Keeps this step's hint for a pair found apart (in key order); past capacity the pair simply
// goes without one.
void keep_separation_hint(WorldData& w, uint64_t key, uint32_t hint) {
  SeparationHints& h = w.next_hints;
  if (hint == 0 || h.count >= h.capacity) return;
  h.keys[h.count] = key;
  h.codes[h.count] = hint;
  ++h.count;
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

// A body against level geometry (collide_mesh.h): each piece's manifolds against the level,
// one per group of triangles, under the key of (piece, group) on the body's side and the level's
// side; collided every step (never reused), appended in key order.
void collide_level_pair(WorldData& w, uint64_t key, const BodyRecord& ra, const BodyRecord& rb,
                        const Vec3& relative_position, const Quat& relative_rotation,
                        const ShapeLibrary& library, float margin, const ReuseBounds& bounds,
                        uint32_t* cached, StepStats& st, StepStatus& status) {
  const bool level_a = is_level_shape(ra.shape.type);
  if (level_a && is_level_shape(rb.shape.type)) return;  // both static: never a pair
  const BodyRecord& body = level_a ? rb : ra;
  const BodyRecord& level = level_a ? ra : rb;
  const Transform xbody{body.position, body.orientation}, xlevel{level.position, level.orientation};
  const uint32_t pieces = shape_piece_count(body.shape, library);
  // Reuse, as for other pairs: while the body has hardly moved against the level since its
  // manifolds were found, each keeps its points (a compound's, whose children roll about its
  // centre, are always found again). All of the pair's manifolds or none.
  while (*cached < w.cache.manifold_count && w.cache.manifolds[*cached].key < key)
    ++*cached;
  uint32_t end = *cached;
  while (end < w.cache.manifold_count && body_pair_key(w.cache.manifolds[end].key) == key)
    ++end;
  if (bounds.on && pieces == 1 && body.shape.type != ShapeType::compound && end > *cached &&
      end - *cached <= kMaxLevelManifolds) {
    // Left uninitialized but for the point counts (a variant member): reuse_manifold writes
    // what add_constraint reads, and most resting bodies take this path every step.
    struct Reused {
      union {
        FoundManifold f[kMaxLevelManifolds];
      };
      Reused() {}
    } reused_scratch;
    auto& reused = reused_scratch.f;
    bool all = true;
    for (uint32_t c = *cached; c < end && all; ++c) {
      reused[c - *cached].m.count = 0;
      all = reuse_manifold(w.cache, w.cache.manifolds[c], ra, rb, relative_position,
                           relative_rotation, margin, bounds, &reused[c - *cached]);
    }
    if (all) {
      for (uint32_t c = *cached; c < end; ++c) {
        ++st.reused_manifolds;
        if (reused[c - *cached].m.count > 0)
          add_constraint(w, w.cache.manifolds[c].key, reused[c - *cached], st, status);
      }
      return;
    }
  }
  // Left uninitialized (a variant member): collide_level writes every group it returns and only
  // those are read; clearing 64 manifolds (7 KB) a pair cost more than most pairs' collision.
  struct Found {
    union {
      Manifold m[kMaxCompoundChildren][kMaxLevelManifolds];
    };
    Found() {}
  } scratch;
  auto& found = scratch.m;
  uint32_t groups[kMaxCompoundChildren] = {};
  uint32_t dropped = 0;
  for (uint32_t p = 0; p < pieces; ++p) {
    const ShapePiece piece = shape_piece(body.shape, xbody, p, library);
    groups[p] = collide_level(piece.shape, piece.xf, level.shape, xlevel, library, margin, found[p],
                              &dropped);
  }
  st.dropped_level_triangles += dropped;
  // Key order: (child a, child b) = (piece, group) when the level is B, (group, piece) when A.
  const uint32_t outer = level_a ? kMaxLevelManifolds : pieces;
  const uint32_t inner = level_a ? pieces : kMaxLevelManifolds;
  for (uint32_t i = 0; i < outer; ++i) {
    for (uint32_t j = 0; j < inner; ++j) {
      const uint32_t p = level_a ? j : i, g = level_a ? i : j;
      if (g >= groups[p] || found[p][g].count == 0) continue;
      FoundManifold f;
      f.m = found[p][g];
      if (level_a) f.m.normal = -f.m.normal;  // from B (the body) to A (the level)
      f.reference.position = relative_position;
      f.reference.rotation = relative_rotation;
      f.reference.normal = inv_rotate(ra.orientation, f.m.normal);
      for (int k = 0; k < f.m.count; ++k) {
        f.local_anchor[k] = inv_rotate(ra.orientation, f.m.points[k].position - ra.position);
        f.reference_separation[k] = f.m.points[k].separation;
      }
      add_constraint(w, manifold_key(key, i, j), f, st, status);
    }
  }
}

// Narrowphase, in pair-key order: each candidate pair's manifold, reused or collided, into the
// constraints. A pair whose relative pose is within the reuse bounds of where its points were
// found keeps those points.
void collide_pairs(WorldData& w, StepStats& st, StepStatus& status) {
  const WorldDef& def = w.def;
  const ReuseBounds bounds = reuse_bounds(def);
  const ShapeLibrary library = w.library();
  w.constraint_count = 0;
  w.point_count = 0;
  w.sensor_found_count = 0;
  w.hint_cursor = 0;
  w.next_hints.count = 0;
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
    const Vec3 relative_position = inv_rotate(ra.orientation, rb.position - ra.position);
    const Quat relative_rotation = conjugate(ra.orientation) * rb.orientation;
    if (is_level_shape(ra.shape.type) || is_level_shape(rb.shape.type)) {
      collide_level_pair(w, key, ra, rb, relative_position, relative_rotation, library, margin,
                         bounds, &cached, st, status);
      continue;
    }
    const Transform xa{ra.position, ra.orientation}, xb{rb.position, rb.orientation};
    const uint32_t count_a = shape_piece_count(ra.shape, library);
    const uint32_t count_b = shape_piece_count(rb.shape, library);
    const bool compound_a = ra.shape.type == ShapeType::compound;
    const bool compound_b = rb.shape.type == ShapeType::compound;
    // A compound's children: each one against each piece of the other body whose box its box
    // (grown by the pair's margin) meets, a manifold of its own under its children's key.
    // Left uninitialized (a variant member): written and read only for a compound pair. Zeroing
    // its 192 bytes for every pair showed in the resting pyramid's profile (0.8 % of a step).
    union CompoundBoxes {
      Aabb b[kMaxCompoundChildren];
      CompoundBoxes() {}
    } boxes_scratch;
    auto& boxes_b = boxes_scratch.b;
    if (compound_a || compound_b) {
      for (uint32_t cb = 0; cb < count_b; ++cb) {
        const ShapePiece pb = shape_piece(rb.shape, xb, cb, library);
        boxes_b[cb] = compute_aabb(pb.shape, library, pb.xf, 0.0f);
      }
    }
    for (uint32_t ca = 0; ca < count_a; ++ca) {
      const ShapePiece pa = shape_piece(ra.shape, xa, ca, library);
      Aabb box_a{};
      if (compound_a || compound_b) box_a = compute_aabb(pa.shape, library, pa.xf, margin);
      for (uint32_t cb = 0; cb < count_b; ++cb) {
        if ((compound_a || compound_b) && !overlaps(box_a, boxes_b[cb])) continue;
        const ShapePiece pb = shape_piece(rb.shape, xb, cb, library);
        const uint64_t mkey = manifold_key(key, ca, cb);
        // Last step's manifold of these pieces (merge join: pairs and cache are both in key
        // order).
        while (cached < w.cache.manifold_count && w.cache.manifolds[cached].key < mkey)
          ++cached;
        const CachedManifold* cm = nullptr;
        if (cached < w.cache.manifold_count && w.cache.manifolds[cached].key == mkey) {
          cm = &w.cache.manifolds[cached];
        }
        // A round child of a compound rolls about the compound's centre, not its own: its
        // points are found again each step (reuse_manifold rolls only a body that is round).
        const bool reusable = !(rolls(pa.shape) && rolls(pb.shape)) &&
                              !(compound_a && rolls(pa.shape)) && !(compound_b && rolls(pb.shape));
        FoundManifold found;
        if (cm != nullptr && bounds.on && reusable &&
            reuse_manifold(w.cache, *cm, ra, rb, relative_position, relative_rotation, margin,
                           bounds, &found)) {
          ++st.reused_manifolds;
        } else {
          // A pair found apart last step tests first the feature that held it apart then.
          uint32_t hint = take_separation_hint(w, mkey);
          collide_manifold(w.cache, cm, ra, pa, pb, relative_position, relative_rotation, library,
                           margin, &found, &hint);
          if (found.m.count <= 0) keep_separation_hint(w, mkey, hint);
        }
        if (found.m.count <= 0) continue;
        add_constraint(w, mkey, found, st, status);
      }
    }
  }
  std::swap(w.hints, w.next_hints);
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

// The solver's spans of the substeps: each body slot's velocity, and how far it has moved since
// the step began (Δp, Δθ: the rows recompute their separations from it).
struct SubstepState {
  std::span<SolverVelocity> velocities;
  std::span<SolverVelocity> deltas;
  float h = 0;  // the substep (s)
};

// Warm-start match and prepare (with the velocities before this step's gravity). When anything
// can move, also the solver's velocities from the bodies and Δp = Δθ = 0.
SubstepState prepare_contacts(WorldData& w, float gravity_step, bool moving, SolverCounters& sc) {
  const WorldDef& def = w.def;
  const uint32_t slots = w.slot_count;
  const std::span<ContactConstraint> constraints(w.constraints.data(), w.constraint_count);
  const std::span<ContactPoint> points(w.points.data(), w.point_count);
  const std::span<BodySolverState> bodies(w.solver_bodies.data(), slots);
  match_warm_start(constraints, points, w.cache, &sc);
  SolverSettings settings =
      make_solver_settings(def.dt_s, def.substeps, def.contact_hertz, def.contact_damping_ratio,
                           def.linear_slop_m, def.max_bias_velocity, def.restitution_threshold);
  update_rest_offsets(constraints, points, bodies, settings);
  settings.gravity_step = gravity_step;
  settings.gravity_substep = settings.substep_s * def.gravity;
  settings.up = normalize_or(-def.gravity, Vec3{});
  settings.support_speed = 2.0f * gravity_step;
  build_contact_lanes(constraints, bodies, slots, &w.lanes);
  prepare_contact_lanes(constraints, points, bodies, settings, &w.lanes, &sc);
  SubstepState sub;
  sub.velocities = std::span<SolverVelocity>(w.solver_velocities.data(), slots);
  sub.deltas = std::span<SolverVelocity>(w.solver_deltas.data(), slots);
  sub.h = settings.substep_s;
  if (!moving) return sub;
  gather_velocities(bodies, sub.velocities);
  for (SolverVelocity& d : sub.deltas)
    d = SolverVelocity{};
  return sub;
}

// Last step's impulses applied again, as the substep's first guess.
void warm_start(const WorldData& w, const SubstepState& sub) {
  warm_start_wide(w.lanes, sub.velocities);
}

// The biased passes (the soft push-out), then the speed clamps.
void solve(WorldData& w, const SubstepState& sub, SolverCounters& sc) {
  for (uint32_t it = 0; it < w.def.velocity_iterations; ++it) {
    solve_wide(&w.lanes, sub.velocities, sub.deltas, true, &sc);
  }
  clamp_speeds(w, sub.velocities);
}

// The relax passes: the same rows without the bias, with prepare's anchors and masses.
void relax(WorldData& w, const SubstepState& sub, SolverCounters& sc) {
  for (uint32_t it = 0; it < w.def.relax_iterations; ++it) {
    solve_wide(&w.lanes, sub.velocities, sub.deltas, false, &sc);
  }
}

// Restitution of the impacts of this substep (restitute_wide), then the speed clamps.
void restitute(WorldData& w, const SubstepState& sub) {
  restitute_wide(&w.lanes, sub.velocities, sub.deltas);
  clamp_speeds(w, sub.velocities);
}

// The solver's velocities back into the bodies, and their derived data (world inertia).
void store_velocities(WorldData& w, const SubstepState& sub) {
  const std::span<BodySolverState> bodies(w.solver_bodies.data(), w.slot_count);
  scatter_velocities(sub.velocities, bodies);
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    if (w.dynamic_flags[slot] && !w.bodies[slot].asleep) refresh_body_derived(w, slot);
  }
}

// Bullets: each one's motion of the step (from where it started, end − Δp, to where it
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
      const float t = time_of_impact(r.shape, start, end, r.orientation, other.shape,
                                     Transform{other.position, other.orientation}, w.library(),
                                     w.def.linear_slop_m);
      if (t < first) first = t;
    }
    if (first < 1.0f) {
      r.position = start + first * (end - start);
      ++st.bullet_impacts;
    }
  }
}

// Contact events: a merge join of last step's touching pairs with this step's. Events beyond
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
  // Per body pair: a compound's children make several manifolds of one pair, one after another
  // in key order; the pair touches while any of them exists.
  const auto skip_new = [&w](uint32_t k, uint64_t pair) {
    while (k < w.constraint_count && body_pair_key(w.constraints[k].key) == pair)
      ++k;
    return k;
  };
  const auto skip_old = [&old](uint32_t k, uint64_t pair) {
    while (k < old.manifold_count && body_pair_key(old.manifolds[k].key) == pair)
      ++k;
    return k;
  };
  while (i < w.constraint_count || j < old.manifold_count) {
    const bool has_new = i < w.constraint_count;
    const bool has_old = j < old.manifold_count;
    const uint64_t k_new = has_new ? body_pair_key(w.constraints[i].key) : 0;
    const uint64_t k_old = has_old ? body_pair_key(old.manifolds[j].key) : 0;
    if (has_new && (!has_old || k_new < k_old)) {
      emit(ContactEventType::begin, k_new);
      i = skip_new(i, k_new);
    } else if (has_old && (!has_new || k_old < k_new)) {
      // [sleep] A contact of a sleeping body is held, not ended (island.h).
      if (!contact_pair_asleep(w, k_old)) emit(ContactEventType::end, k_old);
      j = skip_old(j, k_old);
    } else {
      i = skip_new(i, k_new);
      j = skip_old(j, k_old);
    }
  }
  w.event_count = n_events;
}

// Sensor overlaps and their events: a merge join of last step's overlapping sensor pairs with this
// step's. An overlap whose visitor sleeps is held (the sweep does not report pairs with a sleeping
// body): it stays in the list with no event, as a sleeping body's contacts do. Events beyond
// capacity are dropped (the highest keys).
void update_sensor_overlaps(WorldData& w, StepStats& st, StepStatus& status) {
  // This step's overlaps: the candidates whose shapes touch or interpenetrate where the step left
  // them (no speculative margin).
  uint32_t found = 0;
  for (uint32_t c = 0; c < w.sensor_found_count; ++c) {
    const uint64_t key = w.sensor_found[c];
    const BodyRecord& ra = w.bodies[pair_slot_a(key)];
    const BodyRecord& rb = w.bodies[pair_slot_b(key)];
    ManifoldPoint deepest;
    Vec3 normal{};
    const bool touching = deepest_point(ra.shape, Transform{ra.position, ra.orientation}, rb.shape,
                                        Transform{rb.position, rb.orientation}, w.library(), 0.0f,
                                        &deepest, &normal) &&
                          deepest.separation <= 0.0f;
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

// The step's impulses back into its points, and the points into the warm-start cache
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
  StepStats st{};
  StepStatus status{};
  SolverCounters sc{};
  StageTimer timer(def.measure_stage_times, &st);
  const float gravity_step = length(def.gravity) * def.dt_s;

  apply_commands(w, st);
  timer.end(StepStage::apply_commands);
  apply_inputs(w, st);
  timer.end(StepStage::apply_inputs);
  size_margins(w, gravity_step);
  timer.end(StepStage::size_margins);
  const uint32_t bullets = update_broadphase(w, gravity_step, st, status);
  timer.end(StepStage::update_broadphase);
  collide_pairs(w, st, status);
  timer.end(StepStage::collide_pairs);
  const bool moving = count_awake_bodies(w, st);  // [sleep] false: the substeps are skipped
  const SubstepState sub = prepare_contacts(w, gravity_step, moving, sc);
  timer.end(StepStage::prepare_contacts);
  if (moving) {
    for (uint32_t i = 0; i < def.substeps; ++i) {
      integrate_velocities(w, sub.velocities, sub.h);
      timer.end(StepStage::integrate_velocities);
      warm_start(w, sub);
      timer.end(StepStage::warm_start);
      solve(w, sub, sc);
      timer.end(StepStage::solve);
      integrate_positions(w, sub.velocities, sub.deltas, sub.h);
      timer.end(StepStage::integrate_positions);
      relax(w, sub, sc);
      timer.end(StepStage::relax);
      restitute(w, sub);
      timer.end(StepStage::restitute);
    }
    store_velocities(w, sub);
    timer.end(StepStage::store_velocities);
    if (bullets > 0) sweep_bullets(w, st);
    timer.end(StepStage::sweep_bullets);
  }
  st.velocity_iterations = def.substeps * (def.velocity_iterations + def.relax_iterations);
  emit_contact_events(w, st, status);
  timer.end(StepStage::emit_contact_events);
  update_sensor_overlaps(w, st, status);
  timer.end(StepStage::update_sensor_overlaps);
  store_contacts(w, st, status);
  timer.end(StepStage::store_contacts);
  update_islands(w, &st);  // [sleep] rest timers, islands, islands falling asleep
  timer.end(StepStage::update_islands);

  ++w.tick;
  st.tick = w.tick;
  st.bodies = w.body_count;
  st.warm_started_points = sc.warm_started_points;
  st.skipped_normal_rows = sc.skipped_normal_rows;
  st.skipped_friction_rows = sc.skipped_friction_rows;
  if (!status.ok()) ++w.counters.overflow_steps;
  update_state_hash(w);
  timer.end(StepStage::update_state_hash);
  timer.finish();
  w.stats = st;
  return status;
}

StepStatus World::step(const TickInput& tick, const TickErrors& errors) {
  // Commands before inputs. Either order gives the same world (each queue is sorted on its own,
  // and neither check reads the other queue); this is the one place that picks it.
  for (size_t i = 0; i < tick.commands.size(); ++i) {
    const Error e = queue_command(tick.commands[i]);
    if (i < errors.commands.size()) errors.commands[i] = e;
  }
  for (size_t i = 0; i < tick.inputs.size(); ++i) {
    const Error e = queue_input(tick.inputs[i]);
    if (i < errors.inputs.size()) errors.inputs[i] = e;
  }
  return step();
}

}  // namespace lockstep::sim
