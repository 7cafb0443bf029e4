// The contact solver's passes on wide::W8 lanes: warm start and the velocity / relax passes
// (contact_lanes.h says what a batch is; contact_lanes.cpp has the colouring and prepare). No
// include guard: this is the body of an anonymous namespace, included twice — by
// contact_lanes.cpp with `wide` = wide::W8 of the build's instruction set (SSE2, NEON, portable),
// and on x86 by contact_lanes_avx.cpp with `wide` = wide_avx (W8 in one AVX register, compiled
// under a target("avx") pragma), chosen at run time. The includer provides <bit>, <cfloat>,
// <utility>, contact_lanes.h, lockstep/sim/friction_block.h and friction_block_wide_body.h.
//
// Memory, not arithmetic, bounds the passes: each one streams every point's constraint data
// (pyramid3d: ~28,000 points, 12 passes a step). So a point keeps only its anchors, I⁻¹(r×n),
// its masses and targets and its impulses (92 bytes); the pass forms the relative velocity from
// the anchors, (vA + ωA×rA) − (vB + ωB×rB), dots it with n, t1, t2, and applies a friction
// impulse P as ΔωA = IA⁻¹(rA×P) with the manifold's inverse inertias (read once per batch).

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
  const FrictionEigenWide<W> e{wide::load8(eigen.s), wide::load8(eigen.k1), wide::load8(eigen.k2),
                               wide::load8(eigen.e1x), wide::load8(eigen.e1y)};
  W jx, jy;
  const M solved = solve_boundary_lanes(e, vf1, vf2, radius, wide::lane_mask8(boundary), &jx, &jy);
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

void warm_start_all(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
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

void solve_all(ContactLanes* lanes, std::span<SolverVelocity> velocities, bool use_bias,
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
