// Building a convex hull from at most 64 points, and its mass properties.
//
// The builder trades speed for plainness, since it runs once per hull when a world is created:
//   1. Points closer than a thousandth of the hull's size to an earlier point are dropped (weld).
//   2. Every triple of points spans a plane; the plane is a face's when no point lies more than a
//      tolerance (a ten-thousandth of the size) on its outer side. The face holds every point
//      within the tolerance of the plane, as a 64-bit set. A set that equals or lies inside
//      another face's set is the same face found again, or a sliver along an edge: dropped.
//   3. Each face's points are ordered counter-clockwise about the outward normal by Andrew's
//      monotone chain in the face plane; points on a side or inside the polygon are not corners.
//      A point that is a corner of no face is not a vertex of the hull.
//   4. Edges pair the sides of the faces: each must be the side of exactly two faces, once in
//      each direction, and V − E + F must be 2. A point set that fails this (points so close to
//      coplanar that the tolerance cannot decide) is refused as degenerate rather than built
//      into something that is not a closed convex solid.
// Every loop runs in index order and every comparison is strict, so ties go to the lower index
// and the same points give the same hull on every target.
//
// Mass properties: the solid is cut into tetrahedra from its first vertex to each face's
// triangle fan. A tetrahedron with the vertex at the origin and corners a, b, c (as columns of A)
// has volume det(A)/6, centroid (a + b + c)/4, and second moment ∫ x xᵀ dV = det(A)/120 ·
// (s sᵀ + a aᵀ + b bᵀ + c cᵀ) with s = a + b + c. The sums give the volume, the centre of mass m
// and the second moment C about the first vertex; about m it is C − V·m mᵀ, and the inertia
// tensor is trace(C)·1 − C. Its principal axes come from cyclic Jacobi rotations.
#include "hull.h"

#include "collide_internal.h"
#include "inertia.h"
#include "lockstep/sim/fields.h"

namespace lockstep::sim {

namespace {

using collide_detail::abs_f;
using inertia_detail::add_outer;
using inertia_detail::Sym3;

constexpr float kWeldFraction = 1.0e-3f;   // of the size: closer points are one
constexpr float kPlaneFraction = 1.0e-4f;  // of the size: points this near a face plane are on it
constexpr float kMaxHullCoordinate = 1.0e5f;

// A face found by the plane search: its plane and the points on it.
struct FaceCandidate {
  Vec3 normal;
  uint64_t members;
};

// Orders the member points of a face counter-clockwise about `normal` (Andrew's monotone chain in
// the plane, collinear points dropped). Returns the corner count; corners go to out[].
uint32_t order_face(const Vec3* p, uint64_t members, Vec3 normal, float tol_area, uint8_t* out) {
  Vec3 u, v;
  tangent_basis(normal, &u, &v);  // u × v = normal
  struct P2 {
    float x, y;
    uint8_t index;
  };
  P2 pts[kMaxHullPoints];
  uint32_t n = 0;
  for (uint32_t i = 0; i < kMaxHullPoints; ++i) {
    if ((members >> i & 1u) == 0) continue;
    pts[n++] = P2{dot(p[i], u), dot(p[i], v), static_cast<uint8_t>(i)};
  }
  // Insertion sort by (x, y, index): at most 64 points.
  for (uint32_t i = 1; i < n; ++i) {
    P2 key = pts[i];
    uint32_t j = i;
    while (j > 0) {
      const P2& b = pts[j - 1];
      const bool less =
          key.x < b.x || (key.x == b.x && (key.y < b.y || (key.y == b.y && key.index < b.index)));
      if (!less) break;
      pts[j] = pts[j - 1];
      --j;
    }
    pts[j] = key;
  }
  auto turn = [](const P2& o, const P2& a, const P2& b) {
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
  };
  P2 chain[2 * kMaxHullPoints];
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; ++i) {  // lower chain
    while (k >= 2 && !(turn(chain[k - 2], chain[k - 1], pts[i]) > tol_area))
      --k;
    chain[k++] = pts[i];
  }
  const uint32_t lower = k + 1;
  for (uint32_t i = n - 1; i-- > 0;) {  // upper chain
    while (k >= lower && !(turn(chain[k - 2], chain[k - 1], pts[i]) > tol_area))
      --k;
    chain[k++] = pts[i];
  }
  const uint32_t corners = k > 0 ? k - 1 : 0;  // the last point repeats the first
  for (uint32_t i = 0; i < corners; ++i)
    out[i] = chain[i].index;
  return corners;
}

// The box's topology: corner i has +x when bit 0 is set, +y bit 1, +z bit 2; faces −x, +x, −y,
// +y, −z, +z, corners counter-clockwise from outside; edges with the face on their left first.
constexpr Vec3 kBoxNormals[6] = {{-1, 0, 0}, {1, 0, 0},  {0, -1, 0},
                                 {0, 1, 0},  {0, 0, -1}, {0, 0, 1}};
constexpr uint16_t kBoxFaceFirst[6] = {0, 4, 8, 12, 16, 20};
constexpr uint8_t kBoxFaceSize[6] = {4, 4, 4, 4, 4, 4};
constexpr uint8_t kBoxFaceVertices[24] = {0, 4, 6, 2, 1, 3, 7, 5, 0, 1, 5, 4,
                                          2, 6, 7, 3, 0, 2, 3, 1, 4, 5, 7, 6};
struct BoxTopology {
  uint8_t edge_vertices[12][2];
  uint8_t edge_faces[12][2];
};
constexpr BoxTopology make_box_topology() {
  BoxTopology t{};
  int e = 0;
  for (int f = 0; f < 6; ++f) {
    for (int k = 0; k < 4; ++k) {
      const uint8_t a = kBoxFaceVertices[4 * f + k], b = kBoxFaceVertices[4 * f + (k + 1) % 4];
      bool seen = false;
      for (int i = 0; i < e; ++i) {
        if (t.edge_vertices[i][0] == b && t.edge_vertices[i][1] == a) {
          t.edge_faces[i][1] = static_cast<uint8_t>(f);
          seen = true;
        }
      }
      if (!seen) {
        t.edge_vertices[e][0] = a;
        t.edge_vertices[e][1] = b;
        t.edge_faces[e][0] = static_cast<uint8_t>(f);
        ++e;
      }
    }
  }
  return t;
}
constexpr BoxTopology kBoxTopology = make_box_topology();

}  // namespace

Error build_hull(const HullDef& def, HullGeometry* out) {
  if (def.point_count < kMinHullPoints || def.point_count > kMaxHullPoints)
    return def.point_count < kMinHullPoints ? Error::degenerate_hull : Error::invalid_argument;
  for (uint32_t i = 0; i < def.point_count; ++i) {
    if (!is_finite(def.points[i])) return Error::non_finite;
    const Vec3 a = abs_elements(def.points[i]);
    if (a.x > kMaxHullCoordinate || a.y > kMaxHullCoordinate || a.z > kMaxHullCoordinate)
      return Error::invalid_argument;
  }
  Vec3 lo = def.points[0], hi = def.points[0];
  for (uint32_t i = 1; i < def.point_count; ++i) {
    lo = min_elements(lo, def.points[i]);
    hi = max_elements(hi, def.points[i]);
  }
  const Vec3 span = hi - lo;
  const float size =
      span.x > span.y ? (span.x > span.z ? span.x : span.z) : (span.y > span.z ? span.y : span.z);
  if (!(size > 0.0f)) return Error::degenerate_hull;
  const float weld = kWeldFraction * size;
  const float tol = kPlaneFraction * size;

  // 1. Weld.
  Vec3 p[kMaxHullPoints];
  uint32_t n = 0;
  for (uint32_t i = 0; i < def.point_count; ++i) {
    bool duplicate = false;
    for (uint32_t j = 0; j < n && !duplicate; ++j)
      duplicate = length_squared(def.points[i] - p[j]) <= weld * weld;
    if (!duplicate) p[n++] = def.points[i];
  }
  if (n < kMinHullPoints) return Error::degenerate_hull;
  const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;

  // 2. Supporting planes.
  FaceCandidate faces[kMaxHullFaces * 2];
  uint32_t face_count = 0;
  const float min_cross = weld * weld;  // |cross| = twice the triangle's area
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = i + 1; j < n; ++j) {
      for (uint32_t k = j + 1; k < n; ++k) {
        const Vec3 c = cross(p[j] - p[i], p[k] - p[i]);
        const float len = length(c);
        if (!(len > min_cross)) continue;
        Vec3 normal = c * (1.0f / len);
        const float offset = dot(normal, p[i]);
        float above = 0.0f, below = 0.0f;
        uint64_t members = 0;
        for (uint32_t m = 0; m < n; ++m) {
          const float d = dot(normal, p[m]) - offset;
          if (d > above) above = d;
          if (d < below) below = d;
          if (abs_f(d) <= tol) members |= uint64_t{1} << m;
        }
        if (above > tol && below < -tol) continue;          // points on both sides: not a face
        if (members == all) return Error::degenerate_hull;  // every point on one plane
        if (above > tol) normal = -normal;                  // the points lie above: flip
        // Already found, or inside a face already found; a face found before that lies inside
        // this one gives way to it.
        bool known = false;
        for (uint32_t f = 0; f < face_count && !known; ++f)
          known = (members & ~faces[f].members) == 0;
        if (known) continue;
        uint32_t kept = 0;
        for (uint32_t f = 0; f < face_count; ++f)
          if ((faces[f].members & ~members) != 0) faces[kept++] = faces[f];
        face_count = kept;
        if (face_count == kMaxHullFaces * 2) return Error::degenerate_hull;
        faces[face_count++] = FaceCandidate{normal, members};
      }
    }
  }

  // 3. Face polygons; the vertices are the points some face has as a corner.
  uint8_t corners[kMaxHullFaces * 2][kMaxHullPoints];
  uint32_t corner_count[kMaxHullFaces * 2];
  uint64_t used = 0;
  const float tol_area = tol * size;
  for (uint32_t f = 0; f < face_count; ++f) {
    corner_count[f] = order_face(p, faces[f].members, faces[f].normal, tol_area, corners[f]);
    if (corner_count[f] < 3) return Error::degenerate_hull;
    for (uint32_t c = 0; c < corner_count[f]; ++c)
      used |= uint64_t{1} << corners[f][c];
  }
  if (face_count < 4 || face_count > kMaxHullFaces) return Error::degenerate_hull;
  uint8_t remap[kMaxHullPoints];
  HullGeometry h;
  for (uint32_t i = 0; i < n; ++i) {
    if ((used >> i & 1u) == 0) continue;
    remap[i] = static_cast<uint8_t>(h.vertex_count);
    h.vertices[h.vertex_count++] = p[i];
  }
  uint32_t total = 0;
  for (uint32_t f = 0; f < face_count; ++f) {
    if (total + corner_count[f] > kMaxHullFaceVertices) return Error::degenerate_hull;
    h.face_first[f] = static_cast<uint16_t>(total);
    h.face_size[f] = static_cast<uint8_t>(corner_count[f]);
    for (uint32_t c = 0; c < corner_count[f]; ++c)
      h.face_vertices[total++] = remap[corners[f][c]];
  }
  h.face_count = face_count;

  // 4. Edges, each the side of two faces in opposite directions.
  for (uint32_t f = 0; f < face_count; ++f) {
    for (uint32_t c = 0; c < h.face_size[f]; ++c) {
      const uint8_t a = h.face_vertices[h.face_first[f] + c];
      const uint8_t b = h.face_vertices[h.face_first[f] + (c + 1) % h.face_size[f]];
      bool paired = false;
      for (uint32_t e = 0; e < h.edge_count; ++e) {
        if (h.edge_vertices[e][0] == a && h.edge_vertices[e][1] == b)
          return Error::degenerate_hull;  // the same side twice in one direction
        if (h.edge_vertices[e][0] == b && h.edge_vertices[e][1] == a) {
          if (h.edge_faces[e][1] != h.edge_faces[e][0]) return Error::degenerate_hull;
          h.edge_faces[e][1] = static_cast<uint8_t>(f);
          paired = true;
          break;
        }
      }
      if (paired) continue;
      if (h.edge_count == kMaxHullEdges) return Error::degenerate_hull;
      h.edge_vertices[h.edge_count][0] = a;
      h.edge_vertices[h.edge_count][1] = b;
      h.edge_faces[h.edge_count][0] = static_cast<uint8_t>(f);
      h.edge_faces[h.edge_count][1] = static_cast<uint8_t>(f);  // until its pair is seen
      h.edge_count += 1;
    }
  }
  for (uint32_t e = 0; e < h.edge_count; ++e)
    if (h.edge_faces[e][0] == h.edge_faces[e][1]) return Error::degenerate_hull;
  if (h.vertex_count + h.face_count != h.edge_count + 2) return Error::degenerate_hull;

  // Mass properties about the first vertex, then about the centre of mass.
  const Vec3 origin = h.vertices[0];
  float volume6 = 0.0f;
  Vec3 moment{};
  Sym3 second;
  for (uint32_t f = 0; f < h.face_count; ++f) {
    const uint8_t* fv = &h.face_vertices[h.face_first[f]];
    const Vec3 a = h.vertices[fv[0]] - origin;
    for (uint32_t c = 1; c + 1 < h.face_size[f]; ++c) {
      const Vec3 b = h.vertices[fv[c]] - origin;
      const Vec3 d = h.vertices[fv[c + 1]] - origin;
      const float det = dot(a, cross(b, d));
      const Vec3 s = a + b + d;
      volume6 += det;
      moment += s * det;
      const float w = det / 120.0f;
      add_outer(&second, s, s, w);
      add_outer(&second, a, a, w);
      add_outer(&second, b, b, w);
      add_outer(&second, d, d, w);
    }
  }
  const float volume = volume6 / 6.0f;
  if (!(volume > 1.0e-6f * size * size * size)) return Error::degenerate_hull;
  const Vec3 m = moment * (1.0f / (4.0f * volume6));
  add_outer(&second, m, m, -volume);
  const float trace = second.a[0][0] + second.a[1][1] + second.a[2][2];
  Sym3 inertia;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      inertia.a[i][j] = (i == j ? trace : 0.0f) - second.a[i][j];
  if (!inertia_detail::principal_axes(inertia, &h.principal_inertia, &h.principal_frame))
    return Error::degenerate_hull;
  h.volume = volume;
  h.centre_of_mass = origin + m;

  // Move the solid so its centre of mass is the origin; then the planes, radius and box.
  for (uint32_t i = 0; i < h.vertex_count; ++i)
    h.vertices[i] = h.vertices[i] - h.centre_of_mass;
  h.lower = h.vertices[0];
  h.upper = h.vertices[0];
  for (uint32_t i = 0; i < h.vertex_count; ++i) {
    const float r = length(h.vertices[i]);
    if (r > h.radius) h.radius = r;
    h.lower = min_elements(h.lower, h.vertices[i]);
    h.upper = max_elements(h.upper, h.vertices[i]);
  }
  for (uint32_t f = 0; f < h.face_count; ++f) {
    // Newell's normal of the polygon, then the plane through its outermost corner.
    const uint8_t* fv = &h.face_vertices[h.face_first[f]];
    Vec3 normal{};
    for (uint32_t c = 0; c < h.face_size[f]; ++c) {
      const Vec3 a = h.vertices[fv[c]], b = h.vertices[fv[(c + 1) % h.face_size[f]]];
      normal +=
          Vec3{(a.y - b.y) * (a.z + b.z), (a.z - b.z) * (a.x + b.x), (a.x - b.x) * (a.y + b.y)};
    }
    normal = normalize_or(normal, faces[f].normal);
    float offset = dot(normal, h.vertices[fv[0]]);
    for (uint32_t c = 1; c < h.face_size[f]; ++c) {
      const float d = dot(normal, h.vertices[fv[c]]);
      if (d > offset) offset = d;
    }
    h.face_normals[f] = normal;
    h.face_offsets[f] = offset;
  }
  *out = h;
  return Error::none;
}

PolyView view_of(const HullGeometry& hull) {
  PolyView v;
  v.vertex_count = hull.vertex_count;
  v.face_count = hull.face_count;
  v.edge_count = hull.edge_count;
  v.vertices = hull.vertices;
  v.face_normals = hull.face_normals;
  v.face_offsets = hull.face_offsets;
  v.face_first = hull.face_first;
  v.face_size = hull.face_size;
  v.face_vertices = hull.face_vertices;
  v.edge_vertices = hull.edge_vertices;
  v.edge_faces = hull.edge_faces;
  return v;
}

BoxPolyhedron box_polyhedron(Vec3 h) {
  BoxPolyhedron b;
  for (int i = 0; i < 8; ++i) {
    b.vertices[i] =
        Vec3{(i & 1) != 0 ? h.x : -h.x, (i & 2) != 0 ? h.y : -h.y, (i & 4) != 0 ? h.z : -h.z};
  }
  b.offsets[0] = h.x;
  b.offsets[1] = h.x;
  b.offsets[2] = h.y;
  b.offsets[3] = h.y;
  b.offsets[4] = h.z;
  b.offsets[5] = h.z;
  return b;
}

PolyView BoxPolyhedron::view() const {
  PolyView v;
  v.vertex_count = 8;
  v.face_count = 6;
  v.edge_count = 12;
  v.vertices = vertices;
  v.face_normals = kBoxNormals;
  v.face_offsets = offsets;
  v.face_first = kBoxFaceFirst;
  v.face_size = kBoxFaceSize;
  v.face_vertices = kBoxFaceVertices;
  v.edge_vertices = kBoxTopology.edge_vertices;
  v.edge_faces = kBoxTopology.edge_faces;
  return v;
}

}  // namespace lockstep::sim
