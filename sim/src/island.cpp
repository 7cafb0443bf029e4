// Sleeping with islands (Box2D v3, Jolt): deterministic, allocation-free.
//
// Rest. After the solve, an awake dynamic body with |v| ≤ t and |ω|·extent ≤ t, t being
// sleep_speed_threshold_mps and extent the largest distance from its centre to a point of its
// shape (sphere r, box |half extents|, capsule half height + r), adds dt to its rest timer,
// capped at time_to_sleep_s, if it also moved less than t·dt (and turned less than t·dt/extent)
// over the step: the relax passes take the soft contact's push-out velocity back out, so a body
// still being pushed out of an overlap moves with no velocity left, and without this a pair
// would fall asleep inside each other. Otherwise the timer is 0. Squares are compared (no sqrt).
// One speed for every size, as Box2D v3 and Jolt do: the threshold bounds how fast any point of the
// body moves, so a large body turning slowly is not at rest and a small one spinning is. A body
// with allow_sleep false never rests, and neither does a body touching a moving kinematic body
// (a platform carries it; it is not at rest).
//
// Islands. The connected components of the awake dynamic bodies linked by this step's
// manifolds (static and kinematic bodies do not link). A union-find over slots, union by the
// smaller root, with path halving: a root is always its component's smallest slot, whatever
// the order of the unions, so the islands are a pure function of the manifold set (the
// manifolds are still processed in key order). An island whose every body's timer has reached
// time_to_sleep_s falls asleep: its velocities are zeroed, each body remembers the island's
// root slot, and its bounding box is computed once, since it no longer moves.
//
// Sleeping bodies are not integrated (no gravity, no position update), the sweep does not look
// for their pairs, and their pairs with static and with other sleeping bodies get no
// narrowphase and no constraint: their contacts are held. A held contact's warm-start entry is
// carried from cache to cache, unchanged, so a woken island resumes warm-started, and no `end`
// event is emitted for it (nor a `begin` when the island wakes and the contact is still there).
//
// Waking resets the timers of the woken bodies to 0 (velocities are already 0). What wakes an
// island, and when:
//  - between steps: an input queued for one of its bodies, set_linear_velocity,
//    set_angular_velocity, set_transform or apply_impulse on one of them (the body's timer
//    restarts even when it was awake); destroying one of its bodies or a body in contact with
//    it (the cache says which); a static or kinematic body created, or moved by set_transform,
//    where its boxes overlap, or moved away from where it touched it;
//  - in the step, right after the broadphase (sweep_and_wake): a manifold between one of its
//    bodies and an awake dynamic or a moving kinematic body (the narrowphase would make one).
//    Woken there, before the narrowphase, the island is awake for the whole of that step: the
//    sweep runs again so its own pairs are found, the narrowphase makes its manifolds, the
//    integrate_velocities stage (after collide_pairs, step.cpp) gives it gravity, and the solve
//    starts from its carried warm-start impulses. The sweep repeats while it wakes anything; two
//    sleeping islands never have a manifold between them (the later one would have woken the
//    earlier one before falling asleep, and sleeping bodies do not move), so it runs at most
//    twice in practice.
//
// The broadphase sees a body as active (sweep_active) when it is an awake dynamic body, or a
// kinematic body with a nonzero velocity while anything sleeps; its output, pairs with at least
// one active body, is a pure function of the boxes and these flags, i.e. of the state. With
// nothing asleep the flags are exactly the dynamic flags, as without sleeping.
#include "island.h"

#include "broadphase.h"
#include "collide.h"
#include "world_data.h"

namespace lockstep::sim {

namespace {

// IslandScratch::marks bits.
constexpr uint8_t kKeepAwake = 1;   // per body: touches a moving kinematic body this step
constexpr uint8_t kCanSleep = 2;    // per root: every body of the island has rested long enough
constexpr uint8_t kWakeIsland = 4;  // per root of a sleeping island: wake it

// IslandScratch::pair_kind bits: what the pass over the sweep's pairs needs of a body, in one
// byte per slot instead of its record.
constexpr uint8_t kKindAsleep = 1;
constexpr uint8_t kKindDynamic = 2;

bool is_dynamic(const BodyRecord& r) {
  return r.alive && r.type == BodyType::dynamic;
}

bool is_moving_kinematic(const WorldData& w, uint32_t slot) {
  const BodyRecord& r = w.bodies[slot];
  if (!r.alive || r.type != BodyType::kinematic) return false;
  const BodySolverState& s = w.solver_bodies[slot];
  return !(s.linear_velocity == Vec3{}) || !(s.angular_velocity == Vec3{});
}

uint32_t find_root(uint32_t* parent, uint32_t slot) {
  while (parent[slot] != slot) {
    parent[slot] = parent[parent[slot]];  // path halving: roots never change
    slot = parent[slot];
  }
  return slot;
}

void unite(uint32_t* parent, uint32_t a, uint32_t b) {
  const uint32_t ra = find_root(parent, a), rb = find_root(parent, b);
  if (ra < rb) {
    parent[rb] = ra;
  } else if (rb < ra) {
    parent[ra] = rb;
  }
}

void wake_record(BodyRecord& r) {
  r.asleep = false;
  r.sleep_timer_s = 0.0f;
  r.island = 0;
}

// Wakes every sleeping body whose island root carries kWakeIsland, clears the marks and returns
// how many bodies woke. One pass over the slots however many islands were marked.
uint32_t wake_marked_islands(WorldData& w) {
  uint8_t* marks = w.islands.marks.data();
  uint8_t* active = w.islands.sweep_active.data();
  uint8_t* kind = w.islands.pair_kind.data();
  uint32_t woken = 0;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    BodyRecord& r = w.bodies[slot];
    if (!r.asleep || !(marks[r.island] & kWakeIsland)) continue;
    wake_record(r);
    active[slot] = 1;
    kind[slot] = kKindDynamic;
    ++woken;
  }
  for (uint32_t slot = 0; slot < w.slot_count; ++slot)
    marks[slot] = static_cast<uint8_t>(marks[slot] & ~kWakeIsland);
  if (woken > 0) w.hash_dirty = true;
  return woken;
}

void mark_island_of(WorldData& w, uint32_t slot) {
  const BodyRecord& r = w.bodies[slot];
  if (r.asleep) w.islands.marks[r.island] |= kWakeIsland;
}

}  // namespace

void islands_init(IslandScratch* islands, uint32_t max_bodies) {
  islands->parent.assign(max_bodies, 0);
  islands->marks.assign(max_bodies, 0);
  islands->sweep_active.assign(max_bodies, 0);
  islands->pair_kind.assign(max_bodies, 0);
  islands->sleeping = 0;
}

bool contact_pair_asleep(const WorldData& w, uint64_t key) {
  return w.bodies[pair_slot_a(key)].asleep || w.bodies[pair_slot_b(key)].asleep;
}

// ---- the step ---------------------------------------------------------------------------------

void sweep_and_wake(WorldData& w) {
  IslandScratch& is = w.islands;
  const uint32_t slots = w.slot_count;
  uint8_t* active = is.sweep_active.data();
  uint8_t* kind = is.pair_kind.data();
  uint32_t sleeping = 0;
  for (uint32_t slot = 0; slot < slots; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    const bool dynamic = is_dynamic(r);
    active[slot] = dynamic && !r.asleep ? 1 : 0;
    kind[slot] = static_cast<uint8_t>((r.asleep ? kKindAsleep : 0) | (dynamic ? kKindDynamic : 0));
    sleeping += r.asleep ? 1 : 0;
  }
  if (sleeping > 0) {
    for (uint32_t slot = 0; slot < slots; ++slot) {
      if (is_moving_kinematic(w, slot)) active[slot] = 1;
    }
  }
  Broadphase& bp = w.broadphase;
  broadphase_update(bp, w.aabbs, is.sweep_active);
  is.sleeping = sleeping;
  if (sleeping == 0) return;  // the pairs are those without sleeping, bit for bit

  // One pass over the pairs (in order). A pair with exactly one sleeping body has an active
  // other body (the sweep reports only pairs with an active body, and a sleeping body is never
  // active): a manifold wakes the sleeper's island, and the sweep runs again. The pass keeps the
  // pairs the narrowphase needs: no sleeping body (such pairs have no manifold, or their island
  // would wake here) and at least one dynamic body (moving kinematic bodies were swept for the
  // wake test only).
  const float margin = w.def.contact_margin_m;
  for (;;) {
    bool woke = false;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < bp.pair_count; ++i) {
      const uint64_t key = bp.pairs[i];
      const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
      const uint8_t ka = kind[sa], kb = kind[sb];
      if (((ka | kb) & kKindAsleep) == 0) {
        if ((ka | kb) & kKindDynamic) bp.pairs[kept++] = key;
        continue;
      }
      if ((ka & kb & kKindAsleep) != 0) continue;  // never found: neither is active
      const BodyRecord& ra = w.bodies[sa];
      const BodyRecord& rb = w.bodies[sb];
      // A sensor never wakes a body: its overlap with a sleeper is held (step.cpp,
      // update_sensor_overlaps) or waits.
      if (ra.shape.sensor || rb.shape.sensor) continue;
      Manifold m;
      collide(ra.shape, Transform{ra.position, ra.orientation}, rb.shape,
              Transform{rb.position, rb.orientation}, w.library(), margin, &m);
      if (m.count <= 0) continue;
      mark_island_of(w, (ka & kKindAsleep) ? sa : sb);
      woke = true;
    }
    if (!woke) {
      bp.pair_count = kept;
      break;
    }
    sleeping -= wake_marked_islands(w);
    broadphase_update(bp, w.aabbs, is.sweep_active);
  }
  is.sleeping = sleeping;
}

void carry_sleeping_contacts(WorldData& w, StepStats* stats, StepStatus* status) {
  if (w.islands.sleeping == 0) return;
  const ContactCache& old = w.cache;
  ContactCache& next = w.next_cache;
  const uint32_t max_manifolds = static_cast<uint32_t>(next.manifolds.size());
  const uint32_t max_points = static_cast<uint32_t>(next.points.size());

  // What to carry: the held entries in key order, as long as they fit (lowest keys kept). From
  // the first that does not fit on, every held entry is dropped and counted against the
  // capacity that ran out (its island then wakes without a warm start).
  uint32_t carry_manifolds = 0, carry_points = 0;
  uint32_t overflow = overflow_none;
  uint64_t last_key = 0;
  for (uint32_t m = 0; m < old.manifold_count; ++m) {
    const CachedManifold& cm = old.manifolds[m];
    if (!contact_pair_asleep(w, cm.key)) continue;
    if (overflow == overflow_none && next.manifold_count + carry_manifolds >= max_manifolds) {
      overflow = overflow_contact_pairs;
    } else if (overflow == overflow_none &&
               cm.point_count > max_points - next.point_count - carry_points) {
      overflow = overflow_contact_points;
    }
    if (overflow == overflow_contact_pairs) {
      ++stats->dropped_contact_pairs;
      continue;
    }
    if (overflow == overflow_contact_points) {
      stats->dropped_contact_points += cm.point_count;
      continue;
    }
    ++carry_manifolds;
    carry_points += cm.point_count;
    last_key = cm.key;
  }
  status->overflow |= overflow;
  if (carry_manifolds == 0) return;

  // Merge from the back, in place: this step's entries move up by the carried ones still to
  // come, so a write never lands on an entry or point not yet read. The keys are disjoint (this
  // step's manifolds have no sleeping body).
  uint32_t i = next.manifold_count;  // this step's entries not yet placed: [0, i)
  uint32_t j = old.manifold_count;   // old entries not yet looked at: [0, j)
  uint32_t out_m = next.manifold_count + carry_manifolds;
  uint32_t out_p = next.point_count + carry_points;
  next.manifold_count = out_m;
  next.point_count = out_p;
  while (out_m > i) {
    while (j > 0 && (old.manifolds[j - 1].key > last_key ||
                     !contact_pair_asleep(w, old.manifolds[j - 1].key))) {
      --j;
    }
    const bool from_old = i == 0 || old.manifolds[j - 1].key > next.manifolds[i - 1].key;
    const CachedManifold src = from_old ? old.manifolds[j - 1] : next.manifolds[i - 1];
    const CachedPoint* src_points = from_old ? old.points.data() : next.points.data();
    out_p -= src.point_count;
    for (uint32_t k = src.point_count; k-- > 0;) {
      next.points[out_p + k] = src_points[src.first_point + k];
    }
    CachedManifold& dst = next.manifolds[--out_m];
    dst.key = src.key;
    dst.first_point = out_p;
    dst.point_count = src.point_count;
    dst.reference = src.reference;
    if (from_old) {
      --j;
    } else {
      --i;
    }
  }
}

void update_islands(WorldData& w, StepStats* stats) {
  const WorldDef& def = w.def;
  if (!def.enable_sleep) return;
  const uint32_t slots = w.slot_count;
  uint32_t* parent = w.islands.parent.data();
  uint8_t* marks = w.islands.marks.data();
  const float dt = def.dt_s;
  const float time_to_sleep = def.time_to_sleep_s;
  const float speed2 = def.sleep_speed_threshold_mps * def.sleep_speed_threshold_mps;
  const float moved_limit = def.sleep_speed_threshold_mps * dt;  // m per step
  const float moved_limit2 = moved_limit * moved_limit;

  // Rest timers; every awake dynamic body starts as an island of its own.
  uint32_t sleeping = 0;
  for (uint32_t slot = 0; slot < slots; ++slot) {
    BodyRecord& r = w.bodies[slot];
    if (!is_dynamic(r)) continue;
    if (r.asleep) {
      ++sleeping;
      continue;
    }
    const BodySolverState& s = w.solver_bodies[slot];
    // Moved this step too, not only moving: the soft contact's push-out moves a body that still
    // overlaps another while the relax passes leave it no velocity, and a pair must not fall
    // asleep inside each other (Δp, Δθ: the solver's motion of the step, step.cpp).
    const SolverVelocity& moved = w.solver_deltas[slot];
    const float radius = bounding_radius(r.shape, w.library());
    const float extent2 = radius * radius;
    const bool resting = r.allow_sleep && length_squared(s.linear_velocity) <= speed2 &&
                         length_squared(s.angular_velocity) * extent2 <= speed2 &&
                         length_squared(moved.linear) <= moved_limit2 &&
                         length_squared(moved.angular) * extent2 <= moved_limit2;
    const float timer = r.sleep_timer_s + dt;
    r.sleep_timer_s = !resting ? 0.0f : (timer < time_to_sleep ? timer : time_to_sleep);
    parent[slot] = slot;
  }

  // This step's manifolds link islands, in key order (none has a sleeping body).
  for (uint32_t c = 0; c < w.constraint_count; ++c) {
    const ContactConstraint& cc = w.constraints[c];
    const bool dynamic_a = is_dynamic(w.bodies[cc.slot_a]);
    const bool dynamic_b = is_dynamic(w.bodies[cc.slot_b]);
    if (dynamic_a && dynamic_b) {
      unite(parent, cc.slot_a, cc.slot_b);
    } else if (dynamic_a && is_moving_kinematic(w, cc.slot_b)) {
      marks[cc.slot_a] |= kKeepAwake;
    } else if (dynamic_b && is_moving_kinematic(w, cc.slot_a)) {
      marks[cc.slot_b] |= kKeepAwake;
    }
  }

  // An island sleeps when every body in it may. In slot order the root (its smallest slot) is
  // the first body of an island met.
  uint32_t islands = 0;
  for (uint32_t slot = 0; slot < slots; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (!is_dynamic(r) || r.asleep) continue;
    const uint32_t root = find_root(parent, slot);
    if (root == slot) {
      marks[slot] |= kCanSleep;
      ++islands;
    }
    if (!(r.sleep_timer_s >= time_to_sleep) || (marks[slot] & kKeepAwake)) {
      marks[root] = static_cast<uint8_t>(marks[root] & ~kCanSleep);
    }
  }
  for (uint32_t slot = 0; slot < slots; ++slot) {
    BodyRecord& r = w.bodies[slot];
    if (!is_dynamic(r) || r.asleep) continue;
    const uint32_t root = find_root(parent, slot);
    if (!(marks[root] & kCanSleep)) continue;
    r.asleep = true;
    r.island = root;
    BodySolverState& s = w.solver_bodies[slot];
    s.linear_velocity = Vec3{};
    s.angular_velocity = Vec3{};
    w.aabbs[slot] = compute_aabb(r.shape, w.library(), Transform{r.position, r.orientation},
                                 def.contact_margin_m);
    ++sleeping;
  }
  for (uint32_t slot = 0; slot < slots; ++slot)
    marks[slot] = 0;  // all marks are 0 between uses
  stats->islands = islands;
  stats->sleeping_bodies = sleeping;
}

// ---- waking between steps ---------------------------------------------------------------------

void wake_body(WorldData& w, uint32_t slot) {
  BodyRecord& r = w.bodies[slot];
  if (r.asleep) {
    mark_island_of(w, slot);
    wake_marked_islands(w);
  }
  r.sleep_timer_s = 0.0f;
  w.hash_dirty = true;
}

void wake_contacts_of(WorldData& w, uint32_t slot) {
  mark_island_of(w, slot);
  const ContactCache& cache = w.cache;
  for (uint32_t m = 0; m < cache.manifold_count; ++m) {
    const uint64_t key = cache.manifolds[m].key;
    const uint32_t a = pair_slot_a(key), b = pair_slot_b(key);
    if (a == slot) mark_island_of(w, b);
    if (b == slot) mark_island_of(w, a);
  }
  wake_marked_islands(w);
}

void wake_overlapping(WorldData& w, uint32_t slot) {
  const BodyRecord& r = w.bodies[slot];
  const Aabb box = compute_aabb(r.shape, w.library(), Transform{r.position, r.orientation},
                                w.def.contact_margin_m);
  for (uint32_t other = 0; other < w.slot_count; ++other) {
    if (w.bodies[other].asleep && overlaps(w.aabbs[other], box)) mark_island_of(w, other);
  }
  wake_marked_islands(w);
}

void refresh_sleeping_box(WorldData& w, uint32_t slot) {
  const BodyRecord& r = w.bodies[slot];
  if (!r.asleep) return;
  w.aabbs[slot] = compute_aabb(r.shape, w.library(), Transform{r.position, r.orientation},
                               w.def.contact_margin_m);
}

}  // namespace lockstep::sim
