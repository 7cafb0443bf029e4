// Physics conformance suite: scenes a good real-time rigid-body engine (Box2D v3's soft step,
// Jolt) handles, each with the bound it must stay within. Label `physics`.
//
// Every scene is built here with the public API only (default_world_def, default_body_def,
// World::create, create_body, step, get_body) and runs at the default settings (dt = 1/60 s,
// default iterations) unless its comment says otherwise. Expected values come from closed-form
// statics and kinematics computed in this file in double precision (test_math.h), never from the
// sim's own math. std::sin/std::cos are used only to build initial orientations.
//
// Each test prints its measured figure ("[figures] ..." lines, also recorded as GTest
// properties), so a run shows how far inside or outside its bound the solver is. The scenes the
// solver does not meet yet are kept, with their bounds, as DISABLED_ tests whose comment says
// what it does instead (run them with --gtest_also_run_disabled_tests): the bounds are the
// target, not the status quo.
//
// Conventions: y up, g = 9.81 m/s², friction μ = sqrt(μA·μB), restitution e = max(eA, eB). The
// ground is a static box of half extents 20 × 0.5 × 20 whose top face is y = 0 (pile: the built-in
// scene's own floor plane).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/sim/scene.h"
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
using lockstep::testing::cross;
using lockstep::testing::D3;
using lockstep::testing::d3;
using lockstep::testing::dot;
using lockstep::testing::len;

constexpr double kDt = 1.0 / 60.0;
constexpr double kPi = 3.14159265358979323846;

// ---- test-side math (double) -------------------------------------------------------------------

// v rotated by the unit quaternion q (v' = v + 2w(u×v) + 2u×(u×v)).
D3 rotate(Quat q, D3 v) {
  D3 u{q.x, q.y, q.z};
  D3 t = 2.0 * cross(u, v);
  return v + double(q.w) * t + cross(u, t);
}
D3 inv_rotate(Quat q, D3 v) {
  return rotate(Quat{-q.x, -q.y, -q.z, q.w}, v);
}

// Rotation by `angle_rad` about a unit axis.
Quat quat_about(D3 axis, double angle_rad) {
  double s = std::sin(0.5 * angle_rad), c = std::cos(0.5 * angle_rad);
  return Quat{float(axis.x * s), float(axis.y * s), float(axis.z * s), float(c)};
}

double horizontal(D3 v) {
  return std::sqrt(v.x * v.x + v.z * v.z);
}

// World-space axes of a body's local x, y, z.
std::array<D3, 3> axes(const BodyView& b) {
  return {rotate(b.orientation, D3{1, 0, 0}), rotate(b.orientation, D3{0, 1, 0}),
          rotate(b.orientation, D3{0, 0, 1})};
}

// Half-width of a shape's projection on the unit world direction n (its support extent).
double extent_along(const BodyView& b, D3 n) {
  std::array<D3, 3> a = axes(b);
  switch (b.shape.type) {
    case ShapeType::box:
      return double(b.shape.half_extents.x) * std::fabs(dot(a[0], n)) +
             double(b.shape.half_extents.y) * std::fabs(dot(a[1], n)) +
             double(b.shape.half_extents.z) * std::fabs(dot(a[2], n));
    case ShapeType::capsule:
      return double(b.shape.radius) + double(b.shape.half_height) * std::fabs(dot(a[1], n));
    default:
      return double(b.shape.radius);
  }
}

// Radius of the smallest centred sphere holding the shape.
double bounding_radius(const BodyView& b) {
  switch (b.shape.type) {
    case ShapeType::box:
      return len(d3(b.shape.half_extents));
    case ShapeType::capsule:
      return double(b.shape.radius) + double(b.shape.half_height);
    default:
      return double(b.shape.radius);
  }
}

// Penetration depth of two boxes by the separating-axis theorem (15 axes): the smallest overlap
// of their projections; ≤ 0 when some axis separates them.
double box_penetration(const BodyView& a, const BodyView& b) {
  std::array<D3, 3> aa = axes(a), ab = axes(b);
  std::vector<D3> candidates(aa.begin(), aa.end());
  candidates.insert(candidates.end(), ab.begin(), ab.end());
  for (const D3& x : aa) {
    for (const D3& y : ab) {
      D3 c = cross(x, y);
      double l = len(c);
      if (l > 1e-6) candidates.push_back((1.0 / l) * c);
    }
  }
  D3 d = d3(b.position) - d3(a.position);
  double depth = 1e30;
  for (const D3& n : candidates) {
    double overlap = extent_along(a, n) + extent_along(b, n) - std::fabs(dot(d, n));
    depth = std::min(depth, overlap);
  }
  return depth;
}

// Principal moments (body axes) of a solid box or sphere.
D3 principal_inertia(const BodyView& b) {
  double m = b.mass_kg;
  if (b.shape.type == ShapeType::box) {
    double x = 2.0 * double(b.shape.half_extents.x), y = 2.0 * double(b.shape.half_extents.y),
           z = 2.0 * double(b.shape.half_extents.z);
    return {m / 12.0 * (y * y + z * z), m / 12.0 * (x * x + z * z), m / 12.0 * (x * x + y * y)};
  }
  double i = 0.4 * m * double(b.shape.radius) * double(b.shape.radius);
  return {i, i, i};
}

// ½mv² + ½ωᵀIω (ω in body axes) of a dynamic box or sphere (J).
double kinetic_energy_j(const BodyView& b) {
  if (b.type != BodyType::dynamic) return 0;
  D3 v = d3(b.linear_velocity);
  D3 w = inv_rotate(b.orientation, d3(b.angular_velocity));
  D3 inertia = principal_inertia(b);
  return 0.5 * b.mass_kg * dot(v, v) +
         0.5 * (inertia.x * w.x * w.x + inertia.y * w.y * w.y + inertia.z * w.z * w.z);
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

// ---- scene building ----------------------------------------------------------------------------

// The default settings with sleeping off: the scenes that judge the solver's own rest must not
// be put to sleep by the islands (a body moving under the 5 cm/s threshold would sleep).
WorldDef awake_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.enable_sleep = false;
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

BodyDef static_box_def(Vec3 position, Vec3 half_extents, float friction, float restitution = 0) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.position = position;
  def.shape.type = ShapeType::box;
  def.shape.half_extents = half_extents;
  def.shape.friction = friction;
  def.shape.restitution = restitution;
  return def;
}

// The ground: a static 40 m × 1 m × 40 m box whose top face is y = 0.
BodyId add_ground(World& world, float friction = 0.5f, float restitution = 0.0f) {
  return add(world, static_box_def(Vec3{0, -0.5f, 0}, Vec3{20, 0.5f, 20}, friction, restitution));
}

BodyDef box_def(Vec3 position, Vec3 half_extents, float density = 1000.0f, float friction = 0.5f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.shape.type = ShapeType::box;
  def.shape.half_extents = half_extents;
  def.shape.density = density;
  def.shape.friction = friction;
  return def;
}

BodyDef sphere_def(Vec3 position, float radius, float density = 1000.0f, float friction = 0.5f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.shape.type = ShapeType::sphere;
  def.shape.radius = radius;
  def.shape.density = density;
  def.shape.friction = friction;
  return def;
}

constexpr Vec3 kUnitHalf{0.5f, 0.5f, 0.5f};

BodyView view(const World& world, BodyId id) {
  BodyView b{};
  EXPECT_EQ(world.get_body(id, &b), Error::none);
  return b;
}

void step(World& world) {
  lockstep::sim::StepStatus status = world.step();
  EXPECT_TRUE(status.ok()) << "overflow bits " << status.overflow;
}

// Prints a measured figure and records it as a GTest property (shown in XML reports).
void figure(const std::string& key, double value, const char* unit, const char* bound) {
  char text[200];
  std::snprintf(text, sizeof text, "%.6g %s (bound %s)", value, unit, bound);
  ::testing::Test::RecordProperty(key, text);
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[figures] %s.%s: %s = %s\n", info->test_suite_name(), info->name(), key.c_str(),
              text);
  std::fflush(stdout);
}

// Largest displacement (m) of any of `ids` from its position at the call, over `steps` steps.
struct Drift {
  double max_m = 0;  // 3D distance
  double horizontal_m = 0;
  double vertical_m = 0;
  int worst_step = -1;
};
Drift track_drift(World& world, const std::vector<BodyId>& ids, int steps) {
  std::vector<D3> start;
  for (BodyId id : ids)
    start.push_back(d3(view(world, id).position));
  Drift d;
  for (int s = 1; s <= steps; ++s) {
    step(world);
    for (size_t i = 0; i < ids.size(); ++i) {
      BodyView b = view(world, ids[i]);
      EXPECT_TRUE(finite(b));
      D3 delta = d3(b.position) - start[i];
      if (len(delta) > d.max_m) {
        d.max_m = len(delta);
        d.worst_step = s;
      }
      d.horizontal_m = std::max(d.horizontal_m, horizontal(delta));
      d.vertical_m = std::max(d.vertical_m, std::fabs(delta.y));
    }
  }
  return d;
}

// ================================================================================================
// 1. Turned stacks: 10 unit boxes, box i turned i·θ about y, exactly touching, on the ground.
// ================================================================================================
//
// Bound: the top box's horizontal displacement stays < 1 cm over 10 s (600 steps, checked every
// step) and its height within 5 cm of its start. Statics: every contact is a horizontal face on
// a horizontal face, so the exact contact forces are vertical and equal to the weight above; no
// friction is needed at all (hence the μ = 0 case). The relative turn only changes the shape of
// the contact patch (the overlap of two squares, an octagon at 20°). A good engine's manifold
// (4 points spanning the patch: Box2D v3 / Jolt face clipping and reduction) supports the weight
// without a net torque and its warm-started normal impulses converge, so the stack holds to
// millimetres indefinitely (Box2D's stacking benchmarks and Jolt's StackTest, whose boxes are
// turned about y, stand at rest until they sleep).

void run_turned_stack(double theta_deg, float friction, int steps = 600) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world, friction);
  std::vector<BodyId> ids;
  for (int i = 0; i < 10; ++i) {
    BodyDef b = box_def(Vec3{0, 0.5f + float(i), 0}, kUnitHalf, 1000.0f, friction);
    b.orientation = quat_about(D3{0, 1, 0}, double(i) * theta_deg * kPi / 180.0);
    ids.push_back(add(*world, b));
  }
  D3 start = d3(view(*world, ids.back()).position);
  double max_h = 0, max_v = 0;
  int worst = -1;
  for (int s = 1; s <= steps; ++s) {
    step(*world);
    BodyView top = view(*world, ids.back());
    ASSERT_TRUE(finite(top)) << "step " << s;
    D3 delta = d3(top.position) - start;
    if (horizontal(delta) > max_h) {
      max_h = horizontal(delta);
      worst = s;
    }
    max_v = std::max(max_v, std::fabs(delta.y));
  }
  figure("top_horizontal_drift_m", max_h, "m", "< 0.01");
  // Vertically the stack settles into its contacts: 10 contacts × (1 mm linear slop + the soft
  // contact's compression under the weight above, ≤ 3 mm) ≈ 3.5 cm. A box that slid off would
  // drop 0.5 m or more, so 5 cm still tells "stands" from "fell".
  figure("top_vertical_drift_m", max_v, "m", "< 0.05");
  EXPECT_LT(max_h, 0.01) << "worst at step " << worst;
  EXPECT_LT(max_v, 0.05);
}

TEST(ConformanceTurnedStack, Turn2DegFriction05) {
  run_turned_stack(2.0, 0.5f);
}
TEST(ConformanceTurnedStack, Turn20DegFriction05) {
  run_turned_stack(20.0, 0.5f);
}
// The frictionless stack meets the 10-s bound: the top box moves 2.9 mm. With μ = 0 a box slides
// freely on a support that tilts, and a soft contact lets a support tilt under an off-centre
// load, so the upper boxes slide towards the low side, which tilts the support further: a
// compliant frictionless stack is unstable, and only the size of its seed decides when it
// shows. The seed used to be the centroid row's soft fixed point differing from the points'
// (contact_lanes_passes.inl, solve_centroid_row): the sweep handed the difference to the first
// point of every turned manifold, and the stack fell at 7–8 s. With the two made consistent the
// top box leans 0.001° at 7.5 s (it leaned 12°).
TEST(ConformanceTurnedStack, Turn1DegFrictionless) {
  run_turned_stack(1.0, 0.0f);  // μ = 0 on every shape, the ground too
}
// Not met yet: the same stack for 30 s. The growth (×2 every ~0.6 s from rounding-sized
// leans) shows at 10 s (the top box leans 0.3°), moves it 1 cm at ~11.5 s and topples the
// stack by 15 s. More substeps or iterations do not cure it; what does (a stiffer spring for
// the tilt, or supports scaled heavier) makes the 20-row pyramid sway (docs/design-decisions.md);
// a rigid position correction (Jolt's) would.
TEST(ConformanceTurnedStack, DISABLED_Turn1DegFrictionlessFor30s) {
  run_turned_stack(1.0, 0.0f, 1800);
}

// ================================================================================================
// 2. 100:1 mass ratio: a 100 kg unit box resting on a 1 kg unit box on the ground.
// ================================================================================================
//
// Bound: both boxes within 1 cm of their start (rest) positions, horizontally and vertically,
// over 10 s. Statics are trivial (vertical forces 981 N and 990.8 N); the difficulty is purely
// numerical: with Gauss-Seidel the light box's contacts must carry 100× its own weight. Jolt
// (rigid warm-started sequential impulses and a position pass) holds such a pair at rest within
// its slop: the warm start carries the converged impulses from step to step, so each step only
// corrects gravity's increment. A soft step does not: Box2D v3 at its defaults (measured on the
// 2D version of this scene) sinks 4.4 cm, since its contacts flex in proportion to the load over
// the light body's mass, as ours do.

// Met by support mass scaling (contact_lanes.cpp): the row between the boxes sees the light box
// as heavy as the one it carries. Without it the soft rows give in proportion to the load over
// the light box's mass: the pair stood still but sank 3.7 cm.
TEST(ConformanceMassRatio, HeavyBoxOnLightBox100To1) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyId light = add(*world, box_def(Vec3{0, 0.5f, 0}, kUnitHalf, 1.0f));    // 1 m³ · 1 kg/m³
  BodyId heavy = add(*world, box_def(Vec3{0, 1.5f, 0}, kUnitHalf, 100.0f));  // 100 kg
  ASSERT_NEAR(view(*world, light).mass_kg, 1.0, 1e-4);
  ASSERT_NEAR(view(*world, heavy).mass_kg, 100.0, 1e-2);
  Drift d = track_drift(*world, {light, heavy}, 600);
  figure("max_horizontal_m", d.horizontal_m, "m", "< 0.01");
  figure("max_vertical_m", d.vertical_m, "m", "< 0.01");
  EXPECT_LT(d.horizontal_m, 0.01);
  EXPECT_LT(d.vertical_m, 0.01);
}

// ================================================================================================
// 3. A heavy box on a 3-box pyramid of light boxes (100:1).
// ================================================================================================
//
// Two 1 kg unit boxes on the ground, 0.1 m apart (centres at x = ±0.55), a 1 kg unit box on
// top bridging them (0.45 m of overlap on each), a 100 kg unit box on that. Bound: no box moves
// more than 2 cm over 10 s. Statics: everything is symmetric about x = 0, so each lower box
// carries half the load through vertical forces, and the bridge's supports lie 0.05–0.5 m each
// side of its centre line: no friction or tipping torque is needed. The heavy load on the
// light bridge is the 100:1 Gauss-Seidel stress case again, now with two supports that must
// share the load evenly; Jolt keeps such a scene within millimetres (Box2D v3's soft step, on
// the 2D version: 6.5 cm).

// Met by support mass scaling, as above. Without it the light bridge sank between its supports
// far enough to tip, and the structure spread (26 cm).
TEST(ConformanceMassRatio, HeavyBoxOnLightPyramid) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  std::vector<BodyId> ids;
  ids.push_back(add(*world, box_def(Vec3{-0.55f, 0.5f, 0}, kUnitHalf, 1.0f)));
  ids.push_back(add(*world, box_def(Vec3{0.55f, 0.5f, 0}, kUnitHalf, 1.0f)));
  ids.push_back(add(*world, box_def(Vec3{0, 1.5f, 0}, kUnitHalf, 1.0f)));
  ids.push_back(add(*world, box_def(Vec3{0, 2.5f, 0}, kUnitHalf, 100.0f)));
  Drift d = track_drift(*world, ids, 600);
  figure("max_displacement_m", d.max_m, "m", "< 0.02");
  EXPECT_LT(d.max_m, 0.02) << "worst at step " << d.worst_step;
}

// A light box thrown up into a heavy box that rests on two pillars above it. Support mass
// scaling (the two tests above) must not apply to an impact: a 1 kg box meeting a 100 kg one at
// v can give it at most the whole of its momentum, v/101 upwards for a perfectly inelastic hit
// (restitution 0 here), and since the scaling would treat the light box as 100 kg it would
// launch the heavy one at ~v/2. The box is thrown at 4 m/s from the ground and meets the heavy
// box 0.6 m higher at √(16 − 2·9.81·0.6) = 2.06 m/s: bound 0.05 m/s (2.5× the inelastic 0.0204)
// for the heavy box's largest upward speed over 2 s.
TEST(ConformanceMassRatio, LightBoxThrownUpIntoHeavyBoxInventsNoMomentum) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  add(*world, static_box_def(Vec3{-0.6f, 0.5f, 0}, Vec3{0.2f, 0.5f, 0.5f}, 0.5f));
  add(*world, static_box_def(Vec3{0.6f, 0.5f, 0}, Vec3{0.2f, 0.5f, 0.5f}, 0.5f));
  BodyId heavy = add(*world, box_def(Vec3{0, 1.25f, 0}, Vec3{0.5f, 0.25f, 0.5f}, 200.0f));
  BodyId light = add(*world, box_def(Vec3{0, 0.2f, 0}, Vec3{0.2f, 0.2f, 0.2f}, 1.0f / 0.064f));
  ASSERT_NEAR(view(*world, heavy).mass_kg, 100.0, 1e-2);
  ASSERT_NEAR(view(*world, light).mass_kg, 1.0, 1e-4);
  for (int s = 0; s < 30; ++s)  // let the heavy box settle on the pillars
    step(*world);
  ASSERT_EQ(world->set_linear_velocity(light, Vec3{0, 4.0f, 0}), Error::none);
  double max_up = 0, light_top = 0;
  for (int s = 0; s < 120; ++s) {
    step(*world);
    max_up = std::max(max_up, static_cast<double>(view(*world, heavy).linear_velocity.y));
    light_top = std::max(light_top, static_cast<double>(view(*world, light).position.y));
  }
  figure("heavy_max_upward_speed_m_s", max_up, "m/s", "< 0.05");
  EXPECT_GT(light_top, 0.75) << "the light box never reached the heavy one";
  EXPECT_LT(max_up, 0.05);
}

// ================================================================================================
// 4. A 20-row 2D pyramid of 210 unit boxes settles.
// ================================================================================================
//
// Box2D v3's benchmark pyramid: rows touching, boxes of a row touching, each row offset by half
// a box (row r holds 20 − r boxes at y = 0.5 + r). Bound: from 5 s to 9 s the largest linear
// speed of any box stays < 5 mm/s (printed at 5, 7 and 9 s). The pyramid starts in exact
// equilibrium: a good solver's only motion is the settling into the linear slop during the first
// second. After that the warm-started impulses equal the weights, and Box2D v3's relax iterations
// take the push-out (bias) velocity back out after the position update, so nothing feeds motion
// back in and the residual speeds are of the order of the iteration error, well under 5 mm/s.
// (Box2D's large-pyramid benchmark settles and falls asleep, which needs every body under its
// 5 cm/s sleep threshold for 0.5 s; Jolt's PyramidTest likewise settles and sleeps.)

// What it takes: the settling is the sinking of every contact through the linear slop (the soft
// rows leave the slop alone and the spring's give lets the load sink at a few mm/s per unit of
// load ratio), and while 20 rows sink by different amounts they shear against each other. With
// a 5 mm slop the boxes still crept at 7–15 mm/s between 5 and 9 s; with the 1 mm default
// they are under 3 mm/s from 5 s on (2 mm slop: 8 mm/s). Larger or rougher pyramids settle more
// slowly (25 rows or μ = 1: 1–2 cm/s at 5 s): see docs/design-decisions.md.
TEST(ConformancePyramid, TwentyRowsComeToRest) {
  WorldDef def = awake_def();  // sleeping off
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  add_ground(*world, 0.6f);
  std::vector<BodyId> ids;
  constexpr int kRows = 20;
  for (int row = 0; row < kRows; ++row) {
    int count = kRows - row;
    for (int j = 0; j < count; ++j) {
      float x = float(j) - 0.5f * float(count - 1);
      ids.push_back(add(*world, box_def(Vec3{x, 0.5f + float(row), 0}, kUnitHalf, 1000.0f, 0.6f)));
    }
  }
  ASSERT_EQ(ids.size(), 210u);
  double window_max = 0;
  int window_worst = -1;
  std::array<double, 3> at_mark{};
  for (int s = 1; s <= 540; ++s) {
    step(*world);
    if (s < 300) continue;
    double speed = 0;
    for (BodyId id : ids) {
      BodyView b = view(*world, id);
      ASSERT_TRUE(finite(b));
      speed = std::max(speed, len(d3(b.linear_velocity)));
    }
    if (speed > window_max) {
      window_max = speed;
      window_worst = s;
    }
    if (s == 300) at_mark[0] = speed;
    if (s == 420) at_mark[1] = speed;
    if (s == 540) at_mark[2] = speed;
  }
  figure("max_speed_at_5s_m_s", at_mark[0], "m/s", "< 0.005");
  figure("max_speed_at_7s_m_s", at_mark[1], "m/s", "< 0.005");
  figure("max_speed_at_9s_m_s", at_mark[2], "m/s", "< 0.005");
  figure("max_speed_5s_to_9s_m_s", window_max, "m/s", "< 0.005");
  EXPECT_LT(window_max, 0.005) << "worst at step " << window_worst;
}

// The same pyramid with sleeping on (the default): every box asleep by 5 s. Bound: the sleeping
// body count reaches 210 by step 300 and stays there to 9 s. Box2D v3 and Jolt put their pyramids
// to sleep (every body under the threshold for half a second); here the boxes' residual motion
// (1–2 cm/s, see above) is under the 5 cm/s threshold once the pyramid has settled.
TEST(ConformancePyramid, TwentyRowsFallAsleep) {
  std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world, 0.6f);
  constexpr int kRows = 20;
  for (int row = 0; row < kRows; ++row) {
    int count = kRows - row;
    for (int j = 0; j < count; ++j) {
      float x = float(j) - 0.5f * float(count - 1);
      add(*world, box_def(Vec3{x, 0.5f + float(row), 0}, kUnitHalf, 1000.0f, 0.6f));
    }
  }
  int asleep_at = -1;
  uint32_t fewest_after = 210;
  for (int s = 1; s <= 540; ++s) {
    step(*world);
    const uint32_t sleeping = world->last_step_stats().sleeping_bodies;
    if (asleep_at < 0 && sleeping == 210) asleep_at = s;
    if (asleep_at > 0 && sleeping < fewest_after) fewest_after = sleeping;
  }
  figure("all_asleep_at_s", asleep_at / 60.0, "s", "≤ 5");
  ASSERT_GT(asleep_at, 0) << "never all asleep";
  EXPECT_LE(asleep_at, 300);
  EXPECT_EQ(fewest_after, 210u);  // nothing woke it again
}

// ================================================================================================
// 5. Tunnelling: a fast small sphere against a thin static box.
// ================================================================================================
//
// Gravity 0. A sphere of radius 0.1 m flies along +x at v towards a static box centred at x = 0,
// `thickness` thick along x and 10 m × 10 m across. Bound: the sphere's centre stays on the near
// side of the box's centre plane (x < 0) for 2 s. At 30 m/s and 60 Hz the sphere travels 0.5 m
// a step, more than the 0.2 m box plus the sphere's 0.2 m diameter, so discrete collision alone
// can step straight over the box. Box2D v3 runs continuous collision (time of impact) for every
// dynamic body against static shapes by default; Jolt does with EMotionQuality::LinearCast;
// speculative contacts with a margin of the step's travel catch it as well. Any of these stops
// the sphere at the near face whatever the speed, thickness or the point within a step where
// the impact falls.
//
// The grid: speeds 10–50 m/s × thickness 0.1 and 0.2 m × impact phase 0, 1/3, 2/3 of a step. The
// start gap from sphere surface to near face is (n + phase)·v·dt with n = ⌈2 m / (v·dt)⌉ (2 m for
// 10–40 m/s), so the sphere would touch the face `phase` of the way through a step.

struct TunnelCase {
  int speed_m_s;
  int thickness_mm;
  int phase_thirds;  // 0, 1, 2
};

class ConformanceTunnelling : public ::testing::TestWithParam<TunnelCase> {};

TEST_P(ConformanceTunnelling, SphereStopsAtThinStaticBox) {
  const TunnelCase c = GetParam();
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  const double half_t = 0.5e-3 * c.thickness_mm;
  const double radius = 0.1;
  const double travel = c.speed_m_s * kDt;
  const double n = std::ceil(2.0 / travel - 1e-9);
  const double gap = (n + c.phase_thirds / 3.0) * travel;
  add(*world, static_box_def(Vec3{0, 0, 0}, Vec3{float(half_t), 5, 5}, 0.5f));
  BodyDef ball = sphere_def(Vec3{float(-half_t - radius - gap), 0, 0}, float(radius));
  ball.linear_velocity = Vec3{float(c.speed_m_s), 0, 0};
  BodyId id = add(*world, ball);
  double max_x = -1e30;
  int crossed_step = -1;
  for (int s = 1; s <= 120; ++s) {
    step(*world);
    BodyView b = view(*world, id);
    ASSERT_TRUE(finite(b)) << "step " << s;
    max_x = std::max(max_x, double(b.position.x));
    if (crossed_step < 0 && !(b.position.x < 0)) crossed_step = s;
  }
  figure("max_centre_x_m", max_x, "m", "< 0 (box centre plane)");
  EXPECT_LT(max_x, 0.0) << "passed the centre plane at step " << crossed_step;
}

std::vector<TunnelCase> tunnel_cases() {
  std::vector<TunnelCase> cases;
  for (int speed : {10, 20, 30, 40, 50}) {
    for (int thickness : {100, 200}) {
      for (int phase : {0, 1, 2})
        cases.push_back({speed, thickness, phase});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Grid, ConformanceTunnelling, ::testing::ValuesIn(tunnel_cases()),
                         [](const ::testing::TestParamInfo<TunnelCase>& p) {
                           char name[64];
                           std::snprintf(name, sizeof name, "v%d_t%dmm_phase%dof3",
                                         p.param.speed_m_s, p.param.thickness_mm,
                                         p.param.phase_thirds);
                           return std::string(name);
                         });

// ================================================================================================
// 6. Bounce height: e = 0.5 from 21 heights.
// ================================================================================================
//
// A sphere of radius 0.25 m, restitution 0.5 (the ground's 0.5 too), dropped from rest with its
// bottom h above the ground, h = 1.90, 1.91, ..., 2.10 m. Measured: the highest bottom height
// after the velocity first turns upward. Bound: within ±1 % of e²·h = 0.25·h for every h (the
// sim holds ±0.2 %; the bar a game notices is about ±3 %).
// Continuous-time answer: impact speed √(2gh), rebound e·√(2gh), apex e²h.
//
// Discrete-time budget at dt = 1/60: semi-implicit Euler flight departs from the parabola by
// about v·dt/2 per leg (the fall at 6.2 m/s loses ≈ 5 cm of 2 m, −2.6 % once scaled by e²; the
// rise gains or loses ≈ 2.6 cm of 0.5 m, ±5 %, depending on whether the rebound velocity moves
// the body in the impact step itself), and where the impact falls within a step shifts the point
// the rebound starts from by up to one step of travel (≈ 10 cm, 20 % of the apex) unless the
// engine bounces from the contact position. The sweep of 21 heights 1 cm apart moves the impact
// through every phase of a step (the sphere covers ~10 cm per step at impact), so an engine that
// is right for one phase only fails some of them. What makes ±3 % attainable is Box2D v3's soft
// step: it integrates and solves in substeps (4 per step by default), so the contact, its
// restitution (b2ApplyRestitution: the rebound target is −e times the relative normal velocity
// stored before the solve, applied only to points that carried an impulse) and the flight all act
// at 1/240 s: the phase-dependent start point shrinks to ≈ 2.5 cm of travel and the flight error
// to a quarter, which brings every phase within a few per cent. A solver at one step per tick
// needs sub-step impact handling (time of impact) for the same. What is left of the phase, the
// sim's rebound (contact_lanes_passes.inl, restitute_batch) takes out: it accounts for the half
// substep between velocities and positions and for the gap the bounce is decided at, so the
// rise is the continuous one from the surface. Apex samples are dt apart (≤ g·dt²/8 ≈ 0.3 mm).

TEST(ConformanceBounce, ApexIsESquaredTimesHeightForEveryPhase) {
  constexpr float kRadius = 0.25f;
  constexpr double kE2 = 0.25;
  double worst = 0;
  for (int i = 0; i <= 20; ++i) {
    const double h = 1.90 + 0.01 * i;
    std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
    ASSERT_NE(world, nullptr);
    add_ground(*world, 0.5f, 0.5f);
    BodyDef ball = sphere_def(Vec3{0, float(h) + kRadius, 0}, kRadius);
    ball.shape.restitution = 0.5f;
    BodyId id = add(*world, ball);
    bool rising = false;
    double apex = -1e30;
    for (int s = 1; s <= 90; ++s) {  // impact ≈ 0.65 s, first apex ≈ 1 s, second impact ≈ 1.3 s
      step(*world);
      BodyView b = view(*world, id);
      ASSERT_TRUE(finite(b));
      if (b.linear_velocity.y > 0) rising = true;
      if (rising) apex = std::max(apex, double(b.position.y) - kRadius);
    }
    const double expected = kE2 * h;
    const double error = (apex - expected) / expected;
    worst = std::max(worst, std::fabs(error));
    char key[64], text[96];
    std::snprintf(key, sizeof key, "h_%.2f_apex_error", h);
    std::snprintf(text, sizeof text, "%+.2f %% (bound within ±1 %%)", 100.0 * error);
    RecordProperty(key, text);
    std::printf("[figures]   h = %.2f m: apex %.4f m, e²h = %.4f m, error %+.2f %%\n", h, apex,
                expected, 100.0 * error);
    EXPECT_TRUE(rising) << "h = " << h << ": never bounced";
    EXPECT_NEAR(apex, expected, 0.01 * expected) << "h = " << h;
  }
  figure("worst_abs_error", 100.0 * worst, "%", "≤ 1");
}

// e = 1: a sphere of radius 0.25 m (the ground's e = 1 too) dropped from rest with its bottom h
// above the ground, h = 1.90, 1.92, ..., 2.10 m (the impact in every phase of a step, as above),
// 800 steps (13.3 s: ten bounces from 2 m take 12.8 s plus the first fall of 0.64 s). Measured:
// the highest bottom height of each rise (between the velocity turning upward and turning down
// again). Bound: each of the first 10 apexes within ±1 % of h. The continuous answer is h at
// every bounce: an elastic bounce reverses the velocity and gravity is conservative. The discrete
// budget: semi-implicit Euler's flight is time-reversible (a fall and the rise that reverses it
// pass the same points), so a rebound that starts the rise with the fall's last velocity, read
// at the same half substep, climbs back to h; what is left is the impact's phase within a substep
// (a quarter of the e = 0.5 case's, ≈ 2.5 cm of 2 m at most, and alternating in sign) and the
// apex sampling (≤ g·dt²/8 ≈ 0.3 mm). Box2D v3's restitution (−e times the normal velocity
// stored before the solve, applied after the position update) leaves at the fall's velocity less
// one substep of gravity: the rise misses one substep of travel, 2.6 cm from 2 m at each bounce.

// Steps `steps` times and returns the bottom height of the sphere of radius `radius` at the top of
// each rise (between its velocity turning upward and turning down again). A non-finite state
// fails the test and ends the list.
std::vector<double> bounce_apexes(World& world, BodyId id, float radius, int steps) {
  std::vector<double> apexes;
  bool rising = false;
  double apex = -1e30;
  for (int s = 1; s <= steps; ++s) {
    step(world);
    const BodyView b = view(world, id);
    EXPECT_TRUE(finite(b));
    if (!finite(b)) break;
    const double bottom = double(b.position.y) - radius;
    if (b.linear_velocity.y > 0) {
      rising = true;
      apex = std::max(apex, bottom);
    } else if (rising) {
      apexes.push_back(std::max(apex, bottom));
      rising = false;
      apex = -1e30;
    }
  }
  return apexes;
}

TEST(ConformanceBounce, ElasticBallKeepsEveryApexForEveryPhase) {
  constexpr float kRadius = 0.25f;
  double worst = 0;
  for (int i = 0; i <= 10; ++i) {
    const double h = 1.90 + 0.02 * i;
    std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
    ASSERT_NE(world, nullptr);
    add_ground(*world, 0.5f, 1.0f);
    BodyDef ball = sphere_def(Vec3{0, float(h) + kRadius, 0}, kRadius);
    ball.shape.restitution = 1.0f;
    BodyId id = add(*world, ball);
    const std::vector<double> apexes = bounce_apexes(*world, id, kRadius, 800);
    ASSERT_GE(apexes.size(), 10u) << "h = " << h;
    std::string line;
    for (size_t k = 0; k < 10; ++k) {
      const double error = (apexes[k] - h) / h;
      worst = std::max(worst, std::fabs(error));
      char text[32];
      std::snprintf(text, sizeof text, " %.3f", apexes[k]);
      line += text;
      EXPECT_NEAR(apexes[k], h, 0.01 * h) << "h = " << h << ", bounce " << k + 1;
    }
    std::printf("[figures]   h = %.2f m: apexes%s m\n", h, line.c_str());
  }
  figure("worst_abs_error", 100.0 * worst, "%", "≤ 1");
}

// Every coefficient, height and size: spheres of radius 0.1 and 0.5 m with e = 0.2, 0.5, 0.8 and 1
// (the ground's the same) dropped from 0.3, 1, 5 and 20 m. Bound: the first apex within ±1 % of
// e²·h, and for e = 1 the fifth too. Impact speeds from 2.4 to 20 m/s: from a few substeps of
// travel to almost a body length per substep.
TEST(ConformanceBounce, FirstApexIsESquaredTimesHeightForEveryCoefficientAndHeight) {
  double worst = 0;
  for (const float radius : {0.1f, 0.5f}) {
    for (const float e : {0.2f, 0.5f, 0.8f, 1.0f}) {
      for (const double h : {0.3, 1.0, 5.0, 20.0}) {
        std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
        ASSERT_NE(world, nullptr);
        add_ground(*world, 0.5f, e);
        BodyDef ball = sphere_def(Vec3{0, float(h) + radius, 0}, radius);
        ball.shape.restitution = e;
        const BodyId id = add(*world, ball);
        // Long enough for five bounces of e = 1 (each 2·√(2h/g)) after the first fall.
        const int steps = int(60.0 * 11.0 * std::sqrt(2.0 * h / 9.81)) + 30;
        const std::vector<double> apexes = bounce_apexes(*world, id, radius, steps);
        SCOPED_TRACE("r = " + std::to_string(radius) + ", e = " + std::to_string(e) +
                     ", h = " + std::to_string(h));
        ASSERT_FALSE(apexes.empty());
        const double expected = double(e) * double(e) * h;
        worst = std::max(worst, std::fabs(apexes[0] - expected) / expected);
        EXPECT_NEAR(apexes[0], expected, 0.01 * expected);
        if (e == 1.0f) {
          ASSERT_GE(apexes.size(), 5u);
          worst = std::max(worst, std::fabs(apexes[4] - h) / h);
          EXPECT_NEAR(apexes[4], h, 0.01 * h);
        }
      }
    }
  }
  figure("worst_abs_error", 100.0 * worst, "%", "≤ 1");
}

// e = 1 across gravity: a frictionless ball of radius 0.25 m slides at 6 m/s along x on a
// frictionless ground, between two static walls (e = 1) whose inner faces are 4 m apart, for
// 10 s (3.5 m between hits: 17 hits). The walls' normals are horizontal, so gravity has no part
// in these bounces: the speed must come back from every hit at 6 m/s ± 1 %, and the rule for a
// bounce along gravity (above) must add nothing here.
TEST(ConformanceBounce, ElasticBounceAcrossGravityKeepsItsSpeed) {
  constexpr float kRadius = 0.25f;
  std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world, 0.0f, 0.0f);
  add(*world, static_box_def(Vec3{2.5f, 1, 0}, Vec3{0.5f, 1, 2}, 0.0f, 1.0f));
  add(*world, static_box_def(Vec3{-2.5f, 1, 0}, Vec3{0.5f, 1, 2}, 0.0f, 1.0f));
  BodyDef ball = sphere_def(Vec3{0, kRadius, 0}, kRadius, 1000.0f, 0.0f);
  ball.shape.restitution = 1.0f;
  ball.linear_velocity = Vec3{6, 0, 0};
  BodyId id = add(*world, ball);
  int hits = 0;
  double worst = 0;
  float previous_vx = 6;
  for (int s = 1; s <= 600; ++s) {
    step(*world);
    const BodyView b = view(*world, id);
    ASSERT_TRUE(finite(b));
    if ((b.linear_velocity.x > 0) != (previous_vx > 0)) {
      ++hits;
      worst = std::max(worst, std::fabs(std::fabs(double(b.linear_velocity.x)) - 6.0) / 6.0);
    }
    previous_vx = b.linear_velocity.x;
  }
  figure("wall_hits", hits, "", "≥ 14");
  figure("worst_speed_error", 100.0 * worst, "%", "≤ 1");
  EXPECT_GE(hits, 14);
  EXPECT_LE(worst, 0.01);
  EXPECT_LT(std::fabs(view(*world, id).position.y - kRadius), 0.01) << "it stays on the ground";
}

// ================================================================================================
// Torque-free spin: what the sim does without the gyroscopic term.
// ================================================================================================
//
// A box of half extents 0.5 × 0.25 × 0.1 m (principal moments in the ratio 0.07 : 0.26 : 0.31) in
// zero gravity, alone, spinning at 2π rad/s for 10 s. The exact motion keeps the angular momentum
// L = I·ω fixed in the world and the rotational energy ½ω·L fixed; ω itself moves (it precesses
// about L, and about the intermediate axis it tumbles: the tennis-racket effect). The sim
// integrates q from ω and has no torque term of its own, so a free body keeps its world ω
// exactly: ω·dt per step, and L = R·I·Rᵀ·ω turns with the body. That is exact for a spin about a
// principal axis (I·ω ∥ ω, nothing to precess) and for spheres and cubes (I scalar); for an
// asymmetric body spinning off its axes it conserves neither L nor the energy. Games rarely see
// it (a thrown prop tumbles briefly before it lands, and contacts dominate), and Jolt leaves its
// gyroscopic term off unless a body asks for it. Bounds: about a
// principal axis, L and the energy within 1e-4 of their start; off the axes, ω stays as it began
// (the documented behaviour; a gyroscopic term would change this test, on purpose), with the
// drift of L and the energy reported as figures.

struct SpinDrift {
  double max_l_change = 0;       // max |L − L₀| / |L₀|
  double max_energy_change = 0;  // max |E − E₀| / E₀
  double max_omega_change = 0;   // max |ω − ω₀| / |ω₀|
};

SpinDrift spin_free_box(D3 body_axis) {
  WorldDef def = awake_def();
  def.gravity = Vec3{0, 0, 0};
  std::unique_ptr<World> world = make_world(def);
  SpinDrift drift;
  if (!world) return drift;
  BodyDef box = box_def(Vec3{0, 0, 0}, Vec3{0.5f, 0.25f, 0.1f}, 1000.0f, 0.5f);
  box.orientation = quat_about((1.0 / len(D3{1, 2, 3})) * D3{1, 2, 3}, 0.7);
  const D3 omega0 = 2.0 * kPi / len(body_axis) * rotate(box.orientation, body_axis);
  box.angular_velocity = Vec3{float(omega0.x), float(omega0.y), float(omega0.z)};
  const BodyId id = add(*world, box);
  const auto momentum = [](const BodyView& b) {
    const D3 w = inv_rotate(b.orientation, d3(b.angular_velocity));
    const D3 i = principal_inertia(b);
    return rotate(b.orientation, D3{i.x * w.x, i.y * w.y, i.z * w.z});
  };
  const BodyView start = view(*world, id);
  const D3 l0 = momentum(start);
  const D3 w0 = d3(start.angular_velocity);
  const double e0 = kinetic_energy_j(start);
  for (int s = 1; s <= 600; ++s) {
    step(*world);
    const BodyView b = view(*world, id);
    EXPECT_TRUE(finite(b));
    drift.max_l_change = std::max(drift.max_l_change, len(momentum(b) - l0) / len(l0));
    drift.max_energy_change =
        std::max(drift.max_energy_change, std::fabs(kinetic_energy_j(b) - e0) / e0);
    drift.max_omega_change =
        std::max(drift.max_omega_change, len(d3(b.angular_velocity) - w0) / len(w0));
  }
  return drift;
}

TEST(ConformanceSpin, AboutAPrincipalAxisMomentumAndEnergyHold) {
  for (const D3 axis : {D3{1, 0, 0}, D3{0, 1, 0}, D3{0, 0, 1}}) {
    const SpinDrift d = spin_free_box(axis);
    std::printf("[figures]   axis (%g, %g, %g): |ΔL|/|L| %.2e, |ΔE|/E %.2e\n", axis.x, axis.y,
                axis.z, d.max_l_change, d.max_energy_change);
    EXPECT_LE(d.max_l_change, 1e-4);
    EXPECT_LE(d.max_energy_change, 1e-4);
  }
}

TEST(ConformanceSpin, OffTheAxesOmegaIsKeptAndMomentumIsNot) {
  const SpinDrift d = spin_free_box(D3{1, 1, 1});
  figure("omega_change", d.max_omega_change, "× |ω₀|", "≤ 1e-5 (ω is kept)");
  figure("momentum_change", d.max_l_change, "× |L₀|", "informative (exact: 0)");
  figure("energy_change", d.max_energy_change, "× E₀", "informative (exact: 0)");
  EXPECT_LE(d.max_omega_change, 1e-5);
}

// ================================================================================================
// 7. Card house: two slabs leaning against each other (an inverted V) stand by friction.
// ================================================================================================
//
// Two slabs 0.1 m thick, 1 m tall, 1 m deep (half extents 0.05 × 0.5 × 0.5), each tilted α = 20°
// from vertical about z, mirror images about x = 0, their top inner edges touching at x = 0. Each
// slab stands on its inner bottom edge (the lowest one when tilted inwards).
//
// Statics (per slab, weight W): by mirror symmetry the force between the slabs at the apex is
// horizontal, H. Moments about the foot edge: the centre of mass is a = hy·sinα − hx·cosα =
// 0.5·0.342 − 0.05·0.940 = 0.124 m inwards of the foot and the apex 2·hy·cosα = 0.940 m above
// it, so H = W·0.124/0.940 = 0.132·W. The foot carries N = W up and H outwards, so it holds iff
// μ_ground ≥ H/N = 0.132; at the apex, whichever face normal the narrowphase picks (at most α off
// horizontal), the horizontal force needs μ ≥ tan α = 0.364. With μ = 0.6 (ground and slabs)
// both hold with margin. With μ = 0 the feet cannot carry H, so the slabs must slide apart and
// fall (ConformanceCardHouse.FrictionlessCollapses proves the scene depends on friction).
//
// Bound: with μ = 0.6, neither slab's centre moves more than 2 cm over 5 s. Box2D v3 and Jolt
// hold static friction exactly (the friction impulse is clamped to μ·λ_n, warm started, and the
// anchor does not drift), so leaning structures like this stand indefinitely.

std::vector<BodyId> build_card_house(World& world, float friction) {
  add_ground(world, friction);
  const double alpha = 20.0 * kPi / 180.0;
  const double hx = 0.05, hy = 0.5;
  const double cx = hx * std::cos(alpha) + hy * std::sin(alpha);  // |centre x|
  const double cy = hx * std::sin(alpha) + hy * std::cos(alpha);  // foot edge exactly on y = 0
  const Vec3 half{float(hx), float(hy), 0.5f};
  std::vector<BodyId> ids;
  BodyDef left = box_def(Vec3{float(-cx), float(cy), 0}, half, 1000.0f, friction);
  left.orientation = quat_about(D3{0, 0, 1}, -alpha);  // top leans towards +x
  ids.push_back(add(world, left));
  BodyDef right = box_def(Vec3{float(cx), float(cy), 0}, half, 1000.0f, friction);
  right.orientation = quat_about(D3{0, 0, 1}, alpha);  // top leans towards -x
  ids.push_back(add(world, right));
  return ids;
}

TEST(ConformanceCardHouse, LeaningSlabsStandWithFriction) {
  std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
  ASSERT_NE(world, nullptr);
  std::vector<BodyId> ids = build_card_house(*world, 0.6f);
  Drift d = track_drift(*world, ids, 300);
  figure("max_displacement_m", d.max_m, "m", "< 0.02");
  EXPECT_LT(d.max_m, 0.02) << "worst at step " << d.worst_step;
}

// Control: without friction the same scene is not in equilibrium (needs μ ≥ 0.132 at the feet),
// so it must collapse: the slabs slide apart by more than 10 cm within the same 5 s.
TEST(ConformanceCardHouse, FrictionlessCollapses) {
  std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
  ASSERT_NE(world, nullptr);
  std::vector<BodyId> ids = build_card_house(*world, 0.0f);
  Drift d = track_drift(*world, ids, 300);
  figure("max_displacement_m", d.max_m, "m", "> 0.1 (must collapse)");
  EXPECT_GT(d.max_m, 0.1);
}

// ================================================================================================
// 8. Overlap recovery: boxes created 50 % inside each other separate gently.
// ================================================================================================
//
// Five pairs of unit boxes on the ground, 4 m apart, each pair overlapping by half a box: along
// x, along z, vertically (one sunk half into the one below), and along x and z again with the
// creation order swapped. Pairs rather than one overlapping row: in a row the push-out speeds of
// the contacts add up along the chain, so no per-contact limit bounds the end boxes' speed.
//
// Bound: no body's speed exceeds 2 m/s during 3 s, and after 3 s no two boxes overlap by more
// than 1 cm (SAT penetration depth of the oriented boxes, computed here). Box2D v3 caps the
// push-out velocity of its soft contacts (contactPushMaxVelocity, 3 m/s by default, relative)
// and relaxes the push velocity back out after the position update, so overlapping bodies drift
// apart at a bounded speed instead of exploding; Jolt's position-level Baumgarte correction
// (fraction 0.2 per step) moves them without adding velocity at all. Both leave the pair
// separated to within their slop (1 mm here) long before 3 s: 0.5 m of overlap at 1 m/s per box
// takes a quarter of a second.

TEST(ConformanceOverlap, HalfOverlappingPairsSeparateGently) {
  std::unique_ptr<World> world = make_world(lockstep::sim::default_world_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  std::vector<BodyId> ids;
  for (int p = 0; p < 5; ++p) {
    const float x = -8.0f + 4.0f * float(p);
    Vec3 a{}, b{};
    switch (p) {
      case 0:  // along x
        a = {x - 0.25f, 0.5f, 0};
        b = {x + 0.25f, 0.5f, 0};
        break;
      case 1:  // along z
        a = {x, 0.5f, -0.25f};
        b = {x, 0.5f, 0.25f};
        break;
      case 2:  // vertically: the upper box sunk half into the lower
        a = {x, 0.5f, 0};
        b = {x, 1.0f, 0};
        break;
      case 3:  // along x, created right then left
        a = {x + 0.25f, 0.5f, 0};
        b = {x - 0.25f, 0.5f, 0};
        break;
      default:  // along z, created far then near
        a = {x, 0.5f, 0.25f};
        b = {x, 0.5f, -0.25f};
        break;
    }
    ids.push_back(add(*world, box_def(a, kUnitHalf)));
    ids.push_back(add(*world, box_def(b, kUnitHalf)));
  }
  double max_speed = 0;
  int worst_step = -1;
  for (int s = 1; s <= 180; ++s) {
    step(*world);
    for (BodyId id : ids) {
      BodyView b = view(*world, id);
      ASSERT_TRUE(finite(b));
      double speed = len(d3(b.linear_velocity));
      if (speed > max_speed) {
        max_speed = speed;
        worst_step = s;
      }
    }
  }
  double max_pen = 0;
  std::vector<BodyView> views;
  for (BodyId id : ids)
    views.push_back(view(*world, id));
  for (size_t i = 0; i < views.size(); ++i) {
    for (size_t j = i + 1; j < views.size(); ++j)
      max_pen = std::max(max_pen, box_penetration(views[i], views[j]));
  }
  figure("max_speed_m_s", max_speed, "m/s", "≤ 2");
  figure("max_overlap_after_3s_m", max_pen, "m", "≤ 0.01");
  EXPECT_LE(max_speed, 2.0) << "worst at step " << worst_step;
  EXPECT_LE(max_pen, 0.01);
}

// ================================================================================================
// 9. Long pile: the built-in "pile" scene for 60 s stays in its container.
// ================================================================================================
//
// The scene: 1000 boxes, spheres and capsules (each inside a 0.6 m bounding sphere) dropped onto
// a static plane y = 0 inside four static walls 1 m thick and 4 m tall whose inner faces are at
// x = ±8 and z = ±8 (sim/src/scene.cpp, make_pile). Bound, every step for 3600 steps: no dynamic
// body leaves — its centre stays within |x|, |z| ≤ 8 m + its own bounding radius (it may touch
// or dent a wall, never be through its inner face by more than its own size) and above y =
// −0.05 m (never through the floor). Also printed: the deepest any body's lowest point went below
// the floor and the deepest any body's support reached past a wall's inner face. Box2D v3 and
// Jolt keep such piles contained indefinitely (thick walls, bounded push-out, continuous
// collision against static shapes); what fails is a solver that lets a pile jitter, creep or
// explode over long runs.
//
// Cost: 3600 steps of 1000 bodies, the slowest case here (Slow prefix); under ASan at -O1 it
// takes several times the Release time.

TEST(ConformancePile, SlowPileStaysInContainerFor60s) {
  lockstep::sim::Scene scene;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("pile", &scene));
  Error error = Error::none;
  std::unique_ptr<World> world = lockstep::sim::build_world(scene, &error);
  ASSERT_EQ(error, Error::none);
  ASSERT_NE(world, nullptr);
  std::vector<BodyId> all(world->body_count());
  all.resize(world->list_bodies(all));
  std::vector<BodyId> ids;
  std::vector<double> radius;
  for (BodyId id : all) {
    BodyView b = view(*world, id);
    if (b.type != BodyType::dynamic) continue;
    ids.push_back(id);
    radius.push_back(bounding_radius(b));
  }
  ASSERT_EQ(ids.size(), 1000u);
  constexpr double kInner = 8.0;
  double floor_pen = 0, wall_pen = 0, min_centre_y = 1e30, worst_escape = -1e30;
  int escapes = 0, first_escape_step = -1;
  for (int s = 1; s <= 3600; ++s) {
    step(*world);
    for (size_t i = 0; i < ids.size(); ++i) {
      BodyView b = view(*world, ids[i]);
      ASSERT_TRUE(finite(b)) << "step " << s;
      const double x = b.position.x, y = b.position.y, z = b.position.z;
      floor_pen = std::max(floor_pen, extent_along(b, D3{0, 1, 0}) - y);
      wall_pen = std::max(wall_pen, std::fabs(x) + extent_along(b, D3{1, 0, 0}) - kInner);
      wall_pen = std::max(wall_pen, std::fabs(z) + extent_along(b, D3{0, 0, 1}) - kInner);
      min_centre_y = std::min(min_centre_y, y);
      const double escape = std::max(
          {std::fabs(x) - (kInner + radius[i]), std::fabs(z) - (kInner + radius[i]), -0.05 - y});
      worst_escape = std::max(worst_escape, escape);
      if (escape > 0) {
        if (escapes == 0) first_escape_step = s;
        ++escapes;
      }
    }
  }
  figure("max_floor_penetration_m", floor_pen, "m", "informative");
  figure("max_wall_penetration_m", wall_pen, "m", "informative");
  figure("min_centre_y_m", min_centre_y, "m", "> -0.05");
  figure("escaped_body_steps", escapes, "body-steps", "0");
  EXPECT_EQ(escapes, 0) << "first at step " << first_escape_step << ", worst by " << worst_escape
                        << " m";
  EXPECT_GT(min_centre_y, -0.05);
}

// ================================================================================================
// 10. Kinetic energy in a frictionless closed box (gravity 0).
// ================================================================================================
//
// A closed static box (six walls 1 m thick, inner faces at ±3 m) holding 30 bodies, spheres and
// boxes alternately (sizes, orientations and velocities from a fixed SplitMix64 sequence: up to
// 4 m/s per axis and 3 rad/s per axis), μ = 0 on every shape. With no gravity, friction or
// external force the only energy a correct contact solver can add is none: a frictionless
// contact impulse is along the normal and the restitution target is at most the closing speed
// (e = 1: an elastic exchange). Bound: total kinetic energy never exceeds its initial value by
// more than 1 % over 20 s, for e = 0 and e = 1 on every shape. Box2D v3's soft step relaxes the
// push-out (bias) velocity away after the position update and restitution uses the pre-solve
// normal velocity, so neither penetration recovery nor the restitution pass adds energy; Jolt
// corrects penetration at position level, adding no velocity. Small positive drift from the
// push-out of the slop is what the 1 % allows.

class ConformanceClosedBox : public ::testing::TestWithParam<float> {};

TEST_P(ConformanceClosedBox, KineticEnergyNeverGrows) {
  const float e = GetParam();
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  std::unique_ptr<World> world = make_world(def);
  ASSERT_NE(world, nullptr);
  const float wall = 0.5f, inner = 3.0f, c = inner + wall, span = inner + 2 * wall;
  add(*world, static_box_def(Vec3{c, 0, 0}, Vec3{wall, span, span}, 0.0f, e));
  add(*world, static_box_def(Vec3{-c, 0, 0}, Vec3{wall, span, span}, 0.0f, e));
  add(*world, static_box_def(Vec3{0, c, 0}, Vec3{span, wall, span}, 0.0f, e));
  add(*world, static_box_def(Vec3{0, -c, 0}, Vec3{span, wall, span}, 0.0f, e));
  add(*world, static_box_def(Vec3{0, 0, c}, Vec3{span, span, wall}, 0.0f, e));
  add(*world, static_box_def(Vec3{0, 0, -c}, Vec3{span, span, wall}, 0.0f, e));

  struct Rng : lockstep::testing::TestRng {
    double in(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  };
  Rng rng{{0xc0ffee1234ull}};
  std::vector<BodyId> ids;
  // A 5 × 3 × 2 grid, 1.2–2.4 m pitch: bounding radii ≤ 0.32·√3 = 0.55 m leave gaps between
  // neighbours and to the walls (2.4 + 0.55 < 3).
  for (int iy = 0; iy < 2; ++iy) {
    for (int iz = 0; iz < 3; ++iz) {
      for (int ix = 0; ix < 5; ++ix) {
        Vec3 p{-2.4f + 1.2f * float(ix), -1.2f + 2.4f * float(iy), -1.5f + 1.5f * float(iz)};
        BodyDef b;
        if ((ix + iz + iy) % 2 == 0) {
          b = sphere_def(p, float(rng.in(0.25, 0.45)), 1000.0f, 0.0f);
        } else {
          b = box_def(
              p, Vec3{float(rng.in(0.2, 0.32)), float(rng.in(0.2, 0.32)), float(rng.in(0.2, 0.32))},
              1000.0f, 0.0f);
          double qx = rng.in(-1, 1), qy = rng.in(-1, 1), qz = rng.in(-1, 1), qw = rng.in(-1, 1);
          double l = std::sqrt(qx * qx + qy * qy + qz * qz + qw * qw);
          if (l < 0.1) qw = l = 1;
          b.orientation = Quat{float(qx / l), float(qy / l), float(qz / l), float(qw / l)};
        }
        b.shape.restitution = e;
        b.linear_velocity = Vec3{float(rng.in(-4, 4)), float(rng.in(-4, 4)), float(rng.in(-4, 4))};
        b.angular_velocity = Vec3{float(rng.in(-3, 3)), float(rng.in(-3, 3)), float(rng.in(-3, 3))};
        ids.push_back(add(*world, b));
      }
    }
  }
  auto total_ke = [&] {
    double sum = 0;
    for (BodyId id : ids)
      sum += kinetic_energy_j(view(*world, id));
    return sum;
  };
  const double initial = total_ke();
  ASSERT_GT(initial, 0);
  double max_ratio = 0;
  int worst_step = -1;
  double final_ratio = 0;
  for (int s = 1; s <= 1200; ++s) {
    step(*world);
    const double ratio = total_ke() / initial;
    if (ratio > max_ratio) {
      max_ratio = ratio;
      worst_step = s;
    }
    final_ratio = ratio;
  }
  for (BodyId id : ids)
    EXPECT_TRUE(finite(view(*world, id)));
  // e = 1: Newton's law applied contact by contact (a body hitting two others in one step gets
  // both bounces in sequence) is not energy-conserving for simultaneous impacts, in Box2D either:
  // 2.3 % here. e = 0 must not gain at all (1 %: rounding).
  const double bound = e > 0.5f ? 1.03 : 1.01;
  figure("max_ke_ratio", max_ratio, "× initial", e > 0.5f ? "≤ 1.03" : "≤ 1.01");
  figure("final_ke_ratio", final_ratio, "× initial", "informative");
  EXPECT_LE(max_ratio, bound) << "worst at step " << worst_step;
}

INSTANTIATE_TEST_SUITE_P(Restitution, ConformanceClosedBox, ::testing::Values(0.0f, 1.0f),
                         [](const ::testing::TestParamInfo<float>& p) {
                           return p.param == 0.0f ? std::string("e0") : std::string("e1");
                         });

// ================================================================================================
// 11. Small bodies: six cubes stacked, each turned 0.2 rad more about y than the one below.
// ================================================================================================
//
// Bound: over 20 s (sleeping off) the top cube moves less than a tenth of its edge sideways (it
// stands) and sinks less than 0.6 of it (the six contacts overlap a tenth of an edge each on
// average; a cube that fell would drop five edges). Statics as for the turned stacks (section 1):
// vertical forces only. What changes with size is nothing in the statics and everything in the
// compliance: a mass-normalised contact spring compresses by the same millimetres under a stack of
// 2 cm cubes as under a stack of 1 m cubes (load over effective mass over ω², no length in it), so
// the smaller the cube, the larger the share of its height the contacts give. Box2D v3 (the same
// soft contact, a 5 mm slop, documented for moving bodies of 0.1 m to 10 m) and Jolt (a 2 cm
// penetration slop) are tuned for bodies well above a centimetre. docs/physics.md ("Small
// bodies") gives the figures and the settings that hold smaller ones.

struct SmallStack {
  double horizontal_m = 0;  // largest sideways displacement of the top cube
  double sink_m = 0;        // largest drop of the top cube below its start
};

SmallStack run_small_stack(const WorldDef& def, float half_edge) {
  SmallStack out;
  std::unique_ptr<World> world = make_world(def);
  if (world == nullptr) return out;
  add_ground(*world);
  BodyId top{};
  for (int i = 0; i < 6; ++i) {
    BodyDef b =
        box_def(Vec3{0, half_edge * float(1 + 2 * i), 0}, Vec3{half_edge, half_edge, half_edge});
    b.orientation = quat_about(D3{0, 1, 0}, 0.2 * double(i));
    top = add(*world, b);
  }
  const D3 start = d3(view(*world, top).position);
  for (int s = 1; s <= 1200; ++s) {
    step(*world);
    const BodyView b = view(*world, top);
    EXPECT_TRUE(finite(b)) << "step " << s;
    const D3 delta = d3(b.position) - start;
    out.horizontal_m = std::max(out.horizontal_m, horizontal(delta));
    out.sink_m = std::max(out.sink_m, -delta.y);
  }
  return out;
}

void expect_small_stack_stands(const WorldDef& def, float half_edge) {
  const SmallStack r = run_small_stack(def, half_edge);
  const double edge = 2.0 * double(half_edge);
  figure("top_horizontal_drift_edges", r.horizontal_m / edge, "edges", "< 0.1");
  figure("top_sink_edges", r.sink_m / edge, "edges", "< 0.6");
  EXPECT_LT(r.horizontal_m, 0.1 * edge);
  EXPECT_LT(r.sink_m, 0.6 * edge);
}

// 5 cm cubes at the defaults: the top one sinks 1.3 cm (0.26 edges) and stands.
TEST(ConformanceSmallBodies, FiveCentimetreCubesStandAtTheDefaults) {
  expect_small_stack_stands(awake_def(), 0.025f);
}

// 2 cm cubes with eight substeps and 60 Hz contacts (twice the default's substeps, half the cap
// of a quarter of the substep rate): the springs four times as stiff, the top one sinks 7.8 mm and
// stands (0.39 edges).
TEST(ConformanceSmallBodies, TwoCentimetreCubesStandWithStifferContacts) {
  WorldDef def = awake_def();
  def.substeps = 8;
  def.contact_hertz = 60.0f;
  expect_small_stack_stands(def, 0.01f);
}

// Not met: 2 cm cubes at the defaults. The contacts give 2.5 mm each, an eighth of the edge; the
// stack leans and falls at about 4 s.
TEST(ConformanceSmallBodies, DISABLED_TwoCentimetreCubesStandAtTheDefaults) {
  expect_small_stack_stands(awake_def(), 0.01f);
}

// ================================================================================================
// 12. Tall columns: N unit boxes (N = 10, 30, 50) on the ground, exactly touching, sleeping off.
// ================================================================================================
//
// Bound: over 60 s the top box never settles more than 1 mm per box below its ideal height
// N − 0.5 m (after the first three seconds, in which the column takes up its load and the rest
// offsets follow it: docs/physics.md, "Rest offset"), never moves more
// than 1 cm sideways, and is at rest at the end (< 1 cm/s). Statics as for the turned stacks
// (section 1): contact i carries the weight of the N − i boxes above it, vertically. A rigid
// contact gives nothing under that load; a soft one (a spring of stiffness m_eff·ω²) gives
// load/(m_eff·ω²), which would add up with the square of the height if the rest offsets did not
// integrate it away (each contact then rests at half the slop), and a column on springs that
// soft buckles once its weight times its height beats the springs' turning stiffness (at the
// defaults, about 30 unit boxes), which the rest offsets do not change. The stiff-contact settings
// below (docs/physics.md, "Tall stacks") make the springs 64 times as stiff and the slop a quarter:
// 16 substeps, contacts at 240 Hz (the cap, a quarter of the substep rate), damping ratio 1, slop
// 0.25 mm.

WorldDef stiff_stack_def() {
  WorldDef def = awake_def();
  def.substeps = 16;
  def.contact_hertz = 240.0f;
  def.contact_damping_ratio = 1.0f;
  def.linear_slop_m = 0.00025f;
  return def;
}

struct Column {
  double max_sag_m = 0;         // largest (ideal − top y) after the first second
  double max_horizontal_m = 0;  // largest sideways displacement of any box
  double end_speed_m_s = 0;     // the top box's speed at the end
};

Column run_column(const WorldDef& def, int boxes, double turn_deg, int steps = 3600) {
  Column out;
  std::unique_ptr<World> world = make_world(def);
  if (world == nullptr) return out;
  add_ground(*world);
  std::vector<BodyId> ids;
  for (int i = 0; i < boxes; ++i) {
    BodyDef b = box_def(Vec3{0, 0.5f + float(i), 0}, kUnitHalf);
    b.orientation = quat_about(D3{0, 1, 0}, double(i) * turn_deg * kPi / 180.0);
    ids.push_back(add(*world, b));
  }
  const double ideal = double(boxes) - 0.5;
  for (int s = 1; s <= steps; ++s) {
    step(*world);
    for (BodyId id : ids) {
      const BodyView b = view(*world, id);
      out.max_horizontal_m = std::max(out.max_horizontal_m, horizontal(d3(b.position)));
    }
    const BodyView top = view(*world, ids.back());
    EXPECT_TRUE(finite(top)) << "step " << s;
    if (s > 180) out.max_sag_m = std::max(out.max_sag_m, ideal - double(top.position.y));
    if (s == steps) out.end_speed_m_s = len(d3(top.linear_velocity));
  }
  return out;
}

void expect_column_stands(const WorldDef& def, int boxes, double turn_deg) {
  const Column c = run_column(def, boxes, turn_deg);
  figure("max_sag_mm_per_box", 1000.0 * c.max_sag_m / boxes, "mm", "<= 1");
  figure("max_horizontal_m", c.max_horizontal_m, "m", "< 0.01");
  figure("end_speed_m_s", c.end_speed_m_s, "m/s", "< 0.01");
  EXPECT_LE(c.max_sag_m, 0.001 * boxes);
  EXPECT_LT(c.max_horizontal_m, 0.01);
  EXPECT_LT(c.end_speed_m_s, 0.01);
}

// Measured (the largest sag from 3 s on): 0.13 / 0.13 / 0.16 mm a box aligned, 0.13 / 0.16
// turned; sideways at most 0.6 mm; the top box at under 1 mm/s at the end.
TEST(ConformanceColumn, TenBoxesStandStiffWithStiffContacts) {
  expect_column_stands(stiff_stack_def(), 10, 0.0);
}
TEST(ConformanceColumn, ThirtyBoxesStandStiffWithStiffContacts) {
  expect_column_stands(stiff_stack_def(), 30, 0.0);
}
TEST(ConformanceColumn, FiftyBoxesStandStiffWithStiffContacts) {
  expect_column_stands(stiff_stack_def(), 50, 0.0);
}
// Each box turned 2° about y from the one below (the contact patches are octagons).
TEST(ConformanceColumn, FiftyTurnedBoxesStandStiffWithStiffContacts) {
  expect_column_stands(stiff_stack_def(), 50, 2.0);
}
TEST(ConformanceColumn, ThirtyTurnedBoxesStandStiffWithStiffContacts) {
  expect_column_stands(stiff_stack_def(), 30, 2.0);
}

// At the defaults (4 substeps, 30 Hz, damping ratio 10, slop 1 mm) the rest offsets hold a
// column at half the slop a contact whatever its load; ten boxes stand, aligned or turned
// (measured: 0.51 mm a box either way, under 0.01 mm sideways; 3.55 mm a box before them).
TEST(ConformanceColumn, TenBoxesStandStiffAtTheDefaults) {
  expect_column_stands(awake_def(), 10, 0.0);
}
TEST(ConformanceColumn, TenTurnedBoxesStandStiffAtTheDefaults) {
  expect_column_stands(awake_def(), 10, 2.0);
}
// Not met at the defaults: 30 boxes buckle. They settle to the same half slop a contact, but the
// springs' turning stiffness (which the rest offset does not change) is below what 30 boxes'
// weight times their height asks: the column leans and falls within the minute, as 50 do.
TEST(ConformanceColumn, DISABLED_ThirtyBoxesStandStiffAtTheDefaults) {
  expect_column_stands(awake_def(), 30, 0.0);
}

// ================================================================================================
// 12. Round bodies resting on flat ones: capsules lying across boxes, a plank across a log.
// ================================================================================================
//
// A capsule lying on a flat top touches it along a segment; the top holds it with two points at
// the ends of the part of that segment over the face. Statics: vertical forces only, the
// capsule's centre midway between them, nothing for friction to do. A capsule is neutral to
// rolling, so it stays where it is put: nothing in the scene pushes it. Bound over 20 s
// (sleeping off): the round body moves less than 1 mm sideways (it settles about 1 mm into its
// contacts, the slop) and turns slower than 0.001 rad/s at the end; a plank stays within 2 mm of
// its resting height and 0.1° of level. A body at rest stays at rest in any engine whose contacts
// follow the bodies (Box2D v3 finds them again every step). Before these scenes were written both
// failed here: a plank across a capsule longer than itself rested on one point at its edge and
// sank 4.4 cm into the log; capsules across the pillar turned 0.3 and 1 rad started rolling by
// themselves at about 1 s and rolled off it, and the seeded ball and capsule on the ground rolled
// 0.73 m and 0.96 m (manifold reuse carried their material points: docs/physics.md, section 5).

struct RoundRest {
  double moved_m = 0;   // largest horizontal displacement of the watched body from its start
  double spin_end = 0;  // |ω| of the watched body at the end (rad/s)
  double tilt_deg = 0;  // largest tilt of the watched body's local y from world y
};

RoundRest watch_rest(World& world, BodyId id, int steps) {
  RoundRest r;
  const D3 start = d3(view(world, id).position);
  for (int s = 1; s <= steps; ++s) {
    step(world);
    const BodyView b = view(world, id);
    EXPECT_TRUE(finite(b)) << "step " << s;
    r.moved_m = std::max(r.moved_m, horizontal(d3(b.position) - start));
    const double cos_tilt = std::min(1.0, std::fabs(rotate(b.orientation, D3{0, 1, 0}).y));
    r.tilt_deg = std::max(r.tilt_deg, std::acos(cos_tilt) * 180.0 / kPi);
    r.spin_end = len(d3(b.angular_velocity));
  }
  return r;
}

BodyDef capsule_def(Vec3 position, Quat orientation, float radius, float half_height) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.orientation = orientation;
  def.shape.type = ShapeType::capsule;
  def.shape.radius = radius;
  def.shape.half_height = half_height;
  return def;
}

// A 2.4 m capsule (radius 0.2) lying across the top of a 0.6 m × 0.6 m pillar, turned `yaw` about
// y from lying along x (at 0.3 and 1 rad its segment leaves the face through two adjacent sides).
void capsule_across_pillar(double yaw) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  add(*world, static_box_def(Vec3{0, 0.5f, 0}, Vec3{0.3f, 0.5f, 0.3f}, 0.5f));
  // Lying along x (its axis, local y, turned a quarter about z), then turned by yaw about y: the
  // axis is (cos yaw, 0, −sin yaw), itself a quarter turn about the level axis (sin yaw, 0, cos
  // yaw).
  const Quat q = quat_about(D3{std::sin(yaw), 0, std::cos(yaw)}, -0.5 * kPi);
  const BodyId log = add(*world, capsule_def(Vec3{0, 1.2f, 0}, q, 0.2f, 1.0f));
  const RoundRest r = watch_rest(*world, log, 1200);
  figure("moved_m", r.moved_m, "m", "< 0.001");
  figure("spin_at_end_rad_s", r.spin_end, "rad/s", "< 0.001");
  EXPECT_LT(r.moved_m, 0.001);
  EXPECT_LT(r.spin_end, 0.001);
}

TEST(ConformanceRoundRest, CapsuleAlongAPillarsSideStaysPut) {
  capsule_across_pillar(0.0);
}
TEST(ConformanceRoundRest, CapsuleTurned03RadAcrossAPillarStaysPut) {
  capsule_across_pillar(0.3);
}
TEST(ConformanceRoundRest, CapsuleTurned1RadAcrossAPillarStaysPut) {
  capsule_across_pillar(1.0);
}

// A sphere and a capsule resting on the ground, each given a spin of 1e-6 rad/s about a level
// axis (the rounding-sized seed the turned pillar gets by itself): neutral to rolling, they must
// roll no faster than the seed says.
TEST(ConformanceRoundRest, SphereAndCapsuleOnTheGroundDoNotRollBySelf) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyDef ball = sphere_def(Vec3{0, 0.5f, 0}, 0.5f);
  ball.angular_velocity = Vec3{0, 0, 1.0e-6f};
  BodyDef log = capsule_def(Vec3{3, 0.2f, 0}, quat_about(D3{0.6, 0, 0.8}, 0.5 * kPi), 0.2f, 0.8f);
  log.angular_velocity = Vec3{-0.8e-6f, 0, 0.6e-6f};  // about the capsule's own axis
  const BodyId ids[2] = {add(*world, ball), add(*world, log)};
  const D3 start[2] = {d3(view(*world, ids[0]).position), d3(view(*world, ids[1]).position)};
  for (int s = 0; s < 1200; ++s)
    step(*world);
  for (int k = 0; k < 2; ++k) {
    const BodyView b = view(*world, ids[k]);
    const double moved = horizontal(d3(b.position) - start[k]);
    const double spin = len(d3(b.angular_velocity));
    figure(k == 0 ? "sphere_moved_m" : "capsule_moved_m", moved, "m", "< 0.001");
    figure(k == 0 ? "sphere_spin_rad_s" : "capsule_spin_rad_s", spin, "rad/s", "< 0.001");
    EXPECT_LT(moved, 0.001);
    EXPECT_LT(spin, 0.001);
  }
}

// A 4 m × 1 m plank, 10 cm thick, 40 kg, resting across a 2.4 m log (a static capsule lying
// along z, radius 0.2) longer than the plank is wide. Bound: the plank rests on the log's top,
// within 2 mm of y = 0.45 (the slop and the soft contact), and stays level.
TEST(ConformanceRoundRest, PlankAcrossALongerLogRestsOnItsTop) {
  std::unique_ptr<World> world = make_world(awake_def());
  ASSERT_NE(world, nullptr);
  add_ground(*world);
  BodyDef log = capsule_def(Vec3{0, 0.2f, 0}, quat_about(D3{1, 0, 0}, 0.5 * kPi), 0.2f, 1.0f);
  log.type = BodyType::static_body;
  add(*world, log);
  const BodyId plank = add(*world, box_def(Vec3{0, 0.45f, 0}, Vec3{2, 0.05f, 0.5f}, 100.0f));
  const RoundRest r = watch_rest(*world, plank, 1200);
  const double sink = 0.45 - double(view(*world, plank).position.y);
  figure("plank_sink_m", sink, "m", "< 0.002");
  figure("plank_tilt_deg", r.tilt_deg, "°", "< 0.1");
  EXPECT_LT(sink, 0.002);
  EXPECT_LT(r.tilt_deg, 0.1);
}

}  // namespace
