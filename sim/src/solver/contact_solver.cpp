// Contact solver: sequential impulses on the normal rows and the exact 2x2 friction blocks.
//
// Sign table (docs/physics.md; every formula in this file follows it, never a local variant):
//   n points from B to A (the narrowphase convention, collide.h).
//   Relative velocity is A minus B:  v_rel = (vA + ωA×rA) − (vB + ωB×rB),  vn = n·v_rel.
//   vn < 0 means the bodies approach; vn > 0 means they separate.
//   A positive normal impulse pushes them apart: A gets +P, B gets −P, with P = λ·n.
//   Friction uses the same rule along the tangents: A gets +(J1·t1 + J2·t2), B the opposite.
//   λ and J are impulses (N·s), not forces: they change velocities directly, never times dt.
//
// Normal row. An impulse λ along n changes vn by K·λ with the inverse effective mass
//   K = mA⁻¹ + mB⁻¹ + n·((IA⁻¹(rA×n))×rA) + n·((IB⁻¹(rB×n))×rB)   (1/kg),
// so driving vn to a target takes λ = (target − vn)/K. The accumulated λ is clamped to ≥ 0
// (contacts push, never pull). Rows with K below kMinInverseMass or not finite are skipped.
//
// Soft step (Box2D v3's scheme, step.cpp runs it). The step is cut into substeps of h = dt/N;
// each integrates velocities, warm starts, solves with the position bias, integrates positions
// and relaxes (solves again without the bias). The separation is not frozen at the narrowphase:
// every row recomputes it from how far its bodies have moved since the step began,
//   s = s₀ + n·((ΔpA + ΔθA×rA) − (ΔpB + ΔθB×rB)),
// so the bias is anchored to where the bodies are now, not where they were (a frozen bias pushes
// a settled stack apart every substep, and it rocks). Then, with vn the row's normal velocity:
//   s > 0:  speculative, rigid: the bodies may close the gap within this substep, no more:
//           target −s/h, i.e. λ = −(vn + s/h)/K.
//   s ≤ 0:  soft (biased passes): λ = −mass_scale·(vn + bias)/K − impulse_scale·λ_acc with
//           bias = max(bias_rate·min(s + slop, 0), −max_bias_velocity) (Softness): the overlap
//           beyond the slop is pushed out like a stiff, heavily damped spring, whatever the
//           masses — a 100:1 stack is not driven harder than a 1:1 one.
//           Relax passes: rigid, target 0 (the bias velocity is taken back out).
// Restitution has its own pass, after each substep's relax (restitute_lanes): a point whose
// normal velocity before the step, vn₀, was below −restitution_threshold and whose row has
// pushed during this step (its largest accumulated λ > 0: the surfaces met) is driven to
// vn = −e·vn₀, once: its vn₀ is then cleared. Bouncing in the substep of the impact rather than
// at the end of the step leaves at most one substep of flight out (the bounce does not depend on
// where in the step the impact falls), and vn₀, taken before this step's gravity, mirrors the
// discrete fall. Slower contacts are inelastic so resting stacks do not jitter.
//
// Friction block. Per point the two tangent directions (t1, t2) = tangent_basis(n) form one
// 2x2 block with K_t,ij = (mA⁻¹ + mB⁻¹)δij + (rA×ti)·IA⁻¹(rA×tj) + (rB×ti)·IB⁻¹(rB×tj).
// Each pass: v_t = (t1·v_rel, t2·v_rel), v_free = v_t − K_t·J_old, radius R = μ·λ_n (the
// current accumulated normal impulse), J_new = solve_friction_block(K_t, v_free, R); only
// J_new − J_old is applied. When the block cannot be solved (K_t not positive definite, ...)
// the pass keeps J_old and counts the row as skipped. There is no radial clamping anywhere.
//
// Combine rules: μ = sqrt(μA·μB) (a frictionless shape makes the pair frictionless);
// e = max(eA, eB) (a bouncy ball bounces on any floor).
//
// Centroid row. Before its points, each manifold with two or more active points solves one
// extra normal row: the same impulse δ added to every active point, i.e. an impulse n·δ at the
// centroid of the anchors (equal force and torque). Its inverse effective mass is cnt·K(centroid);
// its separation is the points' mean s₀ moved with the centroid (the separation is linear in the
// anchor), its soft coefficients the manifold's and its accumulated impulse the points' sum; δ is
// clamped so that no point's accumulated λ_n drops below 0. This is projected Gauss-Seidel along
// the feasible direction (1, …, 1) of the manifold's impulses: it only speeds convergence. Why it
// stays: plain point-by-point sweeps leave an unconverged manifold lopsided (the first point swept
// takes the most), which tilts a settling stack; without it the 10-box stack, aligned, drifts
// 33 mm in 10 s under the soft step (0.2 mm with it), and the 2° turned stack 41 mm (1.4 mm).
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
//
// Order: manifolds coloured (contact_lanes.h: greedily in pair-key order, no two manifolds of a
// colour share a dynamic body), colour after colour, in key order within a colour; per manifold
// the centroid row, then the points in manifold order, per point the normal row first and then
// the friction block (so the block sees this pass's λ_n in its radius).
//
// Iterations (contact_lanes.cpp). Prepare computes K, K_t, s₀, vn₀ and I⁻¹(r×n)
// per point and writes them, transposed, into batches of eight manifolds of one colour (one per
// lane); the passes run every lane at once with wide::W8 (SSE2, NEON or scalar: one IEEE
// operation per lane, the same bits everywhere). The relative velocity is formed from the
// anchors, v_rel = (vA + ωA×rA) − (vB + ωB×rB), and a friction impulse P = J1·t1 + J2·t2 is
// applied as ΔωA = IA⁻¹(rA×P): the passes are bound by the memory they stream, and anchors cost
// a third of the precomputed Jacobian rows. Every substep's passes use prepare's anchors, masses
// and world inverse inertias. The iterations work on a compact copy of the
// velocities (SolverVelocity, gathered before and scattered after the passes).
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
    float left_normal = 0.0f;
    Vec3 left_friction{};
    uint32_t left_old = 0, left_new = 0;
    for (uint32_t k = 0; k < old.point_count; ++k) {
      if (used[k]) continue;
      left_normal += old_points[k].normal_impulse;
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
    for (uint32_t i = 0; i < c.point_count; ++i) {
      if (matched[i]) continue;
      ContactPoint& p = points[c.first_point + i];
      p.normal_impulse = normal_share;
      p.tangent_impulse = {dot(c.tangent1, friction_share), dot(c.tangent2, friction_share)};
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
      cp.friction_impulse = p.tangent_impulse.x * c.tangent1 + p.tangent_impulse.y * c.tangent2;
    }
  }
  cache->manifold_count = m;
  cache->point_count = q;
}

}  // namespace lockstep::sim
