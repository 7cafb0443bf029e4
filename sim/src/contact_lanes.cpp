// The contact solver over batches of eight manifolds: colouring, prepare, warm start and the
// passes on wide::W8 lanes. The formulas, the sign table and the row order (per manifold the
// centroid row, then per point the normal row and the friction block) are contact_solver.cpp's;
// contact_lanes.h says why lanes and colours give every manifold of a colour the same
// computation, whatever else shares its batch.
// The passes themselves are in contact_lanes_passes.h (compiled here and, on x86, a second time
// for AVX in contact_lanes_avx.cpp).
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
  lanes->kernel = best_lane_kernel();
}

LaneKernel best_lane_kernel() {
#if defined(LOCKSTEP_LANES_AVX)
  // The CPU and the OS (saved ymm state) support AVX: libgcc / compiler-rt check both.
  if (__builtin_cpu_supports("avx")) return LaneKernel::avx;
#endif
  return LaneKernel::baseline;
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
    batches[b].pairs_with_next = 0;
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
  // Consecutive batches of one group (one colour, one point count) share no dynamic body: the
  // passes may solve two of them at once when they have as many point rows.
  for (uint32_t g = 0; g < kFirstOverflowGroup; ++g) {
    const uint32_t batches_in_group = (group_count[g] + kLaneCount - 1) / kLaneCount;
    for (uint32_t j = first_batch[g]; j + 1 < first_batch[g] + batches_in_group; ++j)
      batches[j].pairs_with_next = batches[j].point_rows == batches[j + 1].point_rows ? 1u : 0u;
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

#include "friction_block_wide_body.h"
// (the passes call solve_boundary_lanes: this order)
#include "contact_lanes_passes.h"

// The baseline passes solve one batch at a time: two at once (W16, four xmm registers per value)
// measured 40 % slower with SSE2's sixteen registers (pyramid3d 300 ticks 2.9 -> 4.0 s). The
// AVX kernel pairs them (contact_lanes_avx.cpp: 2.8 -> 2.4 s).
constexpr bool kPairBaseline = false;

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

void warm_start_lanes(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
#if defined(LOCKSTEP_LANES_AVX)
  if (lanes.kernel == LaneKernel::avx) {
    warm_start_lanes_avx(lanes, velocities);
    return;
  }
#endif
  warm_start_all<kPairBaseline>(lanes, velocities);
}

void solve_lanes(ContactLanes* lanes, std::span<SolverVelocity> velocities, bool use_bias,
                 SolverCounters* counters) {
#if defined(LOCKSTEP_LANES_AVX)
  if (lanes->kernel == LaneKernel::avx) {
    solve_lanes_avx(lanes, velocities, use_bias, counters);
    return;
  }
#endif
  solve_all<kPairBaseline>(lanes, velocities, use_bias, counters);
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
