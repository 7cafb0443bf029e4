// Spatial queries against analytic answers (rays at spheres, box faces, capsules, grazing and
// inside starts, rotated boxes; overlaps touching exactly; sphere casts at faces, edges and
// spheres), result order and overflow, filters, bad input, the tree against a brute-force scan
// of every body on a settled pile, no allocation, and the query golden.
#include <gtest/gtest.h>

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "alloc_counter.h"
#include "collide.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"
#include "overlap_test.h"
#include "ray_cast.h"
#include "split_mix64.h"
#include "test_shapes.h"
#include "world_data.h"

namespace lockstep::sim {
namespace {

using testing::box_shape;
using testing::capsule_shape;
using testing::plane_shape;
using testing::sphere_shape;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A world without gravity whose bodies are created static (queries do not step).
class QueryWorld : public ::testing::Test {
 protected:
  void SetUp() override {
    WorldDef def = default_world_def();
    def.gravity = {0, 0, 0};
    def.max_bodies = 64;
    world_ = World::create(def);
    ASSERT_NE(world_, nullptr);
  }
  BodyId add(const ShapeDef& shape, Vec3 position, Quat orientation = Quat{},
             BodyType type = BodyType::static_body) {
    BodyDef def = default_body_def();
    def.type = type;
    def.shape = shape;
    def.position = position;
    def.orientation = orientation;
    BodyId id;
    EXPECT_EQ(world_->create_body(def, &id), Error::none);
    return id;
  }
  RayHit cast(Vec3 origin, Vec3 translation, const QueryFilter& filter = {}) {
    RayHit hit;
    last_ = ray_cast(*world_, origin, translation, filter, &hit);
    EXPECT_TRUE(last_.ok());
    return hit;
  }
  std::unique_ptr<World> world_;
  QueryResult last_;
};

void expect_vec_eq(Vec3 a, Vec3 b) {
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.z, b.z);
}
void expect_vec_near(Vec3 a, Vec3 b, float tol) {
  EXPECT_NEAR(a.x, b.x, tol);
  EXPECT_NEAR(a.y, b.y, tol);
  EXPECT_NEAR(a.z, b.z, tol);
}

// ---- rays -------------------------------------------------------------------------------------

TEST_F(QueryWorld, RayAtSphere) {
  const BodyId s = add(sphere_shape(1), {0, 0, 0});
  const RayHit hit = cast({-5, 0, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, s);
  EXPECT_EQ(hit.fraction, 0.4f);
  expect_vec_eq(hit.point, {-1, 0, 0});
  expect_vec_eq(hit.normal, {-1, 0, 0});
  // Off-axis: x² + y² = 1 at y = 0.6 → x = −0.8.
  const RayHit off = cast({-5, 0.6f, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_NEAR(off.fraction, 0.42f, 1e-6f);
  expect_vec_near(off.point, {-0.8f, 0.6f, 0}, 1e-6f);
  expect_vec_near(off.normal, {-0.8f, 0.6f, 0}, 1e-6f);
  // Too short, pointing away, passing beside: no hit and *hit cleared.
  const std::pair<Vec3, Vec3> misses[] = {
      {{-5, 0, 0}, {3.9f, 0, 0}}, {{-5, 0, 0}, {-10, 0, 0}}, {{-5, 1.5f, 0}, {10, 0, 0}}};
  for (const auto& [o, d] : misses) {
    const RayHit miss = cast(o, d);
    EXPECT_EQ(last_.count, 0u);
    EXPECT_EQ(last_.found, 0u);
    EXPECT_TRUE(miss.body.is_null());
  }
}

TEST_F(QueryWorld, RayAtBoxFaces) {
  const BodyId b = add(box_shape({1, 2, 3}), {5, 0, 0});
  RayHit hit = cast({0, 0.5f, 0.5f}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, b);
  EXPECT_EQ(hit.fraction, 0.4f);
  expect_vec_eq(hit.point, {4, 0.5f, 0.5f});
  expect_vec_eq(hit.normal, {-1, 0, 0});
  hit = cast({5, 10, 0}, {0, -20, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.fraction, 0.4f);
  expect_vec_eq(hit.point, {5, 2, 0});
  expect_vec_eq(hit.normal, {0, 1, 0});
  hit = cast({5.5f, -1, -13}, {0, 0, 20});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.fraction, 0.5f);
  expect_vec_eq(hit.normal, {0, 0, -1});
  // Slanted onto the top face: from (3, 6, 0) towards (5, 2, 0) + (2, −4, 0) beyond.
  hit = cast({3, 6, 0}, {4, -8, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.fraction, 0.5f);
  expect_vec_near(hit.point, {5, 2, 0}, 1e-6f);
  expect_vec_eq(hit.normal, {0, 1, 0});
}

TEST_F(QueryWorld, RayAtCapsule) {
  const BodyId c = add(capsule_shape(0.5f, 1), {0, 0, 0});
  // The side at x = −0.5.
  RayHit hit = cast({-5, 0.5f, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, c);
  EXPECT_EQ(hit.fraction, 0.45f);
  expect_vec_eq(hit.point, {-0.5f, 0.5f, 0});
  expect_vec_eq(hit.normal, {-1, 0, 0});
  // Down the axis onto the top cap at y = 1.5.
  hit = cast({0, 10, 0}, {0, -20, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.fraction, 0.425f);
  expect_vec_eq(hit.point, {0, 1.5f, 0});
  expect_vec_eq(hit.normal, {0, 1, 0});
  // Across the top cap at y = 1.25: x = −√(0.25 − 0.0625).
  hit = cast({-5, 1.25f, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  const float x = -std::sqrt(0.1875f);
  EXPECT_NEAR(hit.point.x, x, 1e-6f);
  expect_vec_near(hit.normal, {x / 0.5f, 0.5f, 0}, 1e-6f);
  // Above the cap: a miss.
  cast({-5, 1.51f, 0}, {10, 0, 0});
  EXPECT_EQ(last_.count, 0u);
}

TEST_F(QueryWorld, RayAtPlane) {
  const BodyId ground = add(plane_shape(), {0, 0, 0});
  RayHit hit = cast({1, 4, 2}, {0, -8, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, ground);
  EXPECT_EQ(hit.fraction, 0.5f);
  expect_vec_eq(hit.point, {1, 0, 2});
  expect_vec_eq(hit.normal, {0, 1, 0});
  cast({1, 4, 2}, {5, 0, 0});  // parallel above
  EXPECT_EQ(last_.count, 0u);
  cast({1, 4, 2}, {0, 3, 0});  // away
  EXPECT_EQ(last_.count, 0u);
}

TEST_F(QueryWorld, GrazingRaysHit) {
  const BodyId s = add(sphere_shape(1), {0, 0, 0});
  const BodyId b = add(box_shape({1, 1, 1}), {10, 0, 0});
  // Tangent to the sphere at (0, 1, 0): closed shapes, so a hit.
  RayHit hit = cast({-5, 1, 0}, {4, 0, 0});
  EXPECT_EQ(last_.count, 0u);  // (short of it)
  hit = cast({-5, 1, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, s);
  EXPECT_EQ(hit.fraction, 0.5f);
  expect_vec_eq(hit.point, {0, 1, 0});
  expect_vec_eq(hit.normal, {0, 1, 0});
  cast({-5, std::nextafter(1.0f, 2.0f), 0}, {10, 0, 0});
  EXPECT_EQ(last_.count, 0u);
  // Along the box's top face (y = 1): enters through the −x face's top edge.
  hit = cast({5, 1, 0.5f}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, b);
  EXPECT_EQ(hit.fraction, 0.4f);
  expect_vec_eq(hit.normal, {-1, 0, 0});
  cast({5, std::nextafter(1.0f, 2.0f), 0.5f}, {10, 0, 0});
  EXPECT_EQ(last_.count, 0u);
}

TEST_F(QueryWorld, InsideStartIsAHitAtFractionZero) {
  const BodyId s = add(sphere_shape(1), {0, 0, 0});
  const BodyId b = add(box_shape({1, 1, 1}), {10, 0, 0});
  const BodyId c = add(capsule_shape(0.5f, 1), {0, 0, 10});
  const BodyId g = add(plane_shape(), {0, -5, 0});
  struct Case {
    BodyId body;
    Vec3 origin;
  };
  for (const Case& k :
       {Case{s, {0.2f, 0.1f, 0}}, Case{s, {1, 0, 0}} /* on the surface */,
        Case{b, {10.5f, -0.5f, 0.9f}}, Case{c, {0, 1.2f, 10.1f}}, Case{g, {3, -6, 3}}}) {
    const RayHit hit = cast(k.origin, {0, 0, 2});
    ASSERT_EQ(last_.count, 1u);
    EXPECT_EQ(hit.body, k.body);
    EXPECT_EQ(hit.fraction, 0.0f);
    expect_vec_eq(hit.point, k.origin);
    expect_vec_eq(hit.normal, {0, 0, -1});
  }
}

TEST_F(QueryWorld, RotatedBox) {
  // Long axis (x, 2 m half) turned onto y by 90° about z.
  const float h = std::sqrt(0.5f);
  const BodyId tall = add(box_shape({2, 0.5f, 0.5f}), {0, 0, 0}, Quat{0, 0, h, h});
  RayHit hit = cast({-5, 1.5f, 0}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, tall);
  EXPECT_NEAR(hit.fraction, 0.45f, 1e-6f);
  expect_vec_near(hit.point, {-0.5f, 1.5f, 0}, 1e-6f);
  expect_vec_near(hit.normal, {-1, 0, 0}, 1e-6f);
  cast({-5, 2.1f, 0}, {10, 0, 0});
  EXPECT_EQ(last_.count, 0u);
  // A unit cube turned 45° about y meets a ray along x with its vertical edge at x = −√2·... .
  const float s = std::sqrt(0.5f);
  const BodyId diamond =
      add(box_shape({1, 1, 1}), {0, 0, 20}, Quat{0, 0.38268343f, 0, 0.92387953f});
  hit = cast({-5, 0, 20}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, diamond);
  EXPECT_NEAR(hit.point.x, -2 * s, 1e-5f);
  // Off the edge, on a face: the face normal is (−1, 0, ±1)/√2.
  hit = cast({-5, 0, 20.5f}, {10, 0, 0});
  ASSERT_EQ(last_.count, 1u);
  EXPECT_NEAR(hit.point.x, -2 * s + 0.5f, 1e-5f);
  expect_vec_near(hit.normal, {-s, 0, s}, 1e-5f);
}

TEST_F(QueryWorld, RayCastAllOrderAndOverflow) {
  add(plane_shape(), {0, -1, 0});                      // slot 0: below, parallel: never hit
  const BodyId far = add(sphere_shape(1), {8, 0, 0});  // slot 1
  const BodyId mid = add(box_shape({1, 1, 1}), {4, 0, 0});
  // Two bodies touching the ray at the same point (x = 0), created upper first: ties by slot.
  const BodyId upper = add(sphere_shape(1), {0, 1, 0});
  const BodyId lower = add(sphere_shape(1), {0, -1, 0});
  RayHit hits[8];
  QueryResult r = ray_cast_all(*world_, {-5, 0, 0}, {20, 0, 0}, {}, hits);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 4u);
  EXPECT_EQ(r.found, 4u);
  EXPECT_FALSE(r.overflow());
  EXPECT_EQ(hits[0].body, upper);
  EXPECT_EQ(hits[1].body, lower);
  EXPECT_EQ(hits[0].fraction, hits[1].fraction);
  EXPECT_EQ(hits[0].fraction, 0.25f);
  EXPECT_EQ(hits[2].body, mid);
  EXPECT_EQ(hits[2].fraction, 0.4f);
  EXPECT_EQ(hits[3].body, far);
  EXPECT_EQ(hits[3].fraction, 0.6f);
  // The closest: the lower slot of the tie.
  const RayHit first = cast({-5, 0, 0}, {20, 0, 0});
  EXPECT_EQ(first.body, upper);
  // Overflow: the first two in order are kept, all four counted.
  RayHit two[2];
  r = ray_cast_all(*world_, {-5, 0, 0}, {20, 0, 0}, {}, two);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.count, 2u);
  EXPECT_EQ(r.found, 4u);
  EXPECT_TRUE(r.overflow());
  EXPECT_EQ(two[0].body, upper);
  EXPECT_EQ(two[1].body, lower);
  // From the far end: the order reverses.
  r = ray_cast_all(*world_, {15, 0, 0}, {-20, 0, 0}, {}, hits);
  ASSERT_EQ(r.count, 4u);
  EXPECT_EQ(hits[0].body, far);
  EXPECT_EQ(hits[1].body, mid);
  EXPECT_EQ(hits[2].body, upper);
  EXPECT_EQ(hits[3].body, lower);
}

// ---- overlaps ---------------------------------------------------------------------------------

TEST_F(QueryWorld, OverlapTouchingExactlyAtTheBoundary) {
  const BodyId box = add(box_shape({1, 1, 1}), {2, 0, 0});               // face at x = 1
  const BodyId ball = add(sphere_shape(0.5f), {-1.5f, 0, 0});            // surface at x = −1
  const BodyId cap = add(capsule_shape(0.5f, 1), {0, 0, 1.5f});          // side at z = 1
  const BodyId ground = add(plane_shape(), {0, -1, 0});                  // y = −1
  const BodyId apart_box = add(box_shape({1, 1, 1}), {0, 0, -2.0001f});  // a gap of 0.1 mm
  const BodyId apart_ball = add(sphere_shape(0.5f), {0, 1.5001f, 0});
  BodyId out[8];
  const QueryResult r = overlap(*world_, sphere_shape(1), Transform{}, {}, out);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 4u);
  EXPECT_EQ(out[0], box);
  EXPECT_EQ(out[1], ball);
  EXPECT_EQ(out[2], cap);
  EXPECT_EQ(out[3], ground);
  for (uint32_t i = 0; i < r.count; ++i) {
    EXPECT_NE(out[i], apart_box);
    EXPECT_NE(out[i], apart_ball);
  }
  // A box query touching the box face to face, and a capsule query touching its end cap.
  QueryResult rb = overlap(*world_, box_shape({0.5f, 0.5f, 0.5f}),
                           Transform{{0.5f, 0.25f, -0.25f}, Quat{}}, {}, out);
  ASSERT_TRUE(rb.ok());
  ASSERT_GE(rb.count, 1u);
  EXPECT_EQ(out[0], box);
  QueryResult rc =
      overlap(*world_, capsule_shape(0.25f, 0.5f), Transform{{2, 1.75f, 0}, Quat{}}, {}, out);
  ASSERT_TRUE(rc.ok());
  ASSERT_EQ(rc.count, 1u);
  EXPECT_EQ(out[0], box);
  // Just beyond: nothing.
  rc = overlap(*world_, capsule_shape(0.25f, 0.5f), Transform{{2, 1.7501f, 0}, Quat{}}, {}, out);
  EXPECT_EQ(rc.count, 0u);
}

TEST_F(QueryWorld, OverlapRotatedAndContained) {
  const float h = std::sqrt(0.5f);
  const BodyId tall = add(box_shape({2, 0.5f, 0.5f}), {0, 0, 0}, Quat{0, 0, h, h});
  const BodyId inner = add(sphere_shape(0.1f), {10, 10, 10});
  BodyId out[4];
  // A sphere near the top of the turned box (y up to 2) overlaps it; beside where the unturned
  // box would have been (x = 1.9) it does not.
  QueryResult r = overlap(*world_, sphere_shape(0.2f), Transform{{0, 2.1f, 0}, Quat{}}, {}, out);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(out[0], tall);
  r = overlap(*world_, sphere_shape(0.2f), Transform{{1.9f, 0, 0}, Quat{}}, {}, out);
  EXPECT_EQ(r.count, 0u);
  // A body entirely inside the query shape, and the query entirely inside a body.
  r = overlap(*world_, box_shape({3, 3, 3}), Transform{{10, 10, 10}, Quat{0, 0, h, h}}, {}, out);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(out[0], inner);
  r = overlap(*world_, capsule_shape(0.1f, 0.2f), Transform{{0, 0, 0}, Quat{}}, {}, out);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(out[0], tall);
}

TEST_F(QueryWorld, OverlapSlotOrderAndOverflow) {
  std::vector<BodyId> ids;
  // Created far slot first? Slots are assigned in creation order; destroy and recreate to get a
  // slot order that differs from the spatial order.
  for (int i = 0; i < 6; ++i)
    ids.push_back(add(sphere_shape(0.4f), {static_cast<float>(5 - i), 0, 0}));
  BodyId out[6];
  QueryResult r = overlap(*world_, box_shape({3, 1, 1}), Transform{{2.5f, 0, 0}, Quat{}}, {}, out);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 6u);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[i], ids[i]);
  BodyId three[3];
  r = overlap(*world_, box_shape({3, 1, 1}), Transform{{2.5f, 0, 0}, Quat{}}, {}, three);
  EXPECT_EQ(r.count, 3u);
  EXPECT_EQ(r.found, 6u);
  EXPECT_TRUE(r.overflow());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(three[i], ids[i]);
}

// ---- sphere casts -----------------------------------------------------------------------------

TEST_F(QueryWorld, SphereCastAgainstBoxFaceEdgeAndCorner) {
  const BodyId b = add(box_shape({1, 1, 1}), {5, 0, 0});
  RayHit hit;
  // Face: the centre stops at x = 3.5, touching (4, 0, 0).
  QueryResult r =
      shape_cast(*world_, sphere_shape(0.5f), Transform{{0, 0, 0}, Quat{}}, {10, 0, 0}, {}, &hit);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(hit.body, b);
  EXPECT_EQ(hit.fraction, 0.35f);
  expect_vec_eq(hit.point, {4, 0, 0});
  expect_vec_eq(hit.normal, {-1, 0, 0});
  // Edge (x = 4, y = 1) passing 0.25 above the top face: (cx − 4)² + 0.25² = 0.5².
  r = shape_cast(*world_, sphere_shape(0.5f), Transform{{0, 1.25f, 0}, Quat{}}, {10, 0, 0}, {},
                 &hit);
  ASSERT_EQ(r.count, 1u);
  const float cx = 4 - std::sqrt(0.1875f);
  EXPECT_NEAR(hit.fraction, cx / 10, 1e-6f);
  expect_vec_near(hit.point, {4, 1, 0}, 1e-6f);
  expect_vec_near(hit.normal, {(cx - 4) / 0.5f, 0.5f, 0}, 1e-6f);
  // Corner (4, 1, 1) along the diagonal through it: the centre stops 0.5 before the corner.
  const float d = std::sqrt(3.0f);
  const Vec3 dir{1 / d, -1 / d, -1 / d};  // towards the corner from outside
  const Vec3 corner{4, 1, 1};
  const Vec3 start = corner - 3.0f * dir;
  r = shape_cast(*world_, sphere_shape(0.5f), Transform{start, Quat{}}, 4.0f * dir, {}, &hit);
  ASSERT_EQ(r.count, 1u);
  EXPECT_NEAR(hit.fraction, 2.5f / 4.0f, 1e-6f);
  expect_vec_near(hit.point, corner, 1e-5f);
  expect_vec_near(hit.normal, -1.0f * dir, 1e-5f);
  // Passing beside the edge by more than the radius: a miss.
  r = shape_cast(*world_, sphere_shape(0.5f), Transform{{0, 1.51f, 0}, Quat{}}, {10, 0, 0}, {},
                 &hit);
  EXPECT_EQ(r.count, 0u);
}

TEST_F(QueryWorld, SphereCastAgainstSphereCapsuleAndPlane) {
  const BodyId s = add(sphere_shape(1), {5, 0, 0});
  const BodyId c = add(capsule_shape(0.5f, 1), {0, 0, 5});
  const BodyId g = add(plane_shape(), {0, -3, 0});
  RayHit hit;
  QueryResult r =
      shape_cast(*world_, sphere_shape(0.5f), Transform{{0, 0, 0}, Quat{}}, {10, 0, 0}, {}, &hit);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(hit.body, s);
  EXPECT_EQ(hit.fraction, 0.35f);
  expect_vec_eq(hit.point, {4, 0, 0});
  expect_vec_eq(hit.normal, {-1, 0, 0});
  r = shape_cast(*world_, sphere_shape(0.25f), Transform{{0, 0.5f, 0}, Quat{}}, {0, 0, 10}, {},
                 &hit);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(hit.body, c);
  EXPECT_EQ(hit.fraction, 0.425f);
  expect_vec_eq(hit.point, {0, 0.5f, 4.5f});
  expect_vec_eq(hit.normal, {0, 0, -1});
  r = shape_cast(*world_, sphere_shape(0.5f), Transform{{20, 1, 20}, Quat{}}, {0, -8, 0}, {}, &hit);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(hit.body, g);
  EXPECT_EQ(hit.fraction, 0.4375f);
  expect_vec_eq(hit.point, {20, -3, 20});
  // Starting overlapped: fraction 0 at the start.
  r = shape_cast(*world_, sphere_shape(0.5f), Transform{{5, 1.4f, 0}, Quat{}}, {0, 5, 0}, {}, &hit);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(hit.body, s);
  EXPECT_EQ(hit.fraction, 0.0f);
  expect_vec_eq(hit.point, {5, 1.4f, 0});
  expect_vec_eq(hit.normal, {0, -1, 0});
}

// ---- filters ----------------------------------------------------------------------------------

TEST_F(QueryWorld, FiltersAndExclusion) {
  const BodyId shooter = add(capsule_shape(0.4f, 0.5f), {0, 0, 0}, Quat{}, BodyType::kinematic);
  const BodyId wall = add(box_shape({0.5f, 2, 2}), {5, 0, 0});
  // From inside the shooter: it is hit at fraction 0 unless excluded.
  RayHit hit = cast({0, 0.5f, 0}, {10, 0, 0});
  EXPECT_EQ(hit.body, shooter);
  EXPECT_EQ(hit.fraction, 0.0f);
  QueryFilter skip_self;
  skip_self.exclude = shooter;
  hit = cast({0, 0.5f, 0}, {10, 0, 0}, skip_self);
  EXPECT_EQ(hit.body, wall);
  EXPECT_EQ(hit.fraction, 0.45f);
  // A stale handle of the same slot excludes nothing.
  QueryFilter stale;
  stale.exclude = BodyId{shooter.index1, shooter.generation + 1};
  hit = cast({0, 0.5f, 0}, {10, 0, 0}, stale);
  EXPECT_EQ(hit.body, shooter);
  // No mask bits, or no category bits: nothing is seen (bodies accept every category by default).
  QueryFilter none;
  none.mask_bits = 0;
  cast({0, 0.5f, 0}, {10, 0, 0}, none);
  EXPECT_EQ(last_.count, 0u);
  QueryFilter no_category;
  no_category.category_bits = 0;
  cast({0, 0.5f, 0}, {10, 0, 0}, no_category);
  EXPECT_EQ(last_.count, 0u);
  // Bodies' own bits (ShapeDef::category, mask), the rule of two shapes touching: the default
  // bodies are category 1, so a query that sees only category 8 sees nothing here...
  QueryFilter some;
  some.category_bits = 1u << 7;
  some.mask_bits = 1u << 3;
  cast({0, 0.5f, 0}, {10, 0, 0}, some);
  EXPECT_EQ(last_.count, 0u);
  // ... until a body of category 8 stands in the way; and a body whose mask leaves out the
  // query's category is not seen by it.
  ShapeDef target = box_shape({0.5f, 2, 2});
  target.category = 1u << 3;
  const BodyId eight = add(target, {3, 0, 0});
  hit = cast({0, 0.5f, 0}, {10, 0, 0}, some);
  EXPECT_EQ(last_.count, 1u);
  EXPECT_EQ(hit.body, eight);
  target.category = 1;
  target.mask = ~(1u << 7);
  const BodyId deaf = add(target, {2, 0, 0});
  hit = cast({0, 0.5f, 0}, {10, 0, 0}, skip_self);
  EXPECT_EQ(hit.body, deaf);  // the default query (category 1) sees it
  QueryFilter seven = skip_self;
  seven.category_bits = 1u << 7;
  hit = cast({0, 0.5f, 0}, {10, 0, 0}, seven);
  EXPECT_EQ(hit.body, eight);  // category 7 is not in its mask: the ray goes on to the next
  ASSERT_EQ(world_->destroy_body(eight), Error::none);
  ASSERT_EQ(world_->destroy_body(deaf), Error::none);
  // The same for every query kind.
  BodyId out[4];
  EXPECT_EQ(overlap(*world_, sphere_shape(1), Transform{}, skip_self, out).count, 0u);
  EXPECT_EQ(overlap(*world_, sphere_shape(1), Transform{}, {}, out).count, 1u);
  RayHit all[4];
  EXPECT_EQ(ray_cast_all(*world_, {-1, 0, 0}, {10, 0, 0}, skip_self, all).count, 1u);
  EXPECT_EQ(ray_cast_all(*world_, {-1, 0, 0}, {10, 0, 0}, none, all).count, 0u);
  EXPECT_EQ(shape_cast(*world_, sphere_shape(0.1f), Transform{}, {10, 0, 0}, skip_self, &hit).count,
            1u);
  EXPECT_EQ(hit.body, wall);
}

// ---- the queries follow the world -------------------------------------------------------------

TEST_F(QueryWorld, QueriesSeeEditsStepsAndRestores) {
  std::vector<uint8_t> snapshot(world_->max_snapshot_size());
  const BodyId a = add(sphere_shape(1), {5, 0, 0}, Quat{}, BodyType::dynamic);
  size_t written = 0;
  ASSERT_EQ(world_->save_snapshot(snapshot, &written), Error::none);
  EXPECT_EQ(cast({0, 0, 0}, {10, 0, 0}).fraction, 0.4f);
  ASSERT_EQ(world_->set_transform(a, {7, 0, 0}, Quat{}), Error::none);
  EXPECT_EQ(cast({0, 0, 0}, {10, 0, 0}).fraction, 0.6f);
  ASSERT_EQ(world_->set_linear_velocity(a, {-60, 0, 0}), Error::none);
  world_->step();  // 1 m per step
  EXPECT_NEAR(cast({0, 0, 0}, {10, 0, 0}).fraction, 0.5f, 1e-5f);
  BodyId b;
  BodyDef def = default_body_def();
  def.position = {2, 0, 0};
  def.shape = sphere_shape(0.5f);
  ASSERT_EQ(world_->create_body(def, &b), Error::none);
  EXPECT_EQ(cast({0, 0, 0}, {10, 0, 0}).body, b);
  ASSERT_EQ(world_->destroy_body(b), Error::none);
  EXPECT_EQ(cast({0, 0, 0}, {10, 0, 0}).body, a);
  ASSERT_EQ(world_->restore_snapshot({snapshot.data(), written}), Error::none);
  EXPECT_EQ(cast({0, 0, 0}, {10, 0, 0}).fraction, 0.4f);
  ASSERT_EQ(world_->destroy_body(a), Error::none);
  cast({0, 0, 0}, {10, 0, 0});
  EXPECT_EQ(last_.count, 0u);
}

// ---- bad input --------------------------------------------------------------------------------

TEST_F(QueryWorld, BadInputIsAnErrorNeverACrash) {
  add(sphere_shape(1), {0, 0, 0});
  RayHit hit;
  RayHit hits[4];
  BodyId out[4];
  const QueryFilter f{};
  const Transform pose{};
  auto ray_error = [&](Vec3 o, Vec3 d) { return ray_cast(*world_, o, d, f, &hit).error; };
  EXPECT_EQ(ray_error({kNaN, 0, 0}, {1, 0, 0}), Error::non_finite);
  EXPECT_EQ(ray_error({0, 0, 0}, {0, kInf, 0}), Error::non_finite);
  EXPECT_EQ(ray_error({0, 0, 0}, {0, 0, 0}), Error::invalid_argument);
  EXPECT_EQ(ray_error({0, 0, 0}, {1e-30f, 0, 0}), Error::invalid_argument);  // squares to 0
  EXPECT_EQ(ray_error({2e6f, 0, 0}, {1, 0, 0}), Error::invalid_argument);
  EXPECT_EQ(ray_error({0, 0, 0}, {3e38f, 0, 0}), Error::invalid_argument);
  EXPECT_EQ(ray_cast(*world_, {0, 0, 0}, {1, 0, 0}, f, nullptr).error, Error::invalid_argument);
  EXPECT_EQ(ray_cast_all(*world_, {0, 0, 0}, {1, 0, 0}, f, std::span<RayHit>{}).error,
            Error::invalid_argument);
  EXPECT_EQ(ray_cast_all(*world_, {kNaN, 0, 0}, {1, 0, 0}, f, hits).error, Error::non_finite);
  EXPECT_EQ(ray_cast_all(*world_, {0, 0, 0}, {0, 0, 0}, f, hits).error, Error::invalid_argument);

  EXPECT_EQ(overlap(*world_, sphere_shape(-1), pose, f, out).error, Error::invalid_argument);
  EXPECT_EQ(overlap(*world_, sphere_shape(0), pose, f, out).error, Error::invalid_argument);
  EXPECT_EQ(overlap(*world_, sphere_shape(kNaN), pose, f, out).error, Error::non_finite);
  EXPECT_EQ(overlap(*world_, box_shape({1, -1, 1}), pose, f, out).error, Error::invalid_argument);
  EXPECT_EQ(overlap(*world_, box_shape({1, kInf, 1}), pose, f, out).error, Error::non_finite);
  EXPECT_EQ(overlap(*world_, capsule_shape(0.5f, -1), pose, f, out).error, Error::invalid_argument);
  EXPECT_EQ(overlap(*world_, plane_shape(), pose, f, out).error, Error::invalid_argument);
  ShapeDef unknown = sphere_shape(1);
  unknown.type = static_cast<ShapeType>(17);
  EXPECT_EQ(overlap(*world_, unknown, pose, f, out).error, Error::invalid_argument);
  EXPECT_EQ(overlap(*world_, sphere_shape(1), Transform{{0, kNaN, 0}, Quat{}}, f, out).error,
            Error::non_finite);
  EXPECT_EQ(overlap(*world_, sphere_shape(1), Transform{{0, 0, 0}, Quat{0, 0, 0, 0}}, f, out).error,
            Error::invalid_argument);
  EXPECT_EQ(
      overlap(*world_, sphere_shape(1), Transform{{0, 0, 0}, Quat{0, kInf, 0, 1}}, f, out).error,
      Error::non_finite);
  EXPECT_EQ(overlap(*world_, sphere_shape(1), pose, f, std::span<BodyId>{}).error,
            Error::invalid_argument);

  EXPECT_EQ(shape_cast(*world_, sphere_shape(-0.5f), pose, {1, 0, 0}, f, &hit).error,
            Error::invalid_argument);
  ShapeDef plane_shape;
  plane_shape.type = ShapeType::plane;
  EXPECT_EQ(shape_cast(*world_, plane_shape, pose, {1, 0, 0}, f, &hit).error,
            Error::invalid_argument);
  ShapeDef no_such_hull;
  no_such_hull.type = ShapeType::hull;
  no_such_hull.hull = 3;
  EXPECT_EQ(shape_cast(*world_, no_such_hull, pose, {1, 0, 0}, f, &hit).error, Error::unknown_hull);
  EXPECT_EQ(shape_cast(*world_, sphere_shape(0.5f), pose, {0, 0, 0}, f, &hit).error,
            Error::invalid_argument);
  EXPECT_EQ(shape_cast(*world_, sphere_shape(0.5f), pose, {kNaN, 0, 0}, f, &hit).error,
            Error::non_finite);
  EXPECT_EQ(shape_cast(*world_, sphere_shape(0.5f), pose, {1, 0, 0}, f, nullptr).error,
            Error::invalid_argument);
  // Nothing was written by a failed call.
  EXPECT_TRUE(hit.body.is_null());
}

// ---- on a settled pile: the tree against every body -------------------------------------------

std::unique_ptr<World> pile_after(uint32_t ticks) {
  Scene scene;
  EXPECT_TRUE(make_builtin_scene("pile", &scene));
  std::unique_ptr<World> world = build_world(scene);
  EXPECT_NE(world, nullptr);
  for (uint32_t t = 0; t < ticks; ++t)
    world->step();
  return world;
}

// Every body tested, for reference: the same exact tests, no tree.
std::vector<RayHit> brute_force_hits(const World& world, Vec3 origin, Vec3 translation,
                                     float radius) {
  const WorldData& w = world_data(world);
  const float len = length(translation);
  const Vec3 dir{translation.x / len, translation.y / len, translation.z / len};
  std::vector<RayHit> hits;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (!r.alive) continue;
    CastHit c;
    if (!cast_against_shape(r.shape, Transform{r.position, r.orientation}, ShapeLibrary{}, origin,
                            dir, len, radius, &c)) {
      continue;
    }
    RayHit h;
    h.body = BodyId{slot + 1, r.generation};
    h.fraction = c.distance / len;
    hits.push_back(h);
  }
  std::stable_sort(hits.begin(), hits.end(),
                   [](const RayHit& a, const RayHit& b) { return a.fraction < b.fraction; });
  return hits;
}

TEST(SimQueryPile, TreeFindsWhatAScanOfEveryBodyFinds) {
  std::unique_ptr<World> world = pile_after(240);
  SplitMix64 rng{0x9e3779b97f4a7c15ull};
  RayHit hits[1100];
  uint64_t total_hits = 0;
  for (int i = 0; i < 400; ++i) {
    // The settled pile is a layer about 2 m deep: rays from above or beside, ending in it.
    const Vec3 a{rng.uniform(-11, 11), rng.uniform(-0.5f, 10), rng.uniform(-11, 11)};
    const Vec3 b{rng.uniform(-11, 11), rng.uniform(-0.5f, 2.5f), rng.uniform(-11, 11)};
    const Vec3 d = b - a;
    const std::vector<RayHit> expected = brute_force_hits(*world, a, d, 0.0f);
    const QueryResult r = ray_cast_all(*world, a, d, {}, hits);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.count, expected.size()) << "ray " << i;
    for (uint32_t k = 0; k < r.count; ++k) {
      EXPECT_EQ(hits[k].body, expected[k].body) << "ray " << i << " hit " << k;
      EXPECT_EQ(hits[k].fraction, expected[k].fraction);
    }
    total_hits += r.count;
    RayHit closest;
    const QueryResult c = ray_cast(*world, a, d, {}, &closest);
    ASSERT_EQ(c.count, expected.empty() ? 0u : 1u);
    if (!expected.empty()) {
      EXPECT_EQ(closest.body, expected[0].body);
      EXPECT_EQ(closest.fraction, expected[0].fraction);
    }
    const float radius = rng.uniform(0.05f, 0.6f);
    const std::vector<RayHit> swept = brute_force_hits(*world, a, d, radius);
    RayHit cast;
    const QueryResult s =
        shape_cast(*world, sphere_shape(radius), Transform{a, Quat{}}, d, {}, &cast);
    ASSERT_EQ(s.count, swept.empty() ? 0u : 1u);
    if (!swept.empty()) {
      EXPECT_EQ(cast.body, swept[0].body);
      EXPECT_EQ(cast.fraction, swept[0].fraction);
    }
  }
  EXPECT_GT(total_hits, 1000u);  // the rays do cross the pile

  // Overlaps against the same exact test on every body.
  const WorldData& w = world_data(*world);
  BodyId out[1100];
  for (int i = 0; i < 200; ++i) {
    const ShapeDef shapes[3] = {
        sphere_shape(rng.uniform(0.1f, 2)),
        box_shape({rng.uniform(0.1f, 2), rng.uniform(0.1f, 2), rng.uniform(0.1f, 2)}),
        capsule_shape(rng.uniform(0.1f, 1), rng.uniform(0, 2))};
    const ShapeDef& shape = shapes[i % 3];
    const Transform pose{{rng.uniform(-9, 9), rng.uniform(-1, 12), rng.uniform(-9, 9)},
                         rng.orientation()};
    std::vector<BodyId> expected;
    for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
      const BodyRecord& r = w.bodies[slot];
      if (!r.alive) continue;
      if (shapes_overlap(shape, Transform{pose.p, normalize(pose.q)}, r.shape,
                         Transform{r.position, r.orientation}, ShapeLibrary{})) {
        expected.push_back(BodyId{slot + 1, r.generation});
      }
    }
    const QueryResult r = overlap(*world, shape, pose, {}, out);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.count, expected.size()) << "overlap " << i;
    for (uint32_t k = 0; k < r.count; ++k)
      EXPECT_EQ(out[k], expected[k]);
  }
}

// The overlap test against the narrowphase: wherever collide() finds the shapes 0.1 mm deep in
// each other they overlap, and wherever it finds nothing within 0.1 mm they do not (between
// the two the answers may differ by rounding). Random poses, every pair of shape types.
TEST(SimQueryOverlapTest, AgreesWithTheNarrowphase) {
  SplitMix64 rng{0x0dd5eedull};
  const ShapeType types[4] = {ShapeType::sphere, ShapeType::capsule, ShapeType::box,
                              ShapeType::plane};
  int overlapping = 0, apart = 0;
  for (int i = 0; i < 20000; ++i) {
    ShapeDef s[2];
    Transform x[2];
    for (int k = 0; k < 2; ++k) {
      const ShapeType type = types[rng.below(k == 0 ? 3 : 4)];
      s[k] = type == ShapeType::sphere ? sphere_shape(rng.uniform(0.1f, 1))
             : type == ShapeType::capsule
                 ? capsule_shape(rng.uniform(0.1f, 0.8f), rng.uniform(0, 1))
             : type == ShapeType::box
                 ? box_shape({rng.uniform(0.1f, 1), rng.uniform(0.1f, 1), rng.uniform(0.1f, 1)})
                 : plane_shape();
      x[k] =
          Transform{{rng.uniform(-1.5f, 1.5f), rng.uniform(-1.5f, 1.5f), rng.uniform(-1.5f, 1.5f)},
                    rng.orientation()};
    }
    const bool answer = shapes_overlap(s[0], x[0], s[1], x[1], ShapeLibrary{});
    EXPECT_EQ(answer, shapes_overlap(s[1], x[1], s[0], x[0], ShapeLibrary{}));
    Manifold m;
    collide(s[0], x[0], s[1], x[1], lockstep::sim::ShapeLibrary{}, 1.0e-4f, &m);
    if (m.count == 0) {
      EXPECT_FALSE(answer) << "pair " << i;
      ++apart;
      continue;
    }
    float deepest = m.points[0].separation;
    for (int k = 1; k < m.count; ++k)
      deepest = m.points[k].separation < deepest ? m.points[k].separation : deepest;
    if (deepest <= -1.0e-4f) {
      EXPECT_TRUE(answer) << "pair " << i << " depth " << deepest;
      ++overlapping;
    }
  }
  EXPECT_GT(overlapping, 2000);
  EXPECT_GT(apart, 2000);
}

TEST(SimQueryPile, QueriesNeverAllocate) {
  std::unique_ptr<World> world = pile_after(30);
  std::vector<BodyId> ids(world->body_count());
  ASSERT_EQ(world->list_bodies(ids), ids.size());
  const BodyId lifted = ids[5];  // the first dynamic body
  RayHit hits[64];
  BodyId bodies[64];
  uint64_t allocations = 0;
  uint32_t seen = 0;
  {
    lockstep::testing::AllocationCounter counter;
    for (int tick = 0; tick < 30; ++tick) {
      world->step();  // every tick the first query rebuilds the tree
      for (int k = -8; k <= 8; ++k) {
        const float x = static_cast<float>(k);
        RayHit hit;
        seen += ray_cast(*world, {x, 20, 0}, {0, -21, 0}, {}, &hit).count;
        seen += ray_cast_all(*world, {-12, 1, x}, {24, 0, 0}, {}, hits).count;
        seen +=
            overlap(*world, box_shape({1, 1, 1}), Transform{{x, 1, x}, Quat{}}, {}, bodies).count;
        seen += shape_cast(*world, sphere_shape(0.3f), Transform{{x, 20, x}, Quat{}}, {0, -21, 0},
                           {}, &hit)
                    .count;
      }
      // An edit between steps: the next query rebuilds.
      ASSERT_EQ(world->set_transform(lifted, {0, 30, 0}, Quat{}), Error::none);
      RayHit hit;
      seen += ray_cast(*world, {0, 40, 0}, {0, -20, 0}, {}, &hit).count;
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_GT(seen, 100u);
}

// ---- the query golden -------------------------------------------------------------------------

// tests/golden/pile_queries.txt is the hash chain lockstep-sim prints for its `# args:` line,
// with `600 queries HASH`, the query_probe_hash of pile at tick 600. The golden_hashes test and
// the determinism matrix run lockstep-sim against it on every platform; this test checks the
// library directly, and says whether the physics or the queries moved when it fails.
TEST(SimQueryGolden, PileAtTick600MatchesTheGoldenFile) {
  std::ifstream file(std::string(LOCKSTEP_GOLDEN_DIR) + "/pile_queries.txt");
  ASSERT_TRUE(file) << "no tests/golden/pile_queries.txt";
  std::string line;
  uint64_t state = 0, queries = 0;
  bool have_state = false, have_queries = false;
  while (std::getline(file, line)) {
    unsigned long long value = 0;
    if (std::sscanf(line.c_str(), "600 queries %llx", &value) == 1) {
      queries = value;
      have_queries = true;
    } else if (std::sscanf(line.c_str(), "600 %llx", &value) == 1) {
      state = value;
      have_state = true;
    }
  }
  ASSERT_TRUE(have_state && have_queries) << "pile_queries.txt lacks the tick 600 lines";
  std::unique_ptr<World> world = pile_after(600);
  ASSERT_EQ(world->state_hash(), state)
      << "pile's state at tick 600 moved (physics changed): regenerate the goldens";
  EXPECT_EQ(query_probe_hash(*world), queries) << "same state, different query results";
}

// "What is inside this sensor now": the overlaps the last step left, in slot order, asleep
// bodies included; a body that leaves is gone after the step that ended its overlap.
TEST(BodiesInSensor, ListsTheBodiesInsideNowInSlotOrder) {
  std::unique_ptr<World> world = World::create(default_world_def());
  ASSERT_NE(world, nullptr);
  BodyDef floor = default_body_def();
  floor.type = BodyType::static_body;
  floor.shape = box_shape({20, 0.5f, 20});
  floor.position = {0, -0.5f, 0};
  BodyId floor_id{};
  ASSERT_EQ(world->create_body(floor, &floor_id), Error::none);
  BodyDef ball = default_body_def();
  ball.position = {0.5f, 0.5f, 0};
  BodyId low{}, outside{}, high{};
  ASSERT_EQ(world->create_body(ball, &low), Error::none);
  ball.position = {8, 0.5f, 0};
  ASSERT_EQ(world->create_body(ball, &outside), Error::none);
  BodyDef zone = default_body_def();
  zone.type = BodyType::static_body;
  zone.shape = box_shape({2, 1, 2});
  zone.shape.sensor = true;
  zone.position = {0, 1, 0};
  BodyId sensor{};
  ASSERT_EQ(world->create_body(zone, &sensor), Error::none);
  ball.position = {-0.5f, 0.5f, 0.5f};
  ASSERT_EQ(world->create_body(ball, &high), Error::none);

  std::array<BodyId, 4> inside{};
  QueryResult r = bodies_in_sensor(*world, sensor, inside);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.count, 0u);  // no step yet: no overlaps found
  for (int i = 0; i < 60; ++i)
    world->step();  // they settle and fall asleep: still inside
  r = bodies_in_sensor(*world, sensor, inside);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.count, 2u);
  EXPECT_EQ(inside[0], low);  // slot order: below the sensor's slot, then above it
  EXPECT_EQ(inside[1], high);
  std::array<BodyId, 1> one{};
  r = bodies_in_sensor(*world, sensor, one);
  EXPECT_EQ(r.count, 1u);
  EXPECT_EQ(r.found, 2u);
  EXPECT_TRUE(r.overflow());
  EXPECT_EQ(one[0], low);

  ASSERT_EQ(world->set_transform(low, {8, 3, 5}, Quat{}), Error::none);
  world->step();
  r = bodies_in_sensor(*world, sensor, inside);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(inside[0], high);

  EXPECT_EQ(bodies_in_sensor(*world, floor_id, inside).error, Error::wrong_body_type);
  EXPECT_EQ(bodies_in_sensor(*world, BodyId{}, inside).error, Error::null_handle);
  EXPECT_EQ(bodies_in_sensor(*world, BodyId{30, 7}, inside).error, Error::stale_handle);
  EXPECT_EQ(bodies_in_sensor(*world, sensor, std::span<BodyId>{}).error, Error::invalid_argument);
}

}  // namespace
}  // namespace lockstep::sim
