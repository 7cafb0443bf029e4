// Contact solver: sequential impulses on the normal rows and the exact 2x2 friction blocks.
//
// Sign table (seed 4.1; every formula in this file follows it, never a local variant):
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
// The target velocity is fixed at prepare time from the separation s (negative = overlap):
//   s ≤ 0: Baumgarte bias  min(baumgarte/dt · max(−s − slop, 0), max_bias_velocity)
//   s > 0: speculative allowance −s/dt: the bodies may close the gap this step, no more, so a
//          point inside the margin never pulls.
//   restitution: with the closing speed from before this step's gravity,
//          vn₀ = vn − dt·n·(gA − gB) (g_X = gravity for a dynamic body, else 0), when
//          vn₀ < −restitution_threshold, e > 0 and the surfaces meet within this step
//          (s + vn·dt < 0), the target becomes max(target, −e·vn₀). Slower contacts are
//          inelastic so resting stacks do not jitter. Reflecting vn itself would hand the ball
//          back this step's gravity increment on every bounce (e = 1 would gain ~g·dt² per step
//          of flight, i.e. climb); vn₀ mirrors the discrete fall exactly.
// Relax target (the relax passes after the positions are integrated, world.cpp): the same
// without the Baumgarte bias, i.e. 0 for s ≤ 0, the speculative −s/dt for s > 0, and the bounce
// max'ed in as above. Restitution thus stays in the targets instead of a pass of its own after
// relax (Box2D v3): simpler, and the bounce survives the relax passes unchanged.
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
// centroid of the anchors (equal force and torque). Its inverse effective mass is cnt·K(centroid)
// and its target the mean of the points' targets (bias or relax); δ is clamped so that no
// point's accumulated λ_n drops below 0. This is projected Gauss-Seidel along the feasible
// direction (1, …, 1) of the manifold's impulses, so the fixed point is unchanged: it only
// speeds convergence. Why it stays (tried without it, with stable feature ids and 4 relax
// passes): plain point-by-point sweeps leave an unconverged manifold lopsided (the first point
// swept takes the most), which tilts a settling stack, and it rocks. With 8 iterations the
// 10-box stack test's top box then drifts 9 cm in 10 s (limit 1 cm; 17 cm with 1 mm offsets);
// alternating the sweep direction still gives 6 cm (4 cm), 32 iterations 1.7 cm, and without
// relax it takes ~64 iterations to get under 1 cm. With the centroid row: 0.0 mm (0.4 mm).
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
// Order: manifolds in pair-key order; per manifold the centroid row, then the points in
// manifold order, per point the normal row first and then the friction block (so the block
// sees this pass's λ_n in its radius).
//
// Jacobian rows (the iterations' form; issue 7). With d = n, t1 or t2, the scalar triple product
// d·(ω×r) = ω·(r×d) turns a relative velocity into three dot products,
//   d·v_rel = d·(vA − vB) + (rA×d)·ωA − (rB×d)·ωB,
// and an impulse λ along d into two scaled adds per body, vA += (mA⁻¹λ)·d, ωA += λ·IA⁻¹(rA×d)
// (B the opposite). prepare_contacts stores r×d and I⁻¹(r×d) per point (SolverPoint), with the
// world inverse inertia at prepare time, for both the velocity and the relax passes (the relax
// rows also keep prepare's anchors and masses). The iterations work on a compact copy of the
// velocities (SolverVelocity, gathered before and scattered after the passes) and hold the two
// bodies of a manifold in registers. The 3-vectors use SSE2 where the target has it, each lane
// doing the scalar code's IEEE operation in the same order, so every target gets the same bits.
#include "contact_solver.h"

#include <cmath>
#include <cstddef>

// SSE2 for the iterations' 3-vectors (x86-64, and 32-bit x86 built with -msse2 as the sim is);
// everything else, or -DLOCKSTEP_SOLVER_SCALAR, takes the scalar path with the same bits.
#if !defined(LOCKSTEP_SOLVER_SCALAR) && \
    (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#define LOCKSTEP_SOLVER_SSE2 1
#include <emmintrin.h>
#endif

#include "collide.h"

namespace lockstep::sim {

namespace {

constexpr uint32_t kMaxCachedPoints = static_cast<uint32_t>(kMaxManifoldPoints);

// An old point this close to a new one (body A's frame) is the same contact under a new id.
constexpr float kWarmStartMatchDistance = 0.01f;  // m

// Below this inverse effective mass (1/kg, i.e. an effective mass above 1e10 kg) the row cannot
// move anything and dividing by K would only amplify rounding.
constexpr float kMinInverseMass = 1.0e-10f;

inline Vec3 point_velocity(const BodySolverState& b, Vec3 r) {
  return b.linear_velocity + cross(b.angular_velocity, r);
}

// The iterations' 3-vectors: x, y, z in lanes 0–2 and 0 in lane 3. Each lane does the IEEE
// single operation the scalar code does, in the same order; dot3 adds (x + y) + z as math.h's
// dot does. So the SSE2 and the scalar path give the same bits (the determinism matrix runs
// both: x86 takes SSE2, wasm32 the scalar path).
#if defined(LOCKSTEP_SOLVER_SSE2)
struct F4 {
  __m128 v;
};
// A Vec3 followed by at least 4 readable bytes (the static_asserts below): lane 3 is masked off.
inline F4 load3(const Vec3& a) {
  const __m128 mask = _mm_castsi128_ps(_mm_setr_epi32(-1, -1, -1, 0));
  return {_mm_and_ps(_mm_loadu_ps(&a.x), mask)};
}
// Writes lanes 0–3: `a` must be followed by a pad float (SolverVelocity).
inline void store3_padded(Vec3* a, F4 b) {
  _mm_storeu_ps(&a->x, b.v);
}
inline F4 operator+(F4 a, F4 b) {
  return {_mm_add_ps(a.v, b.v)};
}
inline F4 operator-(F4 a, F4 b) {
  return {_mm_sub_ps(a.v, b.v)};
}
inline F4 operator*(float s, F4 a) {
  return {_mm_mul_ps(_mm_set1_ps(s), a.v)};
}
inline F4 operator*(F4 a, F4 b) {
  return {_mm_mul_ps(a.v, b.v)};
}
// (x + y) + z.
inline float hsum3(F4 a) {
  const __m128 xy = _mm_add_ss(a.v, _mm_shuffle_ps(a.v, a.v, _MM_SHUFFLE(1, 1, 1, 1)));
  return _mm_cvtss_f32(_mm_add_ss(xy, _mm_movehl_ps(a.v, a.v)));
}
inline float dot3(F4 a, F4 b) {
  const __m128 m = _mm_mul_ps(a.v, b.v);
  const __m128 xy = _mm_add_ss(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 1, 1, 1)));
  return _mm_cvtss_f32(_mm_add_ss(xy, _mm_movehl_ps(m, m)));
}
// A Vec3 preceded by at least 4 readable bytes (the last one of a struct): lane 3 is 0.
inline F4 load3_end(const Vec3& a) {
  const __m128i wxyz = _mm_castps_si128(_mm_loadu_ps(&a.x - 1));
  return {_mm_castsi128_ps(_mm_srli_si128(wxyz, 4))};
}
// Writes exactly 12 bytes.
inline void store3(Vec3* a, F4 b) {
  _mm_storel_pi(reinterpret_cast<__m64*>(&a->x), b.v);
  _mm_store_ss(&a->z, _mm_movehl_ps(b.v, b.v));
}
// (a.y·b.z − a.z·b.y, a.z·b.x − a.x·b.z, a.x·b.y − a.y·b.x), as math.h's cross.
inline F4 cross3(F4 a, F4 b) {
  const __m128 a_yzx = _mm_shuffle_ps(a.v, a.v, _MM_SHUFFLE(3, 0, 2, 1));
  const __m128 b_zxy = _mm_shuffle_ps(b.v, b.v, _MM_SHUFFLE(3, 1, 0, 2));
  const __m128 a_zxy = _mm_shuffle_ps(a.v, a.v, _MM_SHUFFLE(3, 1, 0, 2));
  const __m128 b_yzx = _mm_shuffle_ps(b.v, b.v, _MM_SHUFFLE(3, 0, 2, 1));
  return {_mm_sub_ps(_mm_mul_ps(a_yzx, b_zxy), _mm_mul_ps(a_zxy, b_yzx))};
}
inline float lane_x(F4 a) {
  return _mm_cvtss_f32(a.v);
}
inline float lane_y(F4 a) {
  return _mm_cvtss_f32(_mm_shuffle_ps(a.v, a.v, _MM_SHUFFLE(1, 1, 1, 1)));
}
inline float lane_z(F4 a) {
  return _mm_cvtss_f32(_mm_movehl_ps(a.v, a.v));
}
#else
struct F4 {
  float x, y, z, w;
};
inline F4 load3(const Vec3& a) {
  return {a.x, a.y, a.z, 0.0f};
}
inline void store3_padded(Vec3* a, F4 b) {
  *a = Vec3{b.x, b.y, b.z};
}
inline F4 operator+(F4 a, F4 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w};
}
inline F4 operator-(F4 a, F4 b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w};
}
inline F4 operator*(float s, F4 a) {
  return {s * a.x, s * a.y, s * a.z, s * a.w};
}
inline F4 operator*(F4 a, F4 b) {
  return {a.x * b.x, a.y * b.y, a.z * b.z, a.w * b.w};
}
inline float hsum3(F4 a) {
  return a.x + a.y + a.z;
}
inline float dot3(F4 a, F4 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
inline F4 load3_end(const Vec3& a) {
  return load3(a);
}
inline void store3(Vec3* a, F4 b) {
  *a = Vec3{b.x, b.y, b.z};
}
inline F4 cross3(F4 a, F4 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x, 0.0f};
}
inline float lane_x(F4 a) {
  return a.x;
}
inline float lane_y(F4 a) {
  return a.y;
}
inline float lane_z(F4 a) {
  return a.z;
}
#endif
// m·v = c0·v.x + c1·v.y + c2·v.z, as math.h's Mat3 product (columns c0, c1, c2).
inline F4 mat_vec(F4 c0, F4 c1, F4 c2, F4 v) {
  return (lane_x(v) * c0 + lane_y(v) * c1) + lane_z(v) * c2;
}
inline F4& operator+=(F4& a, F4 b) {
  return a = a + b;
}
inline F4& operator-=(F4& a, F4 b) {
  return a = a - b;
}

// load3 reads 16 bytes from each Vec3 it is given: every one must be followed by a float.
static_assert(offsetof(SolverVelocity, pad0) == offsetof(SolverVelocity, linear) + 12);
static_assert(offsetof(SolverVelocity, pad1) == offsetof(SolverVelocity, angular) + 12);
static_assert(offsetof(SolverPoint, normal_mass) == offsetof(SolverPoint, it2_b) + 12);
static_assert(offsetof(ContactConstraint, friction) > offsetof(ContactConstraint, tangent2) + 8);
static_assert(offsetof(ContactConstraint, centroid_mass) ==
              offsetof(ContactConstraint, centroid_in_b) + 12);
static_assert(offsetof(ContactConstraint, centroid_rn_a) ==
              offsetof(ContactConstraint, mass_t2_b) + 12);
static_assert(offsetof(ContactPoint, local_anchor_a) == offsetof(ContactPoint, anchor_b) + 12);
static_assert(offsetof(BodySolverState, inv_inertia_world) > 0);  // load3_end of c2

// The two bodies' velocities of a manifold, in locals (registers) across it: stores to the
// points cannot alias them.
struct PairVelocity {
  F4 va, wa, vb, wb;  // m/s, rad/s
};

inline PairVelocity load_pair(const SolverVelocity& a, const SolverVelocity& b) {
  return {load3(a.linear), load3(a.angular), load3(b.linear), load3(b.angular)};
}

// Non-dynamic bodies (inverse mass 0) are never written: their velocities keep their exact bits.
inline void store_pair(const ContactConstraint& c, const PairVelocity& v, SolverVelocity* a,
                       SolverVelocity* b) {
  if (c.inv_mass_a > 0.0f) {
    store3_padded(&a->linear, v.va);
    store3_padded(&a->angular, v.wa);
  }
  if (c.inv_mass_b > 0.0f) {
    store3_padded(&b->linear, v.vb);
    store3_padded(&b->angular, v.wb);
  }
}

// d·v_rel for the Jacobian row (d, r_A×d, −d, −r_B×d):
//   d·(vA + ωA×rA − vB − ωB×rB) = d·(vA − vB) + (rA×d)·ωA − (rB×d)·ωB,
// summed per component first and across components last (one horizontal sum: a shorter chain).
inline float row_velocity(const PairVelocity& v, F4 d, const Vec3& rd_a, const Vec3& rd_b) {
  return hsum3(d * (v.va - v.vb) + load3(rd_a) * v.wa - load3(rd_b) * v.wb);
}

// λ along a row: A gets +λ·d at r_A, B gets −λ·d at r_B, with md_a = mA⁻¹·d and
// i_a = I_A⁻¹(r_A×d) (B likewise) precomputed.
inline void apply_row(const ContactConstraint& c, PairVelocity& v, float lambda, const Vec3& md_a,
                      const Vec3& md_b, const Vec3& i_a, const Vec3& i_b) {
  if (c.inv_mass_a > 0.0f) {
    v.va += lambda * load3(md_a);
    v.wa += lambda * load3(i_a);
  }
  if (c.inv_mass_b > 0.0f) {
    v.vb -= lambda * load3(md_b);
    v.wb -= lambda * load3(i_b);
  }
}

// The tangent impulse j1·t1 + j2·t2 in one go.
inline void apply_tangent(const ContactConstraint& c, const SolverPoint& p, PairVelocity& v,
                          Vec2 j) {
  if (c.inv_mass_a > 0.0f) {
    v.va += j.x * load3(c.mass_t1_a) + j.y * load3(c.mass_t2_a);
    v.wa += j.x * load3(p.it1_a) + j.y * load3(p.it2_a);
  }
  if (c.inv_mass_b > 0.0f) {
    v.vb -= j.x * load3(c.mass_t1_b) + j.y * load3(c.mass_t2_b);
    v.wb -= j.x * load3(p.it1_b) + j.y * load3(p.it2_b);
  }
}

}  // namespace

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

void prepare_contacts(std::span<ContactConstraint> constraints,
                      std::span<const ContactPoint> contact_points, std::span<SolverPoint> points,
                      std::span<FrictionEigen> friction_eigens,
                      std::span<const BodySolverState> bodies, const SolverSettings& s,
                      SolverCounters* counters) {
  for (ContactConstraint& c : constraints) {
    const BodySolverState& a = bodies[c.slot_a];
    const BodySolverState& b = bodies[c.slot_b];
    const Vec3 n = c.normal;
    const float inv_mass_sum = a.inv_mass + b.inv_mass;
    c.inv_mass_a = a.inv_mass;
    c.inv_mass_b = b.inv_mass;
    c.mass_n_a = a.inv_mass * n;
    c.mass_n_b = b.inv_mass * n;
    c.mass_t1_a = a.inv_mass * c.tangent1;
    c.mass_t2_a = a.inv_mass * c.tangent2;
    c.mass_t1_b = b.inv_mass * c.tangent1;
    c.mass_t2_b = b.inv_mass * c.tangent2;
    // Centroid row over the active points, summed on the way.
    Vec3 sum_a{}, sum_b{};
    float sum_target = 0.0f, sum_relax_target = 0.0f;
    uint32_t active = 0;
    const F4 fn = load3(c.normal), ft1 = load3(c.tangent1), ft2 = load3(c.tangent2);
    const Mat3& ia = a.inv_inertia_world;
    const Mat3& ib = b.inv_inertia_world;
    const F4 ia0 = load3(ia.c0), ia1 = load3(ia.c1), ia2 = load3_end(ia.c2);
    const F4 ib0 = load3(ib.c0), ib1 = load3(ib.c1), ib2 = load3_end(ib.c2);
    for (uint32_t i = 0; i < c.point_count; ++i) {
      const ContactPoint& cp = contact_points[c.first_point + i];
      SolverPoint& p = points[c.first_point + i];
      p.normal_impulse = cp.normal_impulse;
      p.tangent_impulse = cp.tangent_impulse;
      const Vec3 ra = cp.anchor_a, rb = cp.anchor_b;
      const F4 fra = load3(cp.anchor_a), frb = load3(cp.anchor_b);

      // Normal row: K = mA⁻¹ + mB⁻¹ + n·((IA⁻¹(rA×n))×rA) + n·((IB⁻¹(rB×n))×rB).
      const F4 rna = cross3(fra, fn), rnb = cross3(frb, fn);
      const F4 ina = mat_vec(ia0, ia1, ia2, rna), inb = mat_vec(ib0, ib1, ib2, rnb);
      store3(&p.rn_a, rna);
      store3(&p.rn_b, rnb);
      store3(&p.in_a, ina);
      store3(&p.in_b, inb);
      const float k = inv_mass_sum + dot3(fn, cross3(ina, fra)) + dot3(fn, cross3(inb, frb));
      if (std::isfinite(k) && k >= kMinInverseMass) {
        p.normal_mass = 1.0f / k;
      } else {
        p.normal_mass = 0.0f;
        p.normal_impulse = 0.0f;
        p.tangent_impulse = {};
        ++counters->skipped_normal_rows;
      }

      // Friction block K_t (symmetric).
      const F4 ra1 = cross3(fra, ft1), ra2 = cross3(fra, ft2);
      const F4 rb1 = cross3(frb, ft1), rb2 = cross3(frb, ft2);
      const F4 ia1r = mat_vec(ia0, ia1, ia2, ra1), ia2r = mat_vec(ia0, ia1, ia2, ra2);
      const F4 ib1r = mat_vec(ib0, ib1, ib2, rb1), ib2r = mat_vec(ib0, ib1, ib2, rb2);
      store3(&p.rt1_a, ra1);
      store3(&p.rt2_a, ra2);
      store3(&p.rt1_b, rb1);
      store3(&p.rt2_b, rb2);
      store3(&p.it1_a, ia1r);
      store3(&p.it2_a, ia2r);
      store3(&p.it1_b, ib1r);
      store3(&p.it2_b, ib2r);
      p.tangent_mass.a = inv_mass_sum + dot3(ra1, ia1r) + dot3(rb1, ib1r);
      p.tangent_mass.b = dot3(ra1, ia2r) + dot3(rb1, ib2r);
      p.tangent_mass.c = inv_mass_sum + dot3(ra2, ia2r) + dot3(rb2, ib2r);
      p.tangent_det = friction_block_det(p.tangent_mass);
      friction_eigens[c.first_point + i].s = 0.0f;  // computed on its first use (boundary case)

      // Target normal velocity, with and without the bias.
      const float sep = cp.separation_m;
      float target, relax_target;
      if (sep > 0.0f) {
        target = -sep * s.inv_dt;
        relax_target = target;
      } else {
        float depth = -sep - s.linear_slop_m;
        if (depth < 0.0f) depth = 0.0f;
        target = s.baumgarte * s.inv_dt * depth;
        if (target > s.max_bias_velocity) target = s.max_bias_velocity;
        relax_target = 0.0f;
      }
      const Vec3 v_rel = point_velocity(a, ra) - point_velocity(b, rb);
      const float vn = dot(n, v_rel);
      if (c.restitution > 0.0f && sep + vn * s.dt_s < 0.0f) {
        const Vec3 ga = a.inv_mass > 0.0f ? s.gravity : Vec3{};
        const Vec3 gb = b.inv_mass > 0.0f ? s.gravity : Vec3{};
        const float vn0 = vn - s.dt_s * dot(n, ga - gb);
        if (vn0 < -s.restitution_threshold) {
          const float bounce = -c.restitution * vn0;
          if (bounce > target) target = bounce;
          if (bounce > relax_target) relax_target = bounce;
        }
      }
      p.target_velocity = target;
      p.relax_target_velocity = relax_target;

      if (p.normal_mass == 0.0f) continue;
      sum_a += ra;
      sum_b += rb;
      sum_target += target;
      sum_relax_target += relax_target;
      ++active;
    }

    c.active_count = active;
    c.centroid_mass = 0.0f;
    if (active < 2) continue;
    const float inv_active = 1.0f / static_cast<float>(active);
    const Vec3 centroid_a = sum_a * inv_active;
    const Vec3 centroid_b = sum_b * inv_active;
    c.centroid_target = sum_target * inv_active;
    c.centroid_relax_target = sum_relax_target * inv_active;
    c.centroid_rn_a = cross(centroid_a, n);
    c.centroid_rn_b = cross(centroid_b, n);
    c.centroid_in_a = a.inv_inertia_world * c.centroid_rn_a;
    c.centroid_in_b = b.inv_inertia_world * c.centroid_rn_b;
    const float k = inv_mass_sum + dot(n, cross(c.centroid_in_a, centroid_a)) +
                    dot(n, cross(c.centroid_in_b, centroid_b));
    if (std::isfinite(k) && k >= kMinInverseMass) c.centroid_mass = 1.0f / k;
  }
}

void gather_velocities(std::span<const BodySolverState> bodies,
                       std::span<SolverVelocity> velocities) {
  for (size_t i = 0; i < bodies.size(); ++i) {
    velocities[i].linear = bodies[i].linear_velocity;
    velocities[i].angular = bodies[i].angular_velocity;
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

void warm_start_contacts(std::span<const ContactConstraint> constraints,
                         std::span<const SolverPoint> points,
                         std::span<SolverVelocity> velocities) {
  for (const ContactConstraint& c : constraints) {
    SolverVelocity& body_a = velocities[c.slot_a];
    SolverVelocity& body_b = velocities[c.slot_b];
    PairVelocity v = load_pair(body_a, body_b);
    for (uint32_t i = 0; i < c.point_count; ++i) {
      const SolverPoint& p = points[c.first_point + i];
      if (p.normal_mass == 0.0f) continue;
      apply_row(c, v, p.normal_impulse, c.mass_n_a, c.mass_n_b, p.in_a, p.in_b);
      apply_tangent(c, p, v, p.tangent_impulse);
    }
    store_pair(c, v, &body_a, &body_b);
  }
}

void solve_contacts(std::span<const ContactConstraint> constraints, std::span<SolverPoint> points,
                    std::span<FrictionEigen> friction_eigens, std::span<SolverVelocity> velocities,
                    bool use_bias, SolverCounters* counters) {
  for (const ContactConstraint& c : constraints) {
    SolverVelocity& body_a = velocities[c.slot_a];
    SolverVelocity& body_b = velocities[c.slot_b];
    PairVelocity v = load_pair(body_a, body_b);
    const F4 n = load3(c.normal), t1 = load3(c.tangent1), t2 = load3(c.tangent2);
    SolverPoint* const manifold_points = &points[c.first_point];

    // Centroid row: total impulse Λ = (target − vn)/K at the centroid, δ = Λ/cnt per point.
    // δ is added to each point's λ_n just before its normal row below (nothing reads it sooner).
    const bool centroid_row = c.centroid_mass > 0.0f;
    float centroid_delta = 0.0f;
    if (centroid_row) {
      float min_impulse = 0.0f;
      bool first = true;
      for (uint32_t i = 0; i < c.point_count; ++i) {
        const SolverPoint& p = manifold_points[i];
        if (p.normal_mass == 0.0f) continue;
        if (first || p.normal_impulse < min_impulse) min_impulse = p.normal_impulse;
        first = false;
      }
      const float active = static_cast<float>(c.active_count);
      const float vn = row_velocity(v, n, c.centroid_rn_a, c.centroid_rn_b);
      const float target = use_bias ? c.centroid_target : c.centroid_relax_target;
      const float total = -c.centroid_mass * (vn - target);
      float delta = total / active;
      if (delta < -min_impulse) delta = -min_impulse;  // every λ_n stays ≥ 0
      centroid_delta = delta;
      apply_row(c, v, delta * active, c.mass_n_a, c.mass_n_b, c.centroid_in_a, c.centroid_in_b);
    }

    for (uint32_t i = 0; i < c.point_count; ++i) {
      SolverPoint& p = manifold_points[i];
      if (p.normal_mass == 0.0f) continue;
      if (centroid_row) p.normal_impulse += centroid_delta;

      // Normal row: λ = (target − vn)/K, accumulated λ_n ≥ 0.
      {
        const float vn = row_velocity(v, n, p.rn_a, p.rn_b);
        const float target = use_bias ? p.target_velocity : p.relax_target_velocity;
        const float lambda = -p.normal_mass * (vn - target);
        float total = p.normal_impulse + lambda;
        if (total < 0.0f) total = 0.0f;
        const float applied = total - p.normal_impulse;
        p.normal_impulse = total;
        // A zero impulse would change nothing (but the sign of a zero velocity component).
        if (applied != 0.0f) apply_row(c, v, applied, c.mass_n_a, c.mass_n_b, p.in_a, p.in_b);
      }

      // Friction block with radius μ·λ_n.
      {
        const Vec2 j_old = p.tangent_impulse;
        const float radius = c.friction * p.normal_impulse;
        // Radius 0 and no impulse yet: the answer is J = 0 again, nothing to apply (a point
        // inside the margin that does not touch, or a frictionless pair).
        if (radius == 0.0f && j_old.x == 0.0f && j_old.y == 0.0f && p.tangent_det > 0.0f) continue;
        const Vec2 v_t{row_velocity(v, t1, p.rt1_a, p.rt1_b),
                       row_velocity(v, t2, p.rt2_a, p.rt2_b)};
        const Vec2 v_free = friction_free_velocity(p.tangent_mass, v_t, j_old);
        const FrictionBlockResult r = solve_friction_block_fast(
            p.tangent_mass, p.tangent_det, &friction_eigens[c.first_point + i], v_free, radius);
        if (!r.solved()) {
          ++counters->skipped_friction_rows;
          continue;
        }
        const Vec2 dj = r.impulse - j_old;
        p.tangent_impulse = r.impulse;
        if (dj.x != 0.0f || dj.y != 0.0f) apply_tangent(c, p, v, dj);
      }
    }
    store_pair(c, v, &body_a, &body_b);
  }
}

void store_contact_cache(std::span<const ContactConstraint> constraints,
                         std::span<const ContactPoint> points,
                         std::span<const SolverPoint> solver_points, ContactCache* cache) {
  uint32_t m = 0, q = 0;
  for (const ContactConstraint& c : constraints) {
    CachedManifold& cm = cache->manifolds[m++];
    cm.key = c.key;
    cm.first_point = q;
    cm.point_count = c.point_count;
    for (uint32_t i = 0; i < c.point_count; ++i) {
      const ContactPoint& p = points[c.first_point + i];
      const SolverPoint& sp = solver_points[c.first_point + i];
      CachedPoint& cp = cache->points[q++];
      cp.feature = p.feature;
      cp.normal_impulse = sp.normal_impulse;
      cp.local_anchor_a = p.local_anchor_a;
      cp.friction_impulse = sp.tangent_impulse.x * c.tangent1 + sp.tangent_impulse.y * c.tangent2;
    }
  }
  cache->manifold_count = m;
  cache->point_count = q;
}

}  // namespace lockstep::sim
