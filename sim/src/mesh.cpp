// Level geometry (mesh.h): building meshes and heightfields, gathering their triangles, rays.
//
// The tree is built top-down as a binary tree: a node's triangles are ordered by their centroids
// along the axis where the centroids spread most, ties broken by the triangle's index (a total
// order, so every standard library sorts them alike), and split at the median. Leaves hold up to
// kLeafTriangles. It is then stored four-wide: each stored node takes a binary node's children,
// an inner child replaced by its own two, so a query visits about a third as many nodes and tests
// four boxes laid side by side at each. Children stay in tree order, so a query meets the
// triangles in the same order as the binary tree would give them. Only + − × ÷ and comparisons:
// the same tree on every target.
//
// Active edges: an edge shared by two triangles pushes sideways only where it is a ridge (the
// other triangle's far corner below this one's plane) whose faces turn by more than
// kActiveEdgeAngle. Over a flat or gently bent surface, and in a valley, the faces on both sides
// push a body out on their own; an edge contact there would only kick it (docs/physics.md).
#include "mesh.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "collide_internal.h"

namespace lockstep::sim {

namespace {

using collide_detail::abs_f;

constexpr uint32_t kLeafTriangles = 4;
// cos of the angle under which a ridge is smooth enough to be an inactive edge (5°).
constexpr float kActiveEdgeCos = 0.9962f;

bool coordinate_ok(Vec3 v) {
  return is_finite(v) && abs_f(v.x) <= kMaxLevelCoordinate && abs_f(v.y) <= kMaxLevelCoordinate &&
         abs_f(v.z) <= kMaxLevelCoordinate;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Digest {
  XXH3_state_t state;
  Digest() { XXH3_64bits_reset(&state); }
  void u32(uint32_t v) {
    const uint8_t b[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                          static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
    XXH3_64bits_update(&state, b, 4);
  }
  void f32(float f) { u32(bits_of(f)); }
};

// A triangle's unit normal, false when its corners are (nearly) on a line: the cross product
// shorter than 1e-6 of the product of two edge lengths, or an edge shorter than 1 µm.
bool triangle_normal(Vec3 a, Vec3 b, Vec3 c, Vec3* n) {
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 x = cross(e1, e2);
  const float l1 = length_squared(e1), l2 = length_squared(e2), lx = length_squared(x);
  if (!(l1 > 1.0e-12f && l2 > 1.0e-12f && length_squared(c - b) > 1.0e-12f)) return false;
  if (!(lx > 1.0e-12f * l1 * l2)) return false;
  *n = x * (1.0f / std::sqrt(lx));
  return true;
}

// Whether the edge from a of a triangle with normal n is active, given the neighbour's normal
// and its corner off the edge.
bool edge_active(Vec3 n, Vec3 a, Vec3 neighbour_normal, Vec3 neighbour_far) {
  const bool ridge = dot(n, neighbour_far - a) < 0.0f;
  return ridge && dot(n, neighbour_normal) < kActiveEdgeCos;
}

Vec3 centroid(const LevelTriangle& t) {
  return (t.v[0] + t.v[1] + t.v[2]) * (1.0f / 3.0f);
}

void triangle_box(const LevelTriangle& t, Vec3* lo, Vec3* hi) {
  *lo = min_elements(min_elements(t.v[0], t.v[1]), t.v[2]);
  *hi = max_elements(max_elements(t.v[0], t.v[1]), t.v[2]);
}

// The binary tree the four-wide one is made from (the build's temporary).
struct BinaryNode {
  Vec3 lower;
  uint32_t first = 0;  // inner: the children are first and first + 1; leaf: the first triangle
  Vec3 upper;
  uint32_t count = 0;  // > 0: a leaf of this many triangles
};

// Builds binary node `node` over triangles [first, first + count).
void build_node(MeshGeometry& m, std::vector<BinaryNode>& nodes, uint32_t node, uint32_t first,
                uint32_t count) {
  Vec3 lo, hi;
  triangle_box(m.triangles[first], &lo, &hi);
  Vec3 clo = centroid(m.triangles[first]), chi = clo;
  for (uint32_t i = first + 1; i < first + count; ++i) {
    Vec3 a, b;
    triangle_box(m.triangles[i], &a, &b);
    lo = min_elements(lo, a);
    hi = max_elements(hi, b);
    const Vec3 c = centroid(m.triangles[i]);
    clo = min_elements(clo, c);
    chi = max_elements(chi, c);
  }
  nodes[node].lower = lo;
  nodes[node].upper = hi;
  if (count <= kLeafTriangles) {
    nodes[node].first = first;
    nodes[node].count = count;
    return;
  }
  const Vec3 spread = chi - clo;
  const int axis =
      spread.x >= spread.y && spread.x >= spread.z ? 0 : (spread.y >= spread.z ? 1 : 2);
  auto* begin = m.triangles.data() + first;
  // Centroid, then the unique triangle index: a total order.
  const auto along = [axis](const LevelTriangle& a, const LevelTriangle& b) {
    const float ca = element(centroid(a), axis), cb = element(centroid(b), axis);
    if (ca != cb) return ca < cb;
    return a.index < b.index;
  };
  std::sort(begin, begin + count, along);  // determinism-lint: allow
  const uint32_t child = static_cast<uint32_t>(nodes.size());
  nodes.push_back(BinaryNode{});
  nodes.push_back(BinaryNode{});
  nodes[node].first = child;
  nodes[node].count = 0;
  const uint32_t half = count / 2;
  build_node(m, nodes, child, first, half);
  build_node(m, nodes, child + 1, first + half, count - half);
}

void set_slot(MeshNode& w, uint32_t slot, const BinaryNode& b, uint32_t child, uint8_t count) {
  w.lower_x[slot] = b.lower.x;
  w.lower_y[slot] = b.lower.y;
  w.lower_z[slot] = b.lower.z;
  w.upper_x[slot] = b.upper.x;
  w.upper_y[slot] = b.upper.y;
  w.upper_z[slot] = b.upper.z;
  w.child[slot] = child;
  w.count[slot] = count;
}

// Appends the four-wide node whose children are binary node b's (an inner child replaced by its
// two), and those of its inner children after it; returns its index.
uint32_t build_wide(MeshGeometry& m, const std::vector<BinaryNode>& nodes, const BinaryNode& b) {
  const uint32_t index = static_cast<uint32_t>(m.nodes.size());
  MeshNode empty{};
  for (uint32_t slot = 0; slot < 4; ++slot) {
    // No box meets this one: its lower corner is above and its upper below every coordinate.
    empty.lower_x[slot] = empty.lower_y[slot] = empty.lower_z[slot] = FLT_MAX;
    empty.upper_x[slot] = empty.upper_y[slot] = empty.upper_z[slot] = -FLT_MAX;
    empty.count[slot] = MeshNode::kUnusedSlot;
  }
  m.nodes.push_back(empty);
  // The slots in tree order: binary nodes that are leaves or still to be made four-wide.
  uint32_t slots[4];
  uint32_t used = 0;
  if (b.count > 0) {
    slots[used++] = UINT32_MAX;  // b itself is a leaf (a mesh of at most kLeafTriangles)
  } else {
    for (uint32_t c = 0; c < 2; ++c) {
      const BinaryNode& child = nodes[b.first + c];
      if (child.count > 0) {
        slots[used++] = b.first + c;
      } else {
        slots[used++] = child.first;
        slots[used++] = child.first + 1;
      }
    }
  }
  for (uint32_t slot = 0; slot < used; ++slot) {
    const BinaryNode& s = slots[slot] == UINT32_MAX ? b : nodes[slots[slot]];
    if (s.count > 0) {
      set_slot(m.nodes[index], slot, s, s.first, static_cast<uint8_t>(s.count));
    } else {
      const uint32_t child = build_wide(m, nodes, s);
      set_slot(m.nodes[index], slot, s, child, 0);
    }
  }
  return index;
}

Error build_mesh(const MeshDef& def, MeshGeometry* out, uint32_t* triangle_budget) {
  const size_t vertex_count = def.vertices.size();
  if (def.indices.size() % 3 != 0 || vertex_count > 0xffffffffu) return Error::invalid_mesh;
  const size_t triangle_count = def.indices.size() / 3;
  if (triangle_count > *triangle_budget) return Error::capacity_mesh;
  for (const Vec3& v : def.vertices) {
    if (!coordinate_ok(v)) return Error::invalid_mesh;
  }
  for (uint32_t index : def.indices) {
    if (index >= vertex_count) return Error::invalid_mesh;
  }
  // Weld corners at the same position (bit for bit) so adjacency does not depend on whether a
  // file shares its vertices: each vertex maps to the lowest index with its bits.
  std::vector<uint32_t> order(vertex_count);
  for (uint32_t i = 0; i < vertex_count; ++i)
    order[i] = i;
  // The weld key: the coordinates' bit patterns (−0 as +0), then the index (a total order).
  const auto same_position = [&def](uint32_t a, uint32_t b) {
    const Vec3 va = def.vertices[a], vb = def.vertices[b];
    return bits_of(va.x + 0.0f) == bits_of(vb.x + 0.0f) &&
           bits_of(va.y + 0.0f) == bits_of(vb.y + 0.0f) &&
           bits_of(va.z + 0.0f) == bits_of(vb.z + 0.0f);
  };
  // Every sort below has a total order (ties broken by a unique index), so every standard library
  // sorts alike.
  const auto key_less = [&def](uint32_t a, uint32_t b) {
    const Vec3 va = def.vertices[a], vb = def.vertices[b];
    const uint32_t ka[3] = {bits_of(va.x + 0.0f), bits_of(va.y + 0.0f), bits_of(va.z + 0.0f)};
    const uint32_t kb[3] = {bits_of(vb.x + 0.0f), bits_of(vb.y + 0.0f), bits_of(vb.z + 0.0f)};
    for (int k = 0; k < 3; ++k) {
      if (ka[k] != kb[k]) return ka[k] < kb[k];
    }
    return a < b;
  };
  std::sort(order.begin(), order.end(), key_less);  // determinism-lint: allow
  std::vector<uint32_t> weld(vertex_count);
  for (size_t i = 0; i < vertex_count; ++i) {
    const bool same = i > 0 && same_position(order[i - 1], order[i]);
    weld[order[i]] = same ? weld[order[i - 1]] : order[i];
  }
  MeshGeometry& m = *out;
  m = MeshGeometry{};
  m.triangles.reserve(triangle_count);
  std::vector<uint32_t> corners;  // welded corner indices of kept triangles, 3 each
  corners.reserve(3 * triangle_count);
  for (uint32_t t = 0; t < triangle_count; ++t) {
    LevelTriangle tri;
    uint32_t c[3];
    for (uint32_t k = 0; k < 3; ++k) {
      c[k] = weld[def.indices[3 * t + k]];
      tri.v[k] = def.vertices[def.indices[3 * t + k]];
    }
    if (!triangle_normal(tri.v[0], tri.v[1], tri.v[2], &tri.normal)) {
      ++m.dropped_triangles;
      continue;
    }
    tri.index = t;
    m.triangles.push_back(tri);
    corners.insert(corners.end(), c, c + 3);
  }
  if (m.triangles.empty()) return Error::invalid_mesh;
  *triangle_budget -= static_cast<uint32_t>(triangle_count);
  // Adjacency: every edge as (lower corner, upper corner, kept triangle, edge), sorted; equal
  // corner pairs are one edge.
  struct EdgeRef {
    uint32_t lo, hi, tri, k;
  };
  std::vector<EdgeRef> edges;
  edges.reserve(corners.size());
  for (uint32_t t = 0; t < m.triangles.size(); ++t) {
    for (uint32_t k = 0; k < 3; ++k) {
      const uint32_t a = corners[3 * t + k], b = corners[3 * t + (k + 1) % 3];
      edges.push_back(EdgeRef{a < b ? a : b, a < b ? b : a, t, k});
    }
  }
  // Integers, and (triangle, edge) is unique: a total order.
  const auto edge_less = [](const EdgeRef& x, const EdgeRef& y) {
    if (x.lo != y.lo) return x.lo < y.lo;
    if (x.hi != y.hi) return x.hi < y.hi;
    if (x.tri != y.tri) return x.tri < y.tri;
    return x.k < y.k;
  };
  std::sort(edges.begin(), edges.end(), edge_less);  // determinism-lint: allow
  for (size_t i = 0; i < edges.size();) {
    size_t j = i + 1;
    while (j < edges.size() && edges[j].lo == edges[i].lo && edges[j].hi == edges[i].hi)
      ++j;
    for (size_t e = i; e < j; ++e) {
      LevelTriangle& t = m.triangles[edges[e].tri];
      bool active = true;
      if (j - i == 2) {
        const EdgeRef& other = edges[e == i ? i + 1 : i];
        const LevelTriangle& o = m.triangles[other.tri];
        active = edge_active(t.normal, t.v[edges[e].k], o.normal, o.v[(other.k + 2) % 3]);
      }
      if (active) t.active_edges |= 1u << edges[e].k;
    }
    i = j;
  }
  std::vector<BinaryNode> binary;
  binary.reserve(2 * (m.triangles.size() / kLeafTriangles + 1));
  binary.push_back(BinaryNode{});
  build_node(m, binary, 0, 0, static_cast<uint32_t>(m.triangles.size()));
  m.nodes.reserve(binary.size() / 2 + 1);
  build_wide(m, binary, binary[0]);
  m.nodes.shrink_to_fit();
  m.lower = binary[0].lower;
  m.upper = binary[0].upper;
  return Error::none;
}

Error build_heightfield(const HeightfieldDef& def, HeightfieldGeometry* out,
                        uint32_t* triangle_budget) {
  if (def.columns < 2 || def.rows < 2 || def.columns > 65536 || def.rows > 65536) {
    return Error::invalid_mesh;
  }
  const uint64_t samples = uint64_t{def.columns} * def.rows;
  if (def.heights.size() != samples) return Error::invalid_mesh;
  if (!(def.spacing_x > 1.0e-3f && def.spacing_x <= 1.0e3f && def.spacing_z > 1.0e-3f &&
        def.spacing_z <= 1.0e3f)) {
    return Error::invalid_mesh;
  }
  if (!(static_cast<float>(def.columns - 1) * def.spacing_x <= kMaxLevelCoordinate &&
        static_cast<float>(def.rows - 1) * def.spacing_z <= kMaxLevelCoordinate)) {
    return Error::invalid_mesh;
  }
  const uint64_t triangles = 2 * uint64_t{def.columns - 1} * (def.rows - 1);
  if (triangles > *triangle_budget) return Error::capacity_mesh;
  float lo = 0, hi = 0;
  for (size_t i = 0; i < def.heights.size(); ++i) {
    const float h = def.heights[i];
    if (!(std::isfinite(h) && abs_f(h) <= kMaxLevelCoordinate)) return Error::invalid_mesh;
    if (i == 0 || h < lo) lo = h;
    if (i == 0 || h > hi) hi = h;
  }
  *triangle_budget -= static_cast<uint32_t>(triangles);
  HeightfieldGeometry& g = *out;
  g.heights.assign(def.heights.begin(), def.heights.end());
  g.columns = def.columns;
  g.rows = def.rows;
  g.spacing_x = def.spacing_x;
  g.spacing_z = def.spacing_z;
  g.lower = Vec3{0, lo, 0};
  g.upper = Vec3{static_cast<float>(def.columns - 1) * def.spacing_x, hi,
                 static_cast<float>(def.rows - 1) * def.spacing_z};
  return Error::none;
}

bool boxes_meet(Vec3 alo, Vec3 ahi, Vec3 blo, Vec3 bhi) {
  return alo.x <= bhi.x && blo.x <= ahi.x && alo.y <= bhi.y && blo.y <= ahi.y && alo.z <= bhi.z &&
         blo.z <= ahi.z;
}

Vec3 sample(const HeightfieldGeometry& g, int c, int r) {
  return Vec3{static_cast<float>(c) * g.spacing_x,
              g.heights[static_cast<size_t>(r) * g.columns + static_cast<size_t>(c)],
              static_cast<float>(r) * g.spacing_z};
}

bool cell_exists(const HeightfieldGeometry& g, int c, int r) {
  return c >= 0 && r >= 0 && c + 1 < static_cast<int>(g.columns) &&
         r + 1 < static_cast<int>(g.rows);
}

// Triangle `half` (0: corners (c,r), (c+1,r+1), (c+1,r); 1: (c,r), (c,r+1), (c+1,r+1)) of cell
// (c, r), without its normal or edges.
void cell_corners(const HeightfieldGeometry& g, int c, int r, int half, Vec3 v[3]) {
  v[0] = sample(g, c, r);
  v[1] = half == 0 ? sample(g, c + 1, r + 1) : sample(g, c, r + 1);
  v[2] = half == 0 ? sample(g, c + 1, r) : sample(g, c + 1, r + 1);
}

Vec3 raw_normal(const Vec3 v[3]) {
  return normalize_or(cross(v[1] - v[0], v[2] - v[0]), Vec3{0, 1, 0});
}

// The whole triangle with its active edges, from its neighbours in the grid. Edges of half 0:
// diagonal (half 1 of the cell), x = c + 1 (half 1 of cell c + 1), z = r (half 1 of cell
// r − 1); of half 1: x = c (half 0 of cell c − 1), z = r + 1 (half 0 of cell r + 1), diagonal.
LevelTriangle cell_triangle(const HeightfieldGeometry& g, int c, int r, int half) {
  LevelTriangle t;
  cell_corners(g, c, r, half, t.v);
  t.normal = raw_normal(t.v);
  t.index = 2 * (static_cast<uint32_t>(r) * (g.columns - 1) + static_cast<uint32_t>(c)) +
            static_cast<uint32_t>(half);
  struct Neighbour {
    int c, r, half, far;  // far: the neighbour's corner off the shared edge
  };
  const Neighbour n0[3] = {{c, r, 1, 1}, {c + 1, r, 1, 1}, {c, r - 1, 1, 0}};
  const Neighbour n1[3] = {{c - 1, r, 0, 2}, {c, r + 1, 0, 1}, {c, r, 0, 2}};
  const Neighbour* ns = half == 0 ? n0 : n1;
  for (uint32_t k = 0; k < 3; ++k) {
    const Neighbour& n = ns[k];
    bool active = true;
    if (cell_exists(g, n.c, n.r)) {
      Vec3 o[3];
      cell_corners(g, n.c, n.r, n.half, o);
      active = edge_active(t.normal, t.v[k], raw_normal(o), o[n.far]);
    }
    if (active) t.active_edges |= 1u << k;
  }
  return t;
}

// floor(x / spacing) clamped to [0, limit] (x may be anything finite).
int cell_of(float x, float spacing, int limit) {
  const float f = x / spacing;
  if (!(f > 0.0f)) return 0;
  if (!(f < static_cast<float>(limit))) return limit;
  return static_cast<int>(f);
}

}  // namespace

uint64_t level_memory_bytes(const LevelDef& level) {
  uint64_t n = 0;
  for (const MeshDef& m : level.meshes) {
    const uint64_t triangles = m.indices.size() / 3, vertices = m.vertices.size();
    // Kept: the triangles and at most t four-wide nodes (one per inner binary node at most).
    // Temporary: the weld order and map, the corners, the edge list and the binary tree (at most
    // 2t − 1 nodes of 32 bytes).
    n += sizeof(MeshGeometry) + triangles * sizeof(LevelTriangle) + triangles * sizeof(MeshNode);
    n += vertices * 2 * sizeof(uint32_t) + triangles * 3 * sizeof(uint32_t) +
         triangles * 3 * 4 * sizeof(uint32_t) + 2 * triangles * 32;
  }
  for (const HeightfieldDef& h : level.heightfields)
    n += sizeof(HeightfieldGeometry) + uint64_t{h.columns} * h.rows * sizeof(float);
  return n;
}

uint64_t level_digest(const LevelDef& level) {
  if (level.meshes.empty() && level.heightfields.empty()) return 0;
  Digest d;
  d.u32(static_cast<uint32_t>(level.meshes.size()));
  for (const MeshDef& m : level.meshes) {
    d.u32(static_cast<uint32_t>(m.vertices.size()));
    d.u32(static_cast<uint32_t>(m.indices.size()));
    for (const Vec3& v : m.vertices) {
      d.f32(v.x);
      d.f32(v.y);
      d.f32(v.z);
    }
    for (uint32_t i : m.indices)
      d.u32(i);
  }
  d.u32(static_cast<uint32_t>(level.heightfields.size()));
  for (const HeightfieldDef& h : level.heightfields) {
    d.u32(h.columns);
    d.u32(h.rows);
    d.f32(h.spacing_x);
    d.f32(h.spacing_z);
    d.u32(static_cast<uint32_t>(h.heights.size()));
    for (float v : h.heights)
      d.f32(v);
  }
  return XXH3_64bits_digest(&d.state);
}

Error build_level(const LevelDef& level, std::vector<MeshGeometry>* meshes,
                  std::vector<HeightfieldGeometry>* heightfields, LevelStats* stats) {
  *stats = LevelStats{};
  meshes->clear();
  heightfields->clear();
  if (level.meshes.size() > kMaxMeshes || level.heightfields.size() > kMaxHeightfields ||
      level.max_triangles > kMaxLevelTriangles) {
    return Error::capacity_mesh;
  }
  uint32_t budget = level.max_triangles;
  meshes->resize(level.meshes.size());
  for (size_t i = 0; i < level.meshes.size(); ++i) {
    const Error e = build_mesh(level.meshes[i], &(*meshes)[i], &budget);
    if (e != Error::none) return e;
    const MeshGeometry& m = (*meshes)[i];
    stats->triangles += static_cast<uint32_t>(m.triangles.size());
    stats->dropped_triangles += m.dropped_triangles;
    stats->memory_bytes += m.triangles.capacity() * sizeof(LevelTriangle) +
                           m.nodes.capacity() * sizeof(MeshNode) + sizeof(MeshGeometry);
  }
  heightfields->resize(level.heightfields.size());
  for (size_t i = 0; i < level.heightfields.size(); ++i) {
    const Error e = build_heightfield(level.heightfields[i], &(*heightfields)[i], &budget);
    if (e != Error::none) return e;
    const HeightfieldGeometry& h = (*heightfields)[i];
    stats->heightfield_cells += (h.columns - 1) * (h.rows - 1);
    stats->memory_bytes += h.heights.capacity() * sizeof(float) + sizeof(HeightfieldGeometry);
  }
  stats->digest = level_digest(level);
  return Error::none;
}

// A stack entry of the tree walks: a node's index, or a leaf's first triangle with its count in
// the top bits (indices stay below 2^22: kMaxLevelTriangles).
constexpr uint32_t kLeafShift = 29;
constexpr uint32_t kIndexMask = (1u << kLeafShift) - 1;
// Four-wide nodes over at most 2^22 triangles in leaves of up to 4 are at most 11 deep, and each
// level leaves at most three siblings on the stack.
constexpr int kWalkStack = 64;

uint32_t gather_mesh_triangles(const MeshGeometry& mesh, Vec3 lower, Vec3 upper, LevelTriangle* out,
                               uint32_t capacity) {
  uint32_t stack[kWalkStack];
  int top = 0;
  uint32_t n = 0;
  stack[top++] = 0;
  while (top > 0) {
    const uint32_t entry = stack[--top];
    const uint32_t leaf = entry >> kLeafShift, index = entry & kIndexMask;
    if (leaf != 0) {
      for (uint32_t i = index; i < index + leaf; ++i) {
        const LevelTriangle& t = mesh.triangles[i];
        Vec3 lo, hi;
        triangle_box(t, &lo, &hi);
        if (!boxes_meet(lo, hi, lower, upper)) continue;
        if (n < capacity) out[n] = t;
        ++n;
      }
      continue;
    }
    const MeshNode& node = mesh.nodes[index];
    // The four box tests side by side (the compiler may test them at once); unused slots have
    // empty boxes and never meet.
    bool meet[4];
    for (int c = 0; c < 4; ++c) {
      meet[c] = (node.lower_x[c] <= upper.x) & (lower.x <= node.upper_x[c]) &
                (node.lower_y[c] <= upper.y) & (lower.y <= node.upper_y[c]) &
                (node.lower_z[c] <= upper.z) & (lower.z <= node.upper_z[c]);
    }
    // The last slot pushed first, so the first is visited first: tree order.
    for (int c = 3; c >= 0; --c) {
      if (!meet[c]) continue;
      stack[top++] = (static_cast<uint32_t>(node.count[c]) << kLeafShift) | node.child[c];
    }
  }
  return n;
}

uint32_t gather_heightfield_triangles(const HeightfieldGeometry& g, Vec3 lower, Vec3 upper,
                                      LevelTriangle* out, uint32_t capacity) {
  if (!boxes_meet(g.lower, g.upper, lower, upper)) return 0;
  const int last_c = static_cast<int>(g.columns) - 2, last_r = static_cast<int>(g.rows) - 2;
  const int c0 = cell_of(lower.x, g.spacing_x, last_c), c1 = cell_of(upper.x, g.spacing_x, last_c);
  const int r0 = cell_of(lower.z, g.spacing_z, last_r), r1 = cell_of(upper.z, g.spacing_z, last_r);
  uint32_t n = 0;
  for (int r = r0; r <= r1; ++r) {
    for (int c = c0; c <= c1; ++c) {
      for (int half = 0; half < 2; ++half) {
        Vec3 v[3];
        cell_corners(g, c, r, half, v);
        const float lo = std::min(std::min(v[0].y, v[1].y), v[2].y);
        const float hi = std::max(std::max(v[0].y, v[1].y), v[2].y);
        if (hi < lower.y || lo > upper.y) continue;
        if (n < capacity) out[n] = cell_triangle(g, c, r, half);
        ++n;
      }
    }
  }
  return n;
}

bool ray_triangle(Vec3 origin, Vec3 direction, float max_distance, const LevelTriangle& t,
                  float* distance) {
  const Vec3 e1 = t.v[1] - t.v[0], e2 = t.v[2] - t.v[0];
  const Vec3 p = cross(direction, e2);
  const float det = dot(e1, p);
  if (abs_f(det) < 1.0e-12f) return false;
  const float inv = 1.0f / det;
  const Vec3 s = origin - t.v[0];
  const float u = dot(s, p) * inv;
  if (u < 0.0f || u > 1.0f) return false;
  const Vec3 q = cross(s, e1);
  const float v = dot(direction, q) * inv;
  if (v < 0.0f || u + v > 1.0f) return false;
  const float d = dot(e2, q) * inv;
  if (!(d >= 0.0f && d <= max_distance)) return false;
  *distance = d;
  return true;
}

bool ray_cast_mesh(const MeshGeometry& mesh, Vec3 origin, Vec3 direction, float max_distance,
                   float* distance, LevelTriangle* triangle) {
  const Vec3 end = origin + direction * max_distance;
  // Slab test per node against the ray's current reach.
  const Vec3 inv{direction.x != 0.0f ? 1.0f / direction.x : 1.0e30f,
                 direction.y != 0.0f ? 1.0f / direction.y : 1.0e30f,
                 direction.z != 0.0f ? 1.0f / direction.z : 1.0e30f};
  (void)end;
  float best = max_distance;
  bool hit = false;
  uint32_t stack[kWalkStack];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const uint32_t entry = stack[--top];
    const uint32_t leaf = entry >> kLeafShift, index = entry & kIndexMask;
    if (leaf != 0) {
      for (uint32_t i = index; i < index + leaf; ++i) {
        float d;
        if (ray_triangle(origin, direction, best, mesh.triangles[i], &d) &&
            (!hit || d < best || (d == best && mesh.triangles[i].index < triangle->index))) {
          best = d;
          hit = true;
          *triangle = mesh.triangles[i];
        }
      }
      continue;
    }
    const MeshNode& node = mesh.nodes[index];
    for (int c = 3; c >= 0; --c) {
      if (node.count[c] == MeshNode::kUnusedSlot) continue;
      const Vec3 lo{node.lower_x[c], node.lower_y[c], node.lower_z[c]};
      const Vec3 hi{node.upper_x[c], node.upper_y[c], node.upper_z[c]};
      float t0 = 0.0f, t1 = best;
      for (int a = 0; a < 3; ++a) {
        const float o = element(origin, a), i = element(inv, a);
        float ta = (element(lo, a) - o) * i, tb = (element(hi, a) - o) * i;
        if (ta > tb) std::swap(ta, tb);
        if (element(direction, a) == 0.0f) {
          if (o < element(lo, a) || o > element(hi, a)) t0 = 1.0f, t1 = 0.0f;
          continue;
        }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
      }
      if (t0 > t1) continue;
      stack[top++] = (static_cast<uint32_t>(node.count[c]) << kLeafShift) | node.child[c];
    }
  }
  if (hit) *distance = best;
  return hit;
}

bool ray_cast_heightfield(const HeightfieldGeometry& g, Vec3 origin, Vec3 direction,
                          float max_distance, float* distance, LevelTriangle* triangle) {
  // The cells under the ray's box, row by row: simple, and bounded by the grid.
  const Vec3 end = origin + direction * max_distance;
  const Vec3 lo = min_elements(origin, end), hi = max_elements(origin, end);
  if (!boxes_meet(g.lower, g.upper, lo, hi)) return false;
  const int last_c = static_cast<int>(g.columns) - 2, last_r = static_cast<int>(g.rows) - 2;
  const int c0 = cell_of(lo.x, g.spacing_x, last_c), c1 = cell_of(hi.x, g.spacing_x, last_c);
  const int r0 = cell_of(lo.z, g.spacing_z, last_r), r1 = cell_of(hi.z, g.spacing_z, last_r);
  float best = max_distance;
  bool hit = false;
  for (int r = r0; r <= r1; ++r) {
    for (int c = c0; c <= c1; ++c) {
      for (int half = 0; half < 2; ++half) {
        LevelTriangle t;
        cell_corners(g, c, r, half, t.v);
        float d;
        if (ray_triangle(origin, direction, best, t, &d) && (!hit || d < best)) {
          best = d;
          hit = true;
          *triangle = cell_triangle(g, c, r, half);
        }
      }
    }
  }
  if (hit) *distance = best;
  return hit;
}

}  // namespace lockstep::sim
