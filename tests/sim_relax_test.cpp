// Relax iterations (the relax stage, step.cpp): in every substep of the soft step, passes without
// the soft position bias after the positions are integrated, so the push-out velocity that
// separates an overlap is not carried into the next substep. Also the WorldDef field's validation,
// fingerprint and scene-text key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "solver/contact_solver.h"

namespace lockstep::sim {
namespace {

constexpr float kDepthM = 0.03f;  // the cube starts 3 cm into the ground

// A 1 m cube 3 cm into a static ground box, at rest, no gravity: only the push-out moves it.
// Returns the cube's upward velocity and height gain after one step.
struct OneStep {
  double velocity_m_s = 0;
  double rise_m = 0;
};

// A world of `def` with a static 10 × 1 × 10 m ground box whose top is at y = 0 (nullptr and a
// test failure when the world cannot be made).
std::unique_ptr<World> world_on_ground(const WorldDef& def) {
  Error error = Error::none;
  std::unique_ptr<World> world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  if (!world) return nullptr;
  BodyDef ground = default_body_def();
  ground.type = BodyType::static_body;
  ground.shape.type = ShapeType::box;
  ground.shape.half_extents = {5, 0.5f, 5};
  ground.position = {0, -0.5f, 0};
  BodyId id{};
  EXPECT_EQ(world->create_body(ground, &id), Error::none);
  return world;
}

// A 1 m cube centred at (0, y, 0).
BodyDef unit_cube(float y) {
  BodyDef cube = default_body_def();
  cube.shape.type = ShapeType::box;
  cube.shape.half_extents = {0.5f, 0.5f, 0.5f};
  cube.position = {0, y, 0};
  return cube;
}

OneStep overlap_step(uint32_t relax_iterations) {
  WorldDef def = default_world_def();
  def.gravity = Vec3{0, 0, 0};
  def.relax_iterations = relax_iterations;
  std::unique_ptr<World> world = world_on_ground(def);
  if (!world) return {};
  BodyId id{};
  EXPECT_EQ(world->create_body(unit_cube(0.5f - kDepthM), &id), Error::none);
  world->step();
  BodyView v{};
  EXPECT_EQ(world->get_body(id, &v), Error::none);
  return {double(v.linear_velocity.y), double(v.position.y) - double(0.5f - kDepthM)};
}

// The same step worked out in double for one body of mass m on one contact row, from the soft
// step as documented (contact_solver.cpp, step.cpp). The cube on its face is that case: the
// centroid row acts at the face centre (inverse effective mass 1/m) and solves the whole
// manifold, and the four corner rows after it add nothing (a soft row is idempotent, since
// mass_scale + impulse_scale = 1, and each corner's K is 4/m: 1/m plus m·|r×n|²/I = 3/m with
// |r×n|² = 0.5 m² and I = m/6). Per substep h = dt/N:
//   warm start: v += λ/m;
//   biased pass (soft, against a static body at twice contact_hertz, capped at a quarter of the
//   substep rate): s = s₀ − d + Δy, with d the rest offset a new contact takes in its first
//   step (dt/kRestOffsetLag times the overlap beyond half the slop);
//   bias = max(rate·min(s + slop, 0), −max_bias_velocity);
//   λ' = max(λ − mass_scale·m·(v + bias) − impulse_scale·λ, 0), v += (λ' − λ)/m;
//   positions: Δy += h·v;
//   relax passes (rigid, target 0 while s ≤ 0): λ' = max(λ − m·v, 0), v += (λ' − λ)/m.
// Softness (Box2D v3): ω = 2π·f, a1 = 2ζ + hω, rate = ω/a1, a2 = hω·a1, mass_scale = a2/(1 + a2),
// impulse_scale = 1/(1 + a2). The mass drops out of v and Δy; it is 1 here.
OneStep soft_step_model(const WorldDef& def, uint32_t relax_iterations) {
  const double h = double(def.dt_s) / def.substeps;
  const double hertz = 2.0 * std::min(double(def.contact_hertz), 0.25 / h);
  const double omega = 2.0 * 3.14159265358979323846 * hertz;
  const double a1 = 2.0 * def.contact_damping_ratio + h * omega;
  const double a2 = h * omega * a1;
  const double rate = omega / a1, mass_scale = a2 / (1.0 + a2), impulse_scale = 1.0 / (1.0 + a2);
  const double offset = double(def.dt_s) / double(kRestOffsetLag) *
                        (double(kDepthM) - 0.5 * double(def.linear_slop_m));
  const double s0 = -double(kDepthM) - offset;
  double v = 0, dy = 0, lambda = 0;
  for (uint32_t k = 0; k < def.substeps; ++k) {
    v += lambda;
    double s = s0 + dy;
    EXPECT_LE(s, 0.0);  // never speculative: the push-out stays below the overlap
    const double bias = std::max(rate * std::min(s + double(def.linear_slop_m), 0.0),
                                 -double(def.max_bias_velocity));
    double total = std::max(lambda - mass_scale * (v + bias) - impulse_scale * lambda, 0.0);
    v += total - lambda;
    lambda = total;
    dy += h * v;
    for (uint32_t it = 0; it < relax_iterations; ++it) {
      total = std::max(lambda - v, 0.0);
      v += total - lambda;
      lambda = total;
    }
  }
  return {v, dy};
}

TEST(SimRelax, RelaxRemovesTheBiasVelocityButKeepsTheCorrection) {
  const WorldDef def = default_world_def();
  const OneStep want_biased = soft_step_model(def, 0);
  const OneStep want_relaxed = soft_step_model(def, def.relax_iterations);
  const OneStep biased = overlap_step(0);
  const OneStep relaxed = overlap_step(def.relax_iterations);
  const OneStep relaxed4 = overlap_step(4);
  std::printf(
      "[figures] relax: without, v %.6f m/s rise %.6f m (model %.6f, %.6f); with, v %.2e m/s "
      "rise %.6f m (model %.6f)\n",
      biased.velocity_m_s, biased.rise_m, want_biased.velocity_m_s, want_biased.rise_m,
      relaxed.velocity_m_s, relaxed.rise_m, want_relaxed.rise_m);
  // The model's push-out: the 2.5 cm overlap beyond the slop at ~17.5 1/s is ~0.44 m/s, soft.
  ASSERT_GT(want_biased.velocity_m_s, 0.3);
  // Without relax the cube leaves the step with the push-out velocity (1 %: float rounding and
  // the corner rows' leftovers; a rigid bias or one not anchored to the moved cube would be off
  // by tens of %).
  EXPECT_NEAR(biased.velocity_m_s, want_biased.velocity_m_s, 0.01 * want_biased.velocity_m_s);
  EXPECT_NEAR(biased.rise_m, want_biased.rise_m, 0.01 * want_biased.rise_m);
  // With relax the velocity carried on is back to ~0 (1 mm/s) ...
  EXPECT_NEAR(relaxed.velocity_m_s, 0.0, 1.0e-3);
  EXPECT_NEAR(relaxed4.velocity_m_s, 0.0, 1.0e-3);
  // ... and the position is still corrected: each substep's push-out moved it before the relax
  // pass took the velocity out, so it rose as the model says (1 %), somewhat less than without
  // relax (later substeps start from rest instead of the push-out speed), but by most of it.
  EXPECT_NEAR(relaxed.rise_m, want_relaxed.rise_m, 0.01 * want_relaxed.rise_m);
  EXPECT_NEAR(relaxed4.rise_m, want_relaxed.rise_m, 0.01 * want_relaxed.rise_m);
  EXPECT_LT(relaxed.rise_m, biased.rise_m);
  EXPECT_GT(relaxed.rise_m, 0.8 * biased.rise_m);
}

TEST(SimRelax, FieldIsValidatedFingerprintedAndInSceneText) {
  WorldDef def = default_world_def();
  EXPECT_EQ(def.relax_iterations, 1u);  // per substep
  def.relax_iterations = 0;
  EXPECT_EQ(validate_world_def(def), Error::none);
  def.relax_iterations = 256;
  EXPECT_EQ(validate_world_def(def), Error::none);
  const uint64_t fp256 = world_def_fingerprint(def);
  def.relax_iterations = 257;
  EXPECT_EQ(validate_world_def(def), Error::invalid_argument);
  def.relax_iterations = 3;
  EXPECT_NE(world_def_fingerprint(def), fp256);
  EXPECT_NE(world_def_fingerprint(def), world_def_fingerprint(default_world_def()));

  Scene scene;
  ASSERT_TRUE(make_builtin_scene("bounce", &scene));
  scene.def.relax_iterations = 3;
  const std::string text = format_scene_text(scene);
  EXPECT_NE(text.find("relax_iterations=3"), std::string::npos);
  Scene back;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &back, &error)) << error;
  EXPECT_EQ(back.def.relax_iterations, 3u);
}

// The rest offset (update_rest_offsets, docs/physics.md "Rest offset"): per step, each manifold's
// offset moves by dt/kRestOffsetLag times its points' mean overlap beyond half the slop, the
// same for every point of it, within [0, bound], the bound being the slop plus four times the
// compression Σλ·(1/mA + 1/mB)/(h·ω²) its warm-start load needs from the spring, at most
// kRestOffsetSlops slops; a point apart by more than the slop has none. Expected values from
// that rule in double. Manifolds here are between two dynamic 1 kg bodies (slots 0 and 1; slot
// 2 is static).
struct OffsetCase {
  std::vector<ContactConstraint> constraints;
  std::vector<ContactPoint> points;
};

OffsetCase offset_case(std::initializer_list<std::initializer_list<float>> manifolds,
                       float offset_m, float impulse = 100.0f) {
  OffsetCase c;
  for (const auto& separations : manifolds) {
    ContactConstraint k;
    k.slot_a = 0;
    k.slot_b = 1;
    k.first_point = static_cast<uint32_t>(c.points.size());
    k.point_count = static_cast<uint32_t>(separations.size());
    for (float s : separations) {
      ContactPoint p;
      p.separation_m = s;
      p.rest_offset_m = offset_m;
      p.normal_impulse = impulse;
      c.points.push_back(p);
    }
    c.constraints.push_back(k);
  }
  return c;
}

constexpr float kDt = 1.0f / 60.0f, kSlop = 0.001f;
constexpr double kGain = double(kDt) / double(kRestOffsetLag);

void update(OffsetCase* c) {
  std::vector<BodySolverState> bodies(3);
  bodies[0].inv_mass = 1.0f;
  bodies[1].inv_mass = 1.0f;
  const SolverSettings settings = make_solver_settings(kDt, 4, 30.0f, 10.0f, kSlop, 2.0f, 1.0f);
  update_rest_offsets(c->constraints, c->points, bodies, settings);
}

TEST(SimRestOffset, FollowsEachManifoldsMeanOverlapBeyondHalfTheSlop) {
  // Manifold 0: a face overlapping 1, 3, 5 and 7 mm (mean 4 mm); manifold 1: one point 0.5 mm
  // in, exactly the target; manifold 2: two points 0.2 mm in, less than the target.
  OffsetCase c =
      offset_case({{-0.001f, -0.003f, -0.005f, -0.007f}, {-0.0005f}, {-0.0002f, -0.0002f}}, 0.002f);
  update(&c);
  for (int i = 0; i < 4; ++i)  // every point of a manifold moves alike: its tilt is left alone
    EXPECT_NEAR(c.points[size_t(i)].rest_offset_m, 0.002 + kGain * 0.0035, 1e-8) << i;
  EXPECT_NEAR(c.points[4].rest_offset_m, 0.002, 1e-8);
  EXPECT_NEAR(c.points[5].rest_offset_m, 0.002 - kGain * 0.0003, 1e-8);
  EXPECT_EQ(c.points[5].rest_offset_m, c.points[6].rest_offset_m);
}

TEST(SimRestOffset, ShrinksApartAndStaysWithinItsBounds) {
  // Touching points 0.5 mm apart (within the slop): the offset shrinks by dt/T·(0.5 mm + half
  // the slop), and never below 0.
  OffsetCase apart = offset_case({{0.0005f, 0.0005f}}, 0.001f);
  update(&apart);
  EXPECT_NEAR(apart.points[0].rest_offset_m, 0.001 - kGain * 0.001, 1e-8);
  OffsetCase small = offset_case({{0.0005f}}, 0.00001f);
  update(&small);
  EXPECT_EQ(small.points[0].rest_offset_m, 0.0f);
  // Apart by more than the slop: none, whatever it had; only that point of the manifold.
  OffsetCase gap = offset_case({{0.0011f, -0.0031f}}, 0.004f);
  update(&gap);
  EXPECT_EQ(gap.points[0].rest_offset_m, 0.0f);
  EXPECT_NEAR(gap.points[1].rest_offset_m, 0.004 + kGain * 0.0005, 1e-8);
  // Deep and long under a heavy load: the offset stops at kRestOffsetSlops slops.
  OffsetCase deep = offset_case({{-0.3f, -0.3f, -0.3f}}, 0.0099f);
  update(&deep);
  for (const ContactPoint& p : deep.points)
    EXPECT_EQ(p.rest_offset_m, kRestOffsetSlops * kSlop);
}

TEST(SimRestOffset, IsBoundByWhatItsLoadNeeds) {
  // h = dt/4, ω = 2π·30 Hz (both bodies dynamic): the compression per N·s of load per kg.
  const double h = double(kDt) / 4.0, omega = 2.0 * 3.14159265358979323846 * 30.0;
  const double per_impulse = 2.0 / (h * omega * omega);  // (1/mA + 1/mB)/(h·ω²)
  // Unloaded (a press lifted off): an offset of 2 cm falls to the slop at once.
  OffsetCase unloaded = offset_case({{-0.001f, -0.001f}}, 0.02f, 0.0f);
  update(&unloaded);
  EXPECT_NEAR(unloaded.points[0].rest_offset_m, kSlop, 1e-9);
  // Loaded with 0.02 N·s a point: the bound is the slop plus four times Σλ's compression.
  OffsetCase loaded = offset_case({{-0.001f, -0.001f}}, 0.02f, 0.02f);
  update(&loaded);
  const double bound = double(kSlop) + 4.0 * 0.04 * per_impulse;
  ASSERT_LT(bound, 0.9 * double(kRestOffsetSlops * kSlop));  // below the slops' cap
  EXPECT_NEAR(loaded.points[1].rest_offset_m, bound, 1e-4 * bound);
}

// In a world: a unit box on the ground settles at half the slop, and a box under a 10 kg load
// too (the spring alone would give the load's compression on top of the slop).
double settled_overlap(float load_kg) {
  WorldDef def = default_world_def();
  def.enable_sleep = false;
  std::unique_ptr<World> world = world_on_ground(def);
  if (!world) return 0;
  BodyDef box = unit_cube(0.5f);
  box.shape.density = 1.0f;
  BodyId id{}, lower{};
  EXPECT_EQ(world->create_body(box, &lower), Error::none);
  box.position = {0, 1.5f, 0};
  box.shape.density = load_kg;
  EXPECT_EQ(world->create_body(box, &id), Error::none);
  for (int s = 0; s < 600; ++s)
    world->step();
  BodyView v{};
  EXPECT_EQ(world->get_body(lower, &v), Error::none);
  return 0.5 - double(v.position.y);  // the lower box's overlap with the ground
}

TEST(SimRestOffset, ARestingContactSettlesAtHalfTheSlopWhateverItsLoad) {
  const double light = settled_overlap(1.0f), heavy = settled_overlap(10.0f);
  std::printf("[figures] rest offset: overlap under 1 kg %.6f m, under 10 kg %.6f m\n", light,
              heavy);
  EXPECT_NEAR(light, 0.0005, 0.0001);
  EXPECT_NEAR(heavy, 0.0005, 0.0001);
}

// A contact that loses its load gives its offset back. A kinematic press squeezes a unit box
// 3.4 cm into the ground (the offsets wind up against a squeeze that cannot be undone), rests
// there, then lifts at 0.5 m/s. The box must come back to rest at the surface and not be thrown
// up by what the offsets held. Measured: it rises 1.2 cm above its rest (unbounded offsets 4.5
// cm; without rest offsets 0.7 cm, the spring giving back its compression); bound 1.5 cm.
TEST(SimRestOffset, AContactThatLosesItsLoadLetsGo) {
  WorldDef def = default_world_def();
  def.enable_sleep = false;
  std::unique_ptr<World> world = world_on_ground(def);
  ASSERT_NE(world, nullptr);
  BodyDef box = unit_cube(0.5f);
  BodyId squeezed{}, press{};
  ASSERT_EQ(world->create_body(box, &squeezed), Error::none);
  box.type = BodyType::kinematic;
  box.position = {0, 1.6f, 0};
  ASSERT_EQ(world->create_body(box, &press), Error::none);
  BodyView v{};
  double deepest = 1.0, highest = 0.0;
  for (int s = 0; s < 400; ++s) {
    const float vy = s < 100 ? -0.1f : (s < 200 ? 0.0f : 0.5f);  // down 16.7 cm, hold, lift
    ASSERT_EQ(world->set_linear_velocity(press, Vec3{0, vy, 0}), Error::none);
    world->step();
    ASSERT_EQ(world->get_body(squeezed, &v), Error::none);
    if (s < 200) deepest = std::min(deepest, double(v.position.y));
    if (s >= 200) highest = std::max(highest, double(v.position.y));
  }
  const double rest = 0.5 - 0.5 * double(def.linear_slop_m);
  std::printf(
      "[figures] press: squeezed to y %.4f, highest after the lift %.5f (rest %.5f), at "
      "the end %.5f\n",
      deepest, highest, rest, double(v.position.y));
  ASSERT_LT(deepest, 0.48);  // the press did squeeze it
  EXPECT_LT(highest, rest + 0.015);
  EXPECT_NEAR(double(v.position.y), rest, 0.0002);
}

}  // namespace
}  // namespace lockstep::sim
