// Compound bodies: the builder (mass properties against hand sums, refusals), the scene text,
// contacts per child (one manifold per touching child, warm started under its children's key,
// one contact event per body pair), queries, snapshots, and physics scenes with stated bounds (a
// table standing for a minute, an L that tips exactly when its centre of mass passes its edge).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compound.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "shape.h"

namespace {

using namespace lockstep::sim;

CompoundChild box_child(Vec3 half, Vec3 position, Quat orientation = {}) {
  CompoundChild c;
  c.type = ShapeType::box;
  c.half_extents = half;
  c.position = position;
  c.orientation = orientation;
  return c;
}

CompoundDef compound_of(const char* name, const std::vector<CompoundChild>& children) {
  CompoundDef d;
  EXPECT_TRUE(set_compound_name(&d, name));
  d.child_count = static_cast<uint32_t>(children.size());
  for (size_t i = 0; i < children.size() && i < kMaxCompoundChildren; ++i)
    d.children[i] = children[i];
  return d;
}

// A table: a 1.2 × 0.05 × 0.8 m top on four 0.7 m legs 5 cm square, its feet at y = 0.
CompoundDef table_def() {
  return compound_of("table", {box_child({0.6f, 0.025f, 0.4f}, {0, 0.725f, 0}),
                               box_child({0.025f, 0.35f, 0.025f}, {0.55f, 0.35f, 0.35f}),
                               box_child({0.025f, 0.35f, 0.025f}, {-0.55f, 0.35f, 0.35f}),
                               box_child({0.025f, 0.35f, 0.025f}, {0.55f, 0.35f, -0.35f}),
                               box_child({0.025f, 0.35f, 0.025f}, {-0.55f, 0.35f, -0.35f})});
}

CompoundGeometry built(const CompoundDef& def) {
  CompoundGeometry g;
  EXPECT_EQ(build_compound(def, nullptr, 0, &g), Error::none);
  return g;
}

// ---- the builder -------------------------------------------------------------------------------

TEST(CompoundBuild, TwoBoxesSumTheirMassAboutTheCommonCentre) {
  // Unit cubes at x = 0 and x = 2: volume 2, centre x = 1. About y (and z) through the centre each
  // cube has its own 1/6 plus d² = 1 (unit mass): 2·(1/6 + 1); about x only 2·(1/6).
  const CompoundGeometry g = built(compound_of("pair", {box_child({0.5f, 0.5f, 0.5f}, {0, 0, 0}),
                                                        box_child({0.5f, 0.5f, 0.5f}, {2, 0, 0})}));
  EXPECT_NEAR(g.volume, 2.0f, 1e-6f);
  EXPECT_NEAR(g.centre_of_mass.x, 1.0f, 1e-6f);
  EXPECT_NEAR(g.centre_of_mass.y, 0.0f, 1e-6f);
  EXPECT_NEAR(g.principal_inertia.x, 2.0f / 6.0f, 1e-5f);
  EXPECT_NEAR(g.principal_inertia.y, 2.0f * (1.0f / 6.0f + 1.0f), 1e-5f);
  EXPECT_NEAR(g.principal_inertia.z, 2.0f * (1.0f / 6.0f + 1.0f), 1e-5f);
  EXPECT_EQ(g.principal_frame.w, 1.0f);  // diagonal already: the identity frame is kept
  // The children were moved by the centre, not turned.
  EXPECT_NEAR(g.poses[0].p.x, -1.0f, 1e-6f);
  EXPECT_NEAR(g.poses[1].p.x, 1.0f, 1e-6f);
  EXPECT_NEAR(g.radius, 1.0f + std::sqrt(0.75f), 1e-5f);
}

TEST(CompoundBuild, TurnedChildrenGiveTheTensorOfTheirSumInAPrincipalFrame) {
  // An L of two bars in the xy plane; the tensor's eigenvalues must equal those of the sum of the
  // bars' tensors computed here by hand (parallel axes), and its frame must diagonalise it.
  const CompoundGeometry g =
      built(compound_of("ell", {box_child({0.1f, 0.5f, 0.1f}, {0, 0.5f, 0}),
                                box_child({0.4f, 0.1f, 0.1f}, {0.5f, 0.1f, 0})}));
  const float v1 = 0.2f * 1.0f * 0.2f, v2 = 0.8f * 0.2f * 0.2f;
  const Vec3 c = (Vec3{0, 0.5f, 0} * v1 + Vec3{0.5f, 0.1f, 0} * v2) * (1.0f / (v1 + v2));
  EXPECT_NEAR(g.centre_of_mass.x, c.x, 1e-6f);
  EXPECT_NEAR(g.centre_of_mass.y, c.y, 1e-6f);
  // Hand tensor (xx, yy, zz, xy) about c.
  auto box_i = [](float v, Vec3 h) {
    return Vec3{v / 3 * (h.y * h.y + h.z * h.z), v / 3 * (h.x * h.x + h.z * h.z),
                v / 3 * (h.x * h.x + h.y * h.y)};
  };
  const Vec3 i1 = box_i(v1, {0.1f, 0.5f, 0.1f}), i2 = box_i(v2, {0.4f, 0.1f, 0.1f});
  const Vec3 d1 = Vec3{0, 0.5f, 0} - c, d2 = Vec3{0.5f, 0.1f, 0} - c;
  const double xx = i1.x + i2.x + v1 * (d1.y * d1.y) + v2 * (d2.y * d2.y);
  const double yy = i1.y + i2.y + v1 * (d1.x * d1.x) + v2 * (d2.x * d2.x);
  const double zz =
      i1.z + i2.z + v1 * (d1.x * d1.x + d1.y * d1.y) + v2 * (d2.x * d2.x + d2.y * d2.y);
  const double xy = -(v1 * d1.x * d1.y + v2 * d2.x * d2.y);
  const double mean = 0.5 * (xx + yy), diff = std::sqrt(0.25 * (xx - yy) * (xx - yy) + xy * xy);
  std::vector<double> expect{mean - diff, mean + diff, zz};
  std::vector<double> got{g.principal_inertia.x, g.principal_inertia.y, g.principal_inertia.z};
  std::sort(expect.begin(), expect.end());
  std::sort(got.begin(), got.end());
  for (int k = 0; k < 3; ++k)
    EXPECT_NEAR(got[k], expect[k], 1e-5 * expect[2]) << k;
  // R·diag·Rᵀ gives back the hand tensor's off-diagonal xy entry.
  const Mat3 r = to_mat3(g.principal_frame);
  const Vec3 m = g.principal_inertia;
  const float back_xy = r.c0.x * r.c0.y * m.x + r.c1.x * r.c1.y * m.y + r.c2.x * r.c2.y * m.z;
  EXPECT_NEAR(back_xy, xy, 1e-5 * expect[2]);
}

TEST(CompoundBuild, RefusesBadDefinitions) {
  CompoundGeometry g;
  CompoundDef none = compound_of("none", {});
  EXPECT_EQ(build_compound(none, nullptr, 0, &g), Error::invalid_compound);
  CompoundDef many = compound_of("many", {box_child({1, 1, 1}, {})});
  many.child_count = kMaxCompoundChildren + 1;
  EXPECT_EQ(build_compound(many, nullptr, 0, &g), Error::invalid_compound);
  CompoundChild plane;
  plane.type = ShapeType::plane;
  EXPECT_EQ(build_compound(compound_of("p", {plane}), nullptr, 0, &g), Error::invalid_compound);
  CompoundChild nested;
  nested.type = ShapeType::compound;
  EXPECT_EQ(build_compound(compound_of("n", {nested}), nullptr, 0, &g), Error::invalid_compound);
  CompoundChild hull;
  hull.type = ShapeType::hull;
  EXPECT_EQ(build_compound(compound_of("h", {hull}), nullptr, 0, &g), Error::unknown_hull);
  EXPECT_EQ(build_compound(compound_of("nan", {box_child({1, 1, 1}, {std::nanf(""), 0, 0})}),
                           nullptr, 0, &g),
            Error::non_finite);
  EXPECT_EQ(build_compound(compound_of("rot", {box_child({1, 1, 1}, {}, Quat{0, 0, 0, 2})}),
                           nullptr, 0, &g),
            Error::invalid_compound);
  EXPECT_EQ(
      build_compound(compound_of("far", {box_child({1, 1, 1}, {5000, 0, 0})}), nullptr, 0, &g),
      Error::invalid_compound);
  EXPECT_EQ(build_compound(compound_of("flat", {box_child({1, 0, 1}, {})}), nullptr, 0, &g),
            Error::invalid_argument);

  // A world refuses a repeated name, and a body naming a compound it does not have.
  WorldDef def = default_world_def();
  def.compound_count = 2;
  def.compounds[0] = table_def();
  def.compounds[1] = table_def();
  EXPECT_EQ(validate_world_def(def), Error::invalid_compound);
  def.compound_count = 1;
  Error e = Error::none;
  std::unique_ptr<World> world = World::create(def, &e);
  ASSERT_EQ(e, Error::none);
  BodyDef b = default_body_def();
  b.shape.type = ShapeType::compound;
  b.shape.compound = 1;
  BodyId id;
  EXPECT_EQ(world->create_body(b, &id), Error::unknown_compound);
  b.shape.compound = 0;
  EXPECT_EQ(world->create_body(b, &id), Error::none);
}

// ---- the scene text
// ------------------------------------------------------------------------------

constexpr const char* kTableScene =
    "world enable_sleep=0\n"
    "compound name=table\n"
    "child shape=box half=0.6,0.025,0.4 pos=0,0.725,0\n"
    "child shape=box half=0.025,0.35,0.025 pos=0.55,0.35,0.35\n"
    "child shape=box half=0.025,0.35,0.025 pos=-0.55,0.35,0.35\n"
    "child shape=box half=0.025,0.35,0.025 pos=0.55,0.35,-0.35\n"
    "child shape=box half=0.025,0.35,0.025 pos=-0.55,0.35,-0.35\n"
    "compound name=bell\n"
    "child shape=sphere radius=0.2 pos=-0.5,0,0\n"
    "child shape=sphere radius=0.2 pos=0.5,0,0\n"
    "child shape=capsule radius=0.05 half_height=0.4 pos=0,0,0 rot=0,0,0.7071068,0.7071068\n"
    "child shape=hull points=0,0,0,0.2,0,0,0,0.2,0,0,0,0.2 pos=0,0.3,0\n"
    "template name=dumbbell type=dynamic shape=compound compound=bell density=500\n"
    "body type=static shape=box half=20,0.5,20 pos=0,-0.5,0\n"
    "body name=t type=dynamic shape=compound compound=table density=600 pos=0,0.68,0\n";

TEST(CompoundScene, LinesParseIntoTheWorldDefAndRoundTrip) {
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(kTableScene, &scene, &error)) << error;
  ASSERT_EQ(scene.def.compound_count, 2u);
  EXPECT_EQ(scene.def.compounds[0].child_count, 5u);
  EXPECT_EQ(scene.def.compounds[1].child_count, 4u);
  EXPECT_EQ(scene.def.hull_count, 1u);
  EXPECT_EQ(scene.def.compounds[1].children[3].hull, 0u);
  EXPECT_EQ(scene.def.templates[0].shape.type, ShapeType::compound);
  EXPECT_EQ(scene.def.templates[0].shape.compound, 1u);
  EXPECT_EQ(scene.bodies[1].shape.compound, 0u);
  Scene again;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &again, &error)) << error;
  EXPECT_EQ(format_scene_text(again), format_scene_text(scene));
  EXPECT_EQ(world_def_fingerprint(again.def), world_def_fingerprint(scene.def));
  // A world without compounds fingerprints as before they existed: adding one changes it.
  WorldDef plain = scene.def;
  plain.compound_count = 0;
  EXPECT_NE(world_def_fingerprint(plain), world_def_fingerprint(scene.def));
}

TEST(CompoundScene, BadLinesAreRefusedWithLineAndReason) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"child shape=box half=1,1,1\n", "line 1 col 1: child: a child line belongs right after"},
      {"compound name=a\nbody type=static shape=box half=1,1,1\n",
       "line 1: compound: 'a' has no child lines"},
      {"compound name=a\n", "line 1: compound: 'a' has no child lines"},
      {"compound name=a\nchild shape=box half=1,1,1\ncompound name=a\n", "a second compound named"},
      {"compound name=a\nchild shape=plane normal=0,1,0\n", "compounds do not nest"},
      {"compound name=a\nchild shape=compound\n", "compounds do not nest"},
      {"compound name=a\nchild shape=box half=1,0,1\n", "line 2: child: invalid child shape box"},
      {"compound name=a\nchild shape=box half=1,1,1 rot=0,0,0,3\n", "line 2: child: invalid"},
      {"compound name=a\nchild shape=box half=1,1,1 radius=2\n", "does not apply to child"},
      {"compound name=a\nchild shape=hull points=0,0,0,1,0,0,0,1,0,1,1,0\n", "coplanar"},
      {"body type=dynamic shape=compound compound=nope\n", "no compound named 'nope'"},
      {"body type=dynamic shape=compound\n", "missing key 'compound'"},
      {"body type=static shape=box half=1,1,1\ncompound name=a\n",
       "compound lines come before template and body lines"},
  };
  for (const Case& c : cases) {
    Scene scene;
    std::string error;
    EXPECT_FALSE(parse_scene_text(c.text, &scene, &error)) << c.text;
    EXPECT_NE(error.find(c.expect), std::string::npos) << c.text << " gave: " << error;
  }
  std::string nine = "compound name=a\n";
  for (int i = 0; i < 9; ++i)
    nine += "child shape=sphere radius=0.1 pos=" + std::to_string(i) + ",0,0\n";
  Scene scene;
  std::string error;
  EXPECT_FALSE(parse_scene_text(nine, &scene, &error));
  EXPECT_NE(error.find("line 10: child: more than 8 children"), std::string::npos) << error;
}

// ---- physics
// -------------------------------------------------------------------------------------

struct Table {
  Scene scene;
  std::unique_ptr<World> world;
  BodyId table;
  explicit Table(const char* text = kTableScene) {
    std::string error;
    EXPECT_TRUE(parse_scene_text(text, &scene, &error)) << error;
    Error e = Error::none;
    world = build_world(scene, &e);
    EXPECT_NE(world, nullptr);
    table = find_scene_body(scene, "t");
  }
  BodyView view(BodyId id) const {
    BodyView v;
    EXPECT_EQ(world->get_body(id, &v), Error::none);
    return v;
  }
};

// The table's centre of mass above its feet: the top's 0.06 m³ at 0.725 and the legs' 4 × 0.00175
// at 0.35.
constexpr float kTableCentre = (0.048f * 0.725f + 4 * 0.00175f * 0.35f) / (0.048f + 4 * 0.00175f);

TEST(CompoundPhysics, TableStandsOnItsFourLegsForAMinute) {
  Table t;
  uint32_t manifolds = 0, warm = 0, points = 0, begins = 0;
  for (int i = 0; i < 3600; ++i) {
    t.world->step();
    const StepStats& st = t.world->last_step_stats();
    begins += st.begin_events;
    if (i == 3599)
      manifolds = st.manifolds, warm = st.warm_started_points, points = st.contact_points;
  }
  const BodyView v = t.view(t.table);
  const Vec3 up = rotate(v.orientation, Vec3{0, 1, 0});
  const float drift = std::sqrt(v.position.x * v.position.x + v.position.z * v.position.z);
  std::printf(
      "[figures] table after 60 s: centre %.5f m (ideal %.5f), up·y %.7f, drift %.5f m, "
      "%u manifolds, %u points, %u warm started, %u begin events\n",
      v.position.y, kTableCentre, up.y, drift, manifolds, points, warm, begins);
  EXPECT_NEAR(v.position.y, kTableCentre, 0.003f);
  EXPECT_GT(up.y, 0.99996f);  // level within 0.5°
  EXPECT_LT(drift, 0.002f);
  // One manifold per leg on the ground, each warm started from the last step under its own key;
  // the body pair began touching once.
  EXPECT_EQ(manifolds, 4u);
  EXPECT_GE(points, 16u);
  EXPECT_EQ(warm, points);
  EXPECT_EQ(begins, 1u);
  // A ray down through the top's middle hits the top; one between the legs beside it hits the
  // ground (the compound's other children are not in its way).
  RayHit hit;
  ASSERT_TRUE(ray_cast(*t.world, {0.1f, 3, 0}, {0, -5, 0}, {}, &hit).found > 0);
  EXPECT_EQ(hit.body, t.table);
  EXPECT_NEAR(hit.point.y, 0.75f, 0.004f);
  ASSERT_TRUE(ray_cast(*t.world, {0.3f, 0.4f, 0}, {0, -5, 0}, {}, &hit).found > 0);
  EXPECT_NE(hit.body, t.table);
  EXPECT_NEAR(hit.point.y, 0.0f, 1e-4f);
  // An overlap at a leg finds the table; one under the top between the legs does not.
  ShapeDef probe;
  probe.type = ShapeType::sphere;
  probe.radius = 0.05f;
  BodyId found[4];
  EXPECT_EQ(overlap(*t.world, probe, Transform{{0.55f, 0.3f, 0.35f}, {}}, {}, found).found, 1u);
  EXPECT_EQ(overlap(*t.world, probe, Transform{{0, 0.4f, 0}, {}}, {}, found).found, 0u);
  // A box cast down onto the top stops on it.
  ShapeDef cube;
  cube.type = ShapeType::box;
  cube.half_extents = {0.1f, 0.1f, 0.1f};
  const QueryResult cast =
      shape_cast(*t.world, cube, Transform{{0, 2, 0}, {}}, {0, -2, 0}, {}, &hit);
  ASSERT_GT(cast.found, 0u);
  EXPECT_EQ(hit.body, t.table);
  EXPECT_NEAR(2.0f - 2.0f * hit.fraction, 0.85f, 0.005f);
}

// An L: a 0.5 × 0.1 × 0.5 foot on the ground and an arm of length `arm` on top of it, from the
// foot's left edge to the right, past the foot's right edge at x = 0.25. It stands while its
// centre of mass is over the foot and tips once it is past the edge (until the arm's end lands).
std::string ell_scene(float arm) {
  char text[512];
  std::snprintf(text, sizeof(text),
                "world enable_sleep=0\n"
                "compound name=ell\n"
                "child shape=box half=0.25,0.05,0.25 pos=0,0.05,0\n"
                "child shape=box half=%.6f,0.05,0.05 pos=%.6f,0.15,0\n"
                "body type=static shape=box half=20,0.5,20 pos=0,-0.5,0\n",
                0.5 * arm, -0.25 + 0.5 * arm);
  return text;
}

// The arm length whose centre of mass is at x = c: 0.01·a·(a/2 − 0.25) = c·(0.025 + 0.01·a).
float arm_for_centre(float c) {
  // 0.005 a² − (0.0025 + 0.01 c) a − 0.025 c = 0.
  const double qa = 0.005, qb = -(0.0025 + 0.01 * c), qc = -0.025 * c;
  return static_cast<float>((-qb + std::sqrt(qb * qb - 4 * qa * qc)) / (2 * qa));
}

TEST(CompoundPhysics, AnLTipsExactlyWhenItsCentreOfMassPassesTheSupportEdge) {
  for (float offset : {-0.01f, 0.01f}) {
    const float arm = arm_for_centre(0.25f + offset);
    const std::string text = ell_scene(arm);
    Scene scene;
    std::string error;
    ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
    Error e = Error::none;
    std::unique_ptr<World> world = build_world(scene, &e);
    ASSERT_NE(world, nullptr);
    // The body's origin is the centre of mass: where the builder says it is.
    CompoundGeometry g;
    ASSERT_EQ(build_compound(scene.def.compounds[0], nullptr, 0, &g), Error::none);
    EXPECT_NEAR(g.centre_of_mass.x, 0.25f + offset, 1e-4f);
    BodyDef b = default_body_def();
    b.shape.type = ShapeType::compound;
    b.shape.compound = 0;
    b.position = g.centre_of_mass + Vec3{0, 0.001f, 0};
    BodyId id;
    ASSERT_EQ(world->create_body(b, &id), Error::none);
    for (int i = 0; i < 600; ++i)
      world->step();
    BodyView v;
    ASSERT_EQ(world->get_body(id, &v), Error::none);
    const float up = rotate(v.orientation, Vec3{0, 1, 0}).y;
    std::printf("[figures] L with its centre %+.3f m from the edge: arm %.4f m, up·y %.5f\n",
                offset, arm, up);
    if (offset < 0) {
      EXPECT_GT(up, 0.99998f) << "stands: centre over the foot";
    } else {
      // Tips about the foot's edge until the arm's far end, 0.1 m up and arm − 0.5 m past the
      // edge, lands: a tilt of atan(0.1 / (arm − 0.5)).
      const float tilt = std::atan(0.1f / (arm - 0.5f));
      EXPECT_NEAR(up, std::cos(tilt), 3e-4f) << "tips: centre past the edge";
    }
  }
}

TEST(CompoundPhysics, DumbbellsSpawnFromATemplateAndSnapshotsRoundTrip) {
  Table t;
  Command spawn;
  spawn.type = CommandType::spawn;
  spawn.template_index = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    spawn.sequence = i;
    spawn.position = {-1.5f + 1.5f * static_cast<float>(i), 2.0f + 0.5f * static_cast<float>(i),
                      0.2f * static_cast<float>(i)};
    spawn.orientation = normalize(Quat{0.1f * static_cast<float>(i), 0.2f, 0, 1});
    ASSERT_EQ(t.world->queue_command(spawn), Error::none);
  }
  t.world->step();
  std::vector<BodyId> bells;
  for (const CommandResult& r : t.world->command_results()) {
    EXPECT_EQ(r.error, Error::none);
    bells.push_back(r.body);
  }
  ASSERT_EQ(bells.size(), 3u);
  for (int i = 1; i < 90; ++i)
    t.world->step();
  std::vector<uint8_t> snapshot(t.world->max_snapshot_size());
  size_t written = 0;
  ASSERT_EQ(t.world->save_snapshot(snapshot, &written), Error::none);
  for (int i = 0; i < 120; ++i)
    t.world->step();
  const uint64_t straight = t.world->state_hash();
  ASSERT_EQ(t.world->restore_snapshot({snapshot.data(), written}), Error::none);
  for (int i = 0; i < 120; ++i)
    t.world->step();
  EXPECT_EQ(t.world->state_hash(), straight);
  // The dumbbells landed on the ground or the table, none below the ground.
  for (BodyId id : bells) {
    const BodyView v = t.view(id);
    EXPECT_GT(v.position.y, 0.1f);  // on the ground or the table, rolling on its bells
  }
}

}  // namespace

namespace {

// Static and kinematic compounds: a box rests on a static compound step (its upper child), and a
// kinematic compound paddle moving at 1 m/s pushes a box ahead of it.
TEST(CompoundPhysics, StaticAndKinematicCompoundsCarryAndPush) {
  constexpr const char* kText =
      "world enable_sleep=0\n"
      "compound name=step\n"
      "child shape=box half=1,0.25,1 pos=0,0.25,0\n"
      "child shape=box half=0.5,0.25,0.5 pos=0.5,0.75,0\n"
      "compound name=paddle\n"
      "child shape=box half=0.05,0.3,0.6 pos=0,0,0\n"
      "child shape=sphere radius=0.1 pos=0,0.4,0\n"
      "body type=static shape=box half=20,0.5,20 pos=10,-0.5,0\n"
      "body name=step type=static shape=compound compound=step pos=0,0.4,0\n"
      "body name=on_step type=dynamic shape=box half=0.2,0.2,0.2 pos=0.5,1.61,0\n"
      "body name=paddle type=kinematic shape=compound compound=paddle pos=3,0.35,0 vel=1,0,0\n"
      "body name=pushed type=dynamic shape=box half=0.2,0.2,0.2 pos=3.6,0.2,0\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(kText, &scene, &error)) << error;
  Error e = Error::none;
  std::unique_ptr<World> world = build_world(scene, &e);
  ASSERT_NE(world, nullptr);
  // The step's centre of mass: 2 m³ at (0, 0.25) and 0.5 m³ at (0.5, 0.75) give (0.1, 0.35).
  // Placed there at (0, 0.4), its upper child's top is at 0.4 + (1.0 − 0.35) = 1.05 m and spans
  // x from −0.1 to 0.9.
  for (int i = 0; i < 120; ++i)
    world->step();
  BodyView on_step, pushed, paddle;
  ASSERT_EQ(world->get_body(find_scene_body(scene, "on_step"), &on_step), Error::none);
  ASSERT_EQ(world->get_body(find_scene_body(scene, "pushed"), &pushed), Error::none);
  ASSERT_EQ(world->get_body(find_scene_body(scene, "paddle"), &paddle), Error::none);
  std::printf(
      "[figures] box on the static step: %.4f m (its top 1.05 + 0.2); paddle x %.3f, "
      "pushed box x %.3f, vx %.3f\n",
      on_step.position.y, paddle.position.x, pushed.position.x, pushed.linear_velocity.x);
  EXPECT_NEAR(on_step.position.y, 1.25f, 0.003f);
  EXPECT_NEAR(on_step.position.x, 0.5f, 0.002f);
  // After 2 s the paddle is at x = 5; the box it pushes stays ahead of its face (0.05 + 0.2).
  EXPECT_NEAR(paddle.position.x, 5.0f, 1e-3f);
  EXPECT_GT(pushed.position.x, paddle.position.x + 0.24f);
  EXPECT_GT(pushed.position.x, 5.0f);
}

}  // namespace
