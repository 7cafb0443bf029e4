// Contact solver, the parts outside the passes: the solver settings and the soft
// coefficients, the combine rules, warm-start matching, the compact velocities and the
// warm-start cache. The rows themselves (sign table, normal row, soft step, restitution,
// friction block, centroid row, pass order) are derived at the top of contact_lanes_passes.inl,
// beside the code that solves them.
//
// Combine rules: μ = sqrt(μA·μB) (a frictionless shape makes the pair frictionless);
// e = max(eA, eB) (a bouncy ball bounces on any floor).
//
// Warm start. Last step's manifolds are found by a merge join on the pair key; within one, a
// point takes the impulses of the old point with the same feature id, else of the nearest
// unused old point within kWarmStartMatchDistance (in body A's frame), else an equal share of
// what the old points left unmatched carried. Friction is cached as a world vector and
// re-projected on this step's tangents. Resting box–box corners keep their ids (the clip band
// in collide_box.cpp); the fallbacks are for points that really change feature, e.g. a corner
// crossing a side plane of the reference face as a box slides: a point restarted from zero
// kicks a resting stack, and a slender stack rocks almost without loss (Housner:
// r = 1 − 3/2·sin²α) until it falls.
#include "solver/contact_solver.h"

#include <cmath>
#include <cstddef>

#include "collide.h"

namespace lockstep::sim {

namespace {

constexpr uint32_t kMaxCachedPoints = static_cast<uint32_t>(kMaxManifoldPoints);

// An old point this close to a new one (body A's frame) is the same contact under a new id.
constexpr float kWarmStartMatchDistance = 0.01f;  // m

}  // namespace

Softness make_softness(float hertz, float damping_ratio, float substep_s) {
  if (hertz == 0.0f) return Softness{};
  constexpr float kTwoPi = 6.28318530717958647692f;
  const float omega = kTwoPi * hertz;
  const float a1 = 2.0f * damping_ratio + substep_s * omega;
  const float a2 = substep_s * omega * a1;
  const float a3 = 1.0f / (1.0f + a2);
  return Softness{omega / a1, a2 * a3, a3};
}

SolverSettings make_solver_settings(float dt_s, uint32_t substeps, float contact_hertz,
                                    float damping_ratio, float linear_slop_m,
                                    float max_bias_velocity, float restitution_threshold) {
  SolverSettings s;
  s.dt_s = dt_s;
  s.inv_dt = 1.0f / dt_s;
  s.substep_s = dt_s / static_cast<float>(substeps);
  s.inv_substep = 1.0f / s.substep_s;
  const float max_hertz = 0.25f * s.inv_substep;
  const float hertz = contact_hertz < max_hertz ? contact_hertz : max_hertz;
  s.contact = make_softness(hertz, damping_ratio, s.substep_s);
  s.static_contact = make_softness(2.0f * hertz, damping_ratio, s.substep_s);
  s.linear_slop_m = linear_slop_m;
  s.max_bias_velocity = max_bias_velocity;
  s.restitution_threshold = restitution_threshold;
  return s;
}

float combine_friction(float mu_a, float mu_b) {
  return std::sqrt(mu_a * mu_b);
}

float combine_restitution(float e_a, float e_b) {
  return e_a > e_b ? e_a : e_b;
}

void match_warm_start(std::span<const ContactConstraint> constraints,
                      std::span<ContactPoint> points, const ContactCache& cache,
                      SolverCounters* counters) {
  // Merge join: both sides are sorted by key.
  uint32_t j = 0;
  const uint32_t cached_count = cache.manifold_count;
  for (const ContactConstraint& c : constraints) {
    while (j < cached_count && cache.manifolds[j].key < c.key)
      ++j;
    if (j >= cached_count) break;
    const CachedManifold& old = cache.manifolds[j];
    if (old.key != c.key) continue;
    const CachedPoint* old_points = &cache.points[old.first_point];
    bool used[kMaxCachedPoints] = {};
    bool matched[kMaxCachedPoints] = {};
    auto take = [&](ContactPoint& p, uint32_t i, uint32_t k) {
      const CachedPoint& cp = old_points[k];
      p.normal_impulse = cp.normal_impulse;
      p.rest_offset_m = cp.rest_offset_m;
      p.tangent_impulse = {dot(c.tangent1, cp.friction_impulse),
                           dot(c.tangent2, cp.friction_impulse)};
      used[k] = true;
      matched[i] = true;
      ++counters->warm_started_points;
    };
    // Same feature id first.
    for (uint32_t i = 0; i < c.point_count; ++i) {
      for (uint32_t k = 0; k < old.point_count; ++k) {
        if (used[k] || old_points[k].feature != points[c.first_point + i].feature) continue;
        take(points[c.first_point + i], i, k);
        break;
      }
    }
    // Then the nearest unused old point within kWarmStartMatchDistance, in body A's frame.
    for (uint32_t i = 0; i < c.point_count; ++i) {
      if (matched[i]) continue;
      ContactPoint& p = points[c.first_point + i];
      uint32_t best = kMaxCachedPoints;
      float best_d2 = kWarmStartMatchDistance * kWarmStartMatchDistance;
      for (uint32_t k = 0; k < old.point_count; ++k) {
        if (used[k]) continue;
        const float d2 = length_squared(old_points[k].local_anchor_a - p.local_anchor_a);
        if (d2 <= best_d2 && (best == kMaxCachedPoints || d2 < best_d2)) {
          best = k;
          best_d2 = d2;
        }
      }
      if (best != kMaxCachedPoints) take(p, i, best);
    }
    // Last, the points still unmatched share what the unmatched old points carried, equally:
    // a manifold whose clipping moved a point along an edge keeps its total support instead of
    // restarting that point from zero (which kicks a resting stack). Only a first guess: the
    // iterations correct it, and these points are not counted as warm started.
    float left_normal = 0.0f, left_offset = 0.0f;
    Vec3 left_friction{};
    uint32_t left_old = 0, left_new = 0;
    for (uint32_t k = 0; k < old.point_count; ++k) {
      if (used[k]) continue;
      left_normal += old_points[k].normal_impulse;
      left_offset += old_points[k].rest_offset_m;
      left_friction += old_points[k].friction_impulse;
      ++left_old;
    }
    for (uint32_t i = 0; i < c.point_count; ++i) {
      if (!matched[i]) ++left_new;
    }
    if (left_old == 0 || left_new == 0) continue;
    const float share = 1.0f / static_cast<float>(left_new);
    const float normal_share = left_normal * share;
    const Vec3 friction_share = left_friction * share;
    const float offset_share = left_offset / static_cast<float>(left_old);
    for (uint32_t i = 0; i < c.point_count; ++i) {
      if (matched[i]) continue;
      ContactPoint& p = points[c.first_point + i];
      p.normal_impulse = normal_share;
      p.rest_offset_m = offset_share;
      p.tangent_impulse = {dot(c.tangent1, friction_share), dot(c.tangent2, friction_share)};
    }
  }
}

void update_rest_offsets(std::span<const ContactConstraint> constraints,
                         std::span<ContactPoint> points, std::span<const BodySolverState> bodies,
                         const SolverSettings& settings) {
  const float slop = settings.linear_slop_m;
  const float gain = settings.dt_s / kRestOffsetLag;
  const float target = 0.5f * slop;
  const float largest = kRestOffsetSlops * slop;
  for (const ContactConstraint& c : constraints) {
    ContactPoint* p = &points[c.first_point];
    float overlap = 0.0f, load = 0.0f;  // the points' mean overlap beyond the target, Σ λ_n
    for (uint32_t i = 0; i < c.point_count; ++i) {
      overlap += -p[i].separation_m - target;
      load += p[i].normal_impulse;
    }
    overlap /= static_cast<float>(c.point_count);
    // What the load needs: the spring's rest compression under it, Σλ·K/(h·ω²), with K the
    // bodies' summed inverse masses (the centroid's, less its turn) and 1/(h·ω²) =
    // impulse_scale/(mass_scale·bias_rate); the slop plus four times that is the bound.
    const float inv_a = bodies[c.slot_a].inv_mass, inv_b = bodies[c.slot_b].inv_mass;
    const Softness& soft =
        inv_a > 0.0f && inv_b > 0.0f ? settings.contact : settings.static_contact;
    const float compliance =
        soft.bias_rate > 0.0f ? soft.impulse_scale / (soft.mass_scale * soft.bias_rate) : 0.0f;
    float bound = slop + 4.0f * load * (inv_a + inv_b) * compliance;
    bound = bound < largest ? bound : largest;
    for (uint32_t i = 0; i < c.point_count; ++i) {
      float d = p[i].rest_offset_m + gain * overlap;
      d = d < bound ? d : bound;
      // Apart by more than the slop: the load has gone, and the offset with it.
      if (!(d > 0.0f) || p[i].separation_m > slop) d = 0.0f;
      p[i].rest_offset_m = d;
    }
  }
}

void gather_velocities(std::span<const BodySolverState> bodies,
                       std::span<SolverVelocity> velocities) {
  // + 0 turns −0 into +0 (and changes nothing else): no velocity in the passes is then −0, since
  // only −0 + −0 gives −0, so a lane that adds a masked +0 gets the bits of one that skips it.
  const Vec3 zero{};
  for (size_t i = 0; i < bodies.size(); ++i) {
    velocities[i].linear = bodies[i].linear_velocity + zero;
    velocities[i].angular = bodies[i].angular_velocity + zero;
  }
}

void scatter_velocities(std::span<const SolverVelocity> velocities,
                        std::span<BodySolverState> bodies) {
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (!(bodies[i].inv_mass > 0.0f)) continue;
    bodies[i].linear_velocity = velocities[i].linear;
    bodies[i].angular_velocity = velocities[i].angular;
  }
}

void store_contact_cache(std::span<const ContactConstraint> constraints,
                         std::span<const ContactPoint> points, ContactCache* cache) {
  uint32_t m = 0, q = 0;
  for (const ContactConstraint& c : constraints) {
    CachedManifold& cm = cache->manifolds[m++];
    cm.key = c.key;
    cm.first_point = q;
    cm.point_count = c.point_count;
    cm.reference = c.reference;
    for (uint32_t i = 0; i < c.point_count; ++i) {
      const ContactPoint& p = points[c.first_point + i];
      CachedPoint& cp = cache->points[q++];
      cp.feature = p.feature;
      cp.normal_impulse = p.normal_impulse;
      cp.local_anchor_a = p.local_anchor_a;
      cp.reference_separation_m = p.reference_separation_m;
      cp.rest_offset_m = p.rest_offset_m;
      cp.friction_impulse = p.tangent_impulse.x * c.tangent1 + p.tangent_impulse.y * c.tangent2;
    }
  }
  cache->manifold_count = m;
  cache->point_count = q;
}

}  // namespace lockstep::sim
