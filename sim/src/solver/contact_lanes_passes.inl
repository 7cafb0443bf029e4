// The contact solver's passes on wide::W8 lanes: warm start, the velocity / relax passes and the
// vector half of prepare, prepare_batch (contact_lanes.h says what a batch is; contact_lanes.cpp
// has the colouring and gathers prepare's inputs lane by lane). No include guard: this is the body
// of an anonymous namespace, included by contact_lanes.cpp with `wide` = wide::W8 of the build's
// instruction set (SSE2, NEON, portable), and on x86 by contact_lanes_kernel.inl once per
// target region of contact_lanes_avx.cpp (`wide` = wide_avx or wide_avx512: W8 in one 256-bit
// register); the copy that runs is picked per world through its LaneKernelCode. The includer
// provides <bit>, <cfloat>, <type_traits>, <utility>, contact_lanes.h,
// solver/friction_block.h and friction_block_wide.inl.
//
// What bounds the passes is latency: within a batch every row waits for the velocities the row
// before it wrote (velocity → impulse → velocity), and a friction block on the circle is a chain
// of divisions and square roots. So the AVX kernel solves two batches of one colour side by side
// (B = 2: sixteen lanes, two independent chains; bench/README.md, session 5, has the gain), which
// changes no bit: manifolds of one colour share no dynamic body. The baseline keeps B = 1 (SSE2
// has too few registers for it: contact_lanes.cpp). A point keeps only its anchors, I⁻¹(r×n), its
// masses and targets and its impulses (92 bytes); the pass forms the relative velocity from the
// anchors, (vA + ωA×rA) − (vB + ωB×rB), dots it with n, t1, t2, and applies a friction impulse P as
// ΔωA = IA⁻¹(rA×P) with the manifold's inverse inertias.
//
// Sign table (docs/physics.md; every formula below follows it, never a local variant):
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
// Restitution has its own pass, after each substep's relax (restitute_wide): a point whose
// normal velocity before the step, vn₀, was below −restitution_threshold and whose row has
// pushed during this step (its largest accumulated λ > 0: the surfaces met) is driven once to
// the rebound restitute_batch derives (its vn₀ is then cleared): −e·vn₀ across gravity, and
// along it corrected for the half substep between velocities and positions and for the gap the
// bounce is decided at, so that an e = 1 ball keeps its height and e < 1 gives e²·h. Bouncing in
// the substep of the impact rather than at the end of the step leaves at most one substep of flight
// out (the bounce does not depend on where in the step the impact falls), and vn₀, taken before
// this step's gravity, mirrors the discrete fall. Slower contacts are inelastic so resting stacks
// do not jitter.
//
// Friction block. Per point the two tangent directions (t1, t2) = tangent_basis(n) form one
// 2x2 block with K_t,ij = (mA⁻¹ + mB⁻¹)δij + (rA×ti)·IA⁻¹(rA×tj) + (rB×ti)·IB⁻¹(rB×tj).
// Each pass: v_t = (t1·v_rel, t2·v_rel), v_free = v_t − K_t·J_old, radius R = μ·λ_n (the
// current accumulated normal impulse), J_new = solve_friction_block(K_t, v_free, R); only
// J_new − J_old is applied. When the block cannot be solved (K_t not positive definite, ...)
// the pass keeps J_old and counts the row as skipped. There is no radial clamping anywhere.
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
// Order: manifolds coloured (contact_lanes.h: greedily in pair-key order, no two manifolds of a
// colour share a dynamic body), colour after colour, in key order within a colour; per manifold
// the centroid row, then the points in manifold order, per point the normal row first and then
// the friction block (so the block sees this pass's λ_n in its radius).
//
// Iterations (contact_lanes.cpp). Prepare computes K, K_t, s₀, vn₀ and I⁻¹(r×n) per point and
// writes them, transposed, into batches of eight manifolds of one colour (one per lane); the
// passes run every lane at once with wide::W8 (SSE2, NEON or scalar: one IEEE operation per lane,
// the same bits everywhere). Every substep's passes use prepare's anchors, masses and world
// inverse inertias, on a compact copy of the velocities (SolverVelocity, gathered before and
// scattered after the substeps).

using W = wide::W8;
using M = wide::M8;

// Helpers written once for W8 (one batch) and W16 (two batches side by side).
template <class T>
struct V3T {
  T x, y, z;
};
using V3 = V3T<W>;

inline V3 load3(const Vec3Lanes& v) {
  return {wide::load8(v.x), wide::load8(v.y), wide::load8(v.z)};
}
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> operator+(const V3T<T>& a, const V3T<T>& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> operator-(const V3T<T>& a, const V3T<T>& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> operator*(T s, const V3T<T>& a) {
  return {s * a.x, s * a.y, s * a.z};
}
// As math.h: (x + y) + z, and (a.y·b.z − a.z·b.y, …).
template <class T>
LOCKSTEP_LANES_INLINE T dot(const V3T<T>& a, const V3T<T>& b) {
  return (a.x * b.x + a.y * b.y) + a.z * b.z;
}
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> cross(const V3T<T>& a, const V3T<T>& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
// m·v = (c0·v.x + c1·v.y) + c2·v.z, as math.h's Mat3 product.
template <class T>
struct Mat3T {
  V3T<T> c0, c1, c2;
};
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> mul(const Mat3T<T>& m, const V3T<T>& v) {
  return (v.x * m.c0 + v.y * m.c1) + v.z * m.c2;
}
inline V3 mul(const Mat3Lanes& m, const V3& v) {
  return mul(Mat3T<W>{load3(m.c0), load3(m.c1), load3(m.c2)}, v);
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

// B batches of one colour at once (B = 1 or 2): their lanes side by side, batch b's lanes are
// lanes 8b … 8b + 7 of Pack<B>::W. Manifolds of one colour share no dynamic body, so solving two
// batches together is the same computation as solving them one after the other.
template <int B>
struct Pack : wide::Lanes<std::conditional_t<B == 1, wide::W8, wide::W16>> {
  static_assert(B == 1 || B == 2);
  using W = std::conditional_t<B == 1, wide::W8, wide::W16>;
  using M = typename wide::Lanes<W>::Mask;
};

// One field of B structures (batches, or their point rows k), as one value of B·8 lanes.
template <int B, class S, class C>
LOCKSTEP_LANES_INLINE typename Pack<B>::W ld(S* const (&s)[B], float (C::*f)[kLaneCount]) {
  if constexpr (B == 1) {
    return wide::load8(s[0]->*f);
  } else {
    return {wide::load8(s[0]->*f), wide::load8(s[1]->*f)};
  }
}
template <int B, class S, class C>
LOCKSTEP_LANES_INLINE V3T<typename Pack<B>::W> ld3(S* const (&s)[B], Vec3Lanes C::*f) {
  using T = typename Pack<B>::W;
  auto row = [&](auto c) {
    if constexpr (B == 1) {
      return T{wide::load8((s[0]->*f).*c)};
    } else {
      return T{wide::load8((s[0]->*f).*c), wide::load8((s[1]->*f).*c)};
    }
  };
  return {row(&Vec3Lanes::x), row(&Vec3Lanes::y), row(&Vec3Lanes::z)};
}
template <int B>
LOCKSTEP_LANES_INLINE Mat3T<typename Pack<B>::W> ld_mat(const ManifoldLanes* const (&m)[B],
                                                        Mat3Lanes ManifoldLanes::*f) {
  using T = typename Pack<B>::W;
  auto column = [&](Vec3Lanes Mat3Lanes::*c) {
    auto row = [&](float(Vec3Lanes::*x)[kLaneCount]) {
      if constexpr (B == 1) {
        return T{wide::load8(((m[0]->*f).*c).*x)};
      } else {
        return T{wide::load8(((m[0]->*f).*c).*x), wide::load8(((m[1]->*f).*c).*x)};
      }
    };
    return V3T<T>{row(&Vec3Lanes::x), row(&Vec3Lanes::y), row(&Vec3Lanes::z)};
  };
  return {column(&Mat3Lanes::c0), column(&Mat3Lanes::c1), column(&Mat3Lanes::c2)};
}
template <int B, class S>
LOCKSTEP_LANES_INLINE void st(S* const (&s)[B], float (S::*f)[kLaneCount], typename Pack<B>::W v) {
  if constexpr (B == 1) {
    wide::store(s[0]->*f, v);
  } else {
    wide::store(s[0]->*f, v.lo);
    wide::store(s[1]->*f, v.hi);
  }
}

// The two bodies of each lane.
template <class T>
struct BodyLanes {
  V3T<T> va, wa, vb, wb;  // m/s, rad/s
};

// Four slots' vectors (16 bytes each, pads included) transposed into x, y, z lanes.
LOCKSTEP_LANES_INLINE void gather4(const SolverVelocity* v, const uint32_t* slot, bool angular,
                                   wide::W4* x, wide::W4* y, wide::W4* z) {
  auto at = [&](int i) { return angular ? &v[slot[i]].angular.x : &v[slot[i]].linear.x; };
  wide::W4 r0 = wide::load(at(0)), r1 = wide::load(at(1)), r2 = wide::load(at(2));
  wide::W4 r3 = wide::load(at(3));
  wide::transpose(r0, r1, r2, r3);
  *x = r0;
  *y = r1;
  *z = r2;
}

LOCKSTEP_LANES_INLINE void gather_body(const SolverVelocity* v, const uint32_t* slot, V3* linear,
                                       V3* angular) {
  wide::W4 x[2], y[2], z[2];
  for (int half = 0; half < 2; ++half)
    gather4(v, slot + 4 * half, false, &x[half], &y[half], &z[half]);
  *linear = {wide::combine(x[0], x[1]), wide::combine(y[0], y[1]), wide::combine(z[0], z[1])};
  for (int half = 0; half < 2; ++half)
    gather4(v, slot + 4 * half, true, &x[half], &y[half], &z[half]);
  *angular = {wide::combine(x[0], x[1]), wide::combine(y[0], y[1]), wide::combine(z[0], z[1])};
}

template <int B>
LOCKSTEP_LANES_INLINE void gather_pair(const ManifoldLanes* const (&m)[B], const SolverVelocity* v,
                                       BodyLanes<typename Pack<B>::W>* b) {
  if constexpr (B == 1) {
    gather_body(v, m[0]->slot_a, &b->va, &b->wa);
    gather_body(v, m[0]->slot_b, &b->vb, &b->wb);
  } else {
    BodyLanes<W> half[2];
    for (int i = 0; i < 2; ++i) {
      gather_body(v, m[i]->slot_a, &half[i].va, &half[i].wa);
      gather_body(v, m[i]->slot_b, &half[i].vb, &half[i].wb);
    }
    auto join = [&](V3 BodyLanes<W>::*f) {
      const V3 &lo = half[0].*f, &hi = half[1].*f;
      return V3T<wide::W16>{{lo.x, hi.x}, {lo.y, hi.y}, {lo.z, hi.z}};
    };
    *b = {join(&BodyLanes<W>::va), join(&BodyLanes<W>::wa), join(&BodyLanes<W>::vb),
          join(&BodyLanes<W>::wb)};
  }
}

// Writes the lanes of `lanes` whose body is dynamic (the others never change; the pads stay 0).
LOCKSTEP_LANES_INLINE void scatter_body(SolverVelocity* v, const uint32_t* slot,
                                        const float* inv_mass, int lanes, const V3& linear,
                                        const V3& angular) {
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

template <int B>
LOCKSTEP_LANES_INLINE void scatter_pair(const ManifoldLanes* const (&m)[B],
                                        const BodyLanes<typename Pack<B>::W>& b, int lanes,
                                        SolverVelocity* v) {
  if constexpr (B == 1) {
    scatter_body(v, m[0]->slot_a, m[0]->inv_mass_a, lanes, b.va, b.wa);
    scatter_body(v, m[0]->slot_b, m[0]->inv_mass_b, lanes, b.vb, b.wb);
  } else {
    for (int i = 0; i < 2; ++i) {
      auto part = [i](const V3T<wide::W16>& x) {
        return i == 0 ? V3{x.x.lo, x.y.lo, x.z.lo} : V3{x.x.hi, x.y.hi, x.z.hi};
      };
      const int bits = (lanes >> (8 * i)) & 0xff;
      scatter_body(v, m[i]->slot_a, m[i]->inv_mass_a, bits, part(b.va), part(b.wa));
      scatter_body(v, m[i]->slot_b, m[i]->inv_mass_b, bits, part(b.vb), part(b.wb));
    }
  }
}

// v_rel = (vA + ωA×rA) − (vB + ωB×rB) at a point.
template <class T>
LOCKSTEP_LANES_INLINE V3T<T> relative_velocity(const BodyLanes<T>& b, const V3T<T>& ra,
                                               const V3T<T>& rb) {
  return (b.va + cross(b.wa, ra)) - (b.vb + cross(b.wb, rb));
}

// d·v_rel with d·(ω×r) = ω·(r×d) for a row whose r×d is stored (the centroid row).
template <class T>
LOCKSTEP_LANES_INLINE T row_velocity(const BodyLanes<T>& b, const V3T<T>& d, const V3T<T>& rd_a,
                                     const V3T<T>& rd_b) {
  return (dot(d, b.va - b.vb) + dot(rd_a, b.wa)) - dot(rd_b, b.wb);
}

// λ along n: A gets (mA⁻¹λ)·n and λ·IA⁻¹(rA×n), B the opposite.
template <class T>
LOCKSTEP_LANES_INLINE void apply_normal(BodyLanes<T>* b, T lambda, T inv_mass_a, T inv_mass_b,
                                        const V3T<T>& n, const V3T<T>& i_a, const V3T<T>& i_b) {
  b->va = b->va + (lambda * inv_mass_a) * n;
  b->wa = b->wa + lambda * i_a;
  b->vb = b->vb - (lambda * inv_mass_b) * n;
  b->wb = b->wb - lambda * i_b;
}

// The tangent impulse P = j1·t1 + j2·t2: A gets mA⁻¹P and IA⁻¹(rA×P), B the opposite.
template <int B, class T = typename Pack<B>::W>
LOCKSTEP_LANES_INLINE void apply_tangent(BodyLanes<T>* b, const ManifoldLanes* const (&m)[B], T j1,
                                         T j2, T inv_mass_a, T inv_mass_b, const V3T<T>& t1,
                                         const V3T<T>& t2, const V3T<T>& ra, const V3T<T>& rb) {
  const V3T<T> impulse = j1 * t1 + j2 * t2;
  b->va = b->va + inv_mass_a * impulse;
  b->wa = b->wa + mul(ld_mat(m, &ManifoldLanes::inv_inertia_a), cross(ra, impulse));
  b->vb = b->vb - inv_mass_b * impulse;
  b->wb = b->wb - mul(ld_mat(m, &ManifoldLanes::inv_inertia_b), cross(rb, impulse));
}

// Batch b's point row k, for each of the B batches.
template <int B, class P>
LOCKSTEP_LANES_INLINE void rows_at(P* const (&first)[B], uint32_t k, P* (&out)[B]) {
  for (int i = 0; i < B; ++i)
    out[i] = first[i] + k;
}

template <int B>
void warm_start_batch(const ManifoldLanes* const (&m)[B], const PointLanes* const (&points)[B],
                      int lane_bits, SolverVelocity* v) {
  using T = typename Pack<B>::W;
  using Mask = typename Pack<B>::M;
  BodyLanes<T> b;
  gather_pair(m, v, &b);
  const Mask lanes = Pack<B>::mask(lane_bits);
  const T zero = Pack<B>::splat(0.0f);
  const T ima = ld(m, &ManifoldLanes::inv_mass_a), imb = ld(m, &ManifoldLanes::inv_mass_b);
  const V3T<T> n = ld3(m, &ManifoldLanes::normal), t1 = ld3(m, &ManifoldLanes::tangent1);
  const V3T<T> t2 = ld3(m, &ManifoldLanes::tangent2);
  for (uint32_t k = 0; k < m[0]->point_rows; ++k) {
    const PointLanes* p[B];
    rows_at(points, k, p);
    const Mask active = lanes & (ld(p, &PointLanes::normal_mass) != zero);
    apply_normal(&b, wide::select(active, ld(p, &PointLanes::normal_impulse), zero), ima, imb, n,
                 ld3(p, &PointLanes::in_a), ld3(p, &PointLanes::in_b));
    apply_tangent(&b, m, wide::select(active, ld(p, &PointLanes::tangent_impulse_x), zero),
                  wide::select(active, ld(p, &PointLanes::tangent_impulse_y), zero), ima, imb, t1,
                  t2, ld3(p, &PointLanes::anchor_a), ld3(p, &PointLanes::anchor_b));
  }
  scatter_pair(m, b, lane_bits, v);
}

// Friction blocks the interior pre-test did not settle: `circle` (−K⁻¹v_free proven outside the
// disk) and `rest` (undecided: near the circle, or inputs the pre-test does not take). Per lane,
// exactly what solve_friction_block_fast does: `rest` lanes with valid inputs take the exact disk
// test (inside: J0), the others solve_friction_block_prepared; then every lane outside the disk
// is solved on the circle at once, all lanes in one solve_boundary_wide call (the same bits per
// lane as solve_boundary; the Newton loop is latency-bound, so one lane alone costs about as much
// as eight, and packing lanes into fewer calls measured slower than solving them in place).
template <int B, class T = typename Pack<B>::W>
void solve_friction_off_interior(int circle, int rest, int valid, T ka, T kb, T kc, T det, T vf1,
                                 T vf2, T radius, T j01, T j02, const EigenLanes* const (&eigen)[B],
                                 T* j1, T* j2, SolverCounters* counters) {
  constexpr int kCount = static_cast<int>(kLaneCount) * B;
  int boundary = circle;
  if (rest != 0) {
    alignas(16) float a[kCount], b[kCount], c[kCount], d[kCount], v1[kCount], v2[kCount], r[kCount],
        x0[kCount], y0[kCount], o1[kCount], o2[kCount];
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
    for (int lane = 0; lane < kCount; ++lane) {
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
    *j1 = wide::Lanes<T>::load(o1);
    *j2 = wide::Lanes<T>::load(o2);
  }
  if (boundary == 0) return;
  const FrictionEigenWide<T> e{ld(eigen, &EigenLanes::s), ld(eigen, &EigenLanes::k1),
                               ld(eigen, &EigenLanes::k2), ld(eigen, &EigenLanes::e1x),
                               ld(eigen, &EigenLanes::e1y)};
  T jx, jy;
  const auto solved =
      solve_boundary_wide<T>(e, vf1, vf2, radius, wide::Lanes<T>::mask(boundary), &jx, &jy);
  *j1 = wide::select(solved, jx, *j1);
  *j2 = wide::select(solved, jy, *j2);
  counters->skipped_friction_rows +=
      static_cast<uint32_t>(std::popcount(static_cast<unsigned>(boundary & ~wide::bits(solved))));
}

// The soft step's row coefficients at current separation s (top of this file): speculative
// (s > 0) rows are rigid with bias s/h; overlapping rows are soft with the lane's Softness in the
// biased passes, rigid with bias 0 in the relax passes. The row's impulse is then
// −normal_mass·mass_scale·(vn + bias) − impulse_scale·λ_acc.
template <class T>
struct SoftRow {
  T bias, mass_scale, impulse_scale;
};
template <int B, class T = typename Pack<B>::W>
LOCKSTEP_LANES_INLINE SoftRow<T> soft_row(const ManifoldLanes* const (&m)[B], T s, bool use_bias,
                                          const ContactLanes& lanes) {
  const T zero = Pack<B>::splat(0.0f), one = Pack<B>::splat(1.0f);
  const auto speculative = s > zero;
  const T speculative_bias = s * Pack<B>::splat(lanes.inv_substep);
  if (!use_bias) {
    return {wide::select(speculative, speculative_bias, zero), one, zero};
  }
  T depth = s + Pack<B>::splat(lanes.linear_slop_m);
  depth = wide::select(depth > zero, zero, depth);  // min(s + slop, 0)
  const T min_bias = Pack<B>::splat(-lanes.max_bias_velocity);
  T bias = ld(m, &ManifoldLanes::bias_rate) * depth;
  bias = wide::select(bias < min_bias, min_bias, bias);
  return {wide::select(speculative, speculative_bias, bias),
          wide::select(speculative, one, ld(m, &ManifoldLanes::mass_scale)),
          wide::select(speculative, zero, ld(m, &ManifoldLanes::impulse_scale))};
}

// Centroid row: total impulse Λ = (target − vn)/K at the centroid, δ = Λ/cnt per point, clamped
// so that no point's λ_n drops below 0; applies Λ to the bodies and returns δ, which joins each
// λ_n just before its normal row (zero in lanes without a centroid row: *centroid_row).
template <int B, class T = typename Pack<B>::W, class Mask = typename Pack<B>::M>
LOCKSTEP_LANES_INLINE T solve_centroid_row(const ManifoldLanes* const (&m)[B],
                                           PointLanes* const (&points)[B], Mask lanes,
                                           uint32_t point_rows, const BodyLanes<T>& d,
                                           const V3T<T>& n, T ima, T imb, bool use_bias,
                                           const ContactLanes& constants, BodyLanes<T>* b,
                                           Mask* centroid_row) {
  const T zero = Pack<B>::splat(0.0f);
  *centroid_row = lanes & (ld(m, &ManifoldLanes::centroid_mass) > zero);
  T centroid_delta = zero;
  if (wide::any(*centroid_row)) {
    T min_impulse = zero, sum_impulse = zero;
    Mask first = lanes;
    for (uint32_t k = 0; k < point_rows; ++k) {
      PointLanes* p[B];
      rows_at(points, k, p);
      const Mask active = ld(p, &PointLanes::normal_mass) != zero;
      const T impulse = ld(p, &PointLanes::normal_impulse);
      min_impulse = wide::select(active & (first | (impulse < min_impulse)), impulse, min_impulse);
      sum_impulse = wide::select(active, sum_impulse + impulse, sum_impulse);
      first = wide::and_not(first, active);
    }
    const T active_count = ld(m, &ManifoldLanes::active_count);
    const V3T<T> rn_a = ld3(m, &ManifoldLanes::centroid_rn_a);
    const V3T<T> rn_b = ld3(m, &ManifoldLanes::centroid_rn_b);
    const T vn = row_velocity(*b, n, rn_a, rn_b);
    // The mean separation moves with the centroid: n·(Δθ×c) = Δθ·(c×n).
    const T sep = ld(m, &ManifoldLanes::centroid_separation) + row_velocity(d, n, rn_a, rn_b);
    const SoftRow<T> row = soft_row<B>(m, sep, use_bias, constants);
    // The uniform mode of the points' own soft rows, solved exactly: after δ on every point
    // each of them meets −(1/K)·mass_scale·(vn + bias) − impulse_scale·λ = 0 when their
    // masses 1/K are equal (S = Σ 1/K), so the point rows that follow have nothing left to
    // share out in sweep order. With the centroid's own mass in the soft terms instead, the
    // two fixed points differed whenever S ≠ centroid_mass (the points of a turned face), and
    // the sweep handed the difference to the first point every pass: a lean (rigid rows:
    // mass_scale 1, impulse_scale 0, give the centroid's plain Newton step either way).
    const T points_mass = ld(m, &ManifoldLanes::points_mass);
    const T soft_mass = points_mass * row.mass_scale;
    const T denominator = soft_mass * ld(m, &ManifoldLanes::centroid_inv_mass) + row.impulse_scale;
    const T total = -(soft_mass * (vn + row.bias) + row.impulse_scale * sum_impulse) /
                    wide::select(*centroid_row, denominator, Pack<B>::splat(1.0f));
    T delta = total / active_count;
    delta = wide::select(delta < -min_impulse, -min_impulse, delta);
    centroid_delta = wide::select(*centroid_row, delta, zero);
    apply_normal(b, centroid_delta * active_count, ima, imb, n,
                 ld3(m, &ManifoldLanes::centroid_in_a), ld3(m, &ManifoldLanes::centroid_in_b));
  }
  return centroid_delta;
}

template <int B>
void solve_batch(const ManifoldLanes* const (&m)[B], PointLanes* const (&points)[B],
                 const EigenLanes* const (&eigens)[B], int lane_bits, bool use_bias,
                 const ContactLanes& constants, SolverVelocity* v, const SolverVelocity* deltas,
                 SolverCounters* counters) {
  using T = typename Pack<B>::W;
  using Mask = typename Pack<B>::M;
  BodyLanes<T> b, d;
  gather_pair(m, v, &b);
  gather_pair(m, deltas, &d);  // Δp, Δθ since the step began
  const Mask lanes = Pack<B>::mask(lane_bits);
  const T zero = Pack<B>::splat(0.0f);
  const T ima = ld(m, &ManifoldLanes::inv_mass_a), imb = ld(m, &ManifoldLanes::inv_mass_b);
  const V3T<T> n = ld3(m, &ManifoldLanes::normal);
  const uint32_t point_rows = m[0]->point_rows;  // the same in every batch of a Pack

  Mask centroid_row;
  const T centroid_delta = solve_centroid_row<B>(m, points, lanes, point_rows, d, n, ima, imb,
                                                 use_bias, constants, &b, &centroid_row);

  const T friction = ld(m, &ManifoldLanes::friction);
  const V3T<T> t1 = ld3(m, &ManifoldLanes::tangent1), t2 = ld3(m, &ManifoldLanes::tangent2);
  for (uint32_t k = 0; k < point_rows; ++k) {
    PointLanes* p[B];
    rows_at(points, k, p);
    const T normal_mass = ld(p, &PointLanes::normal_mass);
    const Mask active = lanes & (normal_mass != zero);
    if (!wide::any(active)) continue;
    const V3T<T> ra = ld3(p, &PointLanes::anchor_a), rb = ld3(p, &PointLanes::anchor_b);
    T impulse = ld(p, &PointLanes::normal_impulse);
    impulse = wide::select(active & centroid_row, impulse + centroid_delta, impulse);

    // Normal row at the current separation, accumulated λ_n ≥ 0.
    {
      const T vn = dot(n, relative_velocity(b, ra, rb));
      const T sep = ld(p, &PointLanes::separation) + dot(n, relative_velocity(d, ra, rb));
      const SoftRow<T> row = soft_row<B>(m, sep, use_bias, constants);
      const T lambda =
          -(normal_mass * row.mass_scale) * (vn + row.bias) - row.impulse_scale * impulse;
      T total = impulse + lambda;
      total = wide::select(total < zero, zero, total);
      // The first push of a row that may bounce records its normal velocity at impact (this
      // substep's gravity included): the bounce reflects it.
      const T max_impulse = ld(p, &PointLanes::max_normal_impulse);
      const Mask first_push = active & (max_impulse == zero) & (total > zero);
      if (wide::any(first_push)) {
        // At most one step of gravity faster than before the step: pushes from other contacts
        // in this step must not make a bounce (that would feed energy into a pile).
        const T vn0 = ld(p, &PointLanes::normal_velocity);
        const T fastest = vn0 - Pack<B>::splat(constants.gravity_step);
        T impact = wide::select(vn < fastest, fastest, vn);
        impact = wide::select(impact < vn0, impact, vn0);
        st(p, &PointLanes::normal_velocity, wide::select(first_push & (vn0 != zero), impact, vn0));
      }
      st(p, &PointLanes::max_normal_impulse,
         wide::select(active & (total > max_impulse), total, max_impulse));
      // Inactive lanes: K⁻¹ = 0 makes λ = ±0 and `applied` +0, which changes no velocity (the
      // passes never hold −0); lanes outside `lanes` only touch registers never scattered.
      const T applied = total - impulse;
      impulse = wide::select(active, total, impulse);
      st(p, &PointLanes::normal_impulse, impulse);
      apply_normal(&b, applied, ima, imb, n, ld3(p, &PointLanes::in_a), ld3(p, &PointLanes::in_b));
    }

    // Friction block with radius μ·λ_n.
    const T j1_old = ld(p, &PointLanes::tangent_impulse_x);
    const T j2_old = ld(p, &PointLanes::tangent_impulse_y);
    const T radius = friction * impulse;
    const T det = ld(p, &PointLanes::tangent_det);
    // Radius 0 and no impulse yet: J = 0 again, nothing to apply.
    const Mask idle = (radius == zero) & (j1_old == zero) & (j2_old == zero) & (det > zero);
    const Mask work = wide::and_not(active, idle);
    if (!wide::any(work)) continue;
    const T ka = ld(p, &PointLanes::tangent_a), kb = ld(p, &PointLanes::tangent_b);
    const T kc = ld(p, &PointLanes::tangent_c);
    const V3T<T> v_rel = relative_velocity(b, ra, rb);
    // v_free = v_t − K·J_old (friction_free_velocity).
    const T vf1 = dot(t1, v_rel) - (ka * j1_old + kb * j2_old);
    const T vf2 = dot(t2, v_rel) - (kb * j1_old + kc * j2_old);
    // The interior answer and the float pre-test of solve_friction_block_fast, per lane.
    const T max = Pack<B>::splat(FLT_MAX), min_max = Pack<B>::splat(-FLT_MAX);
    const Mask valid = (det > zero) & (radius > zero) & (radius <= max) & (vf1 >= min_max) &
                       (vf1 <= max) & (vf2 >= min_max) & (vf2 <= max);
    const T j01 = (kb * vf2 - kc * vf1) / det;
    const T j02 = (kb * vf1 - ka * vf2) / det;
    const T len2 = j01 * j01 + j02 * j02;
    const T r2 = radius * radius;
    const Mask in_range = valid & (r2 >= Pack<B>::splat(friction_block_detail::kBandTestMin)) &
                          (r2 <= max) & (len2 <= max);
    const Mask inside =
        work & in_range & (len2 <= Pack<B>::splat(friction_block_detail::kInsideBand) * r2);
    const Mask outside =
        in_range & (len2 >= Pack<B>::splat(friction_block_detail::kOutsideBand) * r2);
    T j1 = wide::select(inside, j01, j1_old), j2 = wide::select(inside, j02, j2_old);
    const int circle = wide::bits(work & outside);
    const int rest = wide::bits(wide::and_not(work, inside | outside));
    if ((circle | rest) != 0) {
      const EigenLanes* e[B];
      rows_at(eigens, k, e);
      solve_friction_off_interior<B>(circle, rest, wide::bits(valid), ka, kb, kc, det, vf1, vf2,
                                     radius, j01, j02, e, &j1, &j2, counters);
    }
    // Lanes without work kept J_old exactly: dj = +0 there, which changes no velocity.
    const T dj1 = j1 - j1_old, dj2 = j2 - j2_old;
    st(p, &PointLanes::tangent_impulse_x, j1);
    st(p, &PointLanes::tangent_impulse_y, j2);
    apply_tangent(&b, m, dj1, dj2, ima, imb, t1, t2, ra, rb);
  }
  scatter_pair(m, b, lane_bits, v);
}

// Calls solve(B batches, their lane bits) over every batch in order: two at once where a batch
// and the next are of one colour with as many point rows (ManifoldLanes::pairs_with_next) and
// `Pair` is true, else one; the overflow's lanes one by one.
template <bool Pair, class F1, class F2>
void for_each_batch(const ContactLanes& lanes, F1 one, F2 two) {
  for (uint32_t i = 0; i < lanes.batch_count; ++i) {
    const ManifoldLanes& m = lanes.batches[i];
    if (m.sequential != 0) {
      for (int lane = 0; lane < static_cast<int>(kLaneCount); ++lane) {
        if ((m.lanes & (1u << lane)) != 0) one(i, 1 << lane);
      }
      continue;
    }
    if (Pair && m.pairs_with_next != 0) {
      two(i, static_cast<int>(m.lanes | (lanes.batches[i + 1].lanes << kLaneCount)));
      ++i;
      continue;
    }
    one(i, static_cast<int>(m.lanes));
  }
}

template <bool Pair>
void warm_start_all(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
  const ManifoldLanes* const batches = lanes.batches.data();
  const PointLanes* const rows = lanes.point_lanes.data();
  for_each_batch<Pair>(
      lanes,
      [&](uint32_t i, int bits) {
        const ManifoldLanes* m[1] = {&batches[i]};
        const PointLanes* p[1] = {&rows[batches[i].first_point_lanes]};
        warm_start_batch<1>(m, p, bits, velocities.data());
      },
      [&](uint32_t i, int bits) {
        const ManifoldLanes* m[2] = {&batches[i], &batches[i + 1]};
        const PointLanes* p[2] = {&rows[batches[i].first_point_lanes],
                                  &rows[batches[i + 1].first_point_lanes]};
        warm_start_batch<2>(m, p, bits, velocities.data());
      });
}

template <bool Pair>
void solve_all(ContactLanes* lanes, std::span<SolverVelocity> velocities,
               std::span<const SolverVelocity> deltas, bool use_bias, SolverCounters* counters) {
  const ManifoldLanes* const batches = lanes->batches.data();
  PointLanes* const rows = lanes->point_lanes.data();
  const EigenLanes* const eigens = lanes->eigens.data();
  for_each_batch<Pair>(
      *lanes,
      [&](uint32_t i, int bits) {
        const uint32_t first = batches[i].first_point_lanes;
        const ManifoldLanes* m[1] = {&batches[i]};
        PointLanes* p[1] = {&rows[first]};
        const EigenLanes* e[1] = {&eigens[first]};
        solve_batch<1>(m, p, e, bits, use_bias, *lanes, velocities.data(), deltas.data(), counters);
      },
      [&](uint32_t i, int bits) {
        const uint32_t f0 = batches[i].first_point_lanes, f1 = batches[i + 1].first_point_lanes;
        const ManifoldLanes* m[2] = {&batches[i], &batches[i + 1]};
        PointLanes* p[2] = {&rows[f0], &rows[f1]};
        const EigenLanes* e[2] = {&eigens[f0], &eigens[f1]};
        solve_batch<2>(m, p, e, bits, use_bias, *lanes, velocities.data(), deltas.data(), counters);
      });
}

// Restitution of one batch (top of this file): every point that met this step (its largest
// accumulated λ_n > 0) and approached faster than the threshold before it (vn₀ < −threshold) is
// driven once to the rebound below, accumulated λ_n ≥ 0; its vn₀ is then cleared.
//
// The rebound. Let Δ = n·g·h·([A dynamic] − [B dynamic]) be what one substep of gravity does to
// vn, a = −Δ/h the normal deceleration it means, and s ≥ 0 the point's gap now. A substep kicks
// the velocity (v += g·h) and then moves the body with it (x += v·h), so its velocities sit half
// a substep off its positions: vn₀ is the approach half a kick before now, and the approach speed
// now is V = −vn₀ − Δ/2. The bounce is decided at a gap s (the speculative row stops the bodies
// one substep ahead of the touch): continuing at V they touch the surface at speed
// √(V² + 2·a·s), leave it at e times that, and are back at the gap s with the speed
//   R = √(e²·V² − 2·a·(1 − e²)·s)   (0 when that is negative: they never get back to s).
// R belongs to now; the next substep kicks first and moves with R + Δ/2 (half a kick on), so the
// target is vn = R − Δ/2. With s = 0 this is −e·vn₀ − (1 + e)/2·Δ; across gravity (a wall) Δ = 0
// and it is −e·vn₀ at any gap. The plain −e·vn₀ (Box2D v3's rule) left an e = 1 ball one
// substep's travel of height short at each bounce (1.3 % from 2 m); without the gap term, an
// e < 1 ball bounced from the gap as if it were the surface, up to (1 − e²)·s too high.
void restitute_batch(const ManifoldLanes& m, PointLanes* points, int lane_bits,
                     float restitution_threshold, const Vec3& gravity_substep, float inv_substep,
                     SolverVelocity* v, const SolverVelocity* deltas) {
  const ManifoldLanes* const ms[1] = {&m};
  BodyLanes<W> b, d;
  gather_pair(ms, v, &b);
  gather_pair(ms, deltas, &d);  // Δp, Δθ since the step began: the gap now
  const M lanes = wide::lane_mask8(lane_bits);
  const W zero = wide::splat8(0.0f), min_speed = wide::splat8(-restitution_threshold);
  const W ima = wide::load8(m.inv_mass_a), imb = wide::load8(m.inv_mass_b);
  const W e = wide::load8(m.restitution);
  const V3 n = load3(m.normal);
  // Δ per lane: gravity moves only dynamic bodies (inverse mass > 0).
  const V3 g = {wide::splat8(gravity_substep.x), wide::splat8(gravity_substep.y),
                wide::splat8(gravity_substep.z)};
  const W one = wide::splat8(1.0f), half = wide::splat8(0.5f), two = wide::splat8(2.0f);
  const W kick =
      dot(n, g) * (wide::select(ima != zero, one, zero) - wide::select(imb != zero, one, zero));
  const W decel = -kick * wide::splat8(inv_substep);
  const W half_kick = half * kick;
  // Only the lanes prepare marked: a lane's answer must not depend on which others share its call.
  const M candidates = wide::lane_mask8(static_cast<int>(m.bounce_lanes));
  for (uint32_t k = 0; k < m.point_rows; ++k) {
    PointLanes& p = points[k];
    const W normal_mass = wide::load8(p.normal_mass);
    const W vn0 = wide::load8(p.normal_velocity);
    const M bounce = lanes & candidates & (normal_mass != zero) & (e > zero) & (vn0 < min_speed) &
                     (wide::load8(p.max_normal_impulse) > zero);
    if (!wide::any(bounce)) continue;
    const V3 ra = load3(p.anchor_a), rb = load3(p.anchor_b);
    const W vn = dot(n, relative_velocity(b, ra, rb));
    W gap = wide::load8(p.separation) + dot(n, relative_velocity(d, ra, rb));
    gap = wide::select(gap > zero, gap, zero);
    const W approach = -vn0 - half_kick;
    W rebound2 = (e * e) * (approach * approach) - ((two * decel) * (one - e * e)) * gap;
    rebound2 = wide::select(rebound2 > zero, rebound2, zero);
    const W target = wide::sqrt(rebound2) - half_kick;
    const W impulse = wide::load8(p.normal_impulse);
    const W lambda = normal_mass * (target - vn);
    W total = impulse + lambda;
    total = wide::select(total < zero, zero, total);
    const W applied = wide::select(bounce, total - impulse, zero);
    // The bounce is not added to the accumulated impulse: the next substeps warm start with the
    // impulse that stopped the bodies, not with the bounce on top of it (which would push again).
    wide::store(p.normal_velocity, wide::select(bounce, zero, vn0));
    apply_normal(&b, applied, ima, imb, n, load3(p.in_a), load3(p.in_b));
  }
  scatter_pair(ms, b, lane_bits, v);
}

void restitute_all(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                   std::span<const SolverVelocity> deltas) {
  PointLanes* const rows = lanes->point_lanes.data();
  for_each_batch<false>(
      *lanes,
      [&](uint32_t i, int bits) {
        const ManifoldLanes& m = lanes->batches[i];
        if ((static_cast<uint32_t>(bits) & m.bounce_lanes) == 0) return;
        restitute_batch(m, &rows[m.first_point_lanes], bits, lanes->restitution_threshold,
                        lanes->gravity_substep, lanes->inv_substep, velocities.data(),
                        deltas.data());
      },
      [](uint32_t, int) {});
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

// ---- prepare ------------------------------------------------------------------------------
// (Here rather than in contact_lanes.cpp so that the AVX kernel compiles it too: bench/README.md
// has its share of a step with either.)
//
// The prepare formulas (top of this file) on the eight lanes of a batch: effective masses, K_t and
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
  wide::store(m->restitution, restitution);
  // Soft coefficients: against a static or kinematic body the spring is twice as stiff.
  const M both_dynamic = (ima > zero) & (imb > zero);
  wide::store(m->bias_rate, wide::select(both_dynamic, wide::splat8(s.contact.bias_rate),
                                         wide::splat8(s.static_contact.bias_rate)));
  wide::store(m->mass_scale, wide::select(both_dynamic, wide::splat8(s.contact.mass_scale),
                                          wide::splat8(s.static_contact.mass_scale)));
  wide::store(m->impulse_scale, wide::select(both_dynamic, wide::splat8(s.contact.impulse_scale),
                                             wide::splat8(s.static_contact.impulse_scale)));
  const W min_speed = wide::splat8(-s.restitution_threshold);
  const W min_inverse_mass = wide::splat8(kMinInverseMass);
  M bounce_lanes = wide::lane_mask8(0);

  V3 sum_a{zero, zero, zero}, sum_b{zero, zero, zero};
  W sum_separation = zero, active = zero, points_mass = zero;
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

    // Separation and the normal velocity before the step (restitution).
    const W sep = wide::load8(in.separation[k]);
    const V3 v_rel = (va + cross(wa, ra)) - (vb + cross(wb, rb));
    const W vn = dot(n, v_rel);
    wide::store(p.separation, wide::select(has_point, sep, zero));
    wide::store(p.normal_velocity, wide::select(has_point, vn, zero));
    wide::store(p.max_normal_impulse, zero);
    bounce_lanes = bounce_lanes | (active_row & (restitution > zero) & (vn < min_speed));

    // Centroid sums over the active points.
    sum_a = select3(active_row, sum_a + ra, sum_a);
    sum_b = select3(active_row, sum_b + rb, sum_b);
    sum_separation = wide::select(active_row, sum_separation + sep, sum_separation);
    active = wide::select(active_row, active + one, active);
    points_mass = wide::select(active_row, points_mass + one / k_n, points_mass);
  }
  m->bounce_lanes = static_cast<uint32_t>(wide::bits(bounce_lanes));

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
  wide::store(m->centroid_separation, wide::select(centroid, sum_separation * inv_active, zero));
  wide::store(m->centroid_mass, wide::select(centroid_ok, one / k_c, zero));
  wide::store(m->centroid_inv_mass, wide::select(centroid_ok, k_c, zero));
  wide::store(m->points_mass, wide::select(centroid_ok, points_mass, zero));
}
