// The contact solver's fast paths: each must give what the plain formulation
// gives. Bit-for-bit where the fast path claims the same bits (the friction block's inline and
// prepared entry points, the float pre-test of the disk test); within a stated tolerance where it
// is a reformulation (the lanes' rows, prepared and solved through contact_lanes.h, against the
// anchor formulas recomputed here in double, independently of the solver).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "solver/contact_lanes.h"
#include "solver/contact_solver.h"
#include "solver/friction_block.h"
#include "test_math.h"

namespace {

using lockstep::sim::BodySolverState;
using lockstep::sim::ContactConstraint;
using lockstep::sim::ContactPoint;
using lockstep::sim::FrictionBlockResult;
using lockstep::sim::FrictionEigen;
using lockstep::sim::Mat3;
using lockstep::sim::SolverCounters;
using lockstep::sim::SolverSettings;
using lockstep::sim::SolverVelocity;
using lockstep::sim::TangentMass;
using lockstep::sim::Vec2;
using lockstep::sim::Vec3;

// The test generator (test_math.h) with this file's shapes of sample.
struct SplitMix64 : lockstep::testing::TestRng {
  float range(double lo, double hi) { return static_cast<float>(lo + (hi - lo) * uniform()); }
  // |x| log-uniform in [2^lo, 2^hi], random sign.
  float magnitude(int lo, int hi) {
    const float m = std::ldexp(1.0f + static_cast<float>(uniform()),
                               lo + static_cast<int>(uniform() * (hi - lo)));
    return (next() & 1) ? m : -m;
  }
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

bool same_result(const FrictionBlockResult& a, const FrictionBlockResult& b) {
  return a.status == b.status && bits(a.impulse.x) == bits(b.impulse.x) &&
         bits(a.impulse.y) == bits(b.impulse.y) && bits(a.lambda) == bits(b.lambda);
}

// x² + y² ≤ R² for the float values (exact in double, TwoSum for the tie), and the float length
// sqrt(x·x + y·y) ≤ R while x·x + y·y is a normal float: the disk test's contract, written
// independently of friction_block.cpp.
bool reference_inside(Vec2 j, float radius) {
  if (!std::isfinite(j.x) || !std::isfinite(j.y)) return false;
  const double x2 = double{j.x} * j.x, y2 = double{j.y} * j.y, r2 = double{radius} * radius;
  const double s = x2 + y2, bv = s - x2, av = s - bv, err = (x2 - av) + (y2 - bv);
  if (!(s < r2 || (s == r2 && err <= 0))) return false;
  const float len2 = j.x * j.x + j.y * j.y;
  if (!(len2 >= FLT_MIN && len2 <= FLT_MAX)) return true;
  return std::sqrt(len2) <= radius;
}

TEST(SimSolverOpt, InsideDiskPretestAgreesWithTheExactTest) {
  namespace detail = lockstep::sim::friction_block_detail;
  SplitMix64 rng{0x1234};
  int decided_by_pretest = 0;
  for (int i = 0; i < 200000; ++i) {
    const float radius = std::fabs(rng.magnitude(-70, 70));
    // |J| on the circle, at both edges of the pre-test's bands (|J|/R = sqrt(1 − 2^-21) and
    // sqrt(1 + 2^-20), where a few ulps of rounding decide), at 1 ± 1 %, and far from it; each
    // moved by up to ±2 ulps of 1.
    const double scales[] = {1.0,  1.0 - 2.4e-7, 1.0 + 4.8e-7, 1.0 - 1.2e-7, 1.0 + 2.4e-7,
                             0.99, 1.01,         1e-3,         1e3};
    const double scale = scales[rng.next() % 9] * (1.0 + 2.4e-7 * (rng.uniform() - 0.5));
    const double ux = rng.uniform() - 0.5, uy = rng.uniform() - 0.5;
    const double inv = 1.0 / std::sqrt(ux * ux + uy * uy);
    const Vec2 j{static_cast<float>(ux * inv * scale * radius),
                 static_cast<float>(uy * inv * scale * radius)};
    const bool expected = reference_inside(j, radius);
    ASSERT_EQ(detail::inside_disk(j, radius), expected) << j.x << " " << j.y << " " << radius;
    ASSERT_EQ(detail::inside_disk_exact(j, radius), expected);
    const float len2 = j.x * j.x + j.y * j.y;
    const float r2 = radius * radius;
    if (r2 >= detail::kBandTestMin &&
        (len2 <= detail::kInsideBand * r2 || len2 >= detail::kOutsideBand * r2)) {
      ++decided_by_pretest;
    }
  }
  EXPECT_GT(decided_by_pretest, 50000);  // the pre-test does decide most samples
  // Edge cases: zero, denormal and huge values, non-finite ones.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float cases[][3] = {{0, 0, 1},
                            {1e-30f, 0, 1e-30f},
                            {1e-30f, 1e-30f, 1e-30f},
                            {1e-45f, 0, 1e-45f},
                            {1e20f, 1e20f, 2e20f},
                            {3e38f, 0, 3.1e38f},
                            {3e38f, 3e38f, 3.4e38f},
                            {inf, 0, 1},
                            {nan, 0, 1},
                            {1, 0, 1},
                            {0.5f, 0.5f, 1e-20f},
                            {1e-20f, 0, 1e-19f}};
  for (const auto& c : cases) {
    const Vec2 j{c[0], c[1]};
    EXPECT_EQ(detail::inside_disk(j, c[2]), reference_inside(j, c[2]))
        << c[0] << " " << c[1] << " " << c[2];
  }
}

// The float proof of the boundary answer (inside_disk_aimed) may say "undecided" but never
// "inside" for a point outside: checked against the independent reference near the circle, on
// both sides of its 2^-21 band, with subnormal components and with R² below its 2^-100 floor.
TEST(SimSolverOpt, AimedDiskTestNeverClaimsAPointOutside) {
  namespace detail = lockstep::sim::friction_block_detail;
  SplitMix64 rng{0xa1bed};
  int proven = 0, aimed = 0, aimed_proven = 0;
  for (int i = 0; i < 200000; ++i) {
    const float radius = std::fabs(rng.magnitude(-70, 70));
    // 1 − 2^-20 is where solve_boundary aims; the others straddle the band and the circle.
    const double scales[] = {1.0 - 0x1.0p-20,
                             1.0 - 0x1.0p-21,
                             1.0 - 0x1.0p-22,
                             1.0,
                             1.0 + 0x1.0p-23,
                             1.0 - 0x1.0p-19,
                             0.5};
    const int pick = static_cast<int>(rng.next() % 7);
    const double scale = scales[pick] * (1.0 + 0x1.0p-24 * (rng.uniform() - 0.5));
    double ux = rng.uniform() - 0.5, uy = rng.uniform() - 0.5;
    if (rng.next() % 8 == 0) uy *= 0x1.0p-40;  // a component far smaller (subnormal for small R)
    const double inv = 1.0 / std::sqrt(ux * ux + uy * uy);
    const Vec2 j{static_cast<float>(ux * inv * scale * radius),
                 static_cast<float>(uy * inv * scale * radius)};
    const bool claim = detail::inside_disk_aimed(j, radius);
    if (claim) {
      ASSERT_TRUE(reference_inside(j, radius)) << j.x << " " << j.y << " " << radius;
      ++proven;
    }
    // Normal range (R² between 2^-100 and FLT_MAX): the aimed point is always proven inside.
    const bool normal_range = radius >= 0x1.0p-49f && radius <= 0x1.0p+63f;
    if (pick == 0 && normal_range) {
      ++aimed;
      if (claim) ++aimed_proven;
    }
    // R² clearly below 2^-100 or above FLT_MAX: undecided, left to the exact test.
    if (radius < 0x1.0p-51f || radius > 0x1.0p+65f) {
      EXPECT_FALSE(claim) << radius;
    }
  }
  EXPECT_GT(proven, 50000);
  EXPECT_GT(aimed, 10000);
  EXPECT_EQ(aimed_proven, aimed);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(detail::inside_disk_aimed({nan, 0}, 1));
  EXPECT_FALSE(detail::inside_disk_aimed({inf, 0}, 1));
  EXPECT_FALSE(detail::inside_disk_aimed({0, 0}, 0));
  EXPECT_FALSE(detail::inside_disk_aimed({0, 0}, nan));
  EXPECT_FALSE(detail::inside_disk_aimed({1, 0}, 1));
  EXPECT_TRUE(detail::inside_disk_aimed({0, 0}, 1));
}

// Boundary answers across magnitudes: the float proof decides them (the exact test runs only for
// R outside its range), and they satisfy the disk contract as the reference decides it.
TEST(SimSolverOpt, BoundaryAnswersAreProvenInsideByTheFloatTest) {
  namespace detail = lockstep::sim::friction_block_detail;
  SplitMix64 rng{0xb0a7d};
  int boundary = 0, proven = 0;
  for (int i = 0; i < 100000; ++i) {
    const float scale = std::fabs(rng.magnitude(-20, 20));
    const float a = scale * rng.range(0.05, 2), c = scale * rng.range(0.05, 2);
    const float b = std::sqrt(a * c) * rng.range(-0.99, 0.99);
    const TangentMass k{a, b, c};
    const Vec2 v{rng.magnitude(-20, 20), rng.magnitude(-20, 20)};
    const float radius = std::fabs(rng.magnitude(-20, 20));
    const FrictionBlockResult r = lockstep::sim::solve_friction_block(k, v, radius);
    ASSERT_TRUE(r.solved());
    ASSERT_TRUE(reference_inside(r.impulse, radius)) << i;
    if (r.status != lockstep::sim::FrictionBlockStatus::boundary) continue;
    ++boundary;
    if (detail::inside_disk_aimed(r.impulse, radius)) ++proven;
  }
  EXPECT_GT(boundary, 10000);
  // R in [2^-20, 2^21): R² always in the proof's range; the answer aims 2^-20 inside.
  EXPECT_EQ(proven, boundary);
}

// Random problems across magnitudes, with invalid ones mixed in: the inline fast path, the
// prepared entry point (with its eigen cache cold and warm) and the public one agree bit for bit.
TEST(SimSolverOpt, FastAndPreparedFrictionBlockGiveThePublicSolversBits) {
  SplitMix64 rng{0xfeed};
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int boundary = 0, interior = 0, rejected = 0;
  for (int i = 0; i < 100000; ++i) {
    const float scale = std::fabs(rng.magnitude(-20, 20));
    const float a = scale * rng.range(0.05, 2), c = scale * rng.range(0.05, 2);
    const float b = std::sqrt(a * c) * rng.range(-0.99, 0.99);
    TangentMass k{a, b, c};
    Vec2 v{rng.magnitude(-30, 30), rng.magnitude(-30, 30)};
    float radius = std::fabs(rng.magnitude(-30, 30));
    switch (rng.next() % 16) {  // invalid or special inputs now and then
      case 0:
        radius = 0;
        break;
      case 1:
        radius = -radius;
        break;
      case 2:
        v.x = nan;
        break;
      case 3:
        v.y = inf;
        break;
      case 4:
        k.b = 2 * std::sqrt(a * c);
        break;  // indefinite
      case 5:
        radius = inf;
        break;
      default:
        break;
    }
    const FrictionBlockResult expected = lockstep::sim::solve_friction_block(k, v, radius);
    const float det = lockstep::sim::friction_block_det(k);
    FrictionEigen eigen;  // cold cache
    const FrictionBlockResult fast =
        lockstep::sim::solve_friction_block_fast(k, det, &eigen, v, radius);
    ASSERT_TRUE(same_result(fast, expected)) << i;
    // Warm cache: the decomposition computed above (if any) is reused.
    const FrictionBlockResult again =
        lockstep::sim::solve_friction_block_prepared(k, det, &eigen, v, radius);
    ASSERT_TRUE(same_result(again, expected)) << i;
    if (expected.status == lockstep::sim::FrictionBlockStatus::boundary) ++boundary;
    if (expected.status == lockstep::sim::FrictionBlockStatus::interior) ++interior;
    if (!expected.solved()) ++rejected;
  }
  // Every path was exercised.
  EXPECT_GT(boundary, 1000);
  EXPECT_GT(interior, 1000);
  EXPECT_GT(rejected, 1000);
}

TEST(SimSolverOpt, FrictionEigenIsTheScaledEigenDecomposition) {
  SplitMix64 rng{77};
  for (int i = 0; i < 10000; ++i) {
    const float scale = std::fabs(rng.magnitude(-20, 20));
    const float a = scale * rng.range(0.05, 2), c = scale * rng.range(0.05, 2);
    const float b = std::sqrt(a * c) * rng.range(-0.9, 0.9);
    const FrictionEigen e = lockstep::sim::friction_block_eigen({a, b, c});
    // K·e1 = s·k1·e1 and k1 + k2 = (a + c)/s, in double; float inputs, so ~1e-6 relative.
    const double s = e.s, ex = e.e1.x, ey = e.e1.y;
    EXPECT_NEAR(ex * ex + ey * ey, 1.0, 1e-6);
    const double kx = double{a} * ex + double{b} * ey, ky = double{b} * ex + double{c} * ey;
    const double lambda1 = s * e.k1;
    const double tol = 1e-5 * (double{a} + double{c});
    EXPECT_NEAR(kx, lambda1 * ex, tol);
    EXPECT_NEAR(ky, lambda1 * ey, tol);
    EXPECT_GE(e.k1, e.k2);
    EXPECT_NEAR(s * (double{e.k1} + e.k2), double{a} + double{c}, tol);
  }
}

// ---- the solver's rows (contact_lanes), against the anchor formulas in double
// ------------------------------------

using lockstep::testing::cross;
using lockstep::testing::d3;
using lockstep::testing::dot;
using V3d = lockstep::testing::D3;

V3d mul(const Mat3& m, V3d v) {
  return v.x * d3(m.c0) + v.y * d3(m.c1) + v.z * d3(m.c2);
}

// A symmetric positive definite inverse inertia with off-diagonal terms (1/(kg·m²)).
Mat3 inverse_inertia(float d0, float d1, float d2, float off) {
  return {{d0, off, 0.5f * off}, {off, d1, -off}, {0.5f * off, -off, d2}};
}

struct OnePointScene {
  std::vector<BodySolverState> bodies{2};
  ContactConstraint c;
  ContactPoint p;
  lockstep::sim::ContactLanes lanes;
  std::vector<SolverVelocity> velocities{3};  // the two bodies and the solver's zero slot
  SolverSettings settings;
  SolverCounters counters;

  OnePointScene(float friction, float separation, Vec3 va, Vec3 wa, Vec3 vb, Vec3 wb) {
    bodies[0] = {va, wa, 1.0f / 3.0f, inverse_inertia(0.9f, 1.3f, 0.7f, 0.15f)};
    bodies[1] = {vb, wb, 1.0f / 5.0f, inverse_inertia(0.4f, 0.6f, 0.5f, -0.05f)};
    c.key = 1;
    c.slot_a = 0;
    c.slot_b = 1;
    c.normal = Vec3{0.36f, 0.8f, 0.48f};  // unit
    lockstep::sim::tangent_basis(c.normal, &c.tangent1, &c.tangent2);
    c.friction = friction;
    c.first_point = 0;
    c.point_count = 1;
    p.anchor_a = Vec3{0.3f, -0.45f, 0.2f};
    p.anchor_b = Vec3{-0.25f, 0.5f, 0.35f};
    p.separation_m = separation;
    // One substep of 1/60 s, contact hertz 30 (a quarter of the substep rate is 15 Hz: capped).
    settings =
        lockstep::sim::make_solver_settings(1.0f / 60.0f, 1, 30.0f, 10.0f, 0.005f, 2.0f, 1.0f);
  }

  void prepare_and_solve_once() {
    lockstep::sim::contact_lanes_init(&lanes, 2, 1);
    lockstep::sim::build_contact_lanes({&c, 1}, bodies, 2, &lanes);
    lockstep::sim::prepare_contact_lanes({&c, 1}, {&p, 1}, bodies, settings, &lanes, &counters);
    lockstep::sim::gather_velocities(bodies, {velocities.data(), 2});
    lockstep::sim::warm_start_wide(lanes, velocities);
    const std::vector<SolverVelocity> deltas(3, SolverVelocity{});  // nothing moved yet
    lockstep::sim::solve_wide(&lanes, velocities, deltas, true, &counters);
    lockstep::sim::unpack_contact_lanes(lanes, {&p, 1});
  }

  // v_rel = (vA + ωA×rA) − (vB + ωB×rB) after the pass, in double from the anchors.
  V3d relative_velocity() const {
    const SolverVelocity& a = velocities[0];
    const SolverVelocity& b = velocities[1];
    return (d3(a.linear) + cross(d3(a.angular), d3(p.anchor_a))) -
           (d3(b.linear) + cross(d3(b.angular), d3(p.anchor_b)));
  }
};

TEST(SimSolverOpt, NormalRowReachesItsTargetAndConservesMomentum) {
  // Approaching at ~1 m/s with spin, 1 cm overlap, no friction: one point, so one pass solves the
  // soft row exactly (up to float rounding). From a spring of 15 Hz (30 Hz capped at a quarter of
  // the 60 Hz substep rate), ζ = 10, over h = 1/60 s, computed here in double: with vn₀ the
  // normal velocity before the pass and no accumulated impulse yet,
  //   vn = vn₀ − mass_scale·(vn₀ + bias),  bias = bias_rate·(s + slop) (≥ −2 m/s).
  OnePointScene s(0.0f, -0.01f, {0.1f, -0.6f, 0.2f}, {0.5f, -0.3f, 0.8f}, {-0.2f, 0.4f, 0.1f},
                  {-0.2f, 0.6f, 0.1f});
  const V3d before =
      (d3(Vec3{0.1f, -0.6f, 0.2f}) + cross(d3(Vec3{0.5f, -0.3f, 0.8f}), d3(s.p.anchor_a))) -
      (d3(Vec3{-0.2f, 0.4f, 0.1f}) + cross(d3(Vec3{-0.2f, 0.6f, 0.1f}), d3(s.p.anchor_b)));
  s.prepare_and_solve_once();
  const double h = 1.0 / 60.0, omega = 2.0 * 3.14159265358979 * 15.0, zeta = 10.0;
  const double a1 = 2.0 * zeta + h * omega, a2 = h * omega * a1, a3 = 1.0 / (1.0 + a2);
  const double bias = (omega / a1) * (-0.01 + 0.005), mass_scale = a2 * a3;
  const double vn0 = dot(d3(s.c.normal), before);
  const double target = vn0 - mass_scale * (vn0 + bias);
  const V3d v_rel = s.relative_velocity();
  // Float rounding of ~20 operations on O(1) values: 1e-5 m/s.
  EXPECT_NEAR(dot(d3(s.c.normal), v_rel), target, 1e-5);
  EXPECT_NEAR(
      dot(d3(s.c.tangent1), v_rel),
      dot(d3(s.c.tangent1),
          (d3(Vec3{0.1f, -0.6f, 0.2f}) + cross(d3(Vec3{0.5f, -0.3f, 0.8f}), d3(s.p.anchor_a))) -
              (d3(Vec3{-0.2f, 0.4f, 0.1f}) + cross(d3(Vec3{-0.2f, 0.6f, 0.1f}), d3(s.p.anchor_b)))),
      0.2);  // loose: the normal impulse also moves tangent velocity through the spin
  // The impulse P = λ·n: A gains mA⁻¹P and IA⁻¹(rA×P), B loses mB⁻¹P and IB⁻¹(rB×P).
  const double lambda = s.p.normal_impulse;
  EXPECT_GT(lambda, 0.0);
  const V3d impulse = lambda * d3(s.c.normal);
  const V3d dva = d3(s.velocities[0].linear) - d3(s.bodies[0].linear_velocity);
  const V3d dwa = d3(s.velocities[0].angular) - d3(s.bodies[0].angular_velocity);
  const V3d dvb = d3(s.velocities[1].linear) - d3(s.bodies[1].linear_velocity);
  const V3d dwb = d3(s.velocities[1].angular) - d3(s.bodies[1].angular_velocity);
  const V3d expect_dwa = mul(s.bodies[0].inv_inertia_world, cross(d3(s.p.anchor_a), impulse));
  const V3d expect_dwb = mul(s.bodies[1].inv_inertia_world, cross(d3(s.p.anchor_b), impulse));
  const double tol = 1e-6;
  for (int axis = 0; axis < 3; ++axis) {
    auto at = [axis](V3d v) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); };
    EXPECT_NEAR(at(dva), at(impulse) / 3.0, tol);
    EXPECT_NEAR(at(dvb), -at(impulse) / 5.0, tol);
    EXPECT_NEAR(at(dwa), at(expect_dwa), tol);
    EXPECT_NEAR(at(dwb), -at(expect_dwb), tol);
  }
}

TEST(SimSolverOpt, FrictionBlockStopsTheSlidingInsideTheCone) {
  // Resting contact (no overlap beyond the slop) sliding at ~0.3 m/s with μ = 4: the interior
  // answer of the block removes the tangent velocity exactly (up to float rounding). The row
  // and the block are coupled through the rotations, so vn moves again afterwards (not checked).
  OnePointScene s(4.0f, -0.002f, {0.3f, -0.5f, -0.1f}, {0.05f, 0.02f, -0.04f}, {0, 0, 0},
                  {0, 0, 0});
  s.prepare_and_solve_once();
  const V3d v_rel = s.relative_velocity();
  const ContactPoint& sp = s.p;
  const double jt = std::sqrt(double{sp.tangent_impulse.x} * sp.tangent_impulse.x +
                              double{sp.tangent_impulse.y} * sp.tangent_impulse.y);
  // Well inside the cone (radius μ·λ_n): the interior case.
  ASSERT_LT(jt, 0.9 * 4.0 * double{sp.normal_impulse});
  EXPECT_NEAR(dot(d3(s.c.tangent1), v_rel), 0.0, 1e-5);
  EXPECT_NEAR(dot(d3(s.c.tangent2), v_rel), 0.0, 1e-5);
}

TEST(SimSolverOpt, NonDynamicBodiesAreNeverWritten) {
  // B kinematic (inverse mass and inertia 0) moving: the pass must not touch its velocities, and
  // scatter_velocities must not copy anything into it.
  OnePointScene s(0.5f, -0.01f, {0, -1, 0}, {0.1f, 0, 0}, {0.25f, 0.5f, 0}, {0, 0.3f, 0});
  s.bodies[1].inv_mass = 0;
  s.bodies[1].inv_inertia_world = Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  s.prepare_and_solve_once();
  EXPECT_EQ(bits(s.velocities[1].linear.x), bits(0.25f));
  EXPECT_EQ(bits(s.velocities[1].linear.y), bits(0.5f));
  EXPECT_EQ(bits(s.velocities[1].angular.y), bits(0.3f));
  s.velocities[1].linear = Vec3{9, 9, 9};  // scatter must ignore a non-dynamic slot
  lockstep::sim::scatter_velocities(s.velocities, s.bodies);
  EXPECT_EQ(s.bodies[1].linear_velocity.x, 0.25f);
  EXPECT_EQ(s.bodies[0].linear_velocity.x, s.velocities[0].linear.x);
  EXPECT_GT(s.p.normal_impulse, 0.0f);
}

}  // namespace
