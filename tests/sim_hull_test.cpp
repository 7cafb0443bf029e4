// Convex hulls: the builder (topology, mass properties against independent sums, refusals), the
// narrowphase with every other shape, the scene text, and physics scenes with stated bounds
// (a box given as a hull against the box, a pyramid on its apex, a tetrahedron on an incline).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collide.h"
#include "hull.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "shape.h"
#include "test_shapes.h"

namespace {

using namespace lockstep::sim;
using lockstep::testing::box_shape;
using lockstep::testing::capsule_shape;
using lockstep::testing::sphere_shape;

HullDef hull_of(const std::vector<Vec3>& points) {
  HullDef h;
  h.point_count = static_cast<uint32_t>(points.size());
  for (size_t i = 0; i < points.size() && i < kMaxHullPoints; ++i)
    h.points[i] = points[i];
  return h;
}

std::vector<Vec3> box_points(Vec3 h) {
  std::vector<Vec3> p;
  for (int i = 0; i < 8; ++i)
    p.push_back({(i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z});
  return p;
}

// ---- the builder -------------------------------------------------------------------------------

TEST(HullBuild, BoxHasEightCornersSixQuadsTwelveEdgesAndTheBoxInertia) {
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of(box_points({0.5f, 1.0f, 1.5f})), &g), Error::none);
  EXPECT_EQ(g.vertex_count, 8u);
  EXPECT_EQ(g.face_count, 6u);
  EXPECT_EQ(g.edge_count, 12u);
  for (uint32_t f = 0; f < g.face_count; ++f)
    EXPECT_EQ(g.face_size[f], 4u);
  EXPECT_NEAR(g.volume, 6.0f, 1e-5f);
  // m/12·(b² + c²) per axis with full sizes 1, 2, 3 and m = 6 (unit density).
  const float m = 6.0f;
  Vec3 expect{m / 12 * (4 + 9), m / 12 * (1 + 9), m / 12 * (1 + 4)};
  // The principal frame of a box is its own (the builder keeps the identity when the tensor is
  // diagonal), so the eigenvalues come in axis order.
  EXPECT_NEAR(g.principal_inertia.x, expect.x, 1e-4f * expect.x);
  EXPECT_NEAR(g.principal_inertia.y, expect.y, 1e-4f * expect.y);
  EXPECT_NEAR(g.principal_inertia.z, expect.z, 1e-4f * expect.z);
  EXPECT_EQ(g.principal_frame.w, 1.0f);
  EXPECT_NEAR(length(g.centre_of_mass), 0.0f, 1e-6f);
  EXPECT_NEAR(g.radius, std::sqrt(0.25f + 1.0f + 2.25f), 1e-6f);
}

TEST(HullBuild, InteriorEdgeFaceAndNearDuplicatePointsAreNotVertices) {
  std::vector<Vec3> p = box_points({1, 1, 1});
  p.push_back({0, 0, 0});            // inside
  p.push_back({0, 1, 0});            // a face's centre
  p.push_back({1, 1, 0});            // an edge's midpoint
  p.push_back({1, 1, 1.0005f});      // within the weld distance of a corner
  p.push_back({0.2f, -0.3f, 0.1f});  // inside
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of(p), &g), Error::none);
  EXPECT_EQ(g.vertex_count, 8u);
  EXPECT_EQ(g.face_count, 6u);
  EXPECT_EQ(g.edge_count, 12u);
}

TEST(HullBuild, TetrahedronMassPropertiesMatchASampledIntegral) {
  // The corner tetrahedron of the unit cube, shifted: volume 1/6, centre of mass at a quarter.
  const Vec3 o{2, -1, 3};
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of({o, o + Vec3{1, 0, 0}, o + Vec3{0, 1, 0}, o + Vec3{0, 0, 1}}), &g),
            Error::none);
  EXPECT_EQ(g.vertex_count, 4u);
  EXPECT_EQ(g.face_count, 4u);
  EXPECT_EQ(g.edge_count, 6u);
  EXPECT_NEAR(g.volume, 1.0f / 6.0f, 1e-6f);
  EXPECT_NEAR(g.centre_of_mass.x, o.x + 0.25f, 1e-5f);
  EXPECT_NEAR(g.centre_of_mass.y, o.y + 0.25f, 1e-5f);
  EXPECT_NEAR(g.centre_of_mass.z, o.z + 0.25f, 1e-5f);
  // The inertia tensor about the centre of mass by a midpoint sum over a 160³ grid (double), its
  // trace and determinant against the builder's eigenvalues (both are invariant under the
  // rotation to the principal frame).
  const int n = 160;
  double s[3][3] = {};
  double vol = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) {
        const double x = (i + 0.5) / n, y = (j + 0.5) / n, z = (k + 0.5) / n;
        if (x + y + z > 1.0) continue;
        const double r[3] = {x - 0.25, y - 0.25, z - 0.25};
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            s[a][b] += r[a] * r[b];
        vol += 1;
      }
    }
  }
  const double cell = 1.0 / (double(n) * n * n);
  double inertia[3][3];
  const double tr = (s[0][0] + s[1][1] + s[2][2]) * cell;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      inertia[a][b] = (a == b ? tr : 0.0) - s[a][b] * cell;
  const double trace = inertia[0][0] + inertia[1][1] + inertia[2][2];
  const double det =
      inertia[0][0] * (inertia[1][1] * inertia[2][2] - inertia[1][2] * inertia[2][1]) -
      inertia[0][1] * (inertia[1][0] * inertia[2][2] - inertia[1][2] * inertia[2][0]) +
      inertia[0][2] * (inertia[1][0] * inertia[2][1] - inertia[1][1] * inertia[2][0]);
  const Vec3 e = g.principal_inertia;
  EXPECT_NEAR(vol * cell, 1.0 / 6.0, 0.01 / 6.0);
  EXPECT_NEAR(double(e.x) + e.y + e.z, trace, 0.02 * trace);
  EXPECT_NEAR(double(e.x) * e.y * e.z, det, 0.05 * det);
  // The principal frame diagonalizes the builder's tensor: I = R·diag(e)·Rᵀ has the tetrahedron's
  // symmetry (equal diagonal entries; equal off-diagonal ones).
  const Mat3 r = to_mat3(g.principal_frame);
  const Mat3 full = rotate_diagonal(r, e);
  EXPECT_NEAR(full.c0.x, inertia[0][0], 0.02 * inertia[0][0]);
  EXPECT_NEAR(full.c1.y, inertia[1][1], 0.02 * inertia[1][1]);
  EXPECT_NEAR(full.c1.x, inertia[0][1], 0.05 * std::fabs(inertia[0][1]));
}

TEST(HullBuild, RefusesDegeneratePointSets) {
  HullGeometry g;
  EXPECT_EQ(build_hull(hull_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}), &g), Error::degenerate_hull);
  // Coplanar.
  EXPECT_EQ(build_hull(hull_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {2, 3, 0}}), &g),
            Error::degenerate_hull);
  // Collinear, and four copies of one point.
  EXPECT_EQ(build_hull(hull_of({{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}}), &g),
            Error::degenerate_hull);
  EXPECT_EQ(build_hull(hull_of({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}), &g),
            Error::degenerate_hull);
  std::vector<Vec3> p = box_points({1, 1, 1});
  p[3].y = std::nanf("");
  EXPECT_EQ(build_hull(hull_of(p), &g), Error::non_finite);
  HullDef too_many = hull_of(box_points({1, 1, 1}));
  too_many.point_count = kMaxHullPoints + 1;
  EXPECT_EQ(build_hull(too_many, &g), Error::invalid_argument);
}

TEST(HullBuild, SixtyFourPointsOnASphereGiveAClosedHullWithinTheirBall) {
  // A Fibonacci sphere with rational steps (no trig): every point is a vertex.
  std::vector<Vec3> p;
  for (int i = 0; i < 64; ++i) {
    const float y = 1.0f - (2.0f * static_cast<float>(i) + 1.0f) / 64.0f;
    const float r = std::sqrt(1.0f - y * y);
    const float a = 2.39996323f * static_cast<float>(i);
    p.push_back({r * std::cos(a), y, r * std::sin(a)});
  }
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of(p), &g), Error::none);
  EXPECT_EQ(g.vertex_count, 64u);
  EXPECT_EQ(g.vertex_count + g.face_count, g.edge_count + 2);
  // Inside the unit ball, and most of it: 4/3·π = 4.19.
  EXPECT_GT(g.volume, 3.8f);
  EXPECT_LT(g.volume, 4.19f);
  // Every vertex is on or inside every face plane.
  for (uint32_t f = 0; f < g.face_count; ++f)
    for (uint32_t v = 0; v < g.vertex_count; ++v)
      EXPECT_LE(dot(g.face_normals[f], g.vertices[v]) - g.face_offsets[f], 1e-4f);
}

// ---- the narrowphase
// -----------------------------------------------------------------------------

struct HullFixture {
  std::vector<HullGeometry> hulls;
  ShapeLibrary library() const { return {hulls.data(), static_cast<uint32_t>(hulls.size())}; }
  ShapeDef add(const std::vector<Vec3>& points) {
    HullGeometry g;
    EXPECT_EQ(build_hull(hull_of(points), &g), Error::none);
    hulls.push_back(g);
    ShapeDef s;
    s.type = ShapeType::hull;
    s.hull = static_cast<uint32_t>(hulls.size() - 1);
    return s;
  }
};

TEST(HullCollide, HullBoxOnABoxMatchesBoxOnBox) {
  HullFixture fx;
  const ShapeDef hull = fx.add(box_points({0.5f, 0.5f, 0.5f}));
  const ShapeDef box = box_shape({0.5f, 0.5f, 0.5f});
  const ShapeDef ground = box_shape({5, 0.5f, 5});
  const Transform xg{{0, -0.5f, 0}, {}};
  for (float gap : {-0.01f, 0.0f, 0.005f}) {
    const Transform x{{0.1f, 0.5f + gap, -0.2f}, {}};
    Manifold mh, mb;
    collide(hull, x, ground, xg, fx.library(), 0.02f, &mh);
    collide(box, x, ground, xg, fx.library(), 0.02f, &mb);
    ASSERT_EQ(mh.count, 4) << gap;
    ASSERT_EQ(mb.count, 4);
    EXPECT_NEAR(mh.normal.y, 1.0f, 1e-6f);
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(mh.points[k].separation, gap, 1e-5f);
  }
  // Apart beyond the margin: nothing.
  Manifold m;
  collide(hull, Transform{{0, 0.55f, 0}, {}}, ground, xg, fx.library(), 0.02f, &m);
  EXPECT_EQ(m.count, 0);
}

TEST(HullCollide, EveryShapeAgainstAHullFindsTheGapAlongTheRightNormal) {
  HullFixture fx;
  const ShapeDef hull = fx.add(box_points({1, 1, 1}));
  const Transform xh{{0, 0, 0}, {}};
  ShapeDef sphere;
  sphere.type = ShapeType::sphere;
  sphere.radius = 0.5f;
  Manifold m;
  // Sphere above the top face, 0.01 apart.
  collide(sphere, Transform{{0.3f, 1.51f, 0.2f}, {}}, hull, xh, fx.library(), 0.02f, &m);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.01f, 1e-5f);
  EXPECT_NEAR(m.normal.y, 1.0f, 1e-6f);
  // Sphere off a corner: the normal points from the corner to the centre.
  const Vec3 c{1.3f, 1.3f, 1.3f};
  collide(sphere, Transform{c, {}}, hull, xh, fx.library(), 0.1f, &m);
  ASSERT_EQ(m.count, 1);
  const float d = length(c - Vec3{1, 1, 1});
  EXPECT_NEAR(m.points[0].separation, d - 0.5f, 1e-5f);
  EXPECT_NEAR(m.normal.x, 1.0f / std::sqrt(3.0f), 1e-5f);
  // Capsule lying on the top face: two points.
  ShapeDef capsule;
  capsule.type = ShapeType::capsule;
  capsule.radius = 0.25f;
  capsule.half_height = 0.5f;
  const Quat lying{0, 0, 0.70710678f, 0.70710678f};  // y axis to −x
  collide(capsule, Transform{{0, 1.25f, 0}, lying}, hull, xh, fx.library(), 0.02f, &m);
  ASSERT_EQ(m.count, 2);
  for (int k = 0; k < 2; ++k)
    EXPECT_NEAR(m.points[k].separation, 0.0f, 1e-5f);
  EXPECT_NEAR(m.normal.y, 1.0f, 1e-6f);
  // Plane under a tilted hull: its lowest corners.
  ShapeDef plane;
  plane.type = ShapeType::plane;
  collide(hull, Transform{{0, 1.0f, 0}, {}}, plane, Transform{}, fx.library(), 0.02f, &m);
  ASSERT_EQ(m.count, 4);
  EXPECT_NEAR(m.points[0].separation, 0.0f, 1e-6f);
  // Hull on hull, an edge across an edge (one turned 45° about x, the other about z).
  const float s = 0.38268343f, w = 0.92387953f;  // 45°: half angle 22.5°
  const Quat about_x{s, 0, 0, w}, about_z{0, 0, s, w};
  const float reach = std::sqrt(2.0f);
  collide(hull, Transform{{0, reach, 0}, about_x}, hull, Transform{{0, -reach - 0.01f, 0}, about_z},
          fx.library(), 0.02f, &m);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.01f, 1e-4f);
  EXPECT_NEAR(m.normal.y, 1.0f, 1e-4f);
}

// A round shape beside a hull touches exactly while its gap is within the margin, whichever
// feature it faces: the face-plane early out (a near miss is refused before the exact test)
// must not refuse a contact the exact test would make, nor let a miss through. Gaps are stepped
// across the margin in 0.1 mm steps, in front of a face, an edge and a corner of a unit cube,
// near the origin and 300 m from it, where a float's spacing is 30 µm.
TEST(HullCollide, RoundShapesTouchAHullExactlyUpToTheMargin) {
  HullFixture fx;
  const ShapeDef hull = fx.add(box_points({1, 1, 1}));
  const ShapeDef sphere = sphere_shape(0.5f);
  const ShapeDef capsule = capsule_shape(0.25f, 0.5f);
  const float margin = 0.02f;
  const float r3 = 1.0f / std::sqrt(3.0f), r2 = 1.0f / std::sqrt(2.0f);
  // From the hull's surface point outwards (unit): face, edge, corner.
  const Vec3 out_dirs[3] = {{0, 1, 0}, {r2, r2, 0}, {r3, r3, r3}};
  const Vec3 surface[3] = {{0.2f, 1, -0.1f}, {1, 1, 0.3f}, {1, 1, 1}};
  // A capsule lying along z (its axis turned from y): its side faces every one of those.
  const Quat along_z{0.70710678f, 0, 0, 0.70710678f};
  for (const Vec3 origin : {Vec3{0, 0, 0}, Vec3{300, -40, 250}}) {
    const Transform xh{origin, {}};
    for (int f = 0; f < 3; ++f) {
      for (int shape = 0; shape < 2; ++shape) {
        const ShapeDef& round = shape == 0 ? sphere : capsule;
        // The capsule's segment runs along z; facing the corner its nearest point is its end.
        const Vec3 along = shape == 1 && f == 2 ? Vec3{0, 0, capsule.half_height} : Vec3{};
        for (int step = -30; step <= 60; ++step) {
          const float gap = margin + 1.0e-4f * static_cast<float>(step);
          const Vec3 centre = origin + surface[f] + out_dirs[f] * (round.radius + gap) + along;
          Manifold m;
          collide(round, Transform{centre, shape == 0 ? Quat{} : along_z}, hull, xh, fx.library(),
                  margin, &m);
          // Within 0.1 mm of the margin, rounding at 300 m may go either way.
          if (step >= -1 && step <= 1) continue;
          EXPECT_EQ(m.count > 0, step < 0)
              << "feature " << f << " shape " << shape << " gap " << gap << " at " << origin.x;
        }
      }
    }
  }
}

// ---- the scene text
// ------------------------------------------------------------------------------

// Two manifolds with the same bits: count, normal and every point.
bool same_manifold(const Manifold& x, const Manifold& y) {
  if (x.count != y.count) return false;
  if (std::memcmp(&x.normal, &y.normal, sizeof(Vec3)) != 0) return false;
  for (int k = 0; k < x.count; ++k) {
    if (std::memcmp(&x.points[k], &y.points[k], sizeof(ManifoldPoint)) != 0) return false;
  }
  return true;
}

// A separation hint (collide.h) changes how a near miss is found, never what is found: for
// random poses of every shape against hulls and boxes, a call given the hint of a call at another
// pose (or a made-up code) returns the same manifold, bit for bit, as a call given none. And a pair
// that moves only a little is found apart by its hint alone in most cases: the returned code is the
// one given.
TEST(HullCollide, SeparationHintsNeverChangeWhatIsFound) {
  HullFixture fx;
  const ShapeDef pyramid = fx.add({{0, 1, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 0, 1}, {0, 0, -1}});
  std::vector<Vec3> ball;
  for (int i = 0; i < 24; ++i) {
    const float z = -1.0f + (2.0f * i + 1.0f) / 24.0f, r = std::sqrt(1.0f - z * z);
    const float a = 2.39996323f * static_cast<float>(i);  // the golden angle
    ball.push_back({r * std::cos(a), z, r * std::sin(a)});
  }
  const ShapeDef round_hull = fx.add(ball);
  const ShapeDef sphere = sphere_shape(0.5f);
  const ShapeDef capsule = capsule_shape(0.3f, 0.6f);
  const ShapeDef box = box_shape({0.5f, 0.75f, 1.0f});
  const ShapeDef shapes[] = {pyramid, round_hull, sphere, capsule, box};
  const ShapeDef others[] = {pyramid, round_hull, box_shape({0.3f, 0.4f, 0.9f})};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto random_pose = [&](float spread) {
    Quat q{unit(rng), unit(rng), unit(rng), unit(rng)};
    q = normalize(q);
    return Transform{{spread * unit(rng), spread * unit(rng), spread * unit(rng)}, q};
  };
  const float margin = 0.05f;
  int pairs = 0, apart = 0, kept = 0, hinted_apart = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const ShapeDef& a = shapes[trial % 5];
    const ShapeDef& b = others[(trial / 5) % 3];  // on B's side, or on A's (swapped)
    const bool swap = (trial / 15) % 2 == 1;
    const ShapeDef& first = swap ? b : a;
    const ShapeDef& second = swap ? a : b;
    const Transform x0 = random_pose(1.6f), y0 = random_pose(0.2f);
    // The same pair a little later (a few mm and a degree), or anywhere.
    Transform x1 = x0;
    if (trial % 3 == 0) {
      x1 = random_pose(1.6f);
    } else {
      x1.p = x1.p + Vec3{0.003f * unit(rng), 0.003f * unit(rng), 0.003f * unit(rng)};
      x1.q = normalize(x1.q * Quat{0.009f * unit(rng), 0.009f * unit(rng), 0.0f, 1.0f});
    }
    Manifold m0;
    uint32_t hint0 = 0;
    collide(first, x0, second, y0, fx.library(), margin, &m0, &hint0);
    if (m0.count == 0) ++apart;
    if (hint0 != 0) ++hinted_apart;
    Manifold plain, with_hint, with_junk;
    collide(first, x1, second, y0, fx.library(), margin, &plain);
    uint32_t hint1 = hint0;
    collide(first, x1, second, y0, fx.library(), margin, &with_hint, &hint1);
    uint32_t junk = static_cast<uint32_t>(rng());
    collide(first, x1, second, y0, fx.library(), margin, &with_junk, &junk);
    ASSERT_TRUE(same_manifold(plain, with_hint)) << "trial " << trial << " hint " << hint0;
    ASSERT_TRUE(same_manifold(plain, with_junk)) << "trial " << trial << " junk hint";
    if (plain.count > 0) {
      EXPECT_EQ(hint1, 0u) << "trial " << trial;  // a hint names only a pair found apart
    }
    if (hint0 != 0 && trial % 3 != 0 && hint1 == hint0) ++kept;
    ++pairs;
  }
  // Most pairs are near misses, most near misses get a hint, and after a small move most keep it.
  EXPECT_GT(apart, pairs / 3) << apart << " of " << pairs;
  EXPECT_GT(hinted_apart, apart / 2) << hinted_apart << " of " << apart;
  EXPECT_GT(kept, hinted_apart / 2) << kept << " of " << hinted_apart;
}

// Where a hint matters most: at the margin itself. Box–box tests a hinted axis with the scalar
// formula while its full test runs the axes in vector lanes (on x86), and hull pairs test one
// face where the full test loops over all; the two must agree to the last bit exactly where the
// gap crosses the margin. For random turned pairs, the distance at which the pair starts to touch
// is bisected to a float, and at every float within 16 steps of it a call given the hint of the
// pair just beyond returns the same manifold as a call given none.
TEST(HullCollide, SeparationHintsAgreeAtTheMarginToTheLastBit) {
  HullFixture fx;
  const ShapeDef pyramid = fx.add({{0, 1, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 0, 1}, {0, 0, -1}});
  const ShapeDef box_a = box_shape({0.5f, 0.75f, 1.0f}), box_b = box_shape({0.3f, 0.4f, 0.9f});
  const ShapeDef pairs[][2] = {{box_a, box_b},
                               {box_a, pyramid},
                               {pyramid, pyramid},
                               {sphere_shape(0.5f), pyramid},
                               {capsule_shape(0.3f, 0.6f), pyramid}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float margin = 0.02f;
  int boundaries = 0, hinted = 0, hinted_box_box = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const ShapeDef& a = pairs[trial % 5][0];
    const ShapeDef& b = pairs[trial % 5][1];
    const Transform xa{{0, 0, 0}, normalize(Quat{unit(rng), unit(rng), unit(rng), unit(rng)})};
    const Quat qb = normalize(Quat{unit(rng), unit(rng), unit(rng), unit(rng)});
    const Vec3 dir = normalize_or(Vec3{unit(rng), unit(rng), unit(rng)}, Vec3{0, 1, 0});
    auto at = [&](float s) { return Transform{dir * s, qb}; };
    auto touches = [&](float s) {
      Manifold m;
      collide(a, xa, b, at(s), fx.library(), margin, &m);
      return m.count > 0;
    };
    float near = 0.0f, far = 6.0f;
    if (!touches(near) || touches(far)) continue;
    while (std::nextafter(near, far) < far) {
      const float mid = 0.5f * (near + far);
      if (mid <= near || mid >= far) break;
      (touches(mid) ? near : far) = mid;
    }
    ++boundaries;
    Manifold m;
    uint32_t hint = 0;
    collide(a, xa, b, at(std::nextafter(far, 10.0f)), fx.library(), margin, &m, &hint);
    if (hint == 0) continue;
    ++hinted;
    if (trial % 5 == 0) ++hinted_box_box;
    float s = near;
    for (int k = 0; k < 16; ++k)
      s = std::nextafter(s, 0.0f);
    for (int k = 0; k < 34; ++k, s = std::nextafter(s, 10.0f)) {
      Manifold plain, with_hint;
      collide(a, xa, b, at(s), fx.library(), margin, &plain);
      uint32_t h = hint;
      collide(a, xa, b, at(s), fx.library(), margin, &with_hint, &h);
      ASSERT_TRUE(same_manifold(plain, with_hint))
          << "trial " << trial << " at " << s << " (boundary " << near << ", hint " << hint << ")";
    }
  }
  // Every pair has a boundary. Past it, the box pairs are mostly held apart by an axis (a hint);
  // a round shape has none there (its face early out keeps a millimetre of slack), and a hull
  // pair often not (an edge pair of the hulls is not hinted).
  EXPECT_EQ(boundaries, 1500);
  EXPECT_GT(hinted_box_box, 200) << hinted_box_box << " of 300";
  EXPECT_GT(hinted, boundaries / 4) << hinted << " of " << boundaries;
}

TEST(HullScene, PointsParseShareOneHullAndRoundTrip) {
  const std::string text =
      "scene version=1\n"
      "body type=static shape=plane normal=0,1,0 pos=0,0,0 rot=0,0,0,1\n"
      "body type=dynamic shape=hull points=0,0,0,1,0,0,0,1,0,0,0,1 pos=0,1,0 rot=0,0,0,1\n"
      "body type=dynamic shape=hull points=0,0,0,1,0,0,0,1,0,0,0,1 pos=2,1,0 rot=0,0,0,1\n"
      "template name=pyramid type=dynamic shape=hull points=-1,0,-1,1,0,-1,1,0,1,-1,0,1,0,1,0\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  EXPECT_EQ(scene.def.hull_count, 2u);
  EXPECT_EQ(scene.bodies[1].shape.hull, 0u);
  EXPECT_EQ(scene.bodies[2].shape.hull, 0u);
  EXPECT_EQ(scene.def.templates[0].shape.hull, 1u);
  Scene again;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &again, &error)) << error;
  EXPECT_EQ(format_scene_text(again), format_scene_text(scene));
  auto world = build_world(scene);
  ASSERT_NE(world, nullptr);
  for (int i = 0; i < 120; ++i)
    world->step();
  BodyView v;
  ASSERT_EQ(world->get_body(BodyId{2, 0}, &v), Error::none);
  EXPECT_GT(v.position.y, 0.0f);
  EXPECT_LT(v.position.y, 1.0f);
}

TEST(HullScene, BadPointsAreRefusedWithLineColumnAndReason) {
  struct Case {
    const char* line;
    const char* expect;
  } cases[] = {
      {"body type=dynamic shape=hull points=0,0,0,1,0,0,0,1,0 pos=0,1,0 rot=0,0,0,1", "at least 4"},
      {"body type=dynamic shape=hull points=0,0,0,1,0,0,0,1,0,2,2,0 pos=0,1,0 rot=0,0,0,1",
       "coplanar"},
      {"body type=dynamic shape=hull points=0,0,0,1,0,0,0,1 pos=0,1,0 rot=0,0,0,1",
       "multiple of 3"},
      {"body type=dynamic shape=hull points=0,0,0,1,0,0,0,1,0,0,0,nan pos=0,1,0 rot=0,0,0,1",
       "not a finite number"},
      {"body type=dynamic shape=hull pos=0,1,0 rot=0,0,0,1", "missing key 'points'"},
      {"body type=dynamic shape=sphere radius=1 points=0,0,0,1,0,0,0,1,0,0,0,1 pos=0,1,0 "
       "rot=0,0,0,1",
       "does not apply"},
  };
  for (const Case& c : cases) {
    Scene scene;
    std::string error;
    EXPECT_FALSE(parse_scene_text(std::string("scene version=1\n") + c.line + "\n", &scene, &error))
        << c.line;
    EXPECT_NE(error.find("line 2"), std::string::npos) << error;
    EXPECT_NE(error.find(c.expect), std::string::npos) << error;
  }
}

// ---- physics
// -------------------------------------------------------------------------------------

struct Bench {
  std::unique_ptr<World> world;
  WorldDef def = default_world_def();
  uint32_t hull(const std::vector<Vec3>& points) {
    def.hulls[def.hull_count] = hull_of(points);
    return def.hull_count++;
  }
  void create() {
    Error e;
    world = World::create(def, &e);
    ASSERT_EQ(e, Error::none);
  }
  BodyId ground(float friction = 0.5f, Quat q = {}) {
    BodyDef b = default_body_def();
    b.type = BodyType::static_body;
    b.shape = box_shape({20, 0.5f, 20});
    b.shape.friction = friction;
    b.position = rotate(q, Vec3{0, -0.5f, 0});
    b.orientation = q;
    BodyId id;
    EXPECT_EQ(world->create_body(b, &id), Error::none);
    return id;
  }
  BodyId body(ShapeDef shape, Vec3 p, Quat q = {}, float friction = 0.5f) {
    BodyDef b = default_body_def();
    b.shape = shape;
    b.shape.friction = friction;
    b.position = p;
    b.orientation = q;
    BodyId id;
    EXPECT_EQ(world->create_body(b, &id), Error::none);
    return id;
  }
  BodyView view(BodyId id) {
    BodyView v;
    EXPECT_EQ(world->get_body(id, &v), Error::none);
    return v;
  }
  void run(int steps) {
    for (int i = 0; i < steps; ++i)
      world->step();
  }
};

ShapeDef hull_shape(uint32_t index) {
  ShapeDef s;
  s.type = ShapeType::hull;
  s.hull = index;
  return s;
}

TEST(HullPhysics, BoxAsHullRestsAndSlidesLikeTheBox) {
  Bench b;
  const uint32_t h = b.hull(box_points({0.5f, 0.5f, 0.5f}));
  b.create();
  b.ground();
  const BodyId as_hull = b.body(hull_shape(h), {-3, 0.6f, 0});
  const BodyId as_box = b.body(box_shape({0.5f, 0.5f, 0.5f}), {3, 0.6f, 0});
  b.run(120);
  const float rest_h = b.view(as_hull).position.y, rest_b = b.view(as_box).position.y;
  std::printf("[figures] rest height: hull %.5f m, box %.5f m\n", rest_h, rest_b);
  EXPECT_NEAR(rest_h, rest_b, 1e-3f);
  // Slide at 4 m/s with μ 0.5: stopping distance v²/(2μg) = 1.631 m for both.
  ASSERT_EQ(b.world->set_linear_velocity(as_hull, {0, 0, 4}), Error::none);
  ASSERT_EQ(b.world->set_linear_velocity(as_box, {0, 0, 4}), Error::none);
  const float z_h = b.view(as_hull).position.z, z_b = b.view(as_box).position.z;
  b.run(120);
  const float d_h = b.view(as_hull).position.z - z_h, d_b = b.view(as_box).position.z - z_b;
  std::printf("[figures] slide: hull %.4f m, box %.4f m, theory 1.631 m\n", d_h, d_b);
  EXPECT_NEAR(d_h, d_b, 0.02f * d_b);
  EXPECT_NEAR(d_h, 1.631f, 0.04f);
}

TEST(HullPhysics, TurnedStackOfTenHullBoxesStands) {
  Bench b;
  const uint32_t h = b.hull(box_points({0.5f, 0.5f, 0.5f}));
  b.create();
  b.ground();
  std::vector<BodyId> ids;
  for (int i = 0; i < 10; ++i) {
    // Box i turned i·9° about y (half angles by rational sine/cosine pairs are not needed: the
    // quaternion is normalized by the world).
    const float half = 0.0785398f * static_cast<float>(i) / 2.0f;
    const Quat q{0, std::sin(half), 0, std::cos(half)};
    ids.push_back(b.body(hull_shape(h), {0, 0.5f + static_cast<float>(i), 0}, q));
  }
  b.run(600);
  const BodyView top = b.view(ids.back());
  const float drift = std::sqrt(top.position.x * top.position.x + top.position.z * top.position.z);
  std::printf("[figures] turned hull stack after 10 s: top at %.4f m (ideal 9.5), drift %.4f m\n",
              top.position.y, drift);
  EXPECT_GT(top.position.y, 9.5f - 0.05f);
  EXPECT_LT(drift, 0.01f);
}

// A square pyramid rests on its base or on a side face: each is stable (the centre of mass, a
// quarter of the height above the base, lies over every face), so which one depends on how it
// falls. Dropped on its apex, tilted 10°, it must come to rest flat on one face (a face normal
// straight down within 0.5°), at the height that face gives its centre of mass, never on the apex
// or an edge.
TEST(HullPhysics, PyramidDroppedOnItsApexComesToRestFlatOnAFace) {
  Bench b;
  const std::vector<Vec3> points{
      {-0.5f, 0, -0.5f}, {0.5f, 0, -0.5f}, {0.5f, 0, 0.5f}, {-0.5f, 0, 0.5f}, {0, 0.8f, 0}};
  const uint32_t h = b.hull(points);
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of(points), &g), Error::none);
  b.create();
  b.ground();
  // Apex down, tilted 10°: 170° about x (half angle 85°).
  const Quat tilted{0.9961947f, 0, 0, 0.0871557f};
  const BodyId id = b.body(hull_shape(h), {0, 1.5f, 0}, tilted);
  b.run(600);
  const BodyView v = b.view(id);
  float lowest = 2.0f;
  uint32_t face = 0;
  for (uint32_t f = 0; f < g.face_count; ++f) {
    const float down = rotate(v.orientation, g.face_normals[f]).y;
    if (down < lowest) lowest = down, face = f;
  }
  std::printf(
      "[figures] pyramid after 10 s: face %u down, normal·y = %.6f, centre %.4f m (face "
      "plane %.4f m from it)\n",
      face, lowest, v.position.y, g.face_offsets[face]);
  EXPECT_LT(lowest, -0.99996f);  // cos 0.5°
  EXPECT_NEAR(v.position.y, g.face_offsets[face], 0.003f);
}

TEST(HullPhysics, TetrahedronOnAThirtyDegreeInclineHoldsOrSlides) {
  for (float mu : {0.7f, 0.3f}) {
    Bench b;
    const uint32_t h = b.hull({{-0.5f, 0, -0.4f}, {0.5f, 0, -0.4f}, {0, 0, 0.5f}, {0, 0.6f, 0}});
    b.create();
    // The incline: the ground turned 30° about x (its surface descends toward +z... or −z).
    const float half = 0.261799388f;  // 15°
    const Quat q{std::sin(half), 0, 0, std::cos(half)};
    b.ground(mu, q);
    const Vec3 normal = rotate(q, Vec3{0, 1, 0});
    const Vec3 down_slope =
        normalize_or(Vec3{0, -9.81f, 0} - normal * dot(normal, Vec3{0, -9.81f, 0}), Vec3{});
    const BodyId id = b.body(hull_shape(h), normal * 0.16f, q, mu);
    b.run(30);  // settle
    const Vec3 p0 = b.view(id).position;
    const float v0 = dot(b.view(id).linear_velocity, down_slope);
    b.run(60);
    const Vec3 p1 = b.view(id).position;
    const float v1 = dot(b.view(id).linear_velocity, down_slope);
    const float moved = dot(p1 - p0, down_slope);
    if (mu > 0.5f) {
      std::printf("[figures] tetrahedron, 30 deg, mu 0.7: moved %.5f m in 1 s\n", moved);
      EXPECT_LT(std::fabs(moved), 0.005f);
    } else {
      const float a = (v1 - v0) / 1.0f;
      const float theory = 9.81f * (0.5f - 0.3f * 0.8660254f);
      std::printf("[figures] tetrahedron, 30 deg, mu 0.3: a = %.4f m/s² (theory %.4f)\n", a,
                  theory);
      EXPECT_NEAR(a, theory, 0.03f * theory);
    }
  }
}

}  // namespace

namespace {

// The hulls golden scene (tests/scenes/hulls.txt) behaves: after 20 s every hull lies inside the
// walled box, above the floor and at rest (so the golden chain records a pile, not an explosion).
TEST(HullPhysics, TheGoldenPileSettlesInsideItsBox) {
  std::FILE* f = std::fopen(LOCKSTEP_SCENES_DIR "/hulls.txt", "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    text.append(buffer, n);
  std::fclose(f);
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  auto world = build_world(scene);
  ASSERT_NE(world, nullptr);
  size_t next_action = 0;
  for (uint64_t tick = 1; tick <= 1200; ++tick) {
    for (; next_action < scene.actions.size() && scene.actions[next_action].tick == tick;
         ++next_action) {
      ASSERT_EQ(world->queue_command(scene.actions[next_action].command), Error::none);
    }
    world->step();
  }
  BodyId ids[128];
  const uint32_t count = world->list_bodies(ids);
  int hulls = 0;
  float fastest = 0, lowest = 10;
  for (uint32_t i = 0; i < count; ++i) {
    BodyView v;
    ASSERT_EQ(world->get_body(ids[i], &v), Error::none);
    if (v.shape.type != ShapeType::hull) continue;
    ++hulls;
    EXPECT_LT(std::fabs(v.position.x), 3.0f);
    EXPECT_LT(std::fabs(v.position.z), 3.0f);
    lowest = std::fmin(lowest, v.position.y);
    fastest = std::fmax(fastest, length(v.linear_velocity));
  }
  std::printf(
      "[figures] hulls golden pile after 20 s: %d hulls, lowest centre %.4f m, fastest "
      "%.4f m/s\n",
      hulls, lowest, fastest);
  EXPECT_EQ(hulls, 64 + 8);
  EXPECT_GT(lowest, 0.1f);  // every hull's centre is at least 0.1 m above its lowest point
  EXPECT_LT(fastest, 0.05f);
}

// No energy gain: hulls bouncing in a closed frictionless box with e = 1 and no gravity never
// exceed their starting kinetic energy (linear and rotational) by more than 3 % over 10 s.
TEST(HullPhysics, ElasticHullsInAClosedBoxGainNoEnergy) {
  Bench b;
  b.def.gravity = {0, 0, 0};
  b.def.enable_sleep = false;
  std::vector<std::vector<Vec3>> shapes = {
      box_points({0.3f, 0.2f, 0.25f}),
      {{-0.3f, -0.2f, -0.25f}, {0.3f, -0.2f, -0.25f}, {0, -0.2f, 0.3f}, {0, 0.35f, 0}},
      {{-0.3f, -0.15f, -0.3f},
       {0.3f, -0.15f, -0.3f},
       {0.3f, -0.15f, 0.3f},
       {-0.3f, -0.15f, 0.3f},
       {0, 0.35f, 0}}};
  std::vector<HullGeometry> geometry(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    b.hull(shapes[k]);
    ASSERT_EQ(build_hull(hull_of(shapes[k]), &geometry[k]), Error::none);
  }
  b.create();
  const float wall = 2.5f;
  for (int axis = 0; axis < 3; ++axis) {
    for (float side : {-1.0f, 1.0f}) {
      BodyDef d = default_body_def();
      d.type = BodyType::static_body;
      Vec3 half{wall + 0.5f, wall + 0.5f, wall + 0.5f};
      Vec3 p{};
      if (axis == 0) half.x = 0.5f, p.x = side * (wall + 0.5f);
      if (axis == 1) half.y = 0.5f, p.y = side * (wall + 0.5f);
      if (axis == 2) half.z = 0.5f, p.z = side * (wall + 0.5f);
      d.shape = box_shape(half);
      d.shape.friction = 0;
      d.shape.restitution = 1;
      d.position = p;
      BodyId id;
      ASSERT_EQ(b.world->create_body(d, &id), Error::none);
    }
  }
  struct Item {
    BodyId id;
    size_t shape;
  };
  std::vector<Item> items;
  for (int i = 0; i < 18; ++i) {
    BodyDef d = default_body_def();
    d.shape = hull_shape(static_cast<uint32_t>(i % 3));
    d.shape.friction = 0;
    d.shape.restitution = 1;
    d.position = {-1.6f + 1.6f * static_cast<float>(i % 3),
                  -1.2f + 1.2f * static_cast<float>((i / 3) % 3), i < 9 ? -0.8f : 0.8f};
    const float a = 0.7f * static_cast<float>(i);
    d.linear_velocity = {3.0f * std::cos(a), 2.0f * std::sin(1.3f * a), 3.0f * std::sin(a)};
    d.angular_velocity = {std::sin(a), 2.0f * std::cos(a), 1.0f};
    BodyId id;
    ASSERT_EQ(b.world->create_body(d, &id), Error::none);
    items.push_back({id, static_cast<size_t>(i % 3)});
  }
  auto energy = [&]() {
    double e = 0;
    for (const Item& it : items) {
      const BodyView v = b.view(it.id);
      e += 0.5 * v.mass_kg * double(dot(v.linear_velocity, v.linear_velocity));
      const HullGeometry& g = geometry[it.shape];
      const float density = v.mass_kg / g.volume;
      // ω in the principal frame: Rpᵀ·Rbᵀ·ω.
      const Vec3 w = inv_rotate(g.principal_frame, inv_rotate(v.orientation, v.angular_velocity));
      e += 0.5 * density *
           (double(g.principal_inertia.x) * w.x * w.x + double(g.principal_inertia.y) * w.y * w.y +
            double(g.principal_inertia.z) * w.z * w.z);
    }
    return e;
  };
  const double start = energy();
  double most = start;
  for (int s = 0; s < 600; ++s) {
    b.world->step();
    most = std::fmax(most, energy());
  }
  std::printf("[figures] elastic hulls: start %.3f J, most %.3f J (%.2f %%), end %.3f J\n", start,
              most, 100.0 * (most / start - 1.0), energy());
  EXPECT_LE(most, 1.03 * start);
}

}  // namespace

namespace {

// A 20-face die (icosahedron), thrown spinning, comes to rest flat on one face at the height that
// face gives its centre.
TEST(HullPhysics, TwentyFaceDieComesToRestOnAFace) {
  const float phi = 1.61803399f, s = 0.2f;
  std::vector<Vec3> points;
  for (float a : {-1.0f, 1.0f}) {
    for (float b : {-1.0f, 1.0f}) {
      points.push_back(Vec3{0, a, b * phi} * s);
      points.push_back(Vec3{a, b * phi, 0} * s);
      points.push_back(Vec3{b * phi, 0, a} * s);
    }
  }
  HullGeometry g;
  ASSERT_EQ(build_hull(hull_of(points), &g), Error::none);
  ASSERT_EQ(g.face_count, 20u);
  Bench b;
  const uint32_t h = b.hull(points);
  b.create();
  b.ground();
  BodyDef d = default_body_def();
  d.shape = hull_shape(h);
  d.position = {0, 1.0f, 0};
  d.orientation = normalize(Quat{0.3f, 0.5f, 0.1f, 0.8f});
  d.linear_velocity = {2.0f, 0, 1.0f};
  d.angular_velocity = {6.0f, -3.0f, 4.0f};
  BodyId id;
  ASSERT_EQ(b.world->create_body(d, &id), Error::none);
  b.run(600);
  const BodyView v = b.view(id);
  float lowest = 2.0f;
  uint32_t face = 0;
  for (uint32_t f = 0; f < g.face_count; ++f) {
    const float down = rotate(v.orientation, g.face_normals[f]).y;
    if (down < lowest) lowest = down, face = f;
  }
  std::printf(
      "[figures] die after 10 s: face %u down, normal·y = %.6f, centre %.4f m (face at "
      "%.4f m), speed %.5f m/s\n",
      face, lowest, v.position.y, g.face_offsets[face], length(v.linear_velocity));
  EXPECT_LT(lowest, -0.99996f);
  EXPECT_NEAR(v.position.y, g.face_offsets[face], 0.003f);
}

// A 16-sided prism rolls down a 20° incline across its axis without drifting along it.
TEST(HullPhysics, SixteenSidedPrismRollsStraightDownAnIncline) {
  std::vector<Vec3> points;
  for (int i = 0; i < 16; ++i) {
    const float a = 0.39269908f * static_cast<float>(i);
    for (float x : {-0.4f, 0.4f})
      points.push_back({x, 0.3f * std::cos(a), 0.3f * std::sin(a)});
  }
  Bench b;
  const uint32_t h = b.hull(points);
  b.create();
  const float half = 0.174532925f;  // 10°: the incline is 20° about x
  const Quat q{std::sin(half), 0, 0, std::cos(half)};
  b.ground(0.8f, q);
  const Vec3 normal = rotate(q, Vec3{0, 1, 0});
  const BodyId id = b.body(hull_shape(h), normal * 0.31f, q, 0.8f);
  const Vec3 start = b.view(id).position;
  b.run(120);
  const BodyView v = b.view(id);
  const Vec3 moved = v.position - start;
  std::printf(
      "[figures] 16-sided prism after 2 s on 20 deg: %.3f m down the slope, %.5f m "
      "along its axis\n",
      length(Vec3{0, moved.y, moved.z}), moved.x);
  EXPECT_GT(length(Vec3{0, moved.y, moved.z}), 1.0f);  // it rolls
  EXPECT_LT(std::fabs(moved.x), 0.01f);
}

}  // namespace

namespace {

// Box, capsule and hull casts: dropped from above onto a resting hull box, each stops where its
// lowest point meets the top face (0.1 mm), with the face's normal.
TEST(HullQuery, BoxCapsuleAndHullCastsStopOnAHull) {
  Bench b;
  const uint32_t cube = b.hull(box_points({0.5f, 0.5f, 0.5f}));
  const uint32_t tetra = b.hull({{-0.3f, 0, -0.3f}, {0.3f, 0, -0.3f}, {0, 0, 0.3f}, {0, 0.5f, 0}});
  b.create();
  BodyDef d = default_body_def();
  d.type = BodyType::static_body;
  d.shape = hull_shape(cube);
  d.position = {0, 0.5f, 0};
  BodyId target;
  ASSERT_EQ(b.world->create_body(d, &target), Error::none);
  HullGeometry tg;
  ASSERT_EQ(
      build_hull(hull_of({{-0.3f, 0, -0.3f}, {0.3f, 0, -0.3f}, {0, 0, 0.3f}, {0, 0.5f, 0}}), &tg),
      Error::none);
  ShapeDef capsule;
  capsule.type = ShapeType::capsule;
  capsule.radius = 0.2f;
  capsule.half_height = 0.3f;
  struct Case {
    ShapeDef shape;
    float bottom;  // from the shape's origin to its lowest point, upright
  } cases[] = {
      {box_shape({0.2f, 0.3f, 0.2f}), 0.3f}, {capsule, 0.5f}, {hull_shape(tetra), -tg.lower.y}};
  for (const Case& c : cases) {
    RayHit hit;
    const QueryResult r =
        shape_cast(*b.world, c.shape, Transform{{0.1f, 5, 0.1f}, {}}, {0, -5, 0}, {}, &hit);
    ASSERT_EQ(r.error, Error::none);
    ASSERT_EQ(r.count, 1u);
    EXPECT_EQ(hit.body, target);
    const float stop = 5 - 5 * hit.fraction;  // the origin's height at the hit
    EXPECT_NEAR(stop, 1.0f + c.bottom, 2e-4f) << static_cast<int>(c.shape.type);
    EXPECT_NEAR(hit.normal.y, 1.0f, 1e-4f);
  }
  // Past the side: no hit.
  RayHit miss;
  EXPECT_EQ(shape_cast(*b.world, hull_shape(tetra), Transform{{2, 5, 0}, {}}, {0, -3, 0}, {}, &miss)
                .count,
            0u);
}

}  // namespace
