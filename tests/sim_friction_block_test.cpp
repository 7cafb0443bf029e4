// The exact 2x2 friction block (docs/physics.md, section 3).
//
// Expected values come from a reference case worked out independently in double precision
// (docs/physics.md, section 3), from
// closed forms computed here in double, or from an independent double-precision solver in this
// file (bisection on λ with the 2x2 adjugate) — never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "solver/friction_block.h"
#include "test_math.h"

namespace {

using lockstep::sim::friction_block_objective;
using lockstep::sim::friction_free_velocity;
using lockstep::sim::FrictionBlockResult;
using lockstep::sim::FrictionBlockStatus;
using lockstep::sim::solve_friction_block;
using lockstep::sim::TangentMass;
using lockstep::sim::Vec2;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The test generator (test_math.h) with this file's shapes of sample.
struct SplitMix64 : lockstep::testing::TestRng {
  double range(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // A uniformly distributed unit vector, by rejection (no trig).
  void unit(double* c, double* s) {
    for (;;) {
      double x = range(-1, 1), y = range(-1, 1), r2 = x * x + y * y;
      if (r2 > 1e-4 && r2 <= 1) {
        double inv = 1.0 / std::sqrt(r2);
        *c = x * inv;
        *s = y * inv;
        return;
      }
    }
  }
};

struct Vec2d {
  double x = 0, y = 0;
};

double norm(Vec2d a) {
  return std::sqrt(a.x * a.x + a.y * a.y);
}
Vec2d to_d(Vec2 a) {
  return {a.x, a.y};
}

// F(J) = ½ JᵀK J + vᵀJ in double (J).
double objective(TangentMass k, Vec2 v, Vec2d j) {
  double kx = double{k.a} * j.x + double{k.b} * j.y, ky = double{k.b} * j.x + double{k.c} * j.y;
  return 0.5 * (j.x * kx + j.y * ky) + double{v.x} * j.x + double{v.y} * j.y;
}

// KKT stationarity residual |K J + v + λ J| in double (m/s).
double kkt_residual(TangentMass k, Vec2 v, Vec2 j, float lambda) {
  double jx = j.x, jy = j.y, l = lambda;
  double rx = double{k.a} * jx + double{k.b} * jy + double{v.x} + l * jx;
  double ry = double{k.b} * jx + double{k.c} * jy + double{v.y} + l * jy;
  return std::sqrt(rx * rx + ry * ry);
}

// Exact x² + y² ≤ R² for float x, y, R: the squares are exact in double and TwoSum gives the
// rounding error of their sum, so the comparison has no tolerance at all.
bool exactly_inside(Vec2 j, float radius) {
  double x2 = double{j.x} * j.x, y2 = double{j.y} * j.y, r2 = double{radius} * radius;
  double s = x2 + y2;
  double bv = s - x2, av = s - bv;
  double err = (x2 - av) + (y2 - bv);  // x2 + y2 == s + err exactly
  return s < r2 || (s == r2 && err <= 0);
}

bool finite(const FrictionBlockResult& r) {
  return std::isfinite(r.impulse.x) && std::isfinite(r.impulse.y) && std::isfinite(r.lambda);
}

// Independent double-precision solve: J(λ) = (K + λI)⁻¹(−v) by the 2x2
// adjugate, interior test, then bisection on λ with the upper end kept feasible.
struct Reference {
  Vec2d j;
  double lambda = 0;
  bool interior = false;
};
Vec2d shifted_solve(double a, double b, double c, double vx, double vy, double lambda) {
  double al = a + lambda, cl = c + lambda, det = al * cl - b * b;
  return {(-cl * vx + b * vy) / det, (b * vx - al * vy) / det};
}
Reference reference_solve(TangentMass k, Vec2 v, float radius) {
  double a = k.a, b = k.b, c = k.c, vx = v.x, vy = v.y, r = radius;
  Reference out;
  out.j = shifted_solve(a, b, c, vx, vy, 0);
  if (norm(out.j) <= r) {
    out.interior = true;
    return out;
  }
  double lo = 0, hi = 1;
  while (norm(shifted_solve(a, b, c, vx, vy, hi)) > r) {
    hi *= 2;
  }
  for (int i = 0; i < 100; ++i) {
    double mid = lo + (hi - lo) * 0.5;
    if (norm(shifted_solve(a, b, c, vx, vy, mid)) > r) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out.j = shifted_solve(a, b, c, vx, vy, hi);
  out.lambda = hi;
  return out;
}

// Checks that an invalid input is rejected cleanly: the status, zero impulse, zero multiplier.
void expect_rejected(TangentMass k, Vec2 v, float radius, FrictionBlockStatus status) {
  FrictionBlockResult r = solve_friction_block(k, v, radius);
  EXPECT_EQ(r.status, status) << "K=(" << k.a << "," << k.b << "," << k.c << ") v=(" << v.x << ","
                              << v.y << ") R=" << radius;
  EXPECT_FALSE(r.solved());
  EXPECT_EQ(r.impulse.x, 0.0f);
  EXPECT_EQ(r.impulse.y, 0.0f);
  EXPECT_EQ(r.lambda, 0.0f);
}

// ---- The reference case -----------------------------------------------------------------------

TEST(FrictionBlock, ReferenceCaseBeatsRadialClamping) {
  const TangentMass k{1, 0, 4};  // kg⁻¹
  const Vec2 v{-2, -2};          // m/s
  const float radius = 1;        // N·s
  FrictionBlockResult r = solve_friction_block(k, v, radius);
  ASSERT_EQ(r.status, FrictionBlockStatus::boundary);
  ASSERT_TRUE(r.solved());

  // The reference's six-digit figures; 1e-5 covers their rounding and float solving.
  EXPECT_NEAR(r.impulse.x, 0.922110, 1e-5);
  EXPECT_NEAR(r.impulse.y, 0.386927, 1e-5);
  EXPECT_NEAR(r.lambda, 1.168938, 1e-5);
  const float f_block = friction_block_objective(k, v, r.impulse);
  EXPECT_NEAR(f_block, -1.893506, 1e-5);
  EXPECT_TRUE(exactly_inside(r.impulse, radius));

  // Radial clamping of the unconstrained impulse, computed here: J0 = −K⁻¹v = (2, 0.5).
  const Vec2d j0{2.0 / 1.0, 2.0 / 4.0};
  const double j0_len = norm(j0);
  ASSERT_GT(j0_len, radius);
  const Vec2d clamped{j0.x * radius / j0_len, j0.y * radius / j0_len};
  EXPECT_NEAR(clamped.x, 0.970143, 1e-6);
  EXPECT_NEAR(clamped.y, 0.242536, 1e-6);
  const double f_clamped = objective(k, v, clamped);
  EXPECT_NEAR(f_clamped, -1.837121, 1e-6);
  // The block is at least 0.05 J better than the clamp with the same friction budget.
  EXPECT_LE(double{f_block}, f_clamped - 0.05);
  EXPECT_LE(objective(k, v, to_d(r.impulse)), f_clamped - 0.05);

  // Stationarity: K J + v + λ J = 0. 1e-5 m/s: a few float ulps of |v| ≈ 2.8 m/s and of λ.
  EXPECT_LE(kkt_residual(k, v, r.impulse, r.lambda), 1e-5);
  // The clamp is not stationary for any λ ≥ 0 (why it is rejected): the gradient K J + v is
  // not anti-parallel to J. Its component along the tangent of the circle is far from zero.
  double gx = clamped.x + v.x, gy = 4 * clamped.y + v.y;
  EXPECT_GT(std::abs(-gx * clamped.y + gy * clamped.x), 0.1);
}

// ---- Single cases ------------------------------------------------------------------------------

TEST(FrictionBlock, InteriorSolutionIsUnconstrainedMinimiser) {
  const TangentMass k{2.0f, 0.5f, 1.0f};
  const Vec2 v{0.3f, -0.2f};
  const float radius = 5;
  FrictionBlockResult r = solve_friction_block(k, v, radius);
  ASSERT_EQ(r.status, FrictionBlockStatus::interior);
  EXPECT_EQ(r.lambda, 0.0f);
  // J0 = −K⁻¹v by hand: det = 1.75, K⁻¹ = [[1, −0.5], [−0.5, 2]] / 1.75.
  const double jx = -(1.0 * 0.3 - 0.5 * -0.2) / 1.75, jy = -(-0.5 * 0.3 + 2.0 * -0.2) / 1.75;
  // 1e-6 N·s: float rounding of inputs and of the 2x2 solve (|J| ≈ 0.3).
  EXPECT_NEAR(r.impulse.x, jx, 1e-6);
  EXPECT_NEAR(r.impulse.y, jy, 1e-6);
  EXPECT_LE(kkt_residual(k, v, r.impulse, 0), 1e-6);
}

TEST(FrictionBlock, ZeroRadiusGivesZeroImpulse) {
  const TangentMass k{1.5f, 0.2f, 0.7f};
  for (float radius : {0.0f, -0.0f}) {
    FrictionBlockResult r = solve_friction_block(k, Vec2{3, -1}, radius);
    EXPECT_EQ(r.status, FrictionBlockStatus::zero_radius);
    EXPECT_TRUE(r.solved());
    EXPECT_EQ(r.impulse.x, 0.0f);
    EXPECT_EQ(r.impulse.y, 0.0f);
    EXPECT_EQ(r.lambda, 0.0f);
  }
}

TEST(FrictionBlock, ZeroVelocityGivesZeroImpulse) {
  FrictionBlockResult r = solve_friction_block(TangentMass{1.5f, 0.2f, 0.7f}, Vec2{0, 0}, 1);
  EXPECT_EQ(r.status, FrictionBlockStatus::interior);
  EXPECT_EQ(r.impulse.x, 0.0f);
  EXPECT_EQ(r.impulse.y, 0.0f);
  EXPECT_EQ(r.lambda, 0.0f);
}

TEST(FrictionBlock, CoupledMassMatchesDoubleReference) {
  struct Case {
    TangentMass k;
    Vec2 v;
    float radius;
  };
  // b ≠ 0 of both signs; det > 0 in all. Each case is on the boundary.
  const Case cases[] = {
      {{2.0f, -0.9f, 1.5f}, {1.5f, -2.5f}, 0.8f},
      {{0.6f, 0.55f, 3.0f}, {-0.4f, 1.1f}, 0.25f},
      {{10.0f, 3.0f, 1.0f}, {7.0f, 0.2f}, 1.5f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "b=" << c.k.b);
    Reference ref = reference_solve(c.k, c.v, c.radius);
    ASSERT_FALSE(ref.interior);
    FrictionBlockResult r = solve_friction_block(c.k, c.v, c.radius);
    ASSERT_EQ(r.status, FrictionBlockStatus::boundary);
    // 2e-6 N·s / kg⁻¹: float solve against a double one, |J| ≤ 1.5, condition number ≤ 12.
    EXPECT_NEAR(r.impulse.x, ref.j.x, 2e-6);
    EXPECT_NEAR(r.impulse.y, ref.j.y, 2e-6);
    EXPECT_NEAR(r.lambda, ref.lambda, 2e-6 * (1 + ref.lambda));
    EXPECT_TRUE(exactly_inside(r.impulse, c.radius));
    EXPECT_LE(kkt_residual(c.k, c.v, r.impulse, r.lambda), 1e-5);
    // The coupling matters: radial clamping would be a different answer.
    double ax = -(c.k.c * double{c.v.x} - c.k.b * double{c.v.y}),
           ay = -(-c.k.b * double{c.v.x} + c.k.a * double{c.v.y});
    double s = c.radius / std::hypot(ax, ay);
    EXPECT_GT(std::hypot(ax * s - ref.j.x, ay * s - ref.j.y), 1e-3);
  }
}

TEST(FrictionBlock, InvalidRadiusIsRejected) {
  const TangentMass k{1, 0, 1};
  for (float radius : {-1.0f, -FLT_MIN, kNaN, kInf, -kInf}) {
    expect_rejected(k, Vec2{1, 2}, radius, FrictionBlockStatus::invalid_radius);
  }
}

TEST(FrictionBlock, SingularMassIsRejected) {
  // det = 0: rank one, zero, and a zero diagonal.
  expect_rejected({1, 1, 1}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
  expect_rejected({2, -2, 2}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
  expect_rejected({0, 0, 0}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
  expect_rejected({0, 0, 1}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
  // det underflows to zero in float although a, c > 0.
  expect_rejected({1e-30f, 0, 1e-30f}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
}

TEST(FrictionBlock, IndefiniteMassIsRejected) {
  expect_rejected({1, 2, 1}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);    // det < 0
  expect_rejected({-1, 0, -1}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);  // det > 0, negative
  expect_rejected({-1, 0, 2}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
  expect_rejected({1, 0, -2}, {1, 0}, 1, FrictionBlockStatus::invalid_mass);
}

TEST(FrictionBlock, NonFiniteInputsAreRejected) {
  for (float bad : {kNaN, kInf, -kInf}) {
    expect_rejected({bad, 0, 1}, {1, 1}, 1, FrictionBlockStatus::invalid_mass);
    expect_rejected({1, bad, 1}, {1, 1}, 1, FrictionBlockStatus::invalid_mass);
    expect_rejected({1, 0, bad}, {1, 1}, 1, FrictionBlockStatus::invalid_mass);
    expect_rejected({1, 0, 1}, {bad, 1}, 1, FrictionBlockStatus::invalid_velocity);
    expect_rejected({1, 0, 1}, {1, bad}, 1, FrictionBlockStatus::invalid_velocity);
  }
  // Finite entries whose determinant overflows.
  expect_rejected({3e38f, 0, 3e38f}, {1, 1}, 1, FrictionBlockStatus::invalid_mass);
}

// Magnitudes far outside a game's range still give a finite answer inside the disk; where the
// limit is known in closed form it is checked.
TEST(FrictionBlock, ExtremeMagnitudesStayFiniteAndFeasible) {
  struct Case {
    TangentMass k;
    Vec2 v;
    float radius;
  };
  const Case cases[] = {
      {{1, 0.3f, 2}, {1, -1}, 1e-30f},           // tiny budget
      {{1, 0.3f, 2}, {1, -1}, 1e-44f},           // denormal budget
      {{1, 0.3f, 2}, {3e38f, -3e38f}, 1},        // |v| overflows when squared
      {{1, 0.3f, 2}, {1e-30f, 2e-30f}, 1e-35f},  // tiny everything
      {{1e30f, 0, 1e-5f}, {1, 1}, 1},            // wildly anisotropic
      {{1e-20f, 5e-21f, 1e-20f}, {1, 1}, 1},     // heavy bodies: K tiny, squares underflow
      {{1e15f, 0, 1e15f}, {1e20f, 0}, 1e5f},     // light bodies, huge speed
      {{1, 0.9999999f, 1}, {1, -2}, 0.1f},       // nearly singular (det ≈ 1e-7)
      {{1, 0, 1}, {1, 0}, 3e38f},                // huge budget: interior
      {{1, 0, 1}, {3e38f, 0}, 3e38f},            // huge everything
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "K=(" << c.k.a << "," << c.k.b << "," << c.k.c << ") v=("
                                    << c.v.x << "," << c.v.y << ") R=" << c.radius);
    FrictionBlockResult r = solve_friction_block(c.k, c.v, c.radius);
    EXPECT_TRUE(r.solved());
    EXPECT_TRUE(finite(r));
    EXPECT_GE(r.lambda, 0.0f);
    EXPECT_TRUE(exactly_inside(r.impulse, c.radius));
  }
  // Tiny budget: the friction saturates against the slip, J → −R·v/|v|.
  const float tiny = 1e-30f;
  FrictionBlockResult r = solve_friction_block({1, 0.3f, 2}, {1, -1}, tiny);
  EXPECT_EQ(r.status, FrictionBlockStatus::boundary);
  EXPECT_NEAR(r.impulse.x / tiny, -std::sqrt(0.5), 1e-6);
  EXPECT_NEAR(r.impulse.y / tiny, std::sqrt(0.5), 1e-6);
  // λ ≈ |v|/R (kg⁻¹): within 1e-6 relative since K is negligible next to λ.
  EXPECT_NEAR(r.lambda / (std::sqrt(2.0) / tiny), 1.0, 1e-6);
}

// ---- 10,000 seeded random problems ------------------------------------------------------------

TEST(FrictionBlock, RandomProblems) {
  SplitMix64 rng{0x5EED000F41C7104Bull};
  constexpr int kSamples = 10000;
  constexpr int kAngles = 256;
  // Tolerances (double evaluation of float results; eigenvalues in [0.5, 4.5), so cond(K) < 9):
  // KKT residual |KJ + v + λJ| (m/s): J = (1 − 2^-20)·R·u with u solving the shifted system at
  // the returned λ, so it is 2^-20·|v| ≈ 5.4e-6 at |v| ≤ 5.7 m/s, plus a few ulps.
  constexpr double kKktTolerance = 1e-5;
  // Rotation: rounding the rotated K and v to float perturbs the problem by ~6e-8 relative,
  // amplified by cond(K) and by the circle's curvature; relative to R.
  constexpr double kRotationTolerance = 1e-5;
  // Objective vs the 256 exact boundary candidates (J): the answer sits 2^-20 R inside the circle
  // (± the 2^-21 stopping test), costing ~λR²·2^-20 ≤ |v|R·2^-20, plus float rounding of J;
  // relative to 1 + |F| (|F| ≈ |v|R on the circle).
  constexpr double kObjectiveTolerance = 2e-6;
  // Distance to the independent double solve (N·s), relative to R.
  constexpr double kReferenceTolerance = 1e-5;

  double cos_k[kAngles], sin_k[kAngles];
  for (int i = 0; i < kAngles; ++i) {
    double theta = 2 * 3.14159265358979323846 * i / kAngles;
    cos_k[i] = std::cos(theta);  // trig in the test only, never in sim code
    sin_k[i] = std::sin(theta);
  }

  int interior = 0, boundary = 0;
  double max_kkt = 0, max_rotation = 0, max_gap = 0, max_reference = 0;
  for (int sample = 0; sample < kSamples; ++sample) {
    SCOPED_TRACE(sample);
    // K = Q diag(k1, k2) Qᵀ with a random rotation Q.
    const double k1 = rng.range(0.5, 4.5), k2 = rng.range(0.5, 4.5);
    double qc, qs;
    rng.unit(&qc, &qs);
    const TangentMass k{static_cast<float>(qc * qc * k1 + qs * qs * k2),
                        static_cast<float>(qc * qs * (k1 - k2)),
                        static_cast<float>(qs * qs * k1 + qc * qc * k2)};
    const float radius = static_cast<float>(rng.range(0.1, 2.1));
    const Vec2 v{static_cast<float>(rng.range(-4, 4)), static_cast<float>(rng.range(-4, 4))};

    FrictionBlockResult r = solve_friction_block(k, v, radius);
    ASSERT_TRUE(r.solved());
    ASSERT_TRUE(finite(r));
    // Feasibility, exact; and the float length as callers compute it.
    ASSERT_TRUE(exactly_inside(r.impulse, radius)) << r.impulse.x << " " << r.impulse.y;
    ASSERT_LE(lockstep::sim::length(r.impulse), radius);
    ASSERT_GE(r.lambda, 0.0f);

    const double kkt = kkt_residual(k, v, r.impulse, r.lambda);
    EXPECT_LE(kkt, kKktTolerance);
    max_kkt = std::max(max_kkt, kkt);

    Reference ref = reference_solve(k, v, radius);
    const double ref_err = norm({r.impulse.x - ref.j.x, r.impulse.y - ref.j.y}) / radius;
    EXPECT_LE(ref_err, kReferenceTolerance);
    max_reference = std::max(max_reference, ref_err);

    if (r.status == FrictionBlockStatus::boundary) {
      ++boundary;
      EXPECT_GT(r.lambda, 0.0f);
      // Complementarity: λ > 0 only on the circle (|J| within 2^-20 + 2^-21 ≈ 1.4e-6 of R).
      EXPECT_NEAR(norm(to_d(r.impulse)), radius, 2e-6 * radius);
      const double f = objective(k, v, to_d(r.impulse));
      double best = std::numeric_limits<double>::infinity();
      for (int i = 0; i < kAngles; ++i) {
        best = std::min(best, objective(k, v, {radius * cos_k[i], radius * sin_k[i]}));
      }
      const double gap = (f - best) / (1 + std::abs(f));
      EXPECT_LE(gap, kObjectiveTolerance);
      max_gap = std::max(max_gap, gap);
    } else {
      ASSERT_EQ(r.status, FrictionBlockStatus::interior);
      EXPECT_TRUE(ref.interior);
      EXPECT_EQ(r.lambda, 0.0f);
      ++interior;
    }

    // Rotation equivariance: rotate K and v by another random rotation P; J must rotate.
    double pc, ps;
    rng.unit(&pc, &ps);
    // P K Pᵀ for symmetric K: entries in double, then rounded to float once.
    const double a = k.a, b = k.b, c = k.c;
    const TangentMass kr{static_cast<float>(pc * pc * a - 2 * pc * ps * b + ps * ps * c),
                         static_cast<float>(pc * ps * (a - c) + (pc * pc - ps * ps) * b),
                         static_cast<float>(ps * ps * a + 2 * pc * ps * b + pc * pc * c)};
    const Vec2 vr{static_cast<float>(pc * v.x - ps * v.y), static_cast<float>(ps * v.x + pc * v.y)};
    FrictionBlockResult rr = solve_friction_block(kr, vr, radius);
    ASSERT_TRUE(rr.solved());
    ASSERT_TRUE(exactly_inside(rr.impulse, radius));
    const Vec2d expected{pc * r.impulse.x - ps * r.impulse.y, ps * r.impulse.x + pc * r.impulse.y};
    const double rot_err = norm({rr.impulse.x - expected.x, rr.impulse.y - expected.y}) / radius;
    EXPECT_LE(rot_err, kRotationTolerance);
    max_rotation = std::max(max_rotation, rot_err);
  }
  // Both branches must be exercised for the checks above to mean anything.
  EXPECT_GE(interior, 1000);
  EXPECT_GE(boundary, 1000);
  std::printf(
      "friction block, %d random problems (%d interior, %d boundary): max_kkt_residual=%.3g m/s "
      "max_rotation_error=%.3g (of R) max_objective_gap=%.3g (of 1+|F|) "
      "max_reference_error=%.3g (of R)\n",
      kSamples, interior, boundary, max_kkt, max_rotation, max_gap, max_reference);
}

// v along an eigenvector of K: the secular equation's start (the Jensen bound) is the root itself,
// and the answer has a closed form: J = −R·v/|v|, λ = |v|/R − k for the eigenvalue k of that
// direction. Diagonal K so that the eigenvectors are the axes exactly.
TEST(FrictionBlock, SlidingAlongAnEigenvectorMatchesTheClosedForm) {
  struct Case {
    TangentMass k;
    Vec2 v;
    float radius;
  };
  const Case cases[] = {{{2, 0, 0.5f}, {3, 0}, 0.4f},        {{2, 0, 0.5f}, {0, -3}, 0.4f},
                        {{0.5f, 0, 2}, {-7, 0}, 1.5f},       {{0.5f, 0, 2}, {0, 7}, 1.5f},
                        {{1e-6f, 0, 3e-6f}, {0, 2e-3f}, 30}, {{4e3f, 0, 1e3f}, {-50, 0}, 1e-3f}};
  for (const Case& c : cases) {
    const FrictionBlockResult r = solve_friction_block(c.k, c.v, c.radius);
    ASSERT_EQ(r.status, FrictionBlockStatus::boundary);
    const double speed = norm(to_d(c.v)), k_dir = c.v.x != 0 ? c.k.a : c.k.c;
    // |J| within 2^-20 + 2^-21 of R (aim and stopping test) plus ulps: 2e-6 of R.
    EXPECT_NEAR(r.impulse.x, -c.radius * c.v.x / speed, 2e-6 * c.radius);
    EXPECT_NEAR(r.impulse.y, -c.radius * c.v.y / speed, 2e-6 * c.radius);
    EXPECT_TRUE(exactly_inside(r.impulse, c.radius));
    // λ from τ, which is within a few ulps of 1 − κ here; relative to |v|/R.
    const double lambda = speed / c.radius - k_dir;
    EXPECT_NEAR(r.lambda, lambda, 1e-5 * speed / c.radius);
  }
}

// ---- Warm starting -----------------------------------------------------------------------------

TEST(FrictionBlock, WarmStartAccountingMatchesColdSolve) {
  const TangentMass k{1.2f, -0.4f, 2.5f};
  const Vec2 v_free{1.5f, -0.8f};  // tangent velocity without this point's friction (m/s)
  const float radius = 0.6f;
  const FrictionBlockResult cold = solve_friction_block(k, v_free, radius);
  ASSERT_EQ(cold.status, FrictionBlockStatus::boundary);
  // Velocity after the cold answer, in double: v_free + K·J.
  const Vec2d v_cold{v_free.x + double{k.a} * cold.impulse.x + double{k.b} * cold.impulse.y,
                     v_free.y + double{k.b} * cold.impulse.x + double{k.c} * cold.impulse.y};

  // Several previous totals: inside, on, and beyond this step's disk, and opposite in sign.
  const Vec2 olds[] = {{0.1f, 0.2f}, {-0.3f, 0.5f}, {-0.9f, 0.4f}, {0.6f, 0}, {0, 0}};
  for (Vec2 j_old : olds) {
    SCOPED_TRACE(testing::Message() << "J_old=(" << j_old.x << "," << j_old.y << ")");
    // The body velocity already contains J_old's effect.
    const Vec2 v_current{v_free.x + k.a * j_old.x + k.b * j_old.y,
                         v_free.y + k.b * j_old.x + k.c * j_old.y};
    const Vec2 v_free_warm = friction_free_velocity(k, v_current, j_old);
    // friction_free_velocity undoes exactly that: v_current − K·J_old (1e-6: float rounding).
    EXPECT_NEAR(v_free_warm.x, v_free.x, 1e-6);
    EXPECT_NEAR(v_free_warm.y, v_free.y, 1e-6);
    const FrictionBlockResult warm = solve_friction_block(k, v_free_warm, radius);
    ASSERT_EQ(warm.status, FrictionBlockStatus::boundary);
    // Same total impulse as the cold solve (1e-5 N·s: v_free differs by float rounding).
    EXPECT_NEAR(warm.impulse.x, cold.impulse.x, 1e-5);
    EXPECT_NEAR(warm.impulse.y, cold.impulse.y, 1e-5);
    // Applying only the difference J_new − J_old lands on the cold answer's velocity.
    const Vec2 delta = warm.impulse - j_old;
    const Vec2d v_after{v_current.x + double{k.a} * delta.x + double{k.b} * delta.y,
                        v_current.y + double{k.b} * delta.x + double{k.c} * delta.y};
    EXPECT_NEAR(v_after.x, v_cold.x, 2e-5);
    EXPECT_NEAR(v_after.y, v_cold.y, 2e-5);
    // The wrong accounting (v_current taken as v_free) gives a different total when J_old ≠ 0.
    if (j_old.x != 0 || j_old.y != 0) {
      const FrictionBlockResult wrong = solve_friction_block(k, v_current, radius);
      EXPECT_GT(std::hypot(wrong.impulse.x - cold.impulse.x, wrong.impulse.y - cold.impulse.y),
                1e-3);
    }
  }
}

// ---- Helpers -----------------------------------------------------------------------------------

TEST(FrictionBlock, ObjectiveAndFreeVelocityFormulas) {
  const TangentMass k{1.5f, -0.25f, 0.75f};
  const Vec2 v{0.5f, -2.0f}, j{0.25f, 1.0f};
  // ½(1.5·0.0625 − 2·0.25·0.25 + 0.75·1) + (0.125 − 2) = ½·0.71875 − 1.875 (exact in float).
  EXPECT_EQ(friction_block_objective(k, v, j), 0.359375f - 1.875f);
  const Vec2 w = friction_free_velocity(k, v, j);
  EXPECT_FLOAT_EQ(w.x, 0.5f - (1.5f * 0.25f - 0.25f * 1.0f));
  EXPECT_FLOAT_EQ(w.y, -2.0f - (-0.25f * 0.25f + 0.75f * 1.0f));
}

}  // namespace
