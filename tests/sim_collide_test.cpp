// Narrowphase and shape geometry: manifolds for every shape pair, feature-id stability, mass
// properties, bounding boxes, shape validation, and a seeded fuzz loop over random poses.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "collide.h"
#include "shape.h"

namespace lockstep::sim {
namespace {

// Geometry here is a few float operations from exact values in metres of order 1: 1e-5 m
// leaves room for rounding (a few ulps of 1) without hiding a wrong formula.
constexpr float kTol = 1.0e-5f;
constexpr float kMargin = 0.02f;

const float kS = std::sqrt(0.5f);
// 45° about y, built from sqrt(0.5): cos/sin of 22.5° by the half-angle formulas.
const float kC225 = std::sqrt((1.0f + std::sqrt(0.5f)) * 0.5f);
const float kS225 = std::sqrt((1.0f - std::sqrt(0.5f)) * 0.5f);
const Quat kQy45{0, kS225, 0, kC225};
const Quat kQz45{0, 0, kS225, kC225};
const Quat kQx45{kS225, 0, 0, kC225};
const Quat kQz90{0, 0, kS, kS};  // local y -> world -x
const Quat kQx90{kS, 0, 0, kS};  // local y -> world +z

ShapeDef sphere(float r) {
  ShapeDef s;
  s.type = ShapeType::sphere;
  s.radius = r;
  return s;
}
ShapeDef box(float hx, float hy, float hz) {
  ShapeDef s;
  s.type = ShapeType::box;
  s.half_extents = {hx, hy, hz};
  return s;
}
ShapeDef capsule(float r, float half_height) {
  ShapeDef s;
  s.type = ShapeType::capsule;
  s.radius = r;
  s.half_height = half_height;
  return s;
}
ShapeDef plane(Vec3 n, float offset) {
  ShapeDef s;
  s.type = ShapeType::plane;
  s.plane_normal = n;
  s.plane_offset = offset;
  return s;
}
Transform xf(Vec3 p, Quat q = Quat{}) {
  return Transform{p, q};
}

Manifold run(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
             float margin = kMargin) {
  Manifold m;
  collide(a, xa, b, xb, lockstep::sim::ShapeLibrary{}, margin, &m);
  return m;
}

void expect_vec_near(Vec3 a, Vec3 b, float tol) {
  EXPECT_NEAR(a.x, b.x, tol);
  EXPECT_NEAR(a.y, b.y, tol);
  EXPECT_NEAR(a.z, b.z, tol);
}

// Invariants every manifold must satisfy.
void expect_valid(const Manifold& m, float margin) {
  ASSERT_GE(m.count, 0);
  ASSERT_LE(m.count, kMaxManifoldPoints);
  ASSERT_TRUE(is_finite(m.normal));
  EXPECT_LT(std::fabs(length(m.normal) - 1.0f), 1.0e-4f);
  for (int i = 0; i < m.count; ++i) {
    ASSERT_TRUE(is_finite(m.points[i].position));
    ASSERT_TRUE(std::isfinite(m.points[i].separation));
    EXPECT_LE(m.points[i].separation, margin);
  }
}

// Different shape types: swapping goes through the same canonical routine, so the result must
// be the same bits with the normal negated.
void expect_swap_exact(const ShapeDef& a, const Transform& xa, const ShapeDef& b,
                       const Transform& xb, float margin = kMargin) {
  Manifold m = run(a, xa, b, xb, margin), w = run(b, xb, a, xa, margin);
  ASSERT_EQ(m.count, w.count);
  if (m.count == 0) return;
  EXPECT_EQ(w.normal.x, -m.normal.x);
  EXPECT_EQ(w.normal.y, -m.normal.y);
  EXPECT_EQ(w.normal.z, -m.normal.z);
  for (int i = 0; i < m.count; ++i) {
    EXPECT_EQ(w.points[i].separation, m.points[i].separation);
    EXPECT_EQ(w.points[i].feature, m.points[i].feature);
    EXPECT_TRUE(w.points[i].position == m.points[i].position);
  }
}

// Same shape types: the roles change, so only compare within a tolerance (sorted separations).
void expect_swap_close(const ShapeDef& a, const Transform& xa, const ShapeDef& b,
                       const Transform& xb, float tol) {
  Manifold m = run(a, xa, b, xb), w = run(b, xb, a, xa);
  ASSERT_EQ(m.count, w.count);
  expect_vec_near(w.normal, -m.normal, tol);
  // Vectors rather than float[4]: GCC 12 at -O3 reports a false -Warray-bounds inside std::sort
  // of a fixed array bounded by a runtime count.
  std::vector<float> sm, sw;
  for (int i = 0; i < m.count; ++i) {
    sm.push_back(m.points[i].separation);
    sw.push_back(w.points[i].separation);
  }
  std::sort(sm.begin(), sm.end());
  std::sort(sw.begin(), sw.end());
  for (size_t i = 0; i < sm.size(); ++i)
    EXPECT_NEAR(sm[i], sw[i], tol);
}

float min_separation(const Manifold& m) {
  float s = 1e30f;
  for (int i = 0; i < m.count; ++i)
    s = std::min(s, m.points[i].separation);
  return s;
}

// ---- sphere–sphere ---------------------------------------------------------------------------

TEST(CollideSphereSphere, SeparatedTouchingOverlapping) {
  Vec3 dir{1.0f / 3.0f, 2.0f / 3.0f, 2.0f / 3.0f};
  ShapeDef a = sphere(0.5f), b = sphere(0.3f);
  Vec3 pb{0.1f, -0.2f, 0.3f};
  // Separated beyond the margin: gap 0.05 > 0.02.
  EXPECT_EQ(run(a, xf(pb + dir * 0.85f), b, xf(pb)).count, 0);
  // Within the margin, touching, overlapping.
  for (float gap : {0.015f, 0.0f, -0.1f}) {
    Vec3 pa = pb + dir * (0.8f + gap);
    Manifold m = run(a, xf(pa), b, xf(pb));
    expect_valid(m, kMargin);
    ASSERT_EQ(m.count, 1);
    EXPECT_NEAR(m.points[0].separation, gap, kTol);
    expect_vec_near(m.normal, dir, kTol);  // from B to A
    Vec3 mid = ((pa - dir * 0.5f) + (pb + dir * 0.3f)) * 0.5f;
    expect_vec_near(m.points[0].position, mid, kTol);
    expect_swap_close(a, xf(pa), b, xf(pb), kTol);
  }
}

TEST(CollideSphereSphere, CoincidentCentresUseFixedNormal) {
  Manifold m = run(sphere(0.5f), xf({1, 2, 3}), sphere(0.25f), xf({1, 2, 3}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_EQ(m.normal.y, 1.0f);
  EXPECT_NEAR(m.points[0].separation, -0.75f, kTol);
}

// ---- sphere–capsule --------------------------------------------------------------------------

TEST(CollideSphereCapsule, SideAndEnd) {
  ShapeDef s = sphere(0.3f), c = capsule(0.2f, 0.5f);
  Transform xc = xf({0, 0, 0});
  // Beside the segment: distance 0.6 to (0, 0.3, 0) -> gap 0.1.
  EXPECT_EQ(run(s, xf({0.6f, 0.3f, 0}), c, xc).count, 0);
  Manifold m = run(s, xf({0.45f, 0.3f, 0}), c, xc);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.05f, kTol);
  expect_vec_near(m.normal, {1, 0, 0}, kTol);
  expect_vec_near(m.points[0].position, {0.45f - 0.3f + 0.025f, 0.3f, 0}, kTol);
  expect_swap_exact(s, xf({0.45f, 0.3f, 0}), c, xc);
  // Beyond the +y end, touching.
  m = run(s, xf({0, 1.0f, 0}), c, xc);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.0f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  // Rotated capsule (along world z): sphere above its middle.
  m = run(s, xf({0, 0.49f, 0.3f}), c, xf({0, 0, 0}, kQx90));
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.01f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  expect_swap_exact(s, xf({0, 0.49f, 0.3f}), c, xf({0, 0, 0}, kQx90));
  // Centre on the segment: a sideways normal, full overlap, no NaN.
  m = run(s, xf({0, 0.1f, 0}), c, xc);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.5f, kTol);
  EXPECT_NEAR(m.normal.y, 0.0f, kTol);
}

// ---- capsule–capsule -------------------------------------------------------------------------

TEST(CollideCapsuleCapsule, CrossedGivesOnePoint) {
  ShapeDef a = capsule(0.2f, 0.5f), b = capsule(0.2f, 0.5f);
  Transform xb = xf({0, 0, 0}, kQx90);                          // along z
  EXPECT_EQ(run(a, xf({0, 0.45f, 0}, kQz90), b, xb).count, 0);  // gap 0.05
  Manifold m = run(a, xf({0, 0.35f, 0}, kQz90), b, xb);         // along x, above
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.05f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  expect_vec_near(m.points[0].position, {0, 0.175f, 0}, kTol);
  expect_swap_close(a, xf({0, 0.35f, 0}, kQz90), b, xb, kTol);
}

TEST(CollideCapsuleCapsule, ParallelGivesTwoPointsOverTheOverlap) {
  ShapeDef a = capsule(0.2f, 0.5f), b = capsule(0.25f, 0.5f);
  Transform xa = xf({0, 0.44f, 0}, kQz90), xb = xf({0.3f, 0, 0}, kQz90);
  Manifold m = run(a, xa, b, xb);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 2);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  // Overlap of [-0.5, 0.5] and [-0.2, 0.8] along x is [-0.2, 0.5].
  float xs[2] = {m.points[0].position.x, m.points[1].position.x};
  if (xs[0] > xs[1]) std::swap(xs[0], xs[1]);
  EXPECT_NEAR(xs[0], -0.2f, kTol);
  EXPECT_NEAR(xs[1], 0.5f, kTol);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(m.points[i].position.y, 0.25f - 0.005f, kTol);
  }
  EXPECT_NE(m.points[0].feature, m.points[1].feature);
  expect_swap_close(a, xa, b, xb, kTol);
  // Separated beyond the margin.
  EXPECT_EQ(run(a, xf({0, 0.5f, 0}, kQz90), b, xb).count, 0);
}

TEST(CollideCapsuleCapsule, DegenerateInputsStayFinite) {
  ShapeDef a = capsule(0.2f, 0.5f);
  // Identical capsules on top of each other, crossing segments through one point, and
  // zero-length capsules.
  Manifold m = run(a, xf({0, 0, 0}), a, xf({0, 0, 0}));
  expect_valid(m, kMargin);
  EXPECT_GE(m.count, 1);
  m = run(a, xf({0, 0, 0}, kQz90), a, xf({0, 0, 0}, kQx90));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.4f, kTol);
  EXPECT_NEAR(std::fabs(m.normal.y), 1.0f, kTol);  // the common perpendicular
  ShapeDef p = capsule(0.3f, 0.0f);
  m = run(p, xf({0, 0.5f, 0}), p, xf({0, 0, 0}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.1f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
}

// ---- planes ----------------------------------------------------------------------------------

TEST(CollidePlane, SpherePlaneInBodySpace) {
  // Plane y = 0.5 in body space of a static body at y = 1: world plane y = 1.5.
  ShapeDef g = plane({0, 1, 0}, 0.5f);
  Transform xg = xf({0, 1, 0});
  ShapeDef s = sphere(0.3f);
  EXPECT_EQ(run(s, xf({2, 1.83f, -1}), g, xg).count, 0);
  for (float gap : {0.01f, 0.0f, -0.05f}) {
    Manifold m = run(s, xf({2, 1.8f + gap, -1}), g, xg);
    expect_valid(m, kMargin);
    ASSERT_EQ(m.count, 1);
    EXPECT_NEAR(m.points[0].separation, gap, kTol);
    expect_vec_near(m.normal, {0, 1, 0}, kTol);
    expect_vec_near(m.points[0].position, {2, 1.5f + 0.5f * gap, -1}, kTol);
    expect_swap_exact(s, xf({2, 1.8f + gap, -1}), g, xg);
  }
  // Tilted plane through the origin, normal (0.6, 0.8, 0).
  ShapeDef t = plane({0.6f, 0.8f, 0}, 0);
  Manifold m = run(s, xf(Vec3{0.6f, 0.8f, 0} * 0.25f), t, xf({}));
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.05f, kTol);
  expect_vec_near(m.normal, {0.6f, 0.8f, 0}, kTol);
}

TEST(CollidePlane, CapsuleLyingStandingTiltedAndZeroLength) {
  ShapeDef g = plane({0, 1, 0}, 0);
  ShapeDef c = capsule(0.2f, 0.5f);
  // Lying along x, 0.01 into the ground: both ends.
  Manifold m = run(c, xf({0, 0.19f, 0}, kQz90), g, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(std::fabs(m.points[i].position.x), 0.5f, kTol);
    EXPECT_NEAR(m.points[i].position.y, -0.005f, kTol);
  }
  EXPECT_NE(m.points[0].feature, m.points[1].feature);
  expect_swap_exact(c, xf({0, 0.19f, 0}, kQz90), g, xf({}));
  // Standing: the lower end only; the upper one is a metre up.
  m = run(c, xf({0, 0.7f, 0}), g, xf({}));
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.0f, kTol);
  // Tilted 45° about z: lower end at y = 0.55 - 0.5·sqrt(0.5).
  m = run(c, xf({0, 0.55f, 0}, kQz45), g, xf({}));
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.55f - 0.5f * kS - 0.2f, kTol);
  // Above the margin.
  EXPECT_EQ(run(c, xf({0, 0.23f, 0}, kQz90), g, xf({})).count, 0);
  // Zero length: a sphere, one point.
  m = run(capsule(0.2f, 0.0f), xf({0, 0.15f, 0}), g, xf({}));
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.05f, kTol);
}

TEST(CollidePlane, BoxRestingFlatGivesFourStablePoints) {
  ShapeDef g = plane({0, 1, 0}, 0);
  ShapeDef b = box(0.5f, 0.25f, 0.4f);
  Manifold m = run(b, xf({1, 0.24f, 2}), g, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 4);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(std::fabs(m.points[i].position.x - 1.0f), 0.5f, kTol);
    EXPECT_NEAR(std::fabs(m.points[i].position.z - 2.0f), 0.4f, kTol);
    EXPECT_NEAR(m.points[i].position.y, -0.005f, kTol);
  }
  expect_swap_exact(b, xf({1, 0.24f, 2}), g, xf({}));
  // The warm-start contract: tiny moves keep every id.
  for (Vec3 d :
       {Vec3{1e-4f, 0, 0}, Vec3{0, 1e-4f, 0}, Vec3{0, 0, -1e-4f}, Vec3{-1e-4f, 1e-4f, 1e-4f}}) {
    Manifold n = run(b, xf(Vec3{1, 0.24f, 2} + d), g, xf({}));
    ASSERT_EQ(n.count, 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(n.points[i].feature, m.points[i].feature);
  }
  // Separated beyond the margin.
  EXPECT_EQ(run(b, xf({1, 0.28f, 2}), g, xf({})).count, 0);
}

TEST(CollidePlane, BoxRotated45AboutY) {
  ShapeDef g = plane({0, 1, 0}, 0);
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  Manifold m = run(b, xf({0, 0.49f, 0}, kQy45), g, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 4);
  // Corners of a unit square turned 45°: (±sqrt(0.5), 0) and (0, ±sqrt(0.5)) in x-z.
  for (int i = 0; i < 4; ++i) {
    Vec3 p = m.points[i].position;
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(std::fabs(p.x) + std::fabs(p.z), kS, 1e-5f);
    EXPECT_NEAR(std::fabs(p.x) * std::fabs(p.z), 0.0f, 1e-5f);
  }
}

TEST(CollidePlane, BoxOnEdgeAndOnVertex) {
  ShapeDef g = plane({0, 1, 0}, 0);
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  // On an edge (45° about z): the edge's two ends.
  Manifold m = run(b, xf({0, 0.5f * std::sqrt(2.0f) - 0.01f, 0}, kQz45), g, xf({}));
  ASSERT_EQ(m.count, 2);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
  // On a vertex: rotate so the body diagonal is vertical (about z by 45°, then about x so
  // that the lowest corner is alone); check only one point is within the margin.
  Quat q = normalize(kQx45 * Quat{0, 0, 0.3f, 1});
  m = run(b, xf({0, 0.5f, 0}, q), g, xf({}));
  expect_valid(m, kMargin);
  EXPECT_GE(m.count, 1);
  // The deepest point is the lowest vertex, computed here independently.
  float lowest = 1e30f;
  for (int v = 0; v < 8; ++v) {
    Vec3 c{(v & 1) ? 0.5f : -0.5f, (v & 2) ? 0.5f : -0.5f, (v & 4) ? 0.5f : -0.5f};
    lowest = std::min(lowest, transform_point(xf({0, 0.5f, 0}, q), c).y);
  }
  EXPECT_NEAR(min_separation(m), lowest, kTol);
}

// The reduction rule of reduce_to_four (collide_internal.h), written out again here: first every
// candidate whose feature id the pair had last step (in candidate order, at most 4), then, while
// fewer than 4 are chosen, the farthest remaining candidate along d, n×d, −d, −n×d in turn, with
// d = t1 + tan(22.5°)·t2 and (t1, t2) = tangent_basis(n). Returns the chosen candidate indices
// ascending; *min_gap is the smallest lead of a chosen point over the runner-up along its
// direction, so a test can check its pose is not a near-tie that rounding could flip.
std::vector<int> expected_reduction(const std::vector<Vec3>& position,
                                    const std::vector<uint32_t>& feature, Vec3 n,
                                    const std::vector<uint32_t>& previous, float* min_gap) {
  const int count = static_cast<int>(position.size());
  std::vector<int> chosen;
  auto taken = [&](int i) { return std::find(chosen.begin(), chosen.end(), i) != chosen.end(); };
  for (int i = 0; i < count && chosen.size() < 4; ++i) {
    if (std::find(previous.begin(), previous.end(), feature[i]) != previous.end())
      chosen.push_back(i);
  }
  Vec3 t1, t2;
  tangent_basis(n, &t1, &t2);
  const float tan225 = std::sqrt(2.0f) - 1.0f;
  const Vec3 d = t1 + t2 * tan225, d_perp = cross(n, d);
  const Vec3 directions[4] = {d, d_perp, -d, -d_perp};
  *min_gap = 1e30f;
  for (int k = 0; k < 4 && chosen.size() < 4; ++k) {
    int best = -1;
    float best_f = -1e30f, second_f = -1e30f;
    for (int i = 0; i < count; ++i) {
      if (taken(i)) continue;
      const float f = dot(position[i], directions[k]);
      if (best < 0 || f > best_f) {
        second_f = best_f;
        best_f = f, best = i;
      } else if (f > second_f) {
        second_f = f;
      }
    }
    chosen.push_back(best);
    *min_gap = std::min(*min_gap, best_f - second_f);
  }
  // Then a left-out corner deeper than the shallowest kept one by more than 2 mm takes its place
  // (the plane passes through the origin: a corner's separation is its height along n).
  for (int swaps = 0; swaps < 4; ++swaps) {
    int deepest = -1;
    for (int i = 0; i < count; ++i) {
      if (!taken(i) && (deepest < 0 || dot(position[i], n) < dot(position[deepest], n)))
        deepest = i;
    }
    auto shallowest = std::max_element(chosen.begin(), chosen.end(), [&](int a, int b) {
      return dot(position[a], n) < dot(position[b], n);
    });
    if (deepest < 0 || !(dot(position[deepest], n) < dot(position[*shallowest], n) - 0.002f)) break;
    *shallowest = deepest;
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

TEST(CollidePlane, TinyBoxKeepsFourPointsDeterministically) {
  // All 8 vertices are within a 0.02 margin and within 2 mm of each other in depth: the reduction
  // keeps 4, the extremes along four directions of the plane a quarter turn apart (not the
  // deepest: depths change with every rock of a resting box), and prefers the corners the pair
  // had last step.
  const float hx = 0.0005f;
  ShapeDef b = box(hx, hx, hx);
  Transform x = xf({0, 0.0004f, 0}, normalize(Quat{0.1f, 0.2f, 0.05f, 1}));
  const Vec3 n{0, 1, 0};
  const uint32_t tag = 9u << 28;  // box–plane feature ids: tag 9, payload = vertex index
  std::vector<Vec3> corner;
  std::vector<uint32_t> feature;
  float lowest = 1e30f;
  for (uint32_t v = 0; v < 8; ++v) {
    Vec3 c{(v & 1) ? hx : -hx, (v & 2) ? hx : -hx, (v & 4) ? hx : -hx};
    const Vec3 p = transform_point(x, c);
    ASSERT_LE(p.y, kMargin);  // every vertex is a candidate, in vertex order
    corner.push_back(p);
    feature.push_back(tag | v);
    lowest = std::min(lowest, p.y);
  }
  // Each manifold point is the midpoint between its corner and the plane, at its separation.
  auto expect_corners = [&](const Manifold& m, const std::vector<int>& want) {
    ASSERT_EQ(m.count, 4);
    ASSERT_EQ(want.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      const Vec3 c = corner[static_cast<size_t>(want[i])];
      EXPECT_EQ(m.points[i].feature, feature[static_cast<size_t>(want[i])]) << "point " << i;
      EXPECT_NEAR(m.points[i].separation, c.y, 1e-6f);
      expect_vec_near(m.points[i].position, {c.x, 0.5f * c.y, c.z}, 1e-6f);
    }
  };

  // No history: the extremes along the four directions.
  Manifold m = run(b, x, plane(n, 0), xf({}));
  expect_valid(m, kMargin);
  float gap = 0;
  const std::vector<int> extremes = expected_reduction(corner, feature, n, {}, &gap);
  ASSERT_GT(gap, 1e-5f);  // not a near-tie: corners are ~1e-3 m apart along each direction
  expect_corners(m, extremes);
  EXPECT_GE(min_separation(m), lowest - 1e-6f);
  // The same inputs give the same corners.
  Manifold again = run(b, x, plane(n, 0), xf({}));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(again.points[i].feature, m.points[i].feature);

  // Every corner not chosen above, as last step's corners: exactly those are kept.
  std::vector<uint32_t> others;
  std::vector<int> others_index;
  for (int v = 0; v < 8; ++v) {
    if (std::find(extremes.begin(), extremes.end(), v) != extremes.end()) continue;
    others.push_back(feature[static_cast<size_t>(v)]);
    others_index.push_back(v);
  }
  ASSERT_EQ(others.size(), 4u);
  Manifold with_history;
  with_history.previous_count = 4;
  for (int k = 0; k < 4; ++k)
    with_history.previous_features[k] = others[static_cast<size_t>(3 - k)];  // any order
  collide(b, x, plane(n, 0), xf({}), lockstep::sim::ShapeLibrary{}, kMargin, &with_history);
  expect_corners(with_history, others_index);
  // collide() keeps the input history.
  EXPECT_EQ(with_history.previous_count, 4);

  // Two of them, plus a feature the pair does not have (a box–box id): those two, then the
  // extremes along d and n×d among the rest.
  const std::vector<uint32_t> partial{others[2], (8u << 28) | 5u, others[0]};
  float partial_gap = 0;
  const std::vector<int> want = expected_reduction(corner, feature, n, partial, &partial_gap);
  ASSERT_GT(partial_gap, 1e-5f);
  EXPECT_NE(std::find(want.begin(), want.end(), others_index[0]), want.end());
  EXPECT_NE(std::find(want.begin(), want.end(), others_index[2]), want.end());
  Manifold partial_history;
  partial_history.previous_count = 3;
  for (int k = 0; k < 3; ++k)
    partial_history.previous_features[k] = partial[static_cast<size_t>(k)];
  collide(b, x, plane(n, 0), xf({}), lockstep::sim::ShapeLibrary{}, kMargin, &partial_history);
  expect_corners(partial_history, want);
}

TEST(CollidePlane, ADeepCornerIsNeverLeftOut) {
  // A small box tilted so its corners span 8 mm of depth, all within the margin: whatever the
  // history, no left-out corner is deeper than a kept one by more than 2 mm, so the deepest is
  // always kept (a box landing on an edge must not come to rest on its shallow corners).
  const float hx = 0.004f;
  ShapeDef b = box(hx, hx, hx);
  Transform x = xf({0, 0.003f, 0}, normalize(Quat{0.1f, 0.2f, 0.05f, 1}));
  const Vec3 n{0, 1, 0};
  const uint32_t tag = 9u << 28;
  std::vector<Vec3> corner;
  std::vector<uint32_t> feature;
  std::vector<int> by_depth;
  for (uint32_t v = 0; v < 8; ++v) {
    const Vec3 p =
        transform_point(x, Vec3{(v & 1) ? hx : -hx, (v & 2) ? hx : -hx, (v & 4) ? hx : -hx});
    ASSERT_LE(p.y, kMargin);
    corner.push_back(p);
    feature.push_back(tag | v);
    by_depth.push_back(static_cast<int>(v));
  }
  std::sort(by_depth.begin(), by_depth.end(),
            [&](int a, int c) { return corner[size_t(a)].y < corner[size_t(c)].y; });
  ASSERT_GT(corner[size_t(by_depth[7])].y - corner[size_t(by_depth[0])].y, 0.006f);
  // History: none, and the four shallowest corners.
  std::vector<uint32_t> shallow;
  for (int k = 4; k < 8; ++k)
    shallow.push_back(feature[size_t(by_depth[size_t(k)])]);
  for (const std::vector<uint32_t>& history : {std::vector<uint32_t>{}, shallow}) {
    Manifold m;
    m.previous_count = static_cast<int>(history.size());
    for (size_t k = 0; k < history.size(); ++k)
      m.previous_features[k] = history[k];
    collide(b, x, plane(n, 0), xf({}), lockstep::sim::ShapeLibrary{}, kMargin, &m);
    ASSERT_EQ(m.count, 4);
    float gap = 0;
    const std::vector<int> want = expected_reduction(corner, feature, n, history, &gap);
    float kept_shallowest = -1e30f;
    bool has_deepest = false;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(m.points[i].feature, feature[size_t(want[size_t(i)])]) << "point " << i;
      kept_shallowest = std::max(kept_shallowest, m.points[i].separation);
      has_deepest = has_deepest || m.points[i].feature == feature[size_t(by_depth[0])];
    }
    EXPECT_TRUE(has_deepest);
    for (int v = 0; v < 8; ++v) {
      bool kept = false;
      for (int i = 0; i < 4; ++i)
        kept = kept || m.points[i].feature == feature[size_t(v)];
      if (!kept) {
        EXPECT_GE(corner[size_t(v)].y, kept_shallowest - 0.002f - 1e-6f) << "corner " << v;
      }
    }
  }
}

TEST(CollidePlane, PlanePlaneNeverCollides) {
  EXPECT_EQ(run(plane({0, 1, 0}, 0), xf({}), plane({0, -1, 0}, 0), xf({})).count, 0);
}

// ---- sphere–box ------------------------------------------------------------------------------

TEST(CollideSphereBox, FaceEdgeVertexAndInside) {
  ShapeDef b = box(1.0f, 0.5f, 0.75f);
  Quat q = normalize(Quat{0.2f, -0.3f, 0.1f, 0.9f});
  Transform xb = xf({0.5f, -1, 2}, q);
  auto world = [&](Vec3 local) { return transform_point(xb, local); };
  auto wdir = [&](Vec3 local) { return rotate(q, local); };
  struct Case {
    Vec3 local;
    float r;
    float sep;
    Vec3 n_local;
  };
  const float e = std::sqrt(0.08f);  // (0.2, 0.2) to the edge
  const Case cases[] = {
      {{1.3f, 0.1f, 0}, 0.25f, 0.05f, {1, 0, 0}},      // separated past the margin
      {{1.2f, 0.1f, 0}, 0.25f, -0.05f, {1, 0, 0}},     // face
      {{1.2f, 0.7f, 0}, 0.3f, e - 0.3f, {kS, kS, 0}},  // edge
      {{1.1f, 0.6f, 0.85f}, 0.2f, std::sqrt(0.03f) - 0.2f, Vec3{1, 1, 1} * (1 / std::sqrt(3.0f))},
      {{0.9f, 0, 0.1f}, 0.2f, -0.1f - 0.2f, {1, 0, 0}},         // centre inside: nearest face
      {{0.1f, -0.45f, 0.2f}, 0.2f, -0.05f - 0.2f, {0, -1, 0}},  // inside, nearest is -y
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.local.x);
    ShapeDef s = sphere(c.r);
    Manifold m = run(s, xf(world(c.local)), b, xb);
    expect_valid(m, kMargin);
    if (c.sep > kMargin) {
      EXPECT_EQ(m.count, 0);
      continue;
    }
    ASSERT_EQ(m.count, 1);
    EXPECT_NEAR(m.points[0].separation, c.sep, kTol);
    expect_vec_near(m.normal, wdir(c.n_local), kTol);
    // Midway: the sphere's surface point minus half the separation along the normal.
    Vec3 surface = world(c.local) - m.normal * c.r;
    expect_vec_near(m.points[0].position, surface - m.normal * (0.5f * c.sep), kTol);
    expect_swap_exact(s, xf(world(c.local)), b, xb);
  }
  // Centre exactly at the box centre of a cube: a fixed face, no NaN.
  Manifold m = run(sphere(0.1f), xf({}), box(0.5f, 0.5f, 0.5f), xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.6f, kTol);
}

// ---- capsule–box -----------------------------------------------------------------------------

TEST(CollideCapsuleBox, LyingOnBoxGivesTwoPoints) {
  ShapeDef b = box(1.0f, 0.5f, 1.0f), c = capsule(0.2f, 0.4f);
  Transform xb = xf({0, 0, 0});
  Transform xc = xf({0.1f, 0.69f, -0.2f}, kQz90);  // along x, 0.01 into the top face
  Manifold m = run(c, xc, b, xb);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 2);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  float xs[2] = {m.points[0].position.x, m.points[1].position.x};
  if (xs[0] > xs[1]) std::swap(xs[0], xs[1]);
  EXPECT_NEAR(xs[0], -0.3f, kTol);
  EXPECT_NEAR(xs[1], 0.5f, kTol);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(m.points[i].position.y, 0.495f, kTol);
    EXPECT_NEAR(m.points[i].position.z, -0.2f, kTol);
  }
  expect_swap_exact(c, xc, b, xb);
  // Ids survive a tiny move.
  Manifold n = run(c, xf({0.1001f, 0.6901f, -0.2001f}, kQz90), b, xb);
  ASSERT_EQ(n.count, 2);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(n.points[i].feature, m.points[i].feature);
  // Hanging over the +x edge: the second point is where the box ends.
  m = run(c, xf({0.9f, 0.69f, 0}, kQz90), b, xb);
  ASSERT_EQ(m.count, 2);
  xs[0] = m.points[0].position.x, xs[1] = m.points[1].position.x;
  if (xs[0] > xs[1]) std::swap(xs[0], xs[1]);
  EXPECT_NEAR(xs[0], 0.5f, kTol);
  EXPECT_NEAR(xs[1], 1.0f, kTol);
  // Too high.
  EXPECT_EQ(run(c, xf({0, 0.73f, 0}, kQz90), b, xb).count, 0);
  // Deep: the segment itself 0.05 below the top face -> SAT face path, still 2 points.
  m = run(c, xf({0, 0.45f, 0.3f}, kQz90), b, xb);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 2);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(m.points[i].separation, -0.25f, kTol);
}

TEST(CollideCapsuleBox, StandingTiltedAndRotatedBox) {
  ShapeDef b = box(1.0f, 0.5f, 1.0f), c = capsule(0.2f, 0.4f);
  Quat q = kQy45;
  Transform xb = xf({1, 2, 3}, q);
  // Standing on the top face: one point (the top end is far away).
  Manifold m = run(c, xf(Vec3{1, 2, 3} + Vec3{0, 0.5f + 0.6f - 0.01f, 0}), b, xb);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.01f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  // Against the box's local +x face, lying along local z.
  Vec3 p = transform_point(xb, {1.19f, 0, 0});
  Quat along_z = q * kQx90;
  m = run(c, xf(p, along_z), b, xb);
  ASSERT_EQ(m.count, 2);
  expect_vec_near(m.normal, rotate(q, {1, 0, 0}), kTol);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
}

TEST(CollideCapsuleBox, EdgeRegionAndDeepEdge) {
  ShapeDef b = box(1.0f, 0.5f, 0.75f), c = capsule(0.1f, 1.0f);
  Transform xb = xf({0, 0, 0});
  // A segment along (0, 1, 1)/sqrt2 passing at distance delta from the box edge along x at
  // (y, z) = (0.5, -0.75); the edge's outward diagonal is (0, 1, -1)/sqrt2.
  Vec3 out_dir{0, kS, -kS};
  // +45° about x takes the capsule's local y to (0, 1, 1)/sqrt2.
  Quat to_diag = kQx45;
  ASSERT_NEAR(rotate(to_diag, {0, 1, 0}).z, kS, 1e-6f);
  for (float delta : {0.05f, 0.02f, -0.03f}) {
    SCOPED_TRACE(delta);
    Vec3 p = Vec3{0.2f, 0.5f, -0.75f} + out_dir * delta;
    Manifold m = run(c, xf(p, to_diag), b, xb);
    expect_valid(m, kMargin);
    float sep = delta - 0.1f;
    ASSERT_EQ(m.count, 1);
    EXPECT_NEAR(m.points[0].separation, sep, kTol);
    expect_vec_near(m.normal, out_dir, kTol);
    // Midway between the capsule surface and the edge, at x = 0.2.
    expect_vec_near(m.points[0].position, Vec3{0.2f, 0.5f, -0.75f} + out_dir * (0.5f * sep), kTol);
    expect_swap_exact(c, xf(p, to_diag), b, xb);
  }
  // Far enough: nothing.
  EXPECT_EQ(run(c, xf(Vec3{0.2f, 0.5f, -0.75f} + out_dir * 0.13f, to_diag), b, xb).count, 0);
}

TEST(CollideCapsuleBox, ZeroLengthCapsuleIsASphere) {
  ShapeDef b = box(1.0f, 0.5f, 1.0f);
  Manifold m = run(capsule(0.2f, 0.0f), xf({0.3f, 0.65f, 0}), b, xf({}));
  Manifold s = run(sphere(0.2f), xf({0.3f, 0.65f, 0}), b, xf({}));
  ASSERT_EQ(m.count, 1);
  ASSERT_EQ(s.count, 1);
  EXPECT_NEAR(m.points[0].separation, s.points[0].separation, kTol);
  EXPECT_NEAR(m.points[0].separation, -0.05f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
}

// ---- box–box ---------------------------------------------------------------------------------

void expect_box_on_box(const Manifold& m, Vec3 centre, float hx, float hz, float top, float overlap,
                       bool small_is_a) {
  ASSERT_EQ(m.count, 4);
  expect_vec_near(m.normal, small_is_a ? Vec3{0, 1, 0} : Vec3{0, -1, 0}, kTol);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(m.points[i].separation, -overlap, kTol);
    EXPECT_NEAR(std::fabs(m.points[i].position.x - centre.x), hx, kTol);
    EXPECT_NEAR(std::fabs(m.points[i].position.z - centre.z), hz, kTol);
    EXPECT_NEAR(m.points[i].position.y, top - 0.5f * overlap, kTol);
  }
}

TEST(CollideBoxBox, RestingFlatFourPointsStableIds) {
  ShapeDef big = box(2, 1, 2), small = box(0.5f, 0.25f, 0.4f);
  Transform xbig = xf({0, 0, 0});
  Vec3 c{0.3f, 1.25f - 0.01f, -0.2f};
  Manifold m = run(small, xf(c), big, xbig);
  expect_valid(m, kMargin);
  expect_box_on_box(m, c, 0.5f, 0.4f, 1.0f, 0.01f, true);
  Manifold w = run(big, xbig, small, xf(c));
  expect_valid(w, kMargin);
  expect_box_on_box(w, c, 0.5f, 0.4f, 1.0f, 0.01f, false);
  // The warm-start contract: the top box moving 1e-4 m in any direction keeps the ids, in
  // both argument orders.
  const Vec3 moves[] = {
      {1e-4f, 0, 0}, {0, 1e-4f, 0}, {0, -1e-4f, 0}, {0, 0, 1e-4f}, {-1e-4f, 1e-4f, -1e-4f}};
  for (Vec3 d : moves) {
    Manifold n = run(small, xf(c + d), big, xbig);
    ASSERT_EQ(n.count, 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(n.points[i].feature, m.points[i].feature);
    Manifold nw = run(big, xbig, small, xf(c + d));
    ASSERT_EQ(nw.count, 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(nw.points[i].feature, w.points[i].feature);
  }
  // Distinct ids within a manifold.
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j)
      EXPECT_NE(m.points[i].feature, m.points[j].feature);
  }
  // Separated beyond the margin; within it.
  EXPECT_EQ(run(small, xf({0.3f, 1.25f + 0.03f, 0}), big, xbig).count, 0);
  Manifold near = run(small, xf({0.3f, 1.25f + 0.015f, 0}), big, xbig);
  ASSERT_EQ(near.count, 4);
  EXPECT_NEAR(near.points[0].separation, 0.015f, kTol);
}

// Rotation jitter of ~1e-4 rad makes B's face axis marginally better than A's; the axis
// tolerance must keep the same reference face (bit 27) and therefore the same ids.
TEST(CollideBoxBox, RotationJitterKeepsReferenceFace) {
  ShapeDef big = box(2, 1, 2), small = box(0.5f, 0.25f, 0.4f);
  Vec3 c{0.3f, 1.24f, -0.2f};
  Manifold m = run(small, xf(c), big, xf({}));
  ASSERT_EQ(m.count, 4);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> j(-1e-4f, 1e-4f);
  for (int it = 0; it < 100; ++it) {
    Quat q = normalize(Quat{j(rng), j(rng), j(rng), 1});
    Manifold n = run(small, xf(c + Vec3{j(rng), j(rng), j(rng)}, q), big, xf({}));
    ASSERT_EQ(n.count, 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(n.points[i].feature, m.points[i].feature);
  }
}

// Lines of a box-box face clip vertex (documented in collide.cpp): 0..3 incident edges,
// 4..7 reference side planes.
int lines_on_reference_sides(uint32_t feature) {
  uint32_t in_line = (feature >> 3) & 7u, out_line = feature & 7u;
  return (in_line >= 4 ? 1 : 0) + (out_line >= 4 ? 1 : 0);
}

TEST(CollideBoxBox, OverhangClipsIncidentEdgeWithDistinctIds) {
  // The small box (A, reference face = its bottom) hangs over B's +x edge at x = 2: two points
  // are A's footprint corners (two side planes), two are where B's edge crosses A's z sides.
  ShapeDef big = box(2, 1, 2), small = box(0.5f, 0.25f, 0.4f);
  Vec3 c{1.8f, 1.24f, 0.5f};
  Manifold m = run(small, xf(c), big, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 4);
  int corners = 0, crossings = 0;
  for (int i = 0; i < 4; ++i) {
    const ManifoldPoint& p = m.points[i];
    EXPECT_NEAR(p.separation, -0.01f, kTol);
    EXPECT_EQ(p.feature >> 28, 8u);
    EXPECT_EQ((p.feature >> 27) & 1u, 0u);  // reference on A
    int sides = lines_on_reference_sides(p.feature);
    if (sides == 2) {
      corners += 1;
      EXPECT_NEAR(p.position.x, 1.3f, kTol);
    } else if (sides == 1) {
      crossings += 1;
      EXPECT_NEAR(p.position.x, 2.0f, kTol);
    }
    EXPECT_NEAR(std::fabs(p.position.z - 0.5f), 0.4f, kTol);
    for (int k = i + 1; k < 4; ++k)
      EXPECT_NE(p.feature, m.points[k].feature);
  }
  EXPECT_EQ(corners, 2);
  EXPECT_EQ(crossings, 2);
  Manifold n = run(small, xf(c + Vec3{1e-4f, -1e-4f, 1e-4f}), big, xf({}));
  ASSERT_EQ(n.count, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(n.points[i].feature, m.points[i].feature);
}

TEST(CollideBoxBox, EqualBoxesStackedAndRotated) {
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  // Equal faces: the points are the overlap square's corners either way.
  Manifold m = run(b, xf({0.2f, 0.99f, 0.1f}), b, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
  expect_swap_close(b, xf({0.2f, 0.99f, 0.1f}), b, xf({}), kTol);
  // Rotated 45° about y on a bigger box: the four turned corners.
  ShapeDef big = box(2, 1, 2);
  m = run(b, xf({0, 1.49f, 0}, kQy45), big, xf({}));
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 4);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  for (int i = 0; i < 4; ++i) {
    Vec3 p = m.points[i].position;
    EXPECT_NEAR(m.points[i].separation, -0.01f, kTol);
    EXPECT_NEAR(std::fabs(p.x) + std::fabs(p.z), kS, 1e-5f);
    EXPECT_NEAR(std::fabs(p.x) * std::fabs(p.z), 0.0f, 1e-5f);
  }
  Manifold n = run(b, xf({1e-4f, 1.49f, -1e-4f}, kQy45), big, xf({}));
  ASSERT_EQ(n.count, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(n.points[i].feature, m.points[i].feature);
  expect_swap_close(b, xf({0, 1.49f, 0}, kQy45), big, xf({}), kTol);
}

// Feature ids of a resting contact must not depend on rounding (warm starting matches by id).
// Equal boxes stacked face to face have every incident corner on a reference side plane, so
// without the clip band (collide_box.cpp) a corner is a vertex or a clip point by chance.
// Perturbations of 1e-5 m and 1e-5 rad stand for rounding and the drift of a resting stack.
struct JitterRng {  // an LCG: the same sequence on every platform
  uint64_t state;
  float next(float amplitude) {  // uniform in [-amplitude, amplitude)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float u = static_cast<float>(state >> 40) / 16777216.0f;
    return (2.0f * u - 1.0f) * amplitude;
  }
};

Quat jittered(Quat q, JitterRng& rng, float angle_rad) {
  // A rotation by about angle_rad about a random axis: (½θ·axis, 1), normalized.
  const Quat d{rng.next(0.5f * angle_rad), rng.next(0.5f * angle_rad), rng.next(0.5f * angle_rad),
               1.0f};
  return normalize(d * q);
}

// Sorted feature ids of a 4-point manifold.
std::array<uint32_t, 4> sorted_ids(const Manifold& m) {
  std::array<uint32_t, 4> ids{m.points[0].feature, m.points[1].feature, m.points[2].feature,
                              m.points[3].feature};
  std::sort(ids.begin(), ids.end());
  return ids;
}

void check_stable_stack(Quat yaw, Vec3 base, uint64_t seed) {
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  JitterRng rng{seed};
  const Vec3 top = base + Vec3{0, 0.995f, 0};  // 5 mm overlap
  std::array<uint32_t, 4> first{};
  for (int trial = 0; trial < 200; ++trial) {
    const Vec3 d{rng.next(1e-5f), rng.next(1e-5f), rng.next(1e-5f)};
    const Transform xa = xf(top + d, jittered(yaw, rng, 1e-5f));
    const Transform xb = xf(base, jittered(yaw, rng, 1e-5f));
    Manifold m = run(b, xa, b, xb);
    ASSERT_EQ(m.count, 4) << "trial " << trial;
    const std::array<uint32_t, 4> ids = sorted_ids(m);
    if (trial == 0) first = ids;
    EXPECT_EQ(ids, first) << "trial " << trial;
    // Incident corners, not clip points: no line of the id is a reference side plane, and
    // each point lies at a corner of the upper box's bottom face (the incident face or the
    // reference face, whichever was chosen). 1e-4 m: the jitter moves corners by ~2e-5 m; a
    // point partway along an edge would be ~0.1 m or more away.
    const Mat3 ra = to_mat3(xa.q);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(lines_on_reference_sides(m.points[i].feature), 0) << "trial " << trial;
      float best = 1e9f;
      for (int c = 0; c < 4; ++c) {
        const Vec3 corner = xa.p + ra * Vec3{(c & 1) ? 0.5f : -0.5f, -0.5f, (c & 2) ? 0.5f : -0.5f};
        const Vec3 off = m.points[i].position - corner;
        const float horizontal = std::sqrt(off.x * off.x + off.z * off.z);
        if (horizontal < best) best = horizontal;
      }
      EXPECT_LT(best, 1e-4f) << "trial " << trial << " point " << i;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CollideBoxBox, EqualBoxesStackedKeepTheirIdsUnderJitter) {
  check_stable_stack(Quat{}, Vec3{0, 0.5f, 0}, 11);
}

// The same, with both boxes turned 0.3 rad about y (sin 0.15 = 0.149438) and away from the
// origin, where rounding of the turned side planes is larger.
TEST(CollideBoxBox, TurnedEqualBoxesStackedKeepTheirIdsUnderJitter) {
  const float s = 0.149438f;
  check_stable_stack(Quat{0, s, 0, std::sqrt(1.0f - s * s)}, Vec3{7.3f, 12.5f, -4.1f}, 12);
}

TEST(CollideBoxBox, CrossedEdgesGiveOnePoint) {
  // B: a cube tilted 45° about x, its top edge along x at y = sqrt(0.5). A: a cube tilted 45°
  // about z, its bottom edge along z, centred sqrt(2) - 0.01 above B: the edges cross at 90°
  // and overlap by 0.01 at (0, sqrt(0.5) - 0.005, 0).
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  const float r2 = std::sqrt(2.0f);
  Transform xa = xf({0, r2 - 0.01f, 0}, kQz45), xb = xf({}, kQx45);
  Manifold m = run(b, xa, b, xb);
  expect_valid(m, kMargin);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, -0.01f, kTol);
  expect_vec_near(m.normal, {0, 1, 0}, kTol);
  expect_vec_near(m.points[0].position, {0, kS - 0.005f, 0}, kTol);
  expect_swap_close(b, xa, b, xb, kTol);
  // Shifted along both edges (A's edge runs along z, so only x moves the crossing).
  m = run(b, xf({0.1f, r2 - 0.01f, -0.2f}, kQz45), b, xb);
  ASSERT_EQ(m.count, 1);
  expect_vec_near(m.points[0].position, {0.1f, kS - 0.005f, 0}, kTol);
  // Ids stay for a tiny move.
  Manifold n = run(b, xf({0.1001f, r2 - 0.0101f, -0.2f}, kQz45), b, xb);
  ASSERT_EQ(n.count, 1);
  EXPECT_EQ(n.points[0].feature, m.points[0].feature);
  // Apart by 0.03: nothing; by 0.01: within the margin.
  EXPECT_EQ(run(b, xf({0, r2 + 0.03f, 0}, kQz45), b, xb).count, 0);
  m = run(b, xf({0, r2 + 0.01f, 0}, kQz45), b, xb);
  ASSERT_EQ(m.count, 1);
  EXPECT_NEAR(m.points[0].separation, 0.01f, kTol);
}

TEST(CollideBoxBox, SeparatedOnEveryAxisFamily) {
  ShapeDef b = box(0.5f, 0.5f, 0.5f);
  EXPECT_EQ(run(b, xf({1.03f, 0, 0}), b, xf({})).count, 0);
  EXPECT_EQ(run(b, xf({0, 0, -1.03f}), b, xf({})).count, 0);
  EXPECT_EQ(run(b, xf({3, 3, 3}, kQy45), b, xf({}, kQx45)).count, 0);
}

// ---- mass properties -------------------------------------------------------------------------

TEST(MassProperties, SphereAndBoxClosedForm) {
  const double pi = 3.14159265358979;
  ShapeDef s = sphere(0.7f);
  s.density = 900;
  MassProperties mp = compute_mass_properties(s, lockstep::sim::ShapeLibrary{});
  double m = 900 * 4.0 / 3.0 * pi * 0.343;
  EXPECT_NEAR(mp.mass, m, m * 1e-5);
  for (float i : {mp.inertia.x, mp.inertia.y, mp.inertia.z})
    EXPECT_NEAR(i, 0.4 * m * 0.49, m * 1e-5);

  ShapeDef b = box(0.5f, 1.0f, 1.5f);
  b.density = 200;
  mp = compute_mass_properties(b, lockstep::sim::ShapeLibrary{});
  m = 200.0 * 1.0 * 2.0 * 3.0;
  EXPECT_NEAR(mp.mass, m, m * 1e-6);
  EXPECT_NEAR(mp.inertia.x, m / 12 * (4.0 + 9.0), m * 1e-5);
  EXPECT_NEAR(mp.inertia.y, m / 12 * (1.0 + 9.0), m * 1e-5);
  EXPECT_NEAR(mp.inertia.z, m / 12 * (1.0 + 4.0), m * 1e-5);

  EXPECT_EQ(compute_mass_properties(plane({0, 1, 0}, 0), lockstep::sim::ShapeLibrary{}).mass, 0.0f);
}

// Monte-Carlo integration over the capsule's bounding box, fixed seed. 1e6 samples give a
// relative standard error near 0.1% on mass and inertia, well inside the 1% tolerance.
TEST(MassProperties, CapsuleAgainstMonteCarlo) {
  struct Dims {
    float r, h;
  };
  for (Dims d : {Dims{0.3f, 0.8f}, Dims{0.5f, 0.1f}, Dims{0.2f, 1.5f}}) {
    SCOPED_TRACE(d.h);
    ShapeDef c = capsule(d.r, d.h);
    c.density = 1000;
    MassProperties mp = compute_mass_properties(c, lockstep::sim::ShapeLibrary{});
    std::mt19937 rng(12345);
    std::uniform_real_distribution<double> ux(-d.r, d.r), uy(-d.h - d.r, d.h + d.r);
    const int n = 1000000;
    double vol_box = (2.0 * d.r) * (2.0 * (d.h + d.r)) * (2.0 * d.r);
    double in = 0, ix = 0, iy = 0, iz = 0;
    for (int i = 0; i < n; ++i) {
      double x = ux(rng), y = uy(rng), z = ux(rng);
      double cy = y > d.h ? y - d.h : (y < -d.h ? y + d.h : 0.0);
      if (x * x + cy * cy + z * z > double(d.r) * d.r) continue;
      in += 1;
      ix += y * y + z * z;
      iy += x * x + z * z;
      iz += x * x + y * y;
    }
    double w = 1000.0 * vol_box / n;
    EXPECT_NEAR(mp.mass, in * w, 0.01 * in * w);
    EXPECT_NEAR(mp.inertia.x, ix * w, 0.01 * ix * w);
    EXPECT_NEAR(mp.inertia.y, iy * w, 0.01 * iy * w);
    EXPECT_NEAR(mp.inertia.z, iz * w, 0.01 * iz * w);
  }
  // Zero length is exactly a sphere.
  ShapeDef c = capsule(0.4f, 0.0f);
  MassProperties a = compute_mass_properties(c, lockstep::sim::ShapeLibrary{}),
                 b = compute_mass_properties(sphere(0.4f), lockstep::sim::ShapeLibrary{});
  EXPECT_NEAR(a.mass, b.mass, b.mass * 1e-6f);
  EXPECT_NEAR(a.inertia.x, b.inertia.x, b.inertia.x * 1e-6f);
  EXPECT_NEAR(a.inertia.y, b.inertia.y, b.inertia.y * 1e-6f);
}

// ---- bounding boxes --------------------------------------------------------------------------

Quat random_quat(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  for (;;) {
    Quat q{u(rng), u(rng), u(rng), u(rng)};
    float l = dot(q, q);
    if (l > 0.01f && l <= 1.0f) return normalize(q);
  }
}

Vec3 random_unit(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  for (;;) {
    Vec3 v{u(rng), u(rng), u(rng)};
    float l = length_squared(v);
    if (l > 0.01f && l <= 1.0f) return v * (1.0f / std::sqrt(l));
  }
}

// Rounding of a rotation differs slightly between rotate() and the matrix form: 1e-5 m.
void expect_inside(const Aabb& box, Vec3 p) {
  EXPECT_LE(box.lower.x, p.x + 1e-5f);
  EXPECT_LE(box.lower.y, p.y + 1e-5f);
  EXPECT_LE(box.lower.z, p.z + 1e-5f);
  EXPECT_GE(box.upper.x, p.x - 1e-5f);
  EXPECT_GE(box.upper.y, p.y - 1e-5f);
  EXPECT_GE(box.upper.z, p.z - 1e-5f);
}

TEST(Aabb, ContainsShapeAtRandomOrientationsAndIsTight) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> up(-5, 5);
  for (int it = 0; it < 200; ++it) {
    Transform x = xf({up(rng), up(rng), up(rng)}, random_quat(rng));
    // Box: the 8 vertices are the extreme points, and they touch the box.
    ShapeDef b = box(0.3f, 0.7f, 1.1f);
    Aabb a = compute_aabb(b, lockstep::sim::ShapeLibrary{}, x, 0);
    Vec3 lo{1e30f, 1e30f, 1e30f}, hi{-1e30f, -1e30f, -1e30f};
    for (int v = 0; v < 8; ++v) {
      Vec3 c{(v & 1) ? 0.3f : -0.3f, (v & 2) ? 0.7f : -0.7f, (v & 4) ? 1.1f : -1.1f};
      Vec3 p = transform_point(x, c);
      expect_inside(a, p);
      lo = min_elements(lo, p), hi = max_elements(hi, p);
    }
    expect_vec_near(a.lower, lo, 1e-5f);
    expect_vec_near(a.upper, hi, 1e-5f);
    // Margin grows every side.
    Aabb g = compute_aabb(b, lockstep::sim::ShapeLibrary{}, x, 0.1f);
    expect_vec_near(g.lower, a.lower - Vec3{0.1f, 0.1f, 0.1f}, 1e-5f);
    // Capsule and sphere: random surface points.
    ShapeDef c = capsule(0.25f, 0.6f);
    Aabb ac = compute_aabb(c, lockstep::sim::ShapeLibrary{}, x, 0);
    Aabb as = compute_aabb(sphere(0.4f), lockstep::sim::ShapeLibrary{}, x, 0);
    Vec3 axis = rotate(x.q, {0, 0.6f, 0});
    for (int k = 0; k < 20; ++k) {
      Vec3 u = random_unit(rng);
      expect_inside(ac, x.p + axis + u * 0.25f);
      expect_inside(ac, x.p - axis + u * 0.25f);
      expect_inside(as, x.p + u * 0.4f);
    }
    // Tight for the capsule: the upper corner is the end spheres' extreme.
    Vec3 cap_hi = max_elements(x.p + axis, x.p - axis) + Vec3{0.25f, 0.25f, 0.25f};
    expect_vec_near(ac.upper, cap_hi, 1e-5f);
  }
}

TEST(Aabb, PlanesAreBoundedOnTheirSolidSideOnly) {
  const float e = kPlaneExtent;
  // y-up ground through the origin: the box stops at the plane in y.
  Aabb a = compute_aabb(plane({0, 1, 0}, 0), lockstep::sim::ShapeLibrary{}, xf({}), 0.02f);
  EXPECT_FLOAT_EQ(a.upper.y, 0.02f);
  EXPECT_FLOAT_EQ(a.lower.y, -e - 0.02f);
  EXPECT_FLOAT_EQ(a.lower.x, -e - 0.02f);
  EXPECT_FLOAT_EQ(a.upper.z, e + 0.02f);
  // Body offset moves it; a downward normal bounds the other side.
  a = compute_aabb(plane({0, 1, 0}, 0.5f), lockstep::sim::ShapeLibrary{}, xf({0, 3, 0}), 0);
  EXPECT_FLOAT_EQ(a.upper.y, 3.5f);
  a = compute_aabb(plane({0, -1, 0}, 2), lockstep::sim::ShapeLibrary{}, xf({}), 0);
  EXPECT_FLOAT_EQ(a.lower.y, -2.0f);
  EXPECT_FLOAT_EQ(a.upper.y, e);
  a = compute_aabb(plane({1, 0, 0}, 1), lockstep::sim::ShapeLibrary{}, xf({}), 0);
  EXPECT_FLOAT_EQ(a.upper.x, 1.0f);
  EXPECT_FLOAT_EQ(a.upper.y, e);
  // A tilted plane: its solid side within the cube [-E, E]³ reaches y = 0.6·E / 0.8 at
  // x = -E; x is not bounded (the bound 0.8·E / 0.6 lies outside the cube).
  a = compute_aabb(plane({0.6f, 0.8f, 0}, 0), lockstep::sim::ShapeLibrary{}, xf({}), 0);
  EXPECT_FLOAT_EQ(a.upper.y, 0.75f * e);
  EXPECT_FLOAT_EQ(a.upper.x, e);
  EXPECT_FLOAT_EQ(a.lower.y, -e);
  EXPECT_FLOAT_EQ(a.lower.x, -e);
  // A ground rotated 90° about z (normal -x in world): solid side x > 0. The rotated normal
  // keeps ~1e-7 of y, which over E = 1e6 m is worth 0.1 m: the bound stays conservative.
  a = compute_aabb(plane({0, 1, 0}, 0), lockstep::sim::ShapeLibrary{}, xf({}, kQz90), 0);
  EXPECT_LE(a.lower.x, 0.0f);
  EXPECT_GT(a.lower.x, -0.5f);
  EXPECT_FLOAT_EQ(a.upper.x, e);
}

// ---- validation ------------------------------------------------------------------------------

TEST(ValidateShape, AcceptsGoodAndRejectsBad) {
  EXPECT_EQ(validate_shape(sphere(0.5f), lockstep::sim::ShapeLibrary{}), Error::none);
  EXPECT_EQ(validate_shape(box(0.1f, 2, 3), lockstep::sim::ShapeLibrary{}), Error::none);
  EXPECT_EQ(validate_shape(capsule(0.1f, 0), lockstep::sim::ShapeLibrary{}), Error::none);
  EXPECT_EQ(validate_shape(plane({0, 1, 0}, -3), lockstep::sim::ShapeLibrary{}), Error::none);
  EXPECT_EQ(validate_shape(plane({0, 1.0005f, 0}, 0), lockstep::sim::ShapeLibrary{}),
            Error::none);  // within 1e-3

  const float nan = std::nanf(""), inf = INFINITY;
  ShapeDef s = sphere(nan);
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);
  s = box(1, inf, 1);
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);
  s = capsule(0.2f, 0.3f);
  s.half_height = -inf;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);
  s = sphere(1);
  s.friction = nan;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);
  s = plane({0, nan, 0}, 0);
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);
  s = plane({0, 1, 0}, inf);
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::non_finite);

  EXPECT_EQ(validate_shape(sphere(-0.5f), lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  EXPECT_EQ(validate_shape(sphere(0), lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  EXPECT_EQ(validate_shape(box(1, 0, 1), lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  EXPECT_EQ(validate_shape(box(1, 1, -1), lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  EXPECT_EQ(validate_shape(capsule(0.2f, -0.1f), lockstep::sim::ShapeLibrary{}),
            Error::invalid_argument);
  EXPECT_EQ(validate_shape(capsule(-0.2f, 0.1f), lockstep::sim::ShapeLibrary{}),
            Error::invalid_argument);
  EXPECT_EQ(validate_shape(plane({0, 2, 0}, 0), lockstep::sim::ShapeLibrary{}),
            Error::invalid_argument);
  EXPECT_EQ(validate_shape(plane({0, 0, 0}, 0), lockstep::sim::ShapeLibrary{}),
            Error::invalid_argument);
  s = box(1, 1, 1);
  s.density = 0;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s = plane({0, 1, 0}, 0);
  s.density = 0;  // planes have no mass
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::none);
  s = sphere(1);
  s.friction = -0.1f;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s.friction = 0.5f;
  s.restitution = 1.5f;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s.restitution = -0.1f;
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s = sphere(1e20f);  // mass overflows float
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s = sphere(1);
  s.type = static_cast<ShapeType>(8);
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::invalid_argument);
  s.type = ShapeType::mesh;  // a level shape whose geometry the library does not have
  EXPECT_EQ(validate_shape(s, lockstep::sim::ShapeLibrary{}), Error::unknown_mesh);
}

// ---- fuzz ------------------------------------------------------------------------------------

// Independent reference distances for the pairs where one is easy to compute.
float point_box_distance(Vec3 p_local, Vec3 h) {
  Vec3 q = min_elements(max_elements(p_local, -h), h);
  float d = length(p_local - q);
  if (d > 0) return d;
  float inside = std::min(std::min(h.x - std::fabs(p_local.x), h.y - std::fabs(p_local.y)),
                          h.z - std::fabs(p_local.z));
  return -inside;
}

// Distance from a world point to a shape's surface (independent of the narrowphase).
float surface_distance(const ShapeDef& s, const Transform& x, Vec3 p) {
  switch (s.type) {
    case ShapeType::sphere:
      return std::fabs(length(p - x.p) - s.radius);
    case ShapeType::capsule: {
      Vec3 ax = rotate(x.q, {0, s.half_height, 0});
      Vec3 p0 = x.p - ax, d = ax * 2.0f;
      float dd = dot(d, d);
      float t = dd > 0 ? std::clamp(dot(p - p0, d) / dd, 0.0f, 1.0f) : 0.0f;
      // Multi-point capsule contacts use each end sphere's deepest point, which may lie
      // inside the capsule: only "outside the capsule" counts as an error.
      return std::max(0.0f, length(p - (p0 + d * t)) - s.radius);
    }
    case ShapeType::box:
      return std::fabs(point_box_distance(inv_transform_point(x, p), s.half_extents));
    case ShapeType::plane: {
      Vec3 n = rotate(x.q, s.plane_normal);
      return std::fabs(dot(n, p - x.p) - s.plane_offset);
    }
    case ShapeType::hull:  // sim_hull_test covers hulls and compounds, sim_mesh_test levels
    case ShapeType::compound:
    case ShapeType::mesh:
    case ShapeType::heightfield:
      break;
  }
  return 0;
}

TEST(CollideFuzz, RandomPairsStayFiniteBoundedAndConsistent) {
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<float> size(0.02f, 1.5f), pos(-1.5f, 1.5f), unit(0, 1);
  const ShapeType types[4] = {ShapeType::sphere, ShapeType::box, ShapeType::capsule,
                              ShapeType::plane};
  auto random_shape = [&](ShapeType t) {
    switch (t) {
      case ShapeType::sphere:
        return sphere(size(rng));
      case ShapeType::box:
        return box(size(rng), size(rng), size(rng));
      case ShapeType::capsule:
        return capsule(size(rng), unit(rng) < 0.1f ? 0.0f : size(rng));
      case ShapeType::plane:
      case ShapeType::hull:
      case ShapeType::compound:
      case ShapeType::mesh:
      case ShapeType::heightfield:
        break;
    }
    return plane(random_unit(rng), pos(rng));
  };
  int with_points = 0, checked_reference = 0, reduced_box_plane = 0;
  float worst[4][4] = {};
  int box_face = 0, box_edge = 0, capsule_parallel = 0, capsule_box_kind[4] = {};
  for (int it = 0; it < 20000; ++it) {
    ShapeDef a = random_shape(types[rng() % 4]), b = random_shape(types[rng() % 4]);
    Transform xa = xf({pos(rng), pos(rng), pos(rng)}, random_quat(rng));
    Transform xb = xf({pos(rng), pos(rng), pos(rng)}, random_quat(rng));
    // Now and then an axis-aligned pose or a shared centre: the degenerate cases.
    if (rng() % 10 == 0) xa.q = Quat{};
    if (rng() % 10 == 0) xb.q = Quat{};
    if (rng() % 50 == 0) xb.p = xa.p;
    if (rng() % 8 == 0) xb.q = xa.q;  // parallel faces, edges and segments
    float margin = 0.05f * unit(rng);
    Manifold m = run(a, xa, b, xb, margin);
    SCOPED_TRACE(it);
    expect_valid(m, margin);
    if (::testing::Test::HasFailure()) return;
    with_points += m.count > 0;
    if (a.type == ShapeType::plane && b.type == ShapeType::plane) {
      EXPECT_EQ(m.count, 0);
    }
    if (a.type != b.type) expect_swap_exact(a, xa, b, xb, margin);
    // Each point is the midpoint of a point on A's surface and one on B's, separation apart
    // along the normal: rebuild both and measure their distance to the true surfaces.
    for (int i = 0; i < m.count; ++i) {
      const ManifoldPoint& p = m.points[i];
      Vec3 on_a = p.position + m.normal * (0.5f * p.separation);
      Vec3 on_b = p.position - m.normal * (0.5f * p.separation);
      float ea = surface_distance(a, xa, on_a), eb = surface_distance(b, xb, on_b);
      int ta = static_cast<int>(a.type), tb = static_cast<int>(b.type);
      worst[ta][tb] = std::max(worst[ta][tb], std::max(ea, eb));
      uint32_t tag = p.feature >> 28, kind = (p.feature >> 24) & 0xfu;
      if (tag == 8) (kind & 4u ? box_edge : box_face) += 1;
      if (tag == 6) capsule_box_kind[kind & 3u] += 1;
      if (tag == 5 && p.feature != ((5u << 28) | 0x100u)) capsule_parallel += 1;
    }
    // Reference separations.
    float ref = 1e30f;
    bool has_ref = true;
    if (a.type == ShapeType::sphere && b.type == ShapeType::sphere) {
      ref = length(xa.p - xb.p) - a.radius - b.radius;
    } else if (a.type == ShapeType::sphere && b.type == ShapeType::box) {
      ref = point_box_distance(inv_transform_point(xb, xa.p), b.half_extents) - a.radius;
    } else if (a.type == ShapeType::sphere && b.type == ShapeType::plane) {
      Vec3 n = rotate(xb.q, b.plane_normal);
      ref = dot(n, xa.p - xb.p) - b.plane_offset - a.radius;
    } else if (a.type == ShapeType::box && b.type == ShapeType::plane) {
      Vec3 n = rotate(xb.q, b.plane_normal);
      std::vector<Vec3> candidates;
      for (int v = 0; v < 8; ++v) {
        Vec3 h = a.half_extents;
        Vec3 c{(v & 1) ? h.x : -h.x, (v & 2) ? h.y : -h.y, (v & 4) ? h.z : -h.z};
        const Vec3 p = transform_point(xa, c);
        const float s = dot(n, p - xb.p) - b.plane_offset;
        ref = std::min(ref, s);
        if (s <= margin) candidates.push_back(p);
      }
      // More than 4 corners within the margin: the 4 kept are chosen by position (reduce_to_four),
      // then a left-out corner deeper than the shallowest kept one by more than 2 mm takes its
      // place. So the deepest corner is kept, or within 2 mm of a kept one, and when every
      // candidate lies within 2 mm in depth (no swap can happen) what is kept attains the
      // candidates' extremes along the four directions d, n×d, −d, −n×d of the plane
      // (d = t1 + tan(22.5°)·t2): each direction takes the farthest corner not yet chosen.
      if (candidates.size() > 4) {
        reduced_box_plane += 1;
        ASSERT_EQ(m.count, 4);
        EXPECT_GE(min_separation(m), ref - 2e-4f);
        EXPECT_LE(min_separation(m), ref + 0.002f + 2e-4f);
        float shallowest = -1e30f;
        for (Vec3 c : candidates)
          shallowest = std::max(shallowest, dot(n, c - xb.p) - b.plane_offset);
        if (shallowest - ref < 0.002f) {
          Vec3 t1, t2;
          tangent_basis(m.normal, &t1, &t2);
          const Vec3 d = t1 + t2 * (std::sqrt(2.0f) - 1.0f), d_perp = cross(m.normal, d);
          for (Vec3 dir : {d, d_perp, -d, -d_perp}) {
            float all = -1e30f, kept = -1e30f;
            for (Vec3 c : candidates)
              all = std::max(all, dot(c, dir));
            for (int i = 0; i < m.count; ++i)
              kept = std::max(kept, dot(m.points[i].position, dir));
            EXPECT_NEAR(kept, all, 2e-4f);
          }
        }
        has_ref = false;
      }
    } else if (a.type == ShapeType::capsule && b.type == ShapeType::plane) {
      Vec3 n = rotate(xb.q, b.plane_normal), ax = rotate(xa.q, {0, a.half_height, 0});
      ref =
          std::min(dot(n, xa.p + ax - xb.p), dot(n, xa.p - ax - xb.p)) - b.plane_offset - a.radius;
    } else if (a.type == ShapeType::capsule && b.type == ShapeType::box && it % 4 == 0) {
      // Sampled segment-to-box distance, meaningful only while the segment is outside.
      Vec3 ax = rotate(xa.q, {0, a.half_height, 0});
      const int steps = 2000;
      for (int k = 0; k <= steps; ++k) {
        Vec3 p = xa.p - ax + ax * (2.0f * static_cast<float>(k) / steps);
        ref = std::min(ref, point_box_distance(inv_transform_point(xb, p), b.half_extents));
      }
      if (ref <= 1e-3f) has_ref = false;
      ref -= a.radius;
    } else {
      has_ref = false;
    }
    if (!has_ref) continue;
    checked_reference += 1;
    // Plane normals are unit only to ~1e-3 after validation, but random_unit gives unit ones;
    // 2e-4 m covers float rounding at these sizes, 2e-3 m the sampled capsule distance.
    float tol = (a.type == ShapeType::capsule && b.type == ShapeType::box) ? 2e-3f : 2e-4f;
    if (ref > margin + tol) {
      EXPECT_EQ(m.count, 0) << "ref " << ref;
    } else if (ref < margin - tol) {
      ASSERT_GT(m.count, 0) << "ref " << ref;
      EXPECT_NEAR(min_separation(m), ref, tol);
    }
  }
  // Rounding at sizes and distances of a few metres: 1e-4 m is ~100 ulps, far below any
  // wrong sign or misplaced point (those show up at the scale of the shapes).
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j)
      EXPECT_LT(worst[i][j], 1e-4f) << "types " << i << "-" << j;
  }
  // The loop must exercise contacts, not only misses, and every contact-generation path
  // (this seed gives about 10500 / 1300 / 180 / 90 / 1000 / 130 / 580; the bounds leave room
  // for another standard library's distributions).
  EXPECT_GT(with_points, 5000);
  EXPECT_GT(box_face, 500);
  EXPECT_GT(box_edge, 40);
  EXPECT_GT(capsule_parallel, 20);
  EXPECT_GT(capsule_box_kind[1], 300);  // face clipping
  EXPECT_GT(capsule_box_kind[2], 30);   // segment against a box edge (deep)
  EXPECT_GT(capsule_box_kind[3], 100);  // closest point in an edge or vertex region

  EXPECT_GT(checked_reference, 3000);
  EXPECT_GT(reduced_box_plane, 200);  // box–plane with more than 4 candidates (this seed: 529)
}

// Same inputs, same bits (the narrowphase has no hidden state).
TEST(CollideFuzz, RepeatedCallsAreBitIdentical) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> pos(-0.8f, 0.8f);
  ShapeDef shapes[3] = {box(0.5f, 0.3f, 0.7f), capsule(0.3f, 0.5f), sphere(0.6f)};
  for (int it = 0; it < 500; ++it) {
    const ShapeDef& a = shapes[it % 3];
    const ShapeDef& b = shapes[(it / 3) % 3];
    Transform xa = xf({pos(rng), pos(rng), pos(rng)}, random_quat(rng));
    Transform xb = xf({pos(rng), pos(rng), pos(rng)}, random_quat(rng));
    Manifold m1 = run(a, xa, b, xb), m2;
    m2.count = 3;
    m2.points[3].feature = 77;  // stale data must be cleared
    collide(a, xa, b, xb, lockstep::sim::ShapeLibrary{}, kMargin, &m2);
    ASSERT_EQ(m1.count, m2.count);
    EXPECT_TRUE(m1.normal == m2.normal);
    for (int i = 0; i < kMaxManifoldPoints; ++i) {
      EXPECT_TRUE(m1.points[i].position == m2.points[i].position);
      EXPECT_EQ(m1.points[i].separation, m2.points[i].separation);
      EXPECT_EQ(m1.points[i].feature, m2.points[i].feature);
    }
  }
}

}  // namespace
}  // namespace lockstep::sim
