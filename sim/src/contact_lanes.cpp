// The contact solver over batches of eight manifolds: colouring, prepare, warm start and the
// passes on wide::W8 lanes. The formulas, the sign table and the row order (per manifold the
// centroid row, then per point the normal row and the friction block) are contact_solver.cpp's;
// contact_lanes.h says why lanes and colours give every manifold of a colour the same
// computation, whatever else shares its batch.
//
// Memory, not arithmetic, bounds the passes: each one streams every point's constraint data
// (pyramid3d: ~28,000 points, 12 passes a step). So a point keeps only its anchors, I⁻¹(r×n),
// its masses and targets and its impulses (92 bytes); the pass forms the relative velocity from
// the anchors, (vA + ωA×rA) − (vB + ωB×rB), dots it with n, t1, t2, and applies a friction
// impulse P as ΔωA = IA⁻¹(rA×P) with the manifold's inverse inertias (read once per batch).
#include "contact_lanes.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <utility>

#include "collide.h"
#include "friction_block_wide.h"
#include "wide_float.h"

namespace lockstep::sim {

void contact_lanes_init(ContactLanes* lanes, uint32_t max_bodies, uint32_t max_contact_pairs,
                        uint32_t max_contact_points) {
  if (max_contact_points == 0) max_contact_points = max_contact_pairs * kMaxManifoldPoints;
  const uint32_t batches = max_manifold_lanes(max_contact_pairs);
  const size_t rows = max_point_lane_rows(max_contact_points);
  lanes->batches.assign(batches, ManifoldLanes{});
  lanes->point_lanes.assign(rows, PointLanes{});
  lanes->eigens.assign(rows, EigenLanes{});
  lanes->body_colours.assign(max_bodies, 0);
  lanes->colour_of.assign(max_contact_pairs, 0);
  lanes->batch_count = 0;
  lanes->point_lane_count = 0;
  lanes->zero_slot = max_bodies;  // the velocity array has one slot more than the bodies
}

void build_contact_lanes(std::span<const ContactConstraint> constraints,
                         std::span<const BodySolverState> bodies, uint32_t slot_count,
                         ContactLanes* lanes) {
  constexpr uint32_t kOverflow = kSolverColours;
  uint64_t* const taken = lanes->body_colours.data();
  std::fill(taken, taken + slot_count, uint64_t{0});

  // Colours, greedily in key order.
  uint32_t count[kSolverColours + 1] = {};
  for (size_t i = 0; i < constraints.size(); ++i) {
    const ContactConstraint& c = constraints[i];
    const bool dynamic_a = bodies[c.slot_a].inv_mass > 0.0f;
    const bool dynamic_b = bodies[c.slot_b].inv_mass > 0.0f;
    const uint64_t used = (dynamic_a ? taken[c.slot_a] : 0) | (dynamic_b ? taken[c.slot_b] : 0);
    uint32_t colour = kOverflow;
    if (used != ~uint64_t{0}) {
      colour = static_cast<uint32_t>(std::countr_one(used));
      const uint64_t bit = uint64_t{1} << colour;
      if (dynamic_a) taken[c.slot_a] |= bit;
      if (dynamic_b) taken[c.slot_b] |= bit;
    }
    lanes->colour_of[i] = static_cast<uint8_t>(colour);
    ++count[colour];
  }

  // Batches: colour after colour, the overflow last. Inside a colour the manifolds are grouped
  // by point count (4, 3, 2, 1), in key order inside a group, so that a batch's lanes have the
  // same number of point rows (a sphere's single point no longer idles through a box's four).
  // The order inside a colour changes nothing: its manifolds share no dynamic body. The
  // overflow, solved lane by lane, is grouped the same way: a fixed order, and the point rows
  // stay within max_point_lane_rows.
  constexpr uint32_t kPoints = kMaxManifoldPoints;
  constexpr uint32_t kGroups = (kSolverColours + 1) * kPoints;
  constexpr uint32_t kFirstOverflowGroup = kSolverColours * kPoints;
  auto group_of = [](uint32_t colour, uint32_t point_count) {
    const uint32_t points = point_count < 1 ? 1 : (point_count > kPoints ? kPoints : point_count);
    return colour * kPoints + (kPoints - points);
  };
  uint32_t group_count[kGroups] = {};
  for (size_t i = 0; i < constraints.size(); ++i)
    ++group_count[group_of(lanes->colour_of[i], constraints[i].point_count)];
  uint32_t first_batch[kGroups];
  uint32_t batch_count = 0;
  for (uint32_t g = 0; g < kGroups; ++g) {
    first_batch[g] = batch_count;
    batch_count += (group_count[g] + kLaneCount - 1) / kLaneCount;
  }
  lanes->colours_used = 0;
  for (uint32_t colour = 0; colour < kOverflow; ++colour)
    if (count[colour] > 0) ++lanes->colours_used;
  lanes->overflow_manifolds = count[kOverflow];
  ManifoldLanes* const batches = lanes->batches.data();
  for (uint32_t b = 0; b < batch_count; ++b) {
    batches[b].lanes = 0;
    batches[b].sequential = b >= first_batch[kFirstOverflowGroup] ? 1u : 0u;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane)
      batches[b].constraint[lane] = kNoLane;
  }
  uint32_t filled[kGroups] = {};
  for (size_t i = 0; i < constraints.size(); ++i) {
    const uint32_t g = group_of(lanes->colour_of[i], constraints[i].point_count);
    const uint32_t n = filled[g]++;
    ManifoldLanes& m = batches[first_batch[g] + n / kLaneCount];
    m.constraint[n % kLaneCount] = static_cast<uint32_t>(i);
    m.lanes |= 1u << (n % kLaneCount);
  }

  // Point rows: as many as the batch's largest manifold.
  uint32_t point_lane_count = 0;
  for (uint32_t b = 0; b < batch_count; ++b) {
    ManifoldLanes& m = batches[b];
    uint32_t rows = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      if (m.constraint[lane] != kNoLane) {
        rows = std::max(rows, constraints[m.constraint[lane]].point_count);
      }
    }
    m.first_point_lanes = point_lane_count;
    m.point_rows = rows;
    point_lane_count += rows;
  }
  lanes->batch_count = batch_count;
  lanes->point_lane_count = point_lane_count;
}

namespace {

void set3(Vec3Lanes* d, uint32_t lane, Vec3 v) {
  d->x[lane] = v.x;
  d->y[lane] = v.y;
  d->z[lane] = v.z;
}

void set_mat3(Mat3Lanes* d, uint32_t lane, const Mat3& m) {
  set3(&d->c0, lane, m.c0);
  set3(&d->c1, lane, m.c1);
  set3(&d->c2, lane, m.c2);
}

// A lane without a manifold (or a point row beyond the lane's manifold): zero, no row.
void clear_manifold_lane(ManifoldLanes* m, uint32_t lane, uint32_t zero_slot) {
  m->slot_a[lane] = zero_slot;
  m->slot_b[lane] = zero_slot;
  for (Vec3Lanes* v : {&m->normal, &m->tangent1, &m->tangent2, &m->centroid_rn_a, &m->centroid_rn_b,
                       &m->centroid_in_a, &m->centroid_in_b}) {
    set3(v, lane, Vec3{});
  }
  set_mat3(&m->inv_inertia_a, lane, Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  set_mat3(&m->inv_inertia_b, lane, Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  m->inv_mass_a[lane] = 0.0f;
  m->inv_mass_b[lane] = 0.0f;
  m->friction[lane] = 0.0f;
  m->centroid_mass[lane] = 0.0f;
  m->centroid_target[lane] = 0.0f;
  m->centroid_relax_target[lane] = 0.0f;
  m->active_count[lane] = 1.0f;
}

void clear_point_lane(PointLanes* p, uint32_t lane) {
  for (Vec3Lanes* v : {&p->anchor_a, &p->anchor_b, &p->in_a, &p->in_b})
    set3(v, lane, Vec3{});
  for (float* f : {p->normal_mass, p->target_velocity, p->relax_target_velocity, p->tangent_a,
                   p->tangent_b, p->tangent_c, p->tangent_det, p->normal_impulse,
                   p->tangent_impulse_x, p->tangent_impulse_y}) {
    f[lane] = 0.0f;
  }
  p->point[lane] = kNoLane;
}

// What prepare reads per lane besides the lanes it fills (scalar gather, then W8 formulas).
struct PrepareInputs {
  Vec3Lanes va, wa, vb, wb;  // body velocities before warm starting
  float restitution[kLaneCount];
  float separation[kMaxManifoldPoints][kLaneCount];  // m
  int has_point[kMaxManifoldPoints];                 // bit i: lane i has a point in row k
};

// One manifold's inputs into lane `lane` (scalar copies: the points are read in colour order).
void gather_lane(const ContactConstraint& c, std::span<const ContactPoint> contact_points,
                 std::span<const BodySolverState> bodies, ManifoldLanes* m, PointLanes* rows,
                 uint32_t lane, PrepareInputs* in) {
  const BodySolverState& a = bodies[c.slot_a];
  const BodySolverState& b = bodies[c.slot_b];
  m->slot_a[lane] = c.slot_a;
  m->slot_b[lane] = c.slot_b;
  set3(&m->normal, lane, c.normal);
  set3(&m->tangent1, lane, c.tangent1);
  set3(&m->tangent2, lane, c.tangent2);
  m->inv_mass_a[lane] = a.inv_mass;
  m->inv_mass_b[lane] = b.inv_mass;
  set_mat3(&m->inv_inertia_a, lane, a.inv_inertia_world);
  set_mat3(&m->inv_inertia_b, lane, b.inv_inertia_world);
  m->friction[lane] = c.friction;
  in->restitution[lane] = c.restitution;
  set3(&in->va, lane, a.linear_velocity);
  set3(&in->wa, lane, a.angular_velocity);
  set3(&in->vb, lane, b.linear_velocity);
  set3(&in->wb, lane, b.angular_velocity);
  for (uint32_t k = 0; k < m->point_rows; ++k) {
    PointLanes& p = rows[k];
    if (k >= c.point_count) {
      clear_point_lane(&p, lane);
      in->separation[k][lane] = 0.0f;
      continue;
    }
    const ContactPoint& cp = contact_points[c.first_point + k];
    set3(&p.anchor_a, lane, cp.anchor_a);
    set3(&p.anchor_b, lane, cp.anchor_b);
    p.normal_impulse[lane] = cp.normal_impulse;
    p.tangent_impulse_x[lane] = cp.tangent_impulse.x;
    p.tangent_impulse_y[lane] = cp.tangent_impulse.y;
    p.point[lane] = c.first_point + k;
    in->separation[k][lane] = cp.separation_m;
    in->has_point[k] |= 1 << lane;
  }
}

void clear_lane(ManifoldLanes* m, PointLanes* rows, uint32_t lane, uint32_t zero_slot,
                PrepareInputs* in) {
  clear_manifold_lane(m, lane, zero_slot);
  in->restitution[lane] = 0.0f;
  for (Vec3Lanes* v : {&in->va, &in->wa, &in->vb, &in->wb})
    set3(v, lane, Vec3{});
  for (uint32_t k = 0; k < m->point_rows; ++k) {
    clear_point_lane(&rows[k], lane);
    in->separation[k][lane] = 0.0f;
  }
}

}  // namespace

namespace {

using W = wide::W8;
using M = wide::M8;

struct V3 {
  W x, y, z;
};

inline V3 load3(const Vec3Lanes& v) {
  return {wide::load8(v.x), wide::load8(v.y), wide::load8(v.z)};
}
inline V3 operator+(const V3& a, const V3& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
inline V3 operator-(const V3& a, const V3& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline V3 operator*(W s, const V3& a) {
  return {s * a.x, s * a.y, s * a.z};
}
// As math.h: (x + y) + z, and (a.y·b.z − a.z·b.y, …).
inline W dot(const V3& a, const V3& b) {
  return (a.x * b.x + a.y * b.y) + a.z * b.z;
}
inline V3 cross(const V3& a, const V3& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
// m·v = (c0·v.x + c1·v.y) + c2·v.z, as math.h's Mat3 product.
inline V3 mul(const Mat3Lanes& m, const V3& v) {
  return (v.x * load3(m.c0) + v.y * load3(m.c1)) + v.z * load3(m.c2);
}

inline void store3(Vec3Lanes* d, const V3& v) {
  wide::store(d->x, v.x);
  wide::store(d->y, v.y);
  wide::store(d->z, v.z);
}
inline V3 select3(M m, const V3& a, const V3& b) {
  return {wide::select(m, a.x, b.x), wide::select(m, a.y, b.y), wide::select(m, a.z, b.z)};
}
inline int count_lanes(M m) {
  int bits = wide::bits(m), n = 0;
  for (; bits != 0; bits &= bits - 1)
    ++n;
  return n;
}
// std::isfinite per lane, as a comparison (false for NaN and ±inf).
inline M finite(W x) {
  return (x >= wide::splat8(-FLT_MAX)) & (x <= wide::splat8(FLT_MAX));
}

// friction_block_eigen(K_t) per lane, its float operations in its order (the branches are
// selects; a quotient the scalar code would not take is never selected). Every lane gets one, used
// or not: for a K_t that is not positive definite the values are meaningless and never read.
void store_friction_eigen(W ka, W kb, W kc, EigenLanes* out) {
  const W zero = wide::splat8(0.0f), one = wide::splat8(1.0f), half = wide::splat8(0.5f);
  const W s = half * ka + half * kc;
  const W a = ka / s, b = kb / s, c = kc / s;
  const W half_diff = half * (a - c);
  const W r = wide::sqrt(half_diff * half_diff + b * b);
  const W k1 = half * (a + c) + r;
  W k2 = (a * c - b * b) / k1;
  k2 = wide::select(k2 > zero, k2, zero);
  const M upper = half_diff >= zero;
  const W p = half_diff + r;
  const W ex = wide::select(upper, one, b / (r - half_diff));
  const W ey = wide::select(upper, wide::select(p > zero, b / p, zero), one);
  const W inv_len = one / wide::sqrt(ex * ex + ey * ey);
  wide::store(out->s, s);
  wide::store(out->k1, k1);
  wide::store(out->k2, k2);
  wide::store(out->e1x, inv_len * ex);
  wide::store(out->e1y, inv_len * ey);
}

// contact_solver.cpp's prepare formulas on the eight lanes of a batch: effective masses, K_t and
// its determinant, targets (bias, speculative, restitution) and the centroid row. Each lane does
// the float operations of the scalar formulas (math.h's dot, cross and Mat3 product, in order);
// the branches are selects. Lanes and rows without a point get zeros.
void prepare_batch(const SolverSettings& s, const PrepareInputs& in, ManifoldLanes* m,
                   PointLanes* rows, EigenLanes* eigens, SolverCounters* counters) {
  const W zero = wide::splat8(0.0f), one = wide::splat8(1.0f);
  const V3 n = load3(m->normal), t1 = load3(m->tangent1), t2 = load3(m->tangent2);
  const W ima = wide::load8(m->inv_mass_a), imb = wide::load8(m->inv_mass_b);
  const W inv_mass_sum = ima + imb;
  const V3 va = load3(in.va), wa = load3(in.wa), vb = load3(in.vb), wb = load3(in.wb);
  const W restitution = wide::load8(in.restitution);
  // ga − gb per component: g for a dynamic body, 0 otherwise.
  const M dynamic_a = ima > zero, dynamic_b = imb > zero;
  auto g_diff = [&](float g) {
    const W gw = wide::splat8(g);
    return wide::select(dynamic_a, gw, zero) - wide::select(dynamic_b, gw, zero);
  };
  const V3 gravity_diff{g_diff(s.gravity.x), g_diff(s.gravity.y), g_diff(s.gravity.z)};
  const W inv_dt = wide::splat8(s.inv_dt), dt = wide::splat8(s.dt_s);
  const W bias_rate = wide::splat8(s.baumgarte * s.inv_dt);
  const W slop = wide::splat8(s.linear_slop_m), max_bias = wide::splat8(s.max_bias_velocity);
  const W min_inverse_mass = wide::splat8(kMinInverseMass);

  V3 sum_a{zero, zero, zero}, sum_b{zero, zero, zero};
  W sum_target = zero, sum_relax_target = zero, active = zero;
  for (uint32_t k = 0; k < m->point_rows; ++k) {
    PointLanes& p = rows[k];
    const M has_point = wide::lane_mask8(in.has_point[k]);
    const V3 ra = load3(p.anchor_a), rb = load3(p.anchor_b);

    // Normal row: K = mA⁻¹ + mB⁻¹ + n·((IA⁻¹(rA×n))×rA) + n·((IB⁻¹(rB×n))×rB).
    const V3 in_a = mul(m->inv_inertia_a, cross(ra, n));
    const V3 in_b = mul(m->inv_inertia_b, cross(rb, n));
    const W k_n = (inv_mass_sum + dot(n, cross(in_a, ra))) + dot(n, cross(in_b, rb));
    const M row = (k_n >= min_inverse_mass) & (k_n <= wide::splat8(FLT_MAX));  // finite, ≥ min
    const M active_row = has_point & row;
    counters->skipped_normal_rows +=
        static_cast<uint32_t>(count_lanes(wide::and_not(has_point, row)));
    store3(&p.in_a, select3(has_point, in_a, V3{zero, zero, zero}));
    store3(&p.in_b, select3(has_point, in_b, V3{zero, zero, zero}));
    wide::store(p.normal_mass, wide::select(active_row, one / k_n, zero));
    // A skipped row starts from zero impulses.
    wide::store(p.normal_impulse, wide::select(active_row, wide::load8(p.normal_impulse), zero));
    wide::store(p.tangent_impulse_x,
                wide::select(active_row, wide::load8(p.tangent_impulse_x), zero));
    wide::store(p.tangent_impulse_y,
                wide::select(active_row, wide::load8(p.tangent_impulse_y), zero));

    // Friction block K_t (symmetric) and friction_block_det.
    const V3 ra1 = cross(ra, t1), ra2 = cross(ra, t2), rb1 = cross(rb, t1), rb2 = cross(rb, t2);
    const V3 ia1 = mul(m->inv_inertia_a, ra1), ia2 = mul(m->inv_inertia_a, ra2);
    const V3 ib1 = mul(m->inv_inertia_b, rb1), ib2 = mul(m->inv_inertia_b, rb2);
    const W ka = (inv_mass_sum + dot(ra1, ia1)) + dot(rb1, ib1);
    const W kb = dot(ra1, ia2) + dot(rb1, ib2);
    const W kc = (inv_mass_sum + dot(ra2, ia2)) + dot(rb2, ib2);
    const W det = ka * kc - kb * kb;
    const M det_ok = finite(ka) & finite(kb) & finite(kc) & (ka > zero) & (kc > zero) &
                     finite(det) & (det > zero);
    wide::store(p.tangent_a, wide::select(has_point, ka, zero));
    wide::store(p.tangent_b, wide::select(has_point, kb, zero));
    wide::store(p.tangent_c, wide::select(has_point, kc, zero));
    wide::store(p.tangent_det, wide::select(has_point & det_ok, det, zero));
    store_friction_eigen(ka, kb, kc, &eigens[k]);

    // Target normal velocity, with and without the bias.
    const W sep = wide::load8(in.separation[k]);
    const M speculative = sep > zero;
    const W speculative_target = -sep * inv_dt;
    W depth = -sep - slop;
    depth = wide::select(depth < zero, zero, depth);
    W bias = bias_rate * depth;
    bias = wide::select(bias > max_bias, max_bias, bias);
    W target = wide::select(speculative, speculative_target, bias);
    W relax_target = wide::select(speculative, speculative_target, zero);
    const V3 v_rel = (va + cross(wa, ra)) - (vb + cross(wb, rb));
    const W vn = dot(n, v_rel);
    const W vn0 = vn - dt * dot(n, gravity_diff);
    const W bounce = -restitution * vn0;
    const M bounces = (restitution > zero) & (sep + vn * dt < zero) &
                      (vn0 < wide::splat8(-s.restitution_threshold));
    target = wide::select(bounces & (bounce > target), bounce, target);
    relax_target = wide::select(bounces & (bounce > relax_target), bounce, relax_target);
    wide::store(p.target_velocity, wide::select(has_point, target, zero));
    wide::store(p.relax_target_velocity, wide::select(has_point, relax_target, zero));

    // Centroid sums over the active points.
    sum_a = select3(active_row, sum_a + ra, sum_a);
    sum_b = select3(active_row, sum_b + rb, sum_b);
    sum_target = wide::select(active_row, sum_target + target, sum_target);
    sum_relax_target = wide::select(active_row, sum_relax_target + relax_target, sum_relax_target);
    active = wide::select(active_row, active + one, active);
  }

  // Centroid row over two or more active points.
  wide::store(m->active_count, wide::select(active > zero, active, one));
  const M centroid = active >= wide::splat8(2.0f);
  const W inv_active = one / wide::select(centroid, active, one);
  const V3 centroid_a = inv_active * sum_a, centroid_b = inv_active * sum_b;
  const V3 rn_a = cross(centroid_a, n), rn_b = cross(centroid_b, n);
  const V3 in_a = mul(m->inv_inertia_a, rn_a), in_b = mul(m->inv_inertia_b, rn_b);
  const W k_c = (inv_mass_sum + dot(n, cross(in_a, centroid_a))) + dot(n, cross(in_b, centroid_b));
  const M centroid_ok = centroid & (k_c >= min_inverse_mass) & (k_c <= wide::splat8(FLT_MAX));
  const V3 zero3{zero, zero, zero};
  store3(&m->centroid_rn_a, select3(centroid, rn_a, zero3));
  store3(&m->centroid_rn_b, select3(centroid, rn_b, zero3));
  store3(&m->centroid_in_a, select3(centroid, in_a, zero3));
  store3(&m->centroid_in_b, select3(centroid, in_b, zero3));
  wide::store(m->centroid_target, wide::select(centroid, sum_target * inv_active, zero));
  wide::store(m->centroid_relax_target,
              wide::select(centroid, sum_relax_target * inv_active, zero));
  wide::store(m->centroid_mass, wide::select(centroid_ok, one / k_c, zero));
}

}  // namespace

void prepare_contact_lanes(std::span<const ContactConstraint> constraints,
                           std::span<const ContactPoint> points,
                           std::span<const BodySolverState> bodies, const SolverSettings& settings,
                           ContactLanes* lanes, SolverCounters* counters) {
  for (uint32_t i = 0; i < lanes->batch_count; ++i) {
    ManifoldLanes& m = lanes->batches[i];
    PointLanes* const rows = &lanes->point_lanes[m.first_point_lanes];
    EigenLanes* const eigens = &lanes->eigens[m.first_point_lanes];
    alignas(16) PrepareInputs in;
    for (int& bits : in.has_point)
      bits = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      const uint32_t index = m.constraint[lane];
      if (index != kNoLane) {
        gather_lane(constraints[index], points, bodies, &m, rows, lane, &in);
      } else {
        clear_lane(&m, rows, lane, lanes->zero_slot, &in);
      }
    }
    prepare_batch(settings, in, &m, rows, eigens, counters);
  }
}

namespace {

// The two bodies of each lane.
struct BodyLanes {
  V3 va, wa, vb, wb;  // m/s, rad/s
};

// Four slots' vectors (16 bytes each, pads included) transposed into x, y, z lanes.
inline void gather4(const SolverVelocity* v, const uint32_t* slot, bool angular, wide::W4* x,
                    wide::W4* y, wide::W4* z) {
  auto at = [&](int i) { return angular ? &v[slot[i]].angular.x : &v[slot[i]].linear.x; };
  wide::W4 r0 = wide::load(at(0)), r1 = wide::load(at(1)), r2 = wide::load(at(2));
  wide::W4 r3 = wide::load(at(3));
  wide::transpose(r0, r1, r2, r3);
  *x = r0;
  *y = r1;
  *z = r2;
}

inline void gather_body(const SolverVelocity* v, const uint32_t* slot, V3* linear, V3* angular) {
  wide::W4 x[2], y[2], z[2];
  for (int half = 0; half < 2; ++half)
    gather4(v, slot + 4 * half, false, &x[half], &y[half], &z[half]);
  *linear = {wide::combine(x[0], x[1]), wide::combine(y[0], y[1]), wide::combine(z[0], z[1])};
  for (int half = 0; half < 2; ++half)
    gather4(v, slot + 4 * half, true, &x[half], &y[half], &z[half]);
  *angular = {wide::combine(x[0], x[1]), wide::combine(y[0], y[1]), wide::combine(z[0], z[1])};
}

inline void gather_pair(const ManifoldLanes& m, const SolverVelocity* v, BodyLanes* b) {
  gather_body(v, m.slot_a, &b->va, &b->wa);
  gather_body(v, m.slot_b, &b->vb, &b->wb);
}

// Writes the lanes of `lanes` whose body is dynamic (the others never change; the pads stay 0).
inline void scatter_body(SolverVelocity* v, const uint32_t* slot, const float* inv_mass, int lanes,
                         const V3& linear, const V3& angular) {
  for (int half = 0; half < 2; ++half) {
    const int bits = (lanes >> (4 * half)) & 0xf;
    if (bits == 0) continue;
    auto part = [half](wide::W8 a) { return half == 0 ? wide::lo(a) : wide::hi(a); };
    wide::W4 l0 = part(linear.x), l1 = part(linear.y), l2 = part(linear.z), l3 = wide::zero();
    wide::transpose(l0, l1, l2, l3);
    wide::W4 a0 = part(angular.x), a1 = part(angular.y), a2 = part(angular.z), a3 = wide::zero();
    wide::transpose(a0, a1, a2, a3);
    const wide::W4 rows_l[4] = {l0, l1, l2, l3}, rows_a[4] = {a0, a1, a2, a3};
    for (int i = 0; i < 4; ++i) {
      const int lane = 4 * half + i;
      if ((bits & (1 << i)) == 0 || !(inv_mass[lane] > 0.0f)) continue;
      wide::store(&v[slot[lane]].linear.x, rows_l[i]);
      wide::store(&v[slot[lane]].angular.x, rows_a[i]);
    }
  }
}

inline void scatter_pair(const ManifoldLanes& m, const BodyLanes& b, int lanes, SolverVelocity* v) {
  scatter_body(v, m.slot_a, m.inv_mass_a, lanes, b.va, b.wa);
  scatter_body(v, m.slot_b, m.inv_mass_b, lanes, b.vb, b.wb);
}

// v_rel = (vA + ωA×rA) − (vB + ωB×rB) at a point.
inline V3 relative_velocity(const BodyLanes& b, const V3& ra, const V3& rb) {
  return (b.va + cross(b.wa, ra)) - (b.vb + cross(b.wb, rb));
}

// d·v_rel with d·(ω×r) = ω·(r×d) for a row whose r×d is stored (the centroid row).
inline W row_velocity(const BodyLanes& b, const V3& d, const Vec3Lanes& rd_a,
                      const Vec3Lanes& rd_b) {
  return (dot(d, b.va - b.vb) + dot(load3(rd_a), b.wa)) - dot(load3(rd_b), b.wb);
}

// λ along n: A gets (mA⁻¹λ)·n and λ·IA⁻¹(rA×n), B the opposite.
inline void apply_normal(BodyLanes* b, W lambda, W inv_mass_a, W inv_mass_b, const V3& n,
                         const Vec3Lanes& i_a, const Vec3Lanes& i_b) {
  b->va = b->va + (lambda * inv_mass_a) * n;
  b->wa = b->wa + lambda * load3(i_a);
  b->vb = b->vb - (lambda * inv_mass_b) * n;
  b->wb = b->wb - lambda * load3(i_b);
}

// The tangent impulse P = j1·t1 + j2·t2: A gets mA⁻¹P and IA⁻¹(rA×P), B the opposite.
inline void apply_tangent(BodyLanes* b, const ManifoldLanes& m, W j1, W j2, W inv_mass_a,
                          W inv_mass_b, const V3& t1, const V3& t2, const V3& ra, const V3& rb) {
  const V3 impulse = j1 * t1 + j2 * t2;
  b->va = b->va + inv_mass_a * impulse;
  b->wa = b->wa + mul(m.inv_inertia_a, cross(ra, impulse));
  b->vb = b->vb - inv_mass_b * impulse;
  b->wb = b->wb - mul(m.inv_inertia_b, cross(rb, impulse));
}

void warm_start_batch(const ManifoldLanes& m, const PointLanes* points, int lane_bits,
                      SolverVelocity* v) {
  BodyLanes b;
  gather_pair(m, v, &b);
  const M lanes = wide::lane_mask8(lane_bits);
  const W zero = wide::splat8(0.0f);
  const W ima = wide::load8(m.inv_mass_a), imb = wide::load8(m.inv_mass_b);
  const V3 n = load3(m.normal), t1 = load3(m.tangent1), t2 = load3(m.tangent2);
  for (uint32_t k = 0; k < m.point_rows; ++k) {
    const PointLanes& p = points[k];
    const M active = lanes & (wide::load8(p.normal_mass) != zero);
    apply_normal(&b, wide::select(active, wide::load8(p.normal_impulse), zero), ima, imb, n, p.in_a,
                 p.in_b);
    apply_tangent(&b, m, wide::select(active, wide::load8(p.tangent_impulse_x), zero),
                  wide::select(active, wide::load8(p.tangent_impulse_y), zero), ima, imb, t1, t2,
                  load3(p.anchor_a), load3(p.anchor_b));
  }
  scatter_pair(m, b, lane_bits, v);
}

// Friction blocks the interior pre-test did not settle: `circle` (−K⁻¹v_free proven outside the
// disk) and `rest` (undecided: near the circle, or inputs the pre-test does not take). Per lane,
// exactly what solve_friction_block_fast does: `rest` lanes with valid inputs take the exact disk
// test (inside: J0), the others solve_friction_block_prepared; then every lane outside the disk
// is solved on the circle at once, eight lanes in one solve_boundary_wide call (the same bits per
// lane as solve_boundary; the Newton loop is latency-bound, so one lane alone costs about as much
// as eight, and packing lanes into fewer calls measured slower than solving them in place).
void solve_friction_off_interior(int circle, int rest, int valid, W ka, W kb, W kc, W det, W vf1,
                                 W vf2, W radius, W j01, W j02, const EigenLanes& eigen, W* j1,
                                 W* j2, SolverCounters* counters) {
  int boundary = circle;
  if (rest != 0) {
    alignas(16) float a[kLaneCount], b[kLaneCount], c[kLaneCount], d[kLaneCount], v1[kLaneCount],
        v2[kLaneCount], r[kLaneCount], x0[kLaneCount], y0[kLaneCount], o1[kLaneCount],
        o2[kLaneCount];
    for (auto [to, from] : {std::pair{a, ka},
                            {b, kb},
                            {c, kc},
                            {d, det},
                            {v1, vf1},
                            {v2, vf2},
                            {r, radius},
                            {x0, j01},
                            {y0, j02},
                            {o1, *j1},
                            {o2, *j2}}) {
      wide::store(to, from);
    }
    for (int lane = 0; lane < static_cast<int>(kLaneCount); ++lane) {
      if ((rest & (1 << lane)) == 0) continue;
      if ((valid & (1 << lane)) != 0) {
        const Vec2 j0{x0[lane], y0[lane]};
        if (friction_block_detail::inside_disk(j0, r[lane])) {
          o1[lane] = j0.x;
          o2[lane] = j0.y;
        } else {
          boundary |= 1 << lane;
        }
        continue;
      }
      FrictionEigen unused;  // invalid inputs never reach the circle
      const FrictionBlockResult result =
          solve_friction_block_prepared(TangentMass{a[lane], b[lane], c[lane]}, d[lane], &unused,
                                        Vec2{v1[lane], v2[lane]}, r[lane]);
      if (!result.solved()) {
        ++counters->skipped_friction_rows;  // keeps J_old
        continue;
      }
      o1[lane] = result.impulse.x;
      o2[lane] = result.impulse.y;
    }
    *j1 = wide::load8(o1);
    *j2 = wide::load8(o2);
  }
  if (boundary == 0) return;
  const FrictionEigenW8 e{wide::load8(eigen.s), wide::load8(eigen.k1), wide::load8(eigen.k2),
                          wide::load8(eigen.e1x), wide::load8(eigen.e1y)};
  W jx, jy;
  const M solved = solve_boundary_wide(e, vf1, vf2, radius, wide::lane_mask8(boundary), &jx, &jy);
  *j1 = wide::select(solved, jx, *j1);
  *j2 = wide::select(solved, jy, *j2);
  counters->skipped_friction_rows +=
      static_cast<uint32_t>(std::popcount(static_cast<unsigned>(boundary & ~wide::bits(solved))));
}

void solve_batch(const ManifoldLanes& m, PointLanes* points, const EigenLanes* eigens,
                 int lane_bits, bool use_bias, SolverVelocity* v, SolverCounters* counters) {
  BodyLanes b;
  gather_pair(m, v, &b);
  const M lanes = wide::lane_mask8(lane_bits);
  const W zero = wide::splat8(0.0f);
  const W ima = wide::load8(m.inv_mass_a), imb = wide::load8(m.inv_mass_b);
  const V3 n = load3(m.normal);

  // Centroid row: total impulse Λ = (target − vn)/K at the centroid, δ = Λ/cnt per point,
  // clamped so that no point's λ_n drops below 0; δ joins each λ_n just before its normal row.
  const W centroid_mass = wide::load8(m.centroid_mass);
  const M centroid_row = lanes & (centroid_mass > zero);
  W centroid_delta = zero;
  if (wide::any(centroid_row)) {
    W min_impulse = zero;
    M first = lanes;
    for (uint32_t k = 0; k < m.point_rows; ++k) {
      const PointLanes& p = points[k];
      const M active = wide::load8(p.normal_mass) != zero;
      const W impulse = wide::load8(p.normal_impulse);
      min_impulse = wide::select(active & (first | (impulse < min_impulse)), impulse, min_impulse);
      first = wide::and_not(first, active);
    }
    const W active_count = wide::load8(m.active_count);
    const W vn = row_velocity(b, n, m.centroid_rn_a, m.centroid_rn_b);
    const W target = wide::load8(use_bias ? m.centroid_target : m.centroid_relax_target);
    const W total = -centroid_mass * (vn - target);
    W delta = total / active_count;
    delta = wide::select(delta < -min_impulse, -min_impulse, delta);
    centroid_delta = wide::select(centroid_row, delta, zero);
    apply_normal(&b, centroid_delta * active_count, ima, imb, n, m.centroid_in_a, m.centroid_in_b);
  }

  const W friction = wide::load8(m.friction);
  const V3 t1 = load3(m.tangent1), t2 = load3(m.tangent2);
  for (uint32_t k = 0; k < m.point_rows; ++k) {
    PointLanes& p = points[k];
    const W normal_mass = wide::load8(p.normal_mass);
    const M active = lanes & (normal_mass != zero);
    if (!wide::any(active)) continue;
    const V3 ra = load3(p.anchor_a), rb = load3(p.anchor_b);
    W impulse = wide::load8(p.normal_impulse);
    impulse = wide::select(active & centroid_row, impulse + centroid_delta, impulse);

    // Normal row: λ = (target − vn)/K, accumulated λ_n ≥ 0.
    {
      const W vn = dot(n, relative_velocity(b, ra, rb));
      const W target = wide::load8(use_bias ? p.target_velocity : p.relax_target_velocity);
      const W lambda = -normal_mass * (vn - target);
      W total = impulse + lambda;
      total = wide::select(total < zero, zero, total);
      // Inactive lanes: K⁻¹ = 0 makes λ = ±0 and `applied` +0, which changes no velocity (the
      // passes never hold −0); lanes outside `lanes` only touch registers never scattered.
      const W applied = total - impulse;
      impulse = wide::select(active, total, impulse);
      wide::store(p.normal_impulse, impulse);
      apply_normal(&b, applied, ima, imb, n, p.in_a, p.in_b);
    }

    // Friction block with radius μ·λ_n.
    const W j1_old = wide::load8(p.tangent_impulse_x), j2_old = wide::load8(p.tangent_impulse_y);
    const W radius = friction * impulse;
    const W det = wide::load8(p.tangent_det);
    // Radius 0 and no impulse yet: J = 0 again, nothing to apply.
    const M idle = (radius == zero) & (j1_old == zero) & (j2_old == zero) & (det > zero);
    const M work = wide::and_not(active, idle);
    if (!wide::any(work)) continue;
    const W ka = wide::load8(p.tangent_a), kb = wide::load8(p.tangent_b);
    const W kc = wide::load8(p.tangent_c);
    const V3 v_rel = relative_velocity(b, ra, rb);
    // v_free = v_t − K·J_old (friction_free_velocity).
    const W vf1 = dot(t1, v_rel) - (ka * j1_old + kb * j2_old);
    const W vf2 = dot(t2, v_rel) - (kb * j1_old + kc * j2_old);
    // The interior answer and the float pre-test of solve_friction_block_fast, per lane.
    const W max = wide::splat8(FLT_MAX), min_max = wide::splat8(-FLT_MAX);
    const M valid = (det > zero) & (radius > zero) & (radius <= max) & (vf1 >= min_max) &
                    (vf1 <= max) & (vf2 >= min_max) & (vf2 <= max);
    const W j01 = (kb * vf2 - kc * vf1) / det;
    const W j02 = (kb * vf1 - ka * vf2) / det;
    const W len2 = j01 * j01 + j02 * j02;
    const W r2 = radius * radius;
    const M inside = work & valid & (r2 >= wide::splat8(FLT_MIN)) & (r2 <= max) & (len2 <= max) &
                     (len2 <= wide::splat8(friction_block_detail::kInsideBand) * r2);
    const M outside = valid & (r2 >= wide::splat8(FLT_MIN)) & (r2 <= max) & (len2 <= max) &
                      (len2 >= wide::splat8(friction_block_detail::kOutsideBand) * r2);
    W j1 = wide::select(inside, j01, j1_old), j2 = wide::select(inside, j02, j2_old);
    const int circle = wide::bits(work & outside);
    const int rest = wide::bits(wide::and_not(work, inside | outside));
    if ((circle | rest) != 0) {
      solve_friction_off_interior(circle, rest, wide::bits(valid), ka, kb, kc, det, vf1, vf2,
                                  radius, j01, j02, eigens[k], &j1, &j2, counters);
    }
    // Lanes without work kept J_old exactly: dj = +0 there, which changes no velocity.
    const W dj1 = j1 - j1_old, dj2 = j2 - j2_old;
    wide::store(p.tangent_impulse_x, j1);
    wide::store(p.tangent_impulse_y, j2);
    apply_tangent(&b, m, dj1, dj2, ima, imb, t1, t2, ra, rb);
  }
  scatter_pair(m, b, lane_bits, v);
}

}  // namespace

void warm_start_lanes(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
  for (uint32_t i = 0; i < lanes.batch_count; ++i) {
    const ManifoldLanes& m = lanes.batches[i];
    const PointLanes* p = &lanes.point_lanes[m.first_point_lanes];
    if (m.sequential == 0) {
      warm_start_batch(m, p, static_cast<int>(m.lanes), velocities.data());
      continue;
    }
    for (int lane = 0; lane < static_cast<int>(kLaneCount); ++lane) {
      if ((m.lanes & (1u << lane)) != 0) warm_start_batch(m, p, 1 << lane, velocities.data());
    }
  }
}

void solve_lanes(ContactLanes* lanes, std::span<SolverVelocity> velocities, bool use_bias,
                 SolverCounters* counters) {
  for (uint32_t i = 0; i < lanes->batch_count; ++i) {
    const ManifoldLanes& m = lanes->batches[i];
    PointLanes* p = &lanes->point_lanes[m.first_point_lanes];
    const EigenLanes* e = &lanes->eigens[m.first_point_lanes];
    if (m.sequential == 0) {
      solve_batch(m, p, e, static_cast<int>(m.lanes), use_bias, velocities.data(), counters);
      continue;
    }
    for (int lane = 0; lane < static_cast<int>(kLaneCount); ++lane) {
      if ((m.lanes & (1u << lane)) == 0) continue;
      solve_batch(m, p, e, 1 << lane, use_bias, velocities.data(), counters);
    }
  }
}

void unpack_contact_lanes(const ContactLanes& lanes, std::span<ContactPoint> points) {
  for (uint32_t i = 0; i < lanes.point_lane_count; ++i) {
    const PointLanes& p = lanes.point_lanes[i];
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      if (p.point[lane] == kNoLane) continue;
      ContactPoint& s = points[p.point[lane]];
      s.normal_impulse = p.normal_impulse[lane];
      s.tangent_impulse = {p.tangent_impulse_x[lane], p.tangent_impulse_y[lane]};
    }
  }
}

}  // namespace lockstep::sim
