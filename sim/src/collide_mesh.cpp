// Narrowphase against level geometry (collide_mesh.h).
//
// Each triangle near the piece is collided as a prism: the triangle and a copy of it
// kPrismDepth behind it, so the hull routines (separating axes, face clipping) give its
// manifold. The prism makes a triangle one-sided with a thickness: a body in front of it, or
// overlapping it by less than the prism's depth, is pushed out through the nearest face, which
// for a body resting on the surface is the front; nothing behind the prism is touched.
//
// Internal edges. A contact whose normal leans away from the triangle's front normal towards an
// edge (or corner) comes from that edge. When every edge it leans over is inactive (mesh.h: flat,
// gently bent or a valley), the neighbour's own face holds the body there, and the edge normal
// would only kick it up or sideways: the contact is found again against the triangle's plane
// instead, keeping the points over the triangle. A body sliding or rolling across a flat seam so
// sees one normal, the face's, on both sides.
//
// The triangles' manifolds are merged by normal (within kMergeCos, in the order the tree gives
// the triangles) into at most kMaxLevelManifolds manifolds, each cut to four points by
// reduce_to_four: a box on a flat floor of many triangles has one manifold of four corners.
#include "collide_mesh.h"

#include "collide_internal.h"
#include "hull.h"
#include "mesh.h"
#include "shape.h"

namespace lockstep::sim {

namespace {

using namespace collide_detail;

constexpr float kPrismDepth = 1.0f;             // m behind the front face
constexpr float kFaceCos = 0.999999f;           // a normal this close to the face's is the face's
constexpr float kMergeCos = 0.9962f;            // 5°: triangles' manifolds merged into one
constexpr float kInsideBand = 1.0e-3f;          // m: a plane point this far outside still counts
constexpr float kSamePointSq = 2.5e-5f;         // m²: points of a group closer than 5 mm are one
constexpr uint32_t kMaxTrianglesPerCall = 128;  // scratch on the stack (wasm's is small)
constexpr int kMaxCandidatePoints = 256;

// The prism's topology: corners 0..2 the front triangle, 3..5 the back; faces front, three
// sides (side k over edge k), back; each edge a side of its first face in its own direction.
constexpr uint8_t kPrismFaceVertices[18] = {0, 1, 2, 0, 3, 4, 1, 1, 4, 5, 2, 2, 5, 3, 0, 3, 5, 4};
constexpr uint16_t kPrismFaceFirst[5] = {0, 3, 7, 11, 15};
constexpr uint8_t kPrismFaceSize[5] = {3, 4, 4, 4, 3};
constexpr uint8_t kPrismEdgeVertices[9][2] = {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {1, 4},
                                              {2, 5}, {3, 4}, {4, 5}, {5, 3}};
constexpr uint8_t kPrismEdgeFaces[9][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 3}, {2, 1},
                                           {3, 2}, {1, 4}, {2, 4}, {3, 4}};

struct Prism {
  Vec3 vertices[6];
  Vec3 normals[5];
  float offsets[5];
  PolyView view() const {
    PolyView v;
    v.vertex_count = 6;
    v.face_count = 5;
    v.edge_count = 9;
    v.vertices = vertices;
    v.face_normals = normals;
    v.face_offsets = offsets;
    v.face_first = kPrismFaceFirst;
    v.face_size = kPrismFaceSize;
    v.face_vertices = kPrismFaceVertices;
    v.edge_vertices = kPrismEdgeVertices;
    v.edge_faces = kPrismEdgeFaces;
    return v;
  }
};

// The prism of t about its centroid c (the returned frame's origin).
Prism make_prism(const LevelTriangle& t, Vec3 c) {
  Prism p;
  const Vec3 back = t.normal * kPrismDepth;
  for (int k = 0; k < 3; ++k) {
    p.vertices[k] = t.v[k] - c;
    p.vertices[k + 3] = t.v[k] - c - back;
  }
  p.normals[0] = t.normal;
  for (int k = 0; k < 3; ++k)
    p.normals[1 + k] = normalize_or(cross(t.v[(k + 1) % 3] - t.v[k], t.normal), Vec3{1, 0, 0});
  p.normals[4] = -t.normal;
  for (int f = 0; f < 5; ++f)
    p.offsets[f] = dot(p.normals[f], p.vertices[kPrismFaceVertices[kPrismFaceFirst[f]]]);
  return p;
}

uint32_t level_feature(uint32_t triangle, uint32_t sub) {
  const uint32_t mixed = (sub * 0x9E3779B1u) >> 26;  // 6 bits of the routine's own id
  return feature_id(kTagLevel, (triangle << 6) | mixed);
}

// Whether a point (body space of the level) lies over the triangle, within kInsideBand.
bool over_triangle(const LevelTriangle& t, Vec3 p) {
  for (int k = 0; k < 3; ++k) {
    const Vec3 side = normalize_or(cross(t.v[(k + 1) % 3] - t.v[k], t.normal), Vec3{});
    if (dot(p - t.v[k], side) > kInsideBand) return false;
  }
  return true;
}

// collide_level's arrays, on the stack and left uninitialized (variant members): each entry is
// written before it is read, and clearing 10 KB a call would cost more than most calls' work.
struct Scratch {
  union {
    LevelTriangle triangles[kMaxTrianglesPerCall];
  };
  union {
    Vec3 position[kMaxCandidatePoints];
  };
  union {
    Vec3 group_position[kMaxCandidatePoints];
  };
  Scratch() {}
};

// The manifold of the piece (A, at xa in the level's frame) against one triangle.
void collide_triangle(const ShapeDef& piece, const Transform& xa, const ShapeLibrary& library,
                      const LevelTriangle& t, float margin, Manifold* m) {
  const Vec3 c = (t.v[0] + t.v[1] + t.v[2]) * (1.0f / 3.0f);
  const Prism prism = make_prism(t, c);
  const Transform xt{c, Quat{}};
  *m = Manifold{};
  switch (piece.type) {
    case ShapeType::sphere:
    case ShapeType::capsule:
      collide_round_poly(piece, xa, prism.view(), xt, margin, m);
      break;
    case ShapeType::box: {
      const BoxPolyhedron bp = box_polyhedron(piece.half_extents);
      collide_poly_poly(bp.view(), xa, prism.view(), xt, margin, m);
      break;
    }
    case ShapeType::hull:
      collide_poly_poly(view_of(library.hull(piece)), xa, prism.view(), xt, margin, m);
      break;
    default:
      return;
  }
  if (m->count == 0) return;
  const Vec3 n = m->normal;
  const float along = dot(n, t.normal);
  if (along >= kFaceCos) return;
  // Which edges the normal leans over; a genuine edge contact needs one of them active.
  const Vec3 lean = n - t.normal * along;
  bool active = false;
  for (uint32_t k = 0; k < 3; ++k) {
    const Vec3 side = cross(t.v[(k + 1) % 3] - t.v[k], t.normal);
    if (dot(lean, side) > 0.0f && (t.active_edges & (1u << k)) != 0) active = true;
  }
  if (active) return;
  // Against the triangle's plane instead, keeping the points over the triangle.
  ShapeDef plane;
  plane.type = ShapeType::plane;
  plane.plane_normal = t.normal;
  plane.plane_offset = dot(t.normal, t.v[0]);
  Manifold pm;
  collide(piece, xa, plane, Transform{}, library, margin, &pm);
  *m = Manifold{};
  m->normal = t.normal;
  for (int k = 0; k < pm.count; ++k) {
    if (!over_triangle(t, pm.points[k].position)) continue;
    add_point(m, pm.points[k].position, pm.points[k].separation, pm.points[k].feature);
  }
}

}  // namespace

uint32_t level_feature_triangle(uint32_t feature) {
  return (feature & 0x0fffffffu) >> 6;
}

uint32_t collide_level(const ShapeDef& piece, const Transform& xa, const ShapeDef& level,
                       const Transform& xb, const ShapeLibrary& library, float margin,
                       Manifold* out, uint32_t* dropped) {
  // The piece in the level's frame.
  const Transform local{inv_rotate(xb.q, xa.p - xb.p), conjugate(xb.q) * xa.q};
  const Aabb box = compute_aabb(piece, library, local, margin);
  Scratch scratch;
  LevelTriangle* triangles = scratch.triangles;
  uint32_t found = 0;
  if (level.type == ShapeType::mesh) {
    if (level.mesh >= library.mesh_count) return 0;
    found = gather_mesh_triangles(library.meshes[level.mesh], box.lower, box.upper, triangles,
                                  kMaxTrianglesPerCall);
  } else {
    if (level.mesh >= library.heightfield_count) return 0;
    found = gather_heightfield_triangles(library.heightfields[level.mesh], box.lower, box.upper,
                                         triangles, kMaxTrianglesPerCall);
  }
  if (found > kMaxTrianglesPerCall) {
    if (dropped != nullptr) *dropped += found - kMaxTrianglesPerCall;
    found = kMaxTrianglesPerCall;
  }
  // Candidate points, each with its group.
  Vec3* position = scratch.position;
  float separation[kMaxCandidatePoints];
  uint32_t feature[kMaxCandidatePoints];
  uint8_t group_of[kMaxCandidatePoints];
  Vec3 group_normal[kMaxLevelManifolds];
  uint32_t groups = 0;
  int count = 0;
  // A triangle whose plane the piece does not reach (in front beyond the margin, or behind the
  // prism) cannot touch it: the piece's extent along the normal, exact for spheres, capsules and
  // boxes, the bounding ball for hulls.
  const float reach = bounding_radius(piece, library);
  const Vec3 centre = local.p;
  const Mat3 axes = to_mat3(local.q);
  for (uint32_t i = 0; i < found; ++i) {
    const LevelTriangle& t = triangles[i];
    const float height = dot(t.normal, centre - t.v[0]);
    float extent = reach;
    if (piece.type == ShapeType::sphere) {
      extent = piece.radius;
    } else if (piece.type == ShapeType::capsule) {
      extent = piece.radius + abs_f(dot(t.normal, axes.c1)) * piece.half_height;
    } else if (piece.type == ShapeType::box) {
      const Vec3 h = piece.half_extents;
      extent = abs_f(dot(t.normal, axes.c0)) * h.x + abs_f(dot(t.normal, axes.c1)) * h.y +
               abs_f(dot(t.normal, axes.c2)) * h.z;
    }
    if (height > extent + margin || height < -(reach + margin + kPrismDepth)) continue;
    Manifold m;
    collide_triangle(piece, local, library, triangles[i], margin, &m);
    if (m.count == 0) continue;
    uint32_t g = 0;
    float best = -2.0f;
    for (uint32_t j = 0; j < groups; ++j) {
      const float d = dot(m.normal, group_normal[j]);
      if (d > best) best = d, g = j;
    }
    if (!(best >= kMergeCos) && groups < kMaxLevelManifolds) {
      g = groups++;
      group_normal[g] = m.normal;
    }
    for (int k = 0; k < m.count && count < kMaxCandidatePoints; ++k) {
      // A point another triangle of the group found already (a ball over a seam touches both
      // triangles at one point): kept once, or the seam would double its stiffness and change
      // the count of points, and so the warm start, as the ball rolls over it.
      bool repeated = false;
      for (int q = 0; q < count && !repeated; ++q) {
        repeated =
            group_of[q] == g && length_squared(position[q] - m.points[k].position) <= kSamePointSq;
      }
      if (repeated) continue;
      position[count] = m.points[k].position;
      separation[count] = m.points[k].separation;
      feature[count] = level_feature(triangles[i].index, m.points[k].feature);
      group_of[count] = static_cast<uint8_t>(g);
      ++count;
    }
  }
  const Mat3 r = to_mat3(xb.q);
  Vec3* gp = scratch.group_position;
  for (uint32_t g = 0; g < groups; ++g) {
    float gs[kMaxCandidatePoints];
    uint32_t gf[kMaxCandidatePoints];
    int n = 0;
    for (int k = 0; k < count; ++k) {
      if (group_of[k] != g) continue;
      gp[n] = position[k];
      gs[n] = separation[k];
      gf[n] = feature[k];
      ++n;
    }
    Manifold& m = out[g];
    m = Manifold{};
    int keep[kMaxManifoldPoints];
    const int kept = reduce_to_four(gp, gs, gf, n, group_normal[g], m, keep);
    m.normal = r * group_normal[g];
    for (int k = 0; k < kept; ++k)
      add_point(&m, r * gp[keep[k]] + xb.p, gs[keep[k]], gf[keep[k]]);
  }
  return groups;
}

}  // namespace lockstep::sim
