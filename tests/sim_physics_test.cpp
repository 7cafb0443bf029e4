// Physics behaviour of the world, checked against closed-form answers.
// The maths is docs/physics.md's.
//
// Written from the documented behaviour (docs/physics.md, types.h/world.h) against the public API
// only; no expected value here comes from the code under test. Inertia, energies and rotations are
// computed by this file's own helpers, not by the sim's math.
//
// World conventions used throughout: y up, g = 9.81 m/s², dt = 1/60 s, static ground plane
// y = 0, restitution e = max(eA, eB), friction μ = sqrt(μA·μB), restitution only above
// WorldDef::restitution_threshold of closing speed, lambda (normal_impulse_sum) is an impulse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"
#include "test_math.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::Error;
using lockstep::sim::Quat;
using lockstep::sim::ShapeType;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

constexpr float kDt = 1.0f / 60.0f;
constexpr double kG = 9.81;
constexpr double kPi = 3.14159265358979323846;

// ---- test-side math (double, independent of sim/math.h) ----------------------------------------

using lockstep::testing::cross;
using lockstep::testing::D3;
using lockstep::testing::d3;
using lockstep::testing::dot;
using lockstep::testing::len;

// v rotated by the unit quaternion q (v' = v + 2w(u×v) + 2u×(u×v)).
D3 rotate(Quat q, D3 v) {
  D3 u{q.x, q.y, q.z};
  D3 t = 2.0 * cross(u, v);
  return v + double(q.w) * t + cross(u, t);
}
D3 inv_rotate(Quat q, D3 v) {
  return rotate(Quat{-q.x, -q.y, -q.z, q.w}, v);
}

// Rotation by angle θ about unit axis, from cos θ only: half angles by sqrt (no trig, as the sim
// would build it). sin θ's sign is given by `positive`.
Quat quat_about_axis(D3 axis, double cos_theta, bool positive = true) {
  double c = std::sqrt((1.0 + cos_theta) / 2.0);
  double s = std::sqrt((1.0 - cos_theta) / 2.0);
  if (!positive) s = -s;
  return Quat{float(axis.x * s), float(axis.y * s), float(axis.z * s), float(c)};
}

// Principal moments (body axes) of a solid box of half extents h: m/12·(a²+b²) with a = 2h.
D3 box_inertia(double mass_kg, Vec3 h) {
  double x = 2.0 * h.x, y = 2.0 * h.y, z = 2.0 * h.z;
  return {mass_kg / 12.0 * (y * y + z * z), mass_kg / 12.0 * (x * x + z * z),
          mass_kg / 12.0 * (x * x + y * y)};
}

D3 principal_inertia(const BodyView& b) {
  if (b.shape.type == ShapeType::box) return box_inertia(b.mass_kg, b.shape.half_extents);
  double r = b.shape.radius;
  double i = 0.4 * b.mass_kg * r * r;  // solid sphere
  return {i, i, i};
}

// ½mv² + ½ωᵀIω (in body axes) + m·g·y, with g = 9.81 along −y (J).
double total_energy_j(const BodyView& b) {
  if (b.type != BodyType::dynamic) return 0;
  D3 v = d3(b.linear_velocity);
  D3 w = inv_rotate(b.orientation, d3(b.angular_velocity));
  D3 inertia = principal_inertia(b);
  double rot = inertia.x * w.x * w.x + inertia.y * w.y * w.y + inertia.z * w.z * w.z;
  return 0.5 * b.mass_kg * dot(v, v) + 0.5 * rot + b.mass_kg * kG * double(b.position.y);
}

bool finite(const BodyView& b) {
  const float f[] = {b.position.x,        b.position.y,         b.position.z,
                     b.orientation.x,     b.orientation.y,      b.orientation.z,
                     b.orientation.w,     b.linear_velocity.x,  b.linear_velocity.y,
                     b.linear_velocity.z, b.angular_velocity.x, b.angular_velocity.y,
                     b.angular_velocity.z};
  for (float x : f) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// y component of the body's local up axis in world space (1 = upright).
double up_y(const BodyView& b) {
  return rotate(b.orientation, D3{0, 1, 0}).y;
}

// ---- scene building ----------------------------------------------------------------------------

WorldDef world_def(bool gravity = true) {
  WorldDef def = lockstep::sim::default_world_def();
  if (!gravity) def.gravity = Vec3{0, 0, 0};
  return def;
}

std::unique_ptr<World> make_world(const WorldDef& def) {
  Error error = Error::none;
  std::unique_ptr<World> world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  EXPECT_NE(world, nullptr);
  return world;
}

BodyId add(World& world, const BodyDef& def) {
  BodyId id{};
  EXPECT_EQ(world.create_body(def, &id), Error::none);
  EXPECT_FALSE(id.is_null());
  return id;
}

BodyId add_ground(World& world, float friction = 0.5f, float restitution = 0.0f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.shape.type = ShapeType::plane;
  def.shape.plane_normal = Vec3{0, 1, 0};
  def.shape.plane_offset = 0;
  def.shape.friction = friction;
  def.shape.restitution = restitution;
  return add(world, def);
}

BodyDef sphere_def(Vec3 position, float radius_m, float density = 1000.0f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.shape.type = ShapeType::sphere;
  def.shape.radius = radius_m;
  def.shape.density = density;
  return def;
}

BodyDef box_def(Vec3 position, Vec3 half_extents_m, float density = 1000.0f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.shape.type = ShapeType::box;
  def.shape.half_extents = half_extents_m;
  def.shape.density = density;
  return def;
}

BodyView view(const World& world, BodyId id) {
  BodyView b{};
  EXPECT_EQ(world.get_body(id, &b), Error::none);
  return b;
}

void step(World& world) {
  lockstep::sim::StepStatus status = world.step();
  EXPECT_TRUE(status.ok()) << "overflow bits " << status.overflow;
}

void steps(World& world, int n) {
  for (int i = 0; i < n; ++i)
    step(world);
}

// ================================================================================================
// 1. Sphere dropped from 2 m: bounce height against e.
// ================================================================================================

struct DropResult {
  bool contacted = false;
  int contact_step = -1;
  double contact_bottom_m = 0;  // bottom height at the end of the contact step
  double first_apex_m = -1;     // highest bottom height between the first contact and its apex
  double max_after_contact_m = -1e9;  // highest bottom height after the first contact
  double max_rebound_m = 0;  // largest rise above the lowest bottom height since the contact
  double final_bottom_m = 0;
  double final_speed_m_s = 0;
  bool all_finite = true;
};

constexpr double kReleaseHeightM = 2.0;
constexpr float kDropRadiusM = 0.5f;

// A sphere whose bottom starts at 2 m, over a ground plane; 300 steps (5 s: e = 1 bounces ~4
// times). Contact begins at the first step where the sphere carries a normal impulse at the end
// of the step, or where its velocity changed by more than gravity's g·dt (1 mm/s of slack for
// rounding): normal_impulse_sum holds the last substep's impulses only, so a contact that pushed
// in an earlier substep and bounced the sphere clear leaves it at 0.
DropResult drop_sphere(float sphere_restitution, float ground_restitution, int step_count = 300,
                       double release_height_m = kReleaseHeightM) {
  std::unique_ptr<World> world = make_world(world_def());
  DropResult r;
  if (!world) return r;
  add_ground(*world, 0.5f, ground_restitution);
  BodyDef def = sphere_def(Vec3{0, float(release_height_m) + kDropRadiusM, 0}, kDropRadiusM);
  def.shape.restitution = sphere_restitution;
  BodyId ball = add(*world, def);

  bool rising = false, apex_done = false;
  double previous_vy = 0, lowest = 0;
  for (int i = 0; i < step_count; ++i) {
    step(*world);
    BodyView b = view(*world, ball);
    r.all_finite = r.all_finite && finite(b);
    double bottom = double(b.position.y) - kDropRadiusM;
    const double vy = b.linear_velocity.y;
    const bool pushed = vy > previous_vy - kG * double(kDt) + 1e-3;
    previous_vy = vy;
    if (!r.contacted && (world->normal_impulse_sum(ball) > 0 || pushed)) {
      r.contacted = true;
      r.contact_step = i;
      r.contact_bottom_m = bottom;
      lowest = bottom;
    }
    if (!r.contacted) continue;
    r.max_after_contact_m = std::max(r.max_after_contact_m, bottom);
    lowest = std::min(lowest, bottom);
    r.max_rebound_m = std::max(r.max_rebound_m, bottom - lowest);
    if (!apex_done) {
      if (b.linear_velocity.y > 0) rising = true;
      if (rising) r.first_apex_m = std::max(r.first_apex_m, bottom);
      if (rising && b.linear_velocity.y <= 0) apex_done = true;
    }
    r.final_bottom_m = bottom;
    r.final_speed_m_s = len(d3(b.linear_velocity));
  }
  return r;
}

// Free fall from rest in the soft step: each substep of h = dt/substeps adds g·h to the speed and
// then moves by h·v (semi-implicit Euler), so after k substeps the sphere has fallen
// g·h²·k(k+1)/2 at speed g·h·k. A speculative row (gap s > 0) lets the gap close within one
// substep and no more (target −s/h), also in the relax pass after the positions: the contact
// first pushes in the first substep k that ends with the gap shorter than one more substep of
// travel, H − g·h²·k(k+1)/2 < g·h·k·h. Returns that substep k (1-based, counted from the drop);
// it falls in step (k − 1)/substeps (0-based).
int first_contact_substep(double height_m, int substeps) {
  const double h = double(kDt) / substeps;
  for (int k = 1; k < 100000; ++k) {
    const double gap = height_m - kG * h * h * k * (k + 1) / 2.0;
    if (gap < kG * h * k * h) return k;
  }
  return -1;
}

TEST(SimPhysics, SphereDropInelasticDoesNotBounce) {
  DropResult r = drop_sphere(0.0f, 0.0f);
  const int substeps = int(world_def().substeps);
  const double h = double(kDt) / substeps;
  const int k = first_contact_substep(kReleaseHeightM, substeps);
  const int expected_step = (k - 1) / substeps;
  std::printf(
      "[figures] e=0 drop: contact at step %d (free fall: %d), bottom then %.5f m, max after "
      "contact %.5f m, largest rebound %.5f m\n",
      r.contact_step, expected_step, r.contact_bottom_m, r.max_after_contact_m, r.max_rebound_m);
  ASSERT_TRUE(r.contacted);
  EXPECT_TRUE(r.all_finite);
  // Contact must come when free fall says (2 m: substep 152 at 4 a step, step 37), not earlier (a
  // ghost contact) nor never (tunnelling); a step of slack either way for rounding at the boundary.
  EXPECT_GE(r.contact_step, expected_step - 1);
  EXPECT_LE(r.contact_step, expected_step + 1);
  // The speculative push starts less than one substep of travel above the ground: at most
  // (sqrt(2gH) + g·h)·h ≈ 2.6 cm at 6.3 m/s.
  EXPECT_LE(r.contact_bottom_m, (std::sqrt(2.0 * kG * kReleaseHeightM) + kG * h) * h);
  // e = 0: after first contact the ball never rises above where the contact began and never
  // bounces: it may only be pushed out of a penetration beyond the 1 mm slop, so no rise above
  // the lowest point reached of more than 1 cm.
  EXPECT_LE(r.max_after_contact_m, r.contact_bottom_m + 1e-4);
  EXPECT_LE(r.max_rebound_m, 0.01);
  // It ends at rest on the ground: within 2 cm of y = 0 (slop is 1 mm), slower than 5 cm/s.
  EXPECT_NEAR(r.final_bottom_m, 0.0, 0.02);
  EXPECT_LT(r.final_speed_m_s, 0.05);
}

// e·v at impact gives a first apex of e²·h in continuous time. Discrete-time effects bend that
// by a few percent: semi-implicit Euler's free flight is lower than the parabola by ~v·dt/2
// (3 cm of 0.72 m at e = 0.6), the ball meets the ground mid-step (up to one step, ≈ 10 cm of
// travel, early or late, so the closing speed used for e is off by up to g·dt of 6.3 m/s) and
// apex samples are dt apart (error ≤ g·dt²/8 ≈ 0.3 mm). Together that is well under 10 %;
// 15 % is the tolerance.
void expect_bounce_near(float e) {
  DropResult r = drop_sphere(e, 0.0f);
  double expected = double(e) * double(e) * kReleaseHeightM;
  std::printf("[figures] e=%.1f drop: first apex %.4f m, e^2 h = %.4f m, ratio %.4f\n", double(e),
              r.first_apex_m, expected, r.first_apex_m / expected);
  ASSERT_TRUE(r.contacted);
  EXPECT_TRUE(r.all_finite);
  EXPECT_NEAR(r.first_apex_m, expected, 0.15 * expected) << "e = " << e;
  // No bounce ever goes above the release height (energy is never injected).
  EXPECT_LE(r.max_after_contact_m, kReleaseHeightM);
}

TEST(SimPhysics, SphereDropBouncesToESquaredHeight) {
  expect_bounce_near(0.3f);
  expect_bounce_near(0.6f);
}

// The combine rule is e = max(eA, eB): a plain ball on a bouncy ground bounces like a bouncy
// ball on a plain ground. Same scene, mirrored parameters: the apexes must agree to float
// noise (1 mm; they should be bit-identical, the slack only tolerates operand order).
TEST(SimPhysics, RestitutionCombinesByMax) {
  DropResult ball_bouncy = drop_sphere(0.6f, 0.0f);
  DropResult ground_bouncy = drop_sphere(0.0f, 0.6f);
  DropResult both = drop_sphere(0.6f, 0.3f);
  ASSERT_TRUE(ball_bouncy.contacted && ground_bouncy.contacted && both.contacted);
  EXPECT_NEAR(ground_bouncy.first_apex_m, ball_bouncy.first_apex_m, 1e-3);
  EXPECT_NEAR(both.first_apex_m, ball_bouncy.first_apex_m, 1e-3);
  EXPECT_GT(ground_bouncy.first_apex_m, 0.5);  // it did bounce (e²h = 0.72 m)
}

// e = 1: the ball may lose a little height to numerical dissipation but never gain any: a bounce
// higher than the release height would be energy from nowhere, i.e. a bug. Over 5 s (≈ 4 bounces)
// the bottom never rises more than 1 % (2 cm, a fifth of one step's travel at impact speed) above
// the release height, and the first apex keeps more than 80 % of it.
TEST(SimPhysics, SphereDropElasticNeverGainsHeight) {
  DropResult r = drop_sphere(1.0f, 0.0f);
  std::printf("[figures] e=1 drop: first apex %.4f m (h = 2), max after contact %.4f m\n",
              r.first_apex_m, r.max_after_contact_m);
  ASSERT_TRUE(r.contacted);
  EXPECT_TRUE(r.all_finite);
  EXPECT_LE(r.max_after_contact_m, 1.01 * kReleaseHeightM);
  EXPECT_GT(r.first_apex_m, 0.8 * kReleaseHeightM);
}

// Restitution only above WorldDef::restitution_threshold (1 m/s) of closing speed. The closing
// speed is taken before the contact step and at the first push (at most one step of gravity
// faster); both come from the substep recurrence of free fall (first_contact_substep). From 4 cm
// the ball meets the ground at ~0.9 m/s: e = 0.6 must be ignored, so it may not rise more than
// 2 mm after contact (a bounce would reach 0.36·4 cm = 1.4 cm). From 20 cm it meets it at
// ~1.9 m/s and must bounce: more than half of e²h = 7.2 cm.
TEST(SimPhysics, RestitutionOnlyAboveThresholdClosingSpeed) {
  const WorldDef def = world_def();
  const int substeps = int(def.substeps);
  const double h = double(kDt) / substeps;
  auto closing_speeds = [&](double height_m, double* before_step, double* at_push) {
    const int k = first_contact_substep(height_m, substeps);
    *before_step = kG * h * double((k - 1) / substeps * substeps);
    *at_push = kG * h * k;
  };
  double slow_before = 0, slow_push = 0, fast_before = 0, fast_push = 0;
  closing_speeds(0.04, &slow_before, &slow_push);
  closing_speeds(0.2, &fast_before, &fast_push);
  // The scenes test what they claim: one below the threshold all the way, one above it.
  ASSERT_LT(slow_push, double(def.restitution_threshold));
  ASSERT_GT(fast_before, double(def.restitution_threshold));
  DropResult slow = drop_sphere(0.6f, 0.0f, 120, 0.04);
  DropResult fast = drop_sphere(0.6f, 0.0f, 120, 0.2);
  std::printf(
      "[figures] threshold: closing speeds %.3f/%.3f and %.3f/%.3f m/s; from 4 cm max after "
      "contact %.5f m; from 20 cm apex %.5f m\n",
      slow_before, slow_push, fast_before, fast_push, slow.max_after_contact_m, fast.first_apex_m);
  ASSERT_TRUE(slow.contacted && fast.contacted);
  EXPECT_LE(slow.max_after_contact_m, 0.002);
  EXPECT_GT(fast.first_apex_m, 0.5 * 0.36 * 0.2);
  EXPECT_LT(fast.first_apex_m, 0.2);
}

// ================================================================================================
// 2. Two equal spheres head-on, e = 1, no friction, no gravity: velocities exchange.
// ================================================================================================

// Centres at ∓1 m, radius 0.5 m, ±3 m/s: the 1 m gap closes by exactly 0.1 m per step, so the
// spheres touch with (float-noise) zero separation at the start of step 11: no penetration,
// hence no Baumgarte bias to pollute the exchange. Closing speed 6 m/s > 1 m/s threshold.
TEST(SimPhysics, EqualSpheresHeadOnExchangeVelocities) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyDef a = sphere_def(Vec3{-1, 0, 0}, 0.5f);
  a.linear_velocity = Vec3{3, 0, 0};
  a.shape.restitution = 1;
  a.shape.friction = 0;
  BodyDef b = a;
  b.position = Vec3{1, 0, 0};
  b.linear_velocity = Vec3{-3, 0, 0};
  BodyId ida = add(*world, a);
  BodyId idb = add(*world, b);

  steps(*world, 60);  // contact at step ~11; 49 more steps of separation
  BodyView va = view(*world, ida), vb = view(*world, idb);
  std::printf("[figures] head-on e=1: vA = (%.6f, %.6f, %.6f), vB = (%.6f, %.6f, %.6f)\n",
              double(va.linear_velocity.x), double(va.linear_velocity.y),
              double(va.linear_velocity.z), double(vb.linear_velocity.x),
              double(vb.linear_velocity.y), double(vb.linear_velocity.z));
  // 1e-3 relative to the 3 m/s speed: a single exact impulse, float rounding is ~1e-7.
  constexpr double kTol = 1e-3 * 3.0;
  EXPECT_NEAR(va.linear_velocity.x, -3.0, kTol);
  EXPECT_NEAR(vb.linear_velocity.x, 3.0, kTol);
  EXPECT_NEAR(va.linear_velocity.y, 0.0, kTol);
  EXPECT_NEAR(va.linear_velocity.z, 0.0, kTol);
  EXPECT_NEAR(vb.linear_velocity.y, 0.0, kTol);
  EXPECT_NEAR(vb.linear_velocity.z, 0.0, kTol);
  // A central impact on spheres makes no spin.
  EXPECT_LT(len(d3(va.angular_velocity)), 1e-4);
  EXPECT_LT(len(d3(vb.angular_velocity)), 1e-4);
  // And they really separated (no sticking, no pass-through): A left of B by more than 2 r.
  EXPECT_GT(double(vb.position.x) - double(va.position.x), 1.0);
}

// ================================================================================================
// 3. Impulse at a point: ω = I⁻¹ (r × P), sign and magnitude; at the centre only translation.
// ================================================================================================

// Box 2 × 1 × 0.5 m (half extents 1, 0.5, 0.25) of density 12 → m = 12 kg, so I = m/12(a²+b²) =
// (1.25, 4.25, 5) kg·m². Float arithmetic on a handful of operations: 1e-5 relative tolerance.
constexpr Vec3 kSlabHalf{1.0f, 0.5f, 0.25f};
constexpr double kSlabMassKg = 12.0;

void expect_vec_near(D3 got, D3 want, double tol, const char* what) {
  EXPECT_NEAR(got.x, want.x, tol) << what;
  EXPECT_NEAR(got.y, want.y, tol) << what;
  EXPECT_NEAR(got.z, want.z, tol) << what;
}

TEST(SimPhysics, OffCentreImpulseSpinsBoxWithRightSign) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyId box = add(*world, box_def(Vec3{2, 3, 4}, kSlabHalf, 12.0f));
  BodyView b0 = view(*world, box);
  EXPECT_NEAR(b0.mass_kg, kSlabMassKg, 1e-4);  // density 12 × volume 2·1·0.5 = 1 m³

  // +x impulse of 1 N·s at the top face centre (r = +0.5 y): r × P = (0, 0, −0.5), so the box
  // must spin about −z at 0.5 / 5 = 0.1 rad/s, and translate at P/m = 1/12 m/s.
  ASSERT_EQ(world->apply_impulse(box, Vec3{1, 0, 0}, Vec3{2, 3.5f, 4}), Error::none);
  BodyView b = view(*world, box);
  std::printf("[figures] impulse +x at +y: w = (%.7f, %.7f, %.7f) rad/s\n",
              double(b.angular_velocity.x), double(b.angular_velocity.y),
              double(b.angular_velocity.z));
  EXPECT_LT(b.angular_velocity.z, 0.0f);  // the sign: about −z
  expect_vec_near(d3(b.angular_velocity), D3{0, 0, -0.1}, 1e-6, "omega, top push");
  expect_vec_near(d3(b.linear_velocity), D3{1.0 / 12.0, 0, 0}, 1e-6, "v, top push");
}

TEST(SimPhysics, ImpulseResponseMatchesInverseInertia) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  const D3 centre{-1, 2, 0.5};
  BodyId box = add(*world, box_def(Vec3{-1, 2, 0.5f}, kSlabHalf, 12.0f));
  const D3 inertia = box_inertia(kSlabMassKg, kSlabHalf);  // (1.25, 4.25, 5)
  EXPECT_NEAR(inertia.x, 1.25, 1e-12);
  EXPECT_NEAR(inertia.z, 5.0, 1e-12);

  // A generic impulse at a generic point of the box: ω = I⁻¹(r × P), v = P/m (unrotated box).
  const D3 p{0.5, -1, 2};
  const D3 r{0.8, -0.3, 0.1};
  const D3 point = centre + r;
  ASSERT_EQ(world->apply_impulse(box, Vec3{0.5f, -1, 2},
                                 Vec3{float(point.x), float(point.y), float(point.z)}),
            Error::none);
  BodyView b = view(*world, box);
  D3 l = cross(r, p);  // (−0.5, −1.55, −0.65)
  D3 want_w{l.x / inertia.x, l.y / inertia.y, l.z / inertia.z};
  expect_vec_near(d3(b.angular_velocity), want_w, 1e-5, "omega, generic");
  expect_vec_near(d3(b.linear_velocity), (1.0 / kSlabMassKg) * p, 1e-6, "v, generic");
}

// The inertia must be the world-space one, R·I·Rᵀ: the same slab turned 90° about y has its long
// axis along world z, so about world z it is the light axis (1.25, not 5): the same top push now
// spins it 4× faster, 0.5 / 1.25 = 0.4 rad/s about −z.
TEST(SimPhysics, ImpulseUsesWorldSpaceInertia) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyDef def = box_def(Vec3{0, 0, 0}, kSlabHalf, 12.0f);
  def.orientation = quat_about_axis(D3{0, 1, 0}, 0.0);  // 90°: cos θ = 0
  BodyId box = add(*world, def);
  ASSERT_EQ(world->apply_impulse(box, Vec3{1, 0, 0}, Vec3{0, 0.5f, 0}), Error::none);
  BodyView b = view(*world, box);
  expect_vec_near(d3(b.angular_velocity), D3{0, 0, -0.4}, 1e-5, "omega, turned slab");
  expect_vec_near(d3(b.linear_velocity), D3{1.0 / 12.0, 0, 0}, 1e-6, "v, turned slab");
}

// Through the centre of mass an impulse only translates: ω must stay exactly 0 (r = 0, so
// r × P = 0 with no rounding at all); 1e-6 rad/s allowed for an implementation that forms
// r from world coordinates of the centre (2, 3, 4) and rounds.
TEST(SimPhysics, CentralImpulseOnlyTranslates) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyId box = add(*world, box_def(Vec3{2, 3, 4}, kSlabHalf, 12.0f));
  ASSERT_EQ(world->apply_impulse(box, Vec3{3, -2, 1}, Vec3{2, 3, 4}), Error::none);
  BodyView b = view(*world, box);
  EXPECT_LT(len(d3(b.angular_velocity)), 1e-6);
  expect_vec_near(d3(b.linear_velocity), D3{3.0 / 12, -2.0 / 12, 1.0 / 12}, 1e-6, "v, centre");
  // And it keeps translating without spin-up over a second of free flight.
  steps(*world, 60);
  b = view(*world, box);
  EXPECT_LT(len(d3(b.angular_velocity)), 1e-6);
  EXPECT_NEAR(b.position.x, 2.0 + 60.0 * kDt * 3.0 / 12.0, 1e-4);
}

// Angular velocity is a world-space vector: a cube turned 90° about y and spinning at 1 rad/s
// about world x turns its local y axis from (0, 1, 0) to (0, cos 1, sin 1) = (0, 0.5403, 0.8415)
// in 1 s. (Applying ω in body axes would turn it about world −z instead.) A cube's inertia is
// isotropic, so torque-free ω stays constant. Per step the normalised q += ½dt·ω⊗q rotates by
// 2·atan(ω·dt/2) ≈ ω·dt·(1 − (ω·dt)²/12): 2e-5 rad short over the second; 1e-3 tolerance.
TEST(SimPhysics, AngularVelocityIsIntegratedInWorldAxes) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyDef def = box_def(Vec3{0, 0, 0}, Vec3{0.5f, 0.5f, 0.5f});
  def.orientation = quat_about_axis(D3{0, 1, 0}, 0.0);  // 90° about y
  def.angular_velocity = Vec3{1, 0, 0};
  BodyId box = add(*world, def);
  steps(*world, 60);
  BodyView b = view(*world, box);
  expect_vec_near(rotate(b.orientation, D3{0, 1, 0}), D3{0, std::cos(1.0), std::sin(1.0)}, 1e-3,
                  "local y after 1 rad about world x");
  // The local x axis started along world −z; the same turn takes it to (0, sin 1, −cos 1).
  expect_vec_near(rotate(b.orientation, D3{1, 0, 0}), D3{0, std::sin(1.0), -std::cos(1.0)}, 1e-3,
                  "local x after 1 rad about world x");
  expect_vec_near(d3(b.angular_velocity), D3{1, 0, 0}, 1e-5, "omega unchanged");
}

// ================================================================================================
// 4. Deep (0.5 m) penetration separates within a bounded number of steps without exploding.
// ================================================================================================

// Baumgarte bias 0.2·(0.5 m)/dt = 6 m/s would be clamped to WorldDef::max_bias_velocity (2 m/s):
// at 2 m/s the overlap shrinks by 3.3 cm per step, so 0.5 m takes ~15 steps (less than that if
// the bias fell off exponentially below 0.17 m of overlap, ≤ ~35 steps); 120 (2 s) is the bound.
// No body may ever move faster than the clamp plus 0.5 m/s (three steps of gravity, g·dt =
// 0.16 m/s, and solver overshoot).
constexpr int kSeparateStepBound = 120;

TEST(SimPhysics, DeepOverlapSpheresSeparateGently) {
  WorldDef def = world_def(false);
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  // Radii 0.5 m, centres 0.5 m apart: 0.5 m of overlap.
  BodyId a = add(*world, sphere_def(Vec3{-0.25f, 0, 0}, 0.5f));
  BodyId b = add(*world, sphere_def(Vec3{0.25f, 0, 0}, 0.5f));
  const double speed_bound = double(def.max_bias_velocity) + 0.5;

  int separated_at = -1;
  double max_speed = 0;
  for (int i = 0; i < 240; ++i) {
    step(*world);
    BodyView va = view(*world, a), vb = view(*world, b);
    ASSERT_TRUE(finite(va) && finite(vb)) << "step " << i;
    max_speed = std::max({max_speed, len(d3(va.linear_velocity)), len(d3(vb.linear_velocity))});
    // Separated: distance ≥ 2r − 1 cm (slop is 1 mm; speculative contacts may stop a hair short).
    double dist = len(d3(vb.position) - d3(va.position));
    if (separated_at < 0 && dist >= 1.0 - 0.01) separated_at = i + 1;
  }
  std::printf("[figures] deep overlap spheres: separated after %d steps, max speed %.4f m/s\n",
              separated_at, max_speed);
  ASSERT_GT(separated_at, 0) << "never separated";
  EXPECT_LE(separated_at, kSeparateStepBound);
  EXPECT_LE(max_speed, speed_bound);
  // Pushed apart along x only, symmetric: no sideways motion, no spin.
  BodyView va = view(*world, a);
  EXPECT_LT(std::fabs(va.position.y) + std::fabs(va.position.z), 1e-3);
  EXPECT_LT(va.position.x, -0.25f);
}

TEST(SimPhysics, BoxSunkIntoGroundRisesGently) {
  WorldDef def = world_def();
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  // 1 m cube with its centre at y = 0: bottom at −0.5 m.
  BodyId box = add(*world, box_def(Vec3{0, 0, 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f));
  const double speed_bound = double(def.max_bias_velocity) + 0.5;

  int resolved_at = -1;
  double max_speed = 0;
  for (int i = 0; i < 300; ++i) {
    step(*world);
    BodyView b = view(*world, box);
    ASSERT_TRUE(finite(b)) << "step " << i;
    max_speed = std::max(max_speed, len(d3(b.linear_velocity)));
    // Resolved: bottom within 2 cm of the surface (resting penetration is about the 1 mm slop).
    double bottom = double(b.position.y) - 0.5;
    if (resolved_at < 0 && bottom >= -0.02) resolved_at = i + 1;
  }
  BodyView b = view(*world, box);
  std::printf(
      "[figures] box sunk 0.5 m: resolved after %d steps, max speed %.4f m/s, "
      "final y %.5f\n",
      resolved_at, max_speed, double(b.position.y));
  ASSERT_GT(resolved_at, 0) << "never rose out of the ground";
  EXPECT_LE(resolved_at, kSeparateStepBound);
  EXPECT_LE(max_speed, speed_bound);
  // After 5 s it rests on the ground, upright, where it started horizontally (1 cm).
  EXPECT_NEAR(b.position.y, 0.5, 0.02);
  EXPECT_LT(len(d3(b.linear_velocity)), 0.05);
  EXPECT_LT(len(d3(b.angular_velocity)), 0.05);
  EXPECT_LT(std::hypot(double(b.position.x), double(b.position.z)), 0.01);
  EXPECT_GT(up_y(b), 0.999);
}

// ================================================================================================
// 5. Momentum conservation between two dynamic bodies (off-centre hit with friction, no gravity).
// ================================================================================================

// A sphere (r 0.5, 524 kg) hits a 1 m cube (1000 kg, turned 16.3° about z: cos θ = 0.96) off
// centre and with a sideways slip, so the normal row makes the box spin and the friction block
// makes the sphere spin (a sphere gets torque only from friction: its normal passes through its
// centre). Impulses are equal and opposite, so Σ m·v is constant; per-step rounding is ~1e-7
// relative, so 1e-4 relative to |P₀| at every step leaves a wide margin.
// Angular momentum about the origin (I·ω needs no rotation for these isotropic bodies): an
// impulse pair ±P at anchors rA, rB changes it by ((xA + rA) − (xB + rB)) × P. The anchors are
// taken once per step at the contact point, xA + rA = xB + rB, and kept through the substeps
// while the centres move, so each substep's impulses act at points that have drifted apart by
// the relative displacement of the centres since the step began, at most |vA − vB|·dt. Per step
// the change is therefore bounded by |vA − vB|·dt · Σ|P|, and Σ|P| ≤ sqrt(1 + μ²)·(the normal
// impulses) ≈ sqrt(1 + μ²)·|Δp_box| (friction is at most μ times the normal impulse). The test
// sums that bound over the steps, with a factor 2 for what a step's start and end speeds and its
// net impulse do not see (the speed inside a step, impulses that a later pass takes back), and
// requires the drift of Σ(x × m·v + I·ω) to stay below it. The bound comes to ~8 % of the
// collision's scale; a wrong lever arm or sign in a torque would be off by |r|·|P| (~0.5 m ·
// 1500 N·s, ~35 %), and the bound is required to stay under 10 % so that it would show.
TEST(SimPhysics, TwoBodyCollisionConservesMomentum) {
  std::unique_ptr<World> world = make_world(world_def(false));
  ASSERT_NE(world, nullptr);
  BodyDef sphere = sphere_def(Vec3{-1.6f, 0.35f, 0.2f}, 0.5f);
  sphere.linear_velocity = Vec3{4, -0.5f, 0.3f};
  sphere.shape.friction = 0.5f;
  BodyDef box = box_def(Vec3{0, 0, 0}, Vec3{0.5f, 0.5f, 0.5f});
  box.orientation = quat_about_axis(D3{0, 0, 1}, 0.96);
  box.shape.friction = 0.5f;
  BodyId s = add(*world, sphere);
  BodyId c = add(*world, box);

  auto momentum = [&](D3* linear, D3* angular) {
    *linear = D3{};
    *angular = D3{};
    for (BodyId id : {s, c}) {
      BodyView b = view(*world, id);
      D3 p = double(b.mass_kg) * d3(b.linear_velocity);
      D3 inertia = principal_inertia(b);
      // Isotropic bodies: I·ω needs no rotation.
      D3 spin{inertia.x * b.angular_velocity.x, inertia.y * b.angular_velocity.y,
              inertia.z * b.angular_velocity.z};
      *linear = *linear + p;
      *angular = *angular + cross(d3(b.position), p) + spin;
    }
  };
  D3 p0, l0;
  momentum(&p0, &l0);
  const double p_scale = len(p0);
  const double l_scale = std::max(len(l0), p_scale * 1.0);
  double max_p_err = 0, max_l_err = 0, l_bound = 0, max_l_ratio = 0;
  int worst_p_step = -1;
  bool touched = false;
  const double mu = 0.5;  // sqrt(0.5 · 0.5)
  for (int i = 0; i < 90; ++i) {
    const BodyView s_before = view(*world, s), c_before = view(*world, c);
    step(*world);
    const BodyView s_after = view(*world, s), c_after = view(*world, c);
    touched = touched || world->normal_impulse_sum(c) > 0;
    const double box_impulse =
        double(c_after.mass_kg) * len(d3(c_after.linear_velocity) - d3(c_before.linear_velocity));
    const double relative_speed =
        std::max(len(d3(s_before.linear_velocity) - d3(c_before.linear_velocity)),
                 len(d3(s_after.linear_velocity) - d3(c_after.linear_velocity)));
    l_bound += 2.0 * std::sqrt(1.0 + mu * mu) * box_impulse * relative_speed * double(kDt);
    D3 p, l;
    momentum(&p, &l);
    double p_err = len(p - p0) / p_scale;
    double l_err = len(l - l0) / l_scale;
    if (p_err > max_p_err) worst_p_step = i;
    max_p_err = std::max(max_p_err, p_err);
    max_l_err = std::max(max_l_err, l_err);
    // Rounding: 1e-6 of the scale on top of the bound.
    EXPECT_LE(len(l - l0), l_bound + 1e-6 * l_scale) << "step " << i;
    if (l_bound > 0) max_l_ratio = std::max(max_l_ratio, len(l - l0) / l_bound);
  }
  BodyView bs = view(*world, s), bc = view(*world, c);
  std::printf(
      "[figures] momentum: max relative error linear %.3g, angular %.3g (bound %.3g, at most "
      "%.3g of it); box |v| %.4f |w| %.4f, sphere |w| %.4f\n",
      max_p_err, max_l_err, l_bound / l_scale, max_l_ratio, len(d3(bc.linear_velocity)),
      len(d3(bc.angular_velocity)), len(d3(bs.angular_velocity)));
  EXPECT_LE(max_p_err, 1e-4) << "worst at step " << worst_p_step;
  // The bound itself stays well below a torque error's |r|·|P| / l_scale ≈ 0.35.
  EXPECT_LT(l_bound, 0.1 * l_scale);
  // The collision did happen, off centre and with friction.
  EXPECT_TRUE(touched);
  EXPECT_GT(len(d3(bc.linear_velocity)), 0.5);    // the box was knocked away
  EXPECT_GT(len(d3(bc.angular_velocity)), 0.05);  // and spun (off-centre normal row)
  EXPECT_GT(len(d3(bs.angular_velocity)), 0.01);  // friction spun the sphere
}

// ================================================================================================
// 6. A resting 10 kg box: normal impulses per substep sum to m·g·h (h = dt/substeps).
// ================================================================================================

// lambda is an impulse: supporting 10 kg against 9.81 m/s² takes m·g·dt = 10·9.81/60 =
// 1.635 N·s per step (docs/physics.md, section 2). Off by ×60 means force/impulse confusion. The
// soft step solves each of its substeps (h = dt/substeps) on its own: gravity adds g·h per substep
// and the accumulated impulses, which normal_impulse_sum returns, are the last substep's, so a
// resting box carries m·g·h = 10·9.81/240 = 0.40875 N·s (substeps · that = m·g·dt per step).
// Averaged over 60 steps: within 1 % (at rest the solve is exact but for slop-level bias);
// per step: within 3 % (warm-started iterations may redistribute a little between steps).
TEST(SimPhysics, RestingBoxNormalImpulseEqualsWeightTimesDt) {
  const WorldDef def = world_def();
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyId box = add(*world, box_def(Vec3{0, 0.5f, 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f));
  EXPECT_NEAR(view(*world, box).mass_kg, 10.0, 1e-4);
  ASSERT_GE(def.substeps, 1u);
  const double h = double(kDt) / double(def.substeps);
  const double expected = 10.0 * kG * h;

  steps(*world, 60);  // settle
  double sum = 0, worst = 0;
  for (int i = 0; i < 60; ++i) {
    step(*world);
    double lambda = world->normal_impulse_sum(box);
    sum += lambda;
    worst = std::max(worst, std::fabs(lambda / expected - 1.0));
  }
  std::printf(
      "[figures] resting box: mean lambda/(m g h) = %.6f, worst per-step deviation "
      "%.4f%%\n",
      sum / (60 * expected), worst * 100);
  EXPECT_NEAR(sum / 60.0, expected, 0.01 * expected);
  EXPECT_LE(worst, 0.03);
  BodyView b = view(*world, box);
  EXPECT_NEAR(b.position.y, 0.5, 0.01);  // and it is really held up
}

// ================================================================================================
// 7. Free fall from rest for 1 s.
// ================================================================================================

// Each step is cut into substeps of h = dt/substeps, each a semi-implicit Euler step
// (v += g·h; x += v·h). From rest that drops g·h²·Σk = g·h²·N(N+1)/2 after N substeps: with the
// default 4 substeps, N = 240 in 1 s and 9.81·(1/240)²·240·241/2 = 4.925438 m, with
// v = g·N·h = 9.81 m/s exactly. The recurrence is also run step by step in double below (the
// closed form and the loop must agree). Float accumulation over 240 substeps from y = 10 (ulp ≈
// 1e-6 m) stays far below the 1e-4 relative tolerance; a whole-step Euler (4.98675 m) is 1.2 %
// off, so the tolerance tells them apart. The continuous answer ½gt² = 4.905 m is within 2 % of
// it (0.42 %).
TEST(SimPhysics, FreeFallMatchesSemiImplicitEuler) {
  const WorldDef def = world_def();
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  BodyId ball = add(*world, sphere_def(Vec3{0, 10, 0}, 0.5f));
  // Mass is density · 4/3·π·r³ = 1000 · 0.5236 = 523.6 kg (float rounding: 1e-5 relative).
  EXPECT_NEAR(view(*world, ball).mass_kg, 1000.0 * 4.0 / 3.0 * kPi * 0.125, 1e-5 * 523.6);
  const int substeps = int(def.substeps);
  const double h = double(kDt) / substeps;
  const double n = 60.0 * substeps;
  const double expected_drop = kG * h * h * n * (n + 1) / 2;
  double v = 0, fallen = 0;
  for (int k = 0; k < 60 * substeps; ++k) {
    v += kG * h;
    fallen += v * h;
  }
  ASSERT_NEAR(fallen, expected_drop, 1e-9);
  ASSERT_NEAR(v, kG * h * n, 1e-9);  // 9.81 but for float(1/60)
  steps(*world, 60);
  BodyView b = view(*world, ball);
  double drop = 10.0 - double(b.position.y);
  std::printf("[figures] free fall 1 s: drop %.6f m (semi-implicit in %d substeps: %.6f), v %.6f\n",
              drop, substeps, expected_drop, double(b.linear_velocity.y));
  EXPECT_NEAR(drop, expected_drop, 1e-4 * expected_drop);
  EXPECT_NEAR(drop, 4.905, 0.02 * 4.905);
  EXPECT_NEAR(b.linear_velocity.y, -9.81, 1e-4 * 9.81);
  EXPECT_EQ(b.position.x, 0.0f);
  EXPECT_EQ(b.position.z, 0.0f);
  EXPECT_EQ(world->normal_impulse_sum(ball), 0.0f);
}

// ================================================================================================
// 8. A stack of ten 1 m boxes stands for 10 s.
// ================================================================================================

// A stack of ten 1 m, 1000 kg cubes with friction 0.5 on the ground plane, run for 600 steps.
// Nothing pushes it sideways, so after 10 s the top box must have moved < 1 cm horizontally
// (at any step), be upright within ~1.1° (up·y ≥ 0.9998), rest (< 5 cm/s), and not have sunk
// more than 10 cm (ten contacts each resting at the 1 mm slop plus the spring's give sink about 3.5
// cm); every box stays within 1 cm of its start.
struct StackResult {
  double max_top_drift_m = 0;
  double max_box_drift_m = 0;
  double top_up_y = 0;
  double top_sink_m = 0;  // start height − final height of the top box
  double top_speed_m_s = 0;
  bool all_finite = true;
};

// `yaw` turns every box about y; box i is offset horizontally by (±offset, ±offset) in a pattern
// that alternates between neighbours (x flips every box, z every second box).
StackResult run_stack(Quat yaw, float offset_m) {
  StackResult r;
  std::unique_ptr<World> world = make_world(world_def());
  if (!world) return r;
  add_ground(*world);
  std::vector<BodyId> boxes;
  std::vector<D3> start;
  for (int i = 0; i < 10; ++i) {
    float dx = (i % 2 != 0) ? offset_m : -offset_m;
    float dz = ((i / 2) % 2 != 0) ? offset_m : -offset_m;
    BodyDef def = box_def(Vec3{dx, 0.5f + float(i), dz}, Vec3{0.5f, 0.5f, 0.5f});
    def.orientation = yaw;
    boxes.push_back(add(*world, def));
    start.push_back(D3{dx, 0.5 + i, dz});
  }
  for (int i = 0; i < 600; ++i) {
    step(*world);
    BodyView top = view(*world, boxes.back());
    r.all_finite = r.all_finite && finite(top);
    if (!r.all_finite) return r;
    r.max_top_drift_m =
        std::max(r.max_top_drift_m, std::hypot(double(top.position.x) - start.back().x,
                                               double(top.position.z) - start.back().z));
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    BodyView b = view(*world, boxes[i]);
    r.max_box_drift_m = std::max(r.max_box_drift_m, std::hypot(double(b.position.x) - start[i].x,
                                                               double(b.position.z) - start[i].z));
  }
  BodyView top = view(*world, boxes.back());
  r.top_up_y = up_y(top);
  r.top_sink_m = start.back().y - double(top.position.y);
  r.top_speed_m_s = len(d3(top.linear_velocity));
  return r;
}

void expect_stack_stands(const StackResult& r, const char* what) {
  std::printf(
      "[figures] 10-box stack (%s): top max drift %.6f m, max box drift %.6f m, sink "
      "%.5f m, up.y %.7f\n",
      what, r.max_top_drift_m, r.max_box_drift_m, r.top_sink_m, r.top_up_y);
  EXPECT_TRUE(r.all_finite) << what;
  EXPECT_LT(r.max_top_drift_m, 0.01) << what;
  EXPECT_LT(r.max_box_drift_m, 0.01) << what;
  EXPECT_GE(r.top_up_y, 0.9998) << what;
  EXPECT_LT(r.top_sink_m, 0.1) << what;
  EXPECT_GT(r.top_sink_m, -0.01) << what;  // not thrown upwards either
  EXPECT_LT(r.top_speed_m_s, 0.05) << what;
}

// Boxes aligned with the world axes and with each other.
TEST(SimPhysics, TenBoxStackStands) {
  expect_stack_stands(run_stack(Quat{}, 0.0f), "aligned");
}

// The same aligned stack turned 36.87° about the vertical (cos θ = 0.8, half angles by sqrt):
// physically identical to the one above (the ground plane is symmetric about y), so it must stand
// just as well. Exact world-axis alignment makes many products exactly zero; turned, the faces are
// coplanar and the corners coincide only up to rounding, which is what real scenes look like.
TEST(SimPhysics, TenBoxStackStandsWhenTurnedAboutVertical) {
  expect_stack_stands(run_stack(quat_about_axis(D3{0, 1, 0}, 0.8), 0.0f), "turned 36.87 deg");
}

// Neighbouring boxes offset by 1 mm in x and z (2 mm relative): the load path moves by at most
// a millimetre or two on a 1 m base, so the stack is statically as stable as the aligned one.
TEST(SimPhysics, TenBoxStackWithMillimetreOffsetsStands) {
  expect_stack_stands(run_stack(Quat{}, 0.001f), "offsets 1 mm");
}

// ================================================================================================
// 9. Friction: sliding deceleration μg, and static friction on a slope.
// ================================================================================================

struct SlideResult {
  double decel_m_s2 = 0;
  double stop_distance_m = 0;
  double final_speed_m_s = 1e9;
  double min_up_y = 1;
  bool reversed = false;       // the contact face moved backwards (−x)
  double max_rock_back_m = 0;  // largest fall of the centre's x below its running maximum
};

// A 1 m, 10 kg cube resting on the ground is set sliding at 3 m/s along +x.
SlideResult slide_box(float box_mu, float ground_mu) {
  SlideResult r;
  std::unique_ptr<World> world = make_world(world_def());
  if (!world) return r;
  add_ground(*world, ground_mu);
  BodyDef def = box_def(Vec3{0, 0.5f, 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f);
  def.shape.friction = box_mu;
  BodyId box = add(*world, def);
  steps(*world, 30);  // settle into resting contact first
  EXPECT_EQ(world->set_linear_velocity(box, Vec3{3, 0, 0}), Error::none);
  const double x0 = view(*world, box).position.x;

  // Deceleration from the time vx takes to fall from 2.5 to 0.5 m/s (clear of the start and the
  // stop, where a step is partly static).
  int i_hi = -1, i_lo = -1;
  double v_hi = 0, v_lo = 0, max_x = x0;
  for (int i = 0; i < 120; ++i) {
    step(*world);
    BodyView b = view(*world, box);
    double vx = b.linear_velocity.x;
    r.min_up_y = std::min(r.min_up_y, up_y(b));
    // Velocity of the middle of the bottom face, v + ω × r: what friction acts on.
    const D3 r_bottom = rotate(b.orientation, D3{0, -0.5, 0});
    const double contact_vx = vx + cross(d3(b.angular_velocity), r_bottom).x;
    if (contact_vx < -1e-3) r.reversed = true;
    max_x = std::max(max_x, double(b.position.x));
    r.max_rock_back_m = std::max(r.max_rock_back_m, max_x - double(b.position.x));
    if (i_hi < 0 && vx <= 2.5) {
      i_hi = i;
      v_hi = vx;
    }
    if (vx >= 0.5) {
      i_lo = i;
      v_lo = vx;
    }
  }
  if (i_hi >= 0 && i_lo > i_hi) r.decel_m_s2 = (v_hi - v_lo) / (double(i_lo - i_hi) * kDt);
  BodyView b = view(*world, box);
  r.stop_distance_m = double(b.position.x) - x0;
  r.final_speed_m_s = len(d3(b.linear_velocity));
  return r;
}

// Kinetic friction μ·m·g per unit mass: a = μg = 4.905 m/s² for μ = 0.5. In discrete time the
// friction block removes exactly μ·λ per substep while sliding, with λ = m·g·h the substep's
// normal impulse, so the speed falls by μ·g·h per substep and μ·g·dt per step; 5 % covers only
// the normal impulse noise. Stopping distance v²/(2μg) = 0.917 m in continuous time (10 %); the
// substep recurrence (v −= μ·g·h, then x += h·v, until v would go negative) gives
// v²/(2μg) − v·h/2 ≈ 0.911 m, which the sim must match to 1 % (3 mm: the box also rocks a little
// on its soft contacts as it stops).
TEST(SimPhysics, SlidingBoxDeceleratesAtMuG) {
  SlideResult r = slide_box(0.5f, 0.5f);
  const double h = double(kDt) / double(world_def().substeps);
  double v = 3.0, discrete_stop = 0;
  while (v - 0.5 * kG * h > 0) {
    v -= 0.5 * kG * h;
    discrete_stop += v * h;
  }
  std::printf(
      "[figures] slide mu=0.5: decel %.4f m/s^2 (mu g = 4.905), stop distance %.4f m "
      "(continuous 0.9174, substeps %.4f), rocks back %.6f m\n",
      r.decel_m_s2, r.stop_distance_m, discrete_stop, r.max_rock_back_m);
  EXPECT_NEAR(r.decel_m_s2, 0.5 * kG, 0.05 * 0.5 * kG);
  EXPECT_NEAR(r.stop_distance_m, 9.0 / (2 * 0.5 * kG), 0.1 * 9.0 / (2 * 0.5 * kG));
  EXPECT_NEAR(r.stop_distance_m, discrete_stop, 0.01 * discrete_stop);
  EXPECT_LT(r.final_speed_m_s, 1e-2);  // stopped (36.7 steps needed, 120 given)
  // Friction never drives it backwards: the bottom face never slides back (1 mm/s), and the
  // centre never comes back more than 1 mm (the deceleration loads the front edge, the soft
  // contacts let the box lean forward by a fraction of a milliradian, and it rocks back onto its
  // base when it stops: ~0.5 m · mrad; sliding back at μg for a step would be 2 cm/s and more).
  EXPECT_FALSE(r.reversed);
  EXPECT_LT(r.max_rock_back_m, 1e-3);
  EXPECT_GT(r.min_up_y, 0.999);  // μ = 0.5 < 1 cannot tip a cube
}

// μ = sqrt(μA·μB): box 0.25 on ground 1.0 slides like 0.5 on 0.5 (not like max, min or mean).
TEST(SimPhysics, FrictionCombinesByGeometricMean) {
  SlideResult r = slide_box(0.25f, 1.0f);
  EXPECT_NEAR(r.decel_m_s2, 0.5 * kG, 0.05 * 0.5 * kG);
}

// A ramp of slope 0.2 (tan θ = 0.2, θ ≈ 11.3°): a static 40 × 1 × 10 m box rotated about z,
// the quaternion built from cos θ = 1/sqrt(1.04) with half-angle square roots. A 1 m cube sits
// on it, rotated the same way, rising toward +x.
struct RampResult {
  double along_slope_m = 0;    // displacement along the downhill direction
  double speed_along_m_s = 0;  // final downhill speed
  double speed_at_30_m_s = 0;  // downhill speed after 30 steps
  double across_m = 0;         // displacement across the slope (z)
  double max_lift_m = 0;       // largest move away from the ramp surface
};

RampResult box_on_ramp(float mu, int step_count) {
  RampResult r;
  std::unique_ptr<World> world = make_world(world_def());
  if (!world) return r;
  const double cos_t = 1.0 / std::sqrt(1.04), sin_t = 0.2 / std::sqrt(1.04);
  const Quat q = quat_about_axis(D3{0, 0, 1}, cos_t);
  BodyDef ramp = box_def(Vec3{0, 0, 0}, Vec3{20, 0.5f, 5});
  ramp.type = BodyType::static_body;
  ramp.orientation = q;
  ramp.shape.friction = mu;
  add(*world, ramp);
  const D3 n{-sin_t, cos_t, 0};          // ramp top normal, R·(0,1,0)
  const D3 downhill{-cos_t, -sin_t, 0};  // −R·(1,0,0)
  const D3 p0 = 1.0 * n;                 // ramp half height 0.5 + cube half 0.5
  BodyDef cube =
      box_def(Vec3{float(p0.x), float(p0.y), float(p0.z)}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f);
  cube.orientation = q;
  cube.shape.friction = mu;
  BodyId box = add(*world, cube);
  for (int i = 0; i < step_count; ++i) {
    step(*world);
    BodyView b = view(*world, box);
    D3 d = d3(b.position) - p0;
    r.max_lift_m = std::max(r.max_lift_m, dot(d, n));
    if (i == 29) r.speed_at_30_m_s = dot(d3(b.linear_velocity), downhill);
  }
  BodyView b = view(*world, box);
  D3 d = d3(b.position) - p0;
  r.along_slope_m = dot(d, downhill);
  r.across_m = d.z;
  r.speed_along_m_s = dot(d3(b.linear_velocity), downhill);
  return r;
}

// μ = 0.5 > tan θ = 0.2: static friction holds the cube. Over 5 s it may creep < 1 cm (the 2x2
// block sticks exactly inside the disk; only iteration noise could creep).
TEST(SimPhysics, StaticFrictionHoldsBoxOnSlope) {
  RampResult r = box_on_ramp(0.5f, 300);
  std::printf("[figures] ramp mu=0.5: creep along slope %.6f m in 5 s, across %.6f m\n",
              r.along_slope_m, r.across_m);
  EXPECT_LT(std::fabs(r.along_slope_m), 0.01);
  EXPECT_LT(std::fabs(r.across_m), 0.01);
  EXPECT_LT(std::fabs(r.speed_along_m_s), 1e-3);
  EXPECT_LT(r.max_lift_m, 0.01);  // no hopping on the ramp
}

// μ = 0.1 < tan θ: it slides with a = g(sin θ − μ cos θ) = 0.96195 m/s². Measured from the speed
// gained between steps 30 and 120 (1.5 s): within 5 % (exact per-step μ·λ, as on the flat).
TEST(SimPhysics, BoxSlidesDownSlopeBelowFrictionAngle) {
  RampResult r = box_on_ramp(0.1f, 120);
  const double cos_t = 1.0 / std::sqrt(1.04), sin_t = 0.2 / std::sqrt(1.04);
  const double expected = kG * (sin_t - 0.1 * cos_t);
  double a = (r.speed_along_m_s - r.speed_at_30_m_s) / (90.0 * kDt);
  std::printf("[figures] ramp mu=0.1: downhill accel %.5f m/s^2 (expected %.5f)\n", a, expected);
  EXPECT_NEAR(a, expected, 0.05 * expected);
  EXPECT_LT(std::fabs(r.across_m), 0.01);
}

// ================================================================================================
// 10. A box spinning about the vertical axis on the ground slows down, in place.
// ================================================================================================

// 10 kg 1 m cube, μ = 0.5, ω = 5 rad/s about y. Friction torque is at most μ·(Σλ)·d_max with
// d_max = √2/2 m (the contact points lie within the bottom face), so per step ω can fall by at
// most μ·g·dt·d_max·m/I = 0.5·9.81/60·0.7071·6 = 0.3468 rad/s (I = m/6); 5 % margin for the
// per-step spread of Σλ. It must stop within 2 s (it needs ≥ 14.4 steps; uniform pressure would
// need 27), never reverse, stay in place (1 cm) and upright, and its energy must never rise by
// more than 1 mJ per step (≈ 10 µm of lift for 10 kg: float noise, not physics).
TEST(SimPhysics, SpinningBoxSlowsByFrictionTorque) {
  std::unique_ptr<World> world = make_world(world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyId box = add(*world, box_def(Vec3{0, 0.5f, 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f));
  steps(*world, 30);
  ASSERT_EQ(world->set_angular_velocity(box, Vec3{0, 5, 0}), Error::none);

  const double max_drop_per_step = 0.5 * kG * double(kDt) * std::sqrt(0.5) * 6.0 * 1.05;
  BodyView prev = view(*world, box);
  double prev_e = total_energy_j(prev);
  double max_rise = 0, max_drop = 0, max_drift = 0, max_growth = 0, min_spin = 5;
  int stopped_at = -1;
  for (int i = 0; i < 120; ++i) {
    step(*world);
    BodyView b = view(*world, box);
    ASSERT_TRUE(finite(b)) << "step " << i;
    double e = total_energy_j(b);
    max_rise = std::max(max_rise, e - prev_e);
    double drop = double(prev.angular_velocity.y) - double(b.angular_velocity.y);
    max_drop = std::max(max_drop, drop);
    max_growth = std::max(max_growth, -drop);
    min_spin = std::min(min_spin, double(b.angular_velocity.y));
    max_drift = std::max(max_drift, std::hypot(double(b.position.x), double(b.position.z)));
    if (stopped_at < 0 && std::fabs(b.angular_velocity.y) < 1e-2) stopped_at = i + 1;
    prev = b;
    prev_e = e;
  }
  BodyView b = view(*world, box);
  std::printf(
      "[figures] spinning box: stopped after %d steps, max dw/step %.4f rad/s (bound "
      "%.4f), drift %.6f m, max energy rise %.3g J\n",
      stopped_at, max_drop, max_drop_per_step, max_drift, max_rise);
  EXPECT_LE(max_drop, max_drop_per_step);
  EXPECT_LE(max_growth, 1e-4);  // friction never spins it up (float noise only)
  EXPECT_GE(min_spin, -1e-3);   // nor reverses it
  ASSERT_GT(stopped_at, 0) << "still spinning after 2 s";
  EXPECT_GE(stopped_at, 14);
  EXPECT_LT(max_drift, 0.01);
  EXPECT_LE(max_rise, 1e-3);
  EXPECT_GT(up_y(b), 0.999);
  EXPECT_LT(len(d3(b.angular_velocity)), 1e-2);
}

// ================================================================================================
// 11. Energy never rises in e = 0 resting contact.
// ================================================================================================

// A lone cube, a sphere and a 3-cube stack, all e = 0, placed exactly touching the ground (or each
// other) at rest. Nothing may add energy: over 5 s the total never rises by more than
// 1e-4 · Σm·g·(1 m) per step (lifting everything 0.1 mm — far above float noise, far below any
// real bias kick) and the total change over the run is not positive beyond that either.
TEST(SimPhysics, RestingContactNeverGainsEnergy) {
  std::unique_ptr<World> world = make_world(world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  std::vector<BodyId> ids;
  ids.push_back(add(*world, box_def(Vec3{-3, 0.5f, 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f)));
  ids.push_back(add(*world, sphere_def(Vec3{0, 0.5f, 0}, 0.5f, 20.0f)));
  for (int i = 0; i < 3; ++i) {
    ids.push_back(add(*world, box_def(Vec3{3, 0.5f + float(i), 0}, Vec3{0.5f, 0.5f, 0.5f}, 10.0f)));
  }
  auto energy = [&] {
    double e = 0;
    for (BodyId id : ids)
      e += total_energy_j(view(*world, id));
    return e;
  };
  double weight = 0;
  for (BodyId id : ids)
    weight += double(view(*world, id).mass_kg) * kG;
  const double tol = 1e-4 * weight * 1.0;

  const double e0 = energy();
  double prev = e0, max_rise = 0;
  for (int i = 0; i < 300; ++i) {
    step(*world);
    double e = energy();
    max_rise = std::max(max_rise, e - prev);
    prev = e;
  }
  std::printf(
      "[figures] resting e=0: max step energy rise %.3g J (tol %.3g), total change %.3g "
      "J\n",
      max_rise, tol, prev - e0);
  EXPECT_LE(max_rise, tol);
  EXPECT_LE(prev - e0, tol);
}

// After an e = 0 impact has been absorbed (the drop of test 1, 1 s after contact), the resting
// ball's energy never rises either.
TEST(SimPhysics, SettledInelasticBallNeverGainsEnergy) {
  std::unique_ptr<World> world = make_world(world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyId ball = add(*world, sphere_def(Vec3{0, 2.5f, 0}, 0.5f));
  steps(*world, 100);  // contact at ~38, then 1 s to settle
  BodyView b = view(*world, ball);
  const double tol = 1e-4 * double(b.mass_kg) * kG;
  double prev = total_energy_j(b), max_rise = 0;
  for (int i = 0; i < 120; ++i) {
    step(*world);
    double e = total_energy_j(view(*world, ball));
    max_rise = std::max(max_rise, e - prev);
    prev = e;
  }
  EXPECT_LE(max_rise, tol);
}

// ================================================================================================
// 12. A cube dropped fast onto the ground comes to rest on a face, not buried in it.
// ================================================================================================

// Cubes of 4, 10 and 20 cm, released 1 m up at 8 m/s downwards in three tilted orientations, over
// the ground plane. At that speed the speculative margin (|v|·dt ≈ 0.15 m) holds every corner of
// the smaller cubes, so the contact reduction chooses 4 of up to 8. Whatever it chooses, after
// 4 s the cube must rest with no corner deeper than the 5 mm slop (+2 mm), its centre at least
// half an edge minus that above the ground: a corner left out of the manifold is not pushed out,
// and a body resting on the others stays buried.
TEST(SimPhysics, DroppedCubeComesToRestOnTheGroundNotInIt) {
  const float halves[] = {0.02f, 0.05f, 0.1f};
  const Quat turns[] = {Quat{0.3f, 0.2f, 0.1f, 1}, Quat{0.9f, 0.1f, 0.3f, 0.2f},
                        Quat{0, 0.3f, 1, 0.1f}};
  const WorldDef def = world_def();
  const double deepest_allowed = double(def.linear_slop_m) + 0.002;
  for (float half : halves) {
    for (Quat turn : turns) {
      std::unique_ptr<World> world = make_world(def);
      ASSERT_NE(world, nullptr);
      add_ground(*world);
      BodyDef cube = box_def(Vec3{0, 1, 0}, Vec3{half, half, half});
      const double norm = std::sqrt(double(turn.x) * turn.x + double(turn.y) * turn.y +
                                    double(turn.z) * turn.z + double(turn.w) * turn.w);
      cube.orientation = Quat{float(turn.x / norm), float(turn.y / norm), float(turn.z / norm),
                              float(turn.w / norm)};
      cube.linear_velocity = Vec3{0, -8, 0};
      BodyId id = add(*world, cube);
      steps(*world, 240);
      const BodyView b = view(*world, id);
      double lowest = 1e9;
      for (int v = 0; v < 8; ++v) {
        const D3 corner{(v & 1) ? half : -half, (v & 2) ? half : -half, (v & 4) ? half : -half};
        lowest = std::min(lowest, double(b.position.y) + rotate(b.orientation, corner).y);
      }
      std::printf(
          "[figures] dropped cube half %.2f m, turn (%.1f, %.1f, %.1f, %.1f): centre y %.5f m, "
          "lowest corner %.5f m, speed %.2g m/s\n",
          double(half), double(turn.x), double(turn.y), double(turn.z), double(turn.w),
          double(b.position.y), lowest, len(d3(b.linear_velocity)));
      EXPECT_TRUE(finite(b));
      EXPECT_GT(lowest, -deepest_allowed) << "half " << half << ", turn " << turn.z;
      EXPECT_GT(b.position.y, half - deepest_allowed) << "half " << half << ", turn " << turn.z;
      EXPECT_LT(len(d3(b.linear_velocity)), 0.05);
    }
  }
}

}  // namespace
