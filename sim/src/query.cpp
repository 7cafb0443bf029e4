// Spatial queries: the tree (query_tree.h) picks the candidates, exact tests (ray_cast.h for
// rays and sphere casts, overlap_test.h for overlaps) decide, and ties go to the lower body slot.
//
// The tree is reused while the world's tick and state hash are those it was built from. The
// state hash covers everything a step depends on, every pose and shape included, and every
// edit between steps marks it for recomputation, so an unchanged (tick, hash) means unchanged
// bodies (up to a 64-bit hash collision, which would be the same on every machine).
//
// Pruning is exact: a body's box holds its shape with a margin, so a ray meets the box (and
// every node box around it) no later than the shape; a node whose entry fraction is already past
// the best hit cannot hold a better or equal one. Fractions are distance / length, monotone in
// the distance, so comparing fractions of boxes and of shapes is consistent.
#include "lockstep/sim/query.h"
#include "lockstep/sim/testing.h"

#include <cstring>
#include <initializer_list>

#include "collide.h"
#include "collide_mesh.h"
#include "overlap_test.h"
#include "query_tree.h"
#include "ray_cast.h"
#include "world_data.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep::sim {

namespace {

static_assert(kMaxBodiesLimit <= (1u << 20) && kQueryStackSize > 20,
              "a tree of kMaxBodiesLimit bodies (19 levels) must fit the traversal stack");

// Collision filter bits of a body: its shape's (ShapeDef::category and mask).
uint32_t body_category(const WorldData& w, uint32_t slot) {
  return w.bodies[slot].shape.category;
}
uint32_t body_mask(const WorldData& w, uint32_t slot) {
  return w.bodies[slot].shape.mask;
}

bool passes_filter(const WorldData& w, uint32_t slot, const QueryFilter& filter) {
  if (filter.exclude.index1 == slot + 1 && filter.exclude.generation == w.bodies[slot].generation)
    return false;
  return (body_category(w, slot) & filter.mask_bits) != 0 &&
         (filter.category_bits & body_mask(w, slot)) != 0;
}

BodyId id_of(const WorldData& w, uint32_t slot) {
  return BodyId{slot + 1, w.bodies[slot].generation};
}

const QueryTree& current_tree(const World& world) {
  const WorldData& w = world_data(world);
  const uint64_t hash = world.state_hash();
  QueryTree& tree = w.query_tree;
  if (!tree.built || tree.tick != w.tick || tree.state_hash != hash) {
    query_tree_build(&tree, w);
    tree.built = true;
    tree.tick = w.tick;
    tree.state_hash = hash;
  }
  return tree;
}

// ---- validation -------------------------------------------------------------------------------

bool within_extent(Vec3 v) {
  const Vec3 a = abs_elements(v);
  return a.x <= kQueryExtent && a.y <= kQueryExtent && a.z <= kQueryExtent;
}

bool within_size(float v) {
  return v > 0.0f && v <= kQueryExtent;
}

struct Ray {
  Vec3 origin{};
  Vec3 direction{};  // unit
  float length = 0;  // m
  float inv[3] = {0, 0, 0};
};

Error make_ray(Vec3 origin, Vec3 translation, Ray* ray) {
  if (!is_finite(origin) || !is_finite(translation)) return Error::non_finite;
  if (!within_extent(origin) || !within_extent(origin + translation))
    return Error::invalid_argument;
  const float len = length(translation);
  if (!(len > 0.0f)) return Error::invalid_argument;
  ray->origin = origin;
  ray->direction = Vec3{translation.x / len, translation.y / len, translation.z / len};
  ray->length = len;
  for (int i = 0; i < 3; ++i) {
    const float d = element(ray->direction, i);
    ray->inv[i] = d != 0.0f ? 1.0f / d : 0.0f;
  }
  return Error::none;
}

Error check_shape(const ShapeDef& s, const WorldData& w) {
  switch (s.type) {
    case ShapeType::hull:
      return s.hull < w.hulls.size() ? Error::none : Error::unknown_hull;
    case ShapeType::compound:
      return s.compound < w.compounds.size() ? Error::none : Error::unknown_compound;
    case ShapeType::sphere:
      if (!is_finite(s.radius)) return Error::non_finite;
      return within_size(s.radius) ? Error::none : Error::invalid_argument;
    case ShapeType::box:
      if (!is_finite(s.half_extents)) return Error::non_finite;
      return within_size(s.half_extents.x) && within_size(s.half_extents.y) &&
                     within_size(s.half_extents.z)
                 ? Error::none
                 : Error::invalid_argument;
    case ShapeType::capsule:
      if (!is_finite(s.radius) || !is_finite(s.half_height)) return Error::non_finite;
      return within_size(s.radius) && s.half_height >= 0.0f && s.half_height <= kQueryExtent
                 ? Error::none
                 : Error::invalid_argument;
    case ShapeType::plane:
    case ShapeType::mesh:  // level geometry is never a query's shape
    case ShapeType::heightfield:
      break;
  }
  return Error::invalid_argument;
}

Error check_pose(const Transform& pose, Transform* out) {
  if (!is_finite(pose.p) || !is_finite(pose.q)) return Error::non_finite;
  if (!within_extent(pose.p)) return Error::invalid_argument;
  if (!(dot(pose.q, pose.q) >= 1.0e-6f)) return Error::invalid_argument;
  out->p = pose.p;
  out->q = normalize(pose.q);
  return Error::none;
}

QueryResult failed(Error e) {
  QueryResult r;
  r.error = e;
  return r;
}

// ---- traversal --------------------------------------------------------------------------------

// Entry distance of the ray into `box` grown by `grow`, within [0, max_distance].
bool ray_meets_box(const Aabb& box, const Ray& ray, float grow, float max_distance, float* enter) {
  float t0 = 0.0f, t1 = max_distance;
  for (int i = 0; i < 3; ++i) {
    const float o = element(ray.origin, i);
    const float lo = element(box.lower, i) - grow, hi = element(box.upper, i) + grow;
    if (ray.inv[i] == 0.0f) {
      if (o < lo || o > hi) return false;
      continue;
    }
    float ta = (lo - o) * ray.inv[i], tb = (hi - o) * ray.inv[i];
    if (ta > tb) {
      const float swap = ta;
      ta = tb;
      tb = swap;
    }
    t0 = ta > t0 ? ta : t0;
    t1 = tb < t1 ? tb : t1;
    if (t0 > t1) return false;
  }
  *enter = t0;
  return true;
}

// Calls visit(slot) for every bounded body whose box grown by `grow` the ray meets within its
// length, nearest node first, skipping what starts beyond past(entry distance) (re-read as the
// visits tighten it).
template <typename Past, typename Visit>
void walk_ray(const QueryTree& tree, const Ray& ray, float grow, Past&& past, Visit&& visit) {
  if (tree.item_count == 0) return;
  auto visit_leaf = [&](uint32_t first, uint32_t count) {
    for (uint32_t i = first; i < first + count; ++i) {
      float enter = 0.0f;
      if (!ray_meets_box(tree.items[i].box, ray, grow, ray.length, &enter)) continue;
      if (past(enter)) continue;
      visit(tree.items[i].slot);
    }
  };
  if (tree.depth >= kQueryStackSize) {  // cannot happen (query_tree.h); never overrun the stack
    visit_leaf(0, tree.item_count);
    return;
  }
  uint32_t stack[kQueryStackSize];
  float entry[kQueryStackSize];
  uint32_t sp = 0;
  float enter = 0.0f;
  if (!ray_meets_box(tree.nodes[0].box, ray, grow, ray.length, &enter)) return;
  stack[sp] = 0;
  entry[sp++] = enter;
  while (sp > 0) {
    --sp;
    if (past(entry[sp])) continue;
    const QueryNode& node = tree.nodes[stack[sp]];
    if (node.count > 0) {
      visit_leaf(node.first, node.count);
      continue;
    }
    float e0 = 0.0f, e1 = 0.0f;
    const bool hit0 = ray_meets_box(tree.nodes[node.first].box, ray, grow, ray.length, &e0);
    const bool hit1 = ray_meets_box(tree.nodes[node.first + 1].box, ray, grow, ray.length, &e1);
    // The nearer child goes on top (popped first); the first child on equal entries.
    if (hit0 && hit1 && e1 < e0) {
      stack[sp] = node.first;
      entry[sp++] = e0;
      stack[sp] = node.first + 1;
      entry[sp++] = e1;
      continue;
    }
    if (hit1) {
      stack[sp] = node.first + 1;
      entry[sp++] = e1;
    }
    if (hit0) {
      stack[sp] = node.first;
      entry[sp++] = e0;
    }
  }
}

// Calls visit(slot) for every bounded body whose box overlaps `box`.
template <typename Visit>
void walk_box(const QueryTree& tree, const Aabb& box, Visit&& visit) {
  if (tree.item_count == 0) return;
  auto visit_leaf = [&](uint32_t first, uint32_t count) {
    for (uint32_t i = first; i < first + count; ++i) {
      if (overlaps(tree.items[i].box, box)) visit(tree.items[i].slot);
    }
  };
  if (tree.depth >= kQueryStackSize) {  // cannot happen (query_tree.h); never overrun the stack
    visit_leaf(0, tree.item_count);
    return;
  }
  uint32_t stack[kQueryStackSize];
  uint32_t sp = 0;
  if (!overlaps(tree.nodes[0].box, box)) return;
  stack[sp++] = 0;
  while (sp > 0) {
    const QueryNode& node = tree.nodes[stack[--sp]];
    if (node.count > 0) {
      visit_leaf(node.first, node.count);
      continue;
    }
    if (overlaps(tree.nodes[node.first + 1].box, box)) stack[sp++] = node.first + 1;
    if (overlaps(tree.nodes[node.first].box, box)) stack[sp++] = node.first;
  }
}

// ---- exact tests ------------------------------------------------------------------------------

// The ray (grown by `radius`) against body `slot`: fills *hit (fraction, point, normal, body).
bool cast_body(const WorldData& w, uint32_t slot, const Ray& ray, float radius, RayHit* hit) {
  const BodyRecord& r = w.bodies[slot];
  CastHit c;
  if (!cast_against_shape(r.shape, Transform{r.position, r.orientation}, w.library(), ray.origin,
                          ray.direction, ray.length, radius, &c)) {
    return false;
  }
  hit->body = id_of(w, slot);
  hit->fraction = c.distance / ray.length;
  hit->normal = c.normal;
  hit->triangle = c.triangle;
  hit->point =
      c.started_inside ? ray.origin : ray.origin + c.distance * ray.direction - radius * c.normal;
  return true;
}

// Result order: fraction, then body slot.
bool hit_before(const RayHit& a, const RayHit& b) {
  if (a.fraction != b.fraction) return a.fraction < b.fraction;
  return a.body.index1 < b.body.index1;
}

// The closest hit of a ray (radius 0) or a sphere cast (radius > 0).
QueryResult closest_cast(const World& world, const Ray& ray, float radius,
                         const QueryFilter& filter, RayHit* out) {
  const WorldData& w = world_data(world);
  const QueryTree& tree = current_tree(world);
  bool found = false;
  RayHit best;
  auto visit = [&](uint32_t slot) {
    if (!passes_filter(w, slot, filter)) return;
    RayHit h;
    if (!cast_body(w, slot, ray, radius, &h)) return;
    if (found && !hit_before(h, best)) return;
    best = h;
    found = true;
  };
  for (uint32_t i = 0; i < tree.plane_count; ++i)
    visit(tree.planes[i]);
  auto past = [&](float enter) { return found && enter / ray.length > best.fraction; };
  walk_ray(tree, ray, radius, past, visit);
  QueryResult result;
  *out = found ? best : RayHit{};
  result.count = result.found = found ? 1 : 0;
  return result;
}

}  // namespace

QueryResult ray_cast(const World& world, Vec3 origin, Vec3 translation, const QueryFilter& filter,
                     RayHit* hit) {
  if (hit == nullptr) return failed(Error::invalid_argument);
  Ray ray;
  const Error e = make_ray(origin, translation, &ray);
  if (e != Error::none) return failed(e);
  return closest_cast(world, ray, 0.0f, filter, hit);
}

QueryResult ray_cast_all(const World& world, Vec3 origin, Vec3 translation,
                         const QueryFilter& filter, std::span<RayHit> hits) {
  if (hits.empty()) return failed(Error::invalid_argument);
  Ray ray;
  const Error e = make_ray(origin, translation, &ray);
  if (e != Error::none) return failed(e);
  const WorldData& w = world_data(world);
  const QueryTree& tree = current_tree(world);
  const uint32_t capacity =
      hits.size() < 0xffffffffu ? static_cast<uint32_t>(hits.size()) : 0xffffffffu;
  QueryResult result;
  auto visit = [&](uint32_t slot) {
    if (!passes_filter(w, slot, filter)) return;
    RayHit h;
    if (!cast_body(w, slot, ray, 0.0f, &h)) return;
    ++result.found;
    // Sorted insert; when full, the last in order drops out.
    uint32_t i = result.count;
    if (i == capacity) {
      if (!hit_before(h, hits[i - 1])) return;
      --i;
    } else {
      ++result.count;
    }
    while (i > 0 && hit_before(h, hits[i - 1])) {
      hits[i] = hits[i - 1];
      --i;
    }
    hits[i] = h;
  };
  for (uint32_t i = 0; i < tree.plane_count; ++i)
    visit(tree.planes[i]);
  walk_ray(
      tree, ray, 0.0f, [](float) { return false; }, visit);
  return result;
}

QueryResult bodies_in_sensor(const World& world, BodyId sensor, std::span<BodyId> bodies) {
  if (bodies.empty()) return failed(Error::invalid_argument);
  const WorldData& w = world_data(world);
  uint32_t slot = 0;
  const Error e = resolve_body(w, sensor, &slot);
  if (e != Error::none) return failed(e);
  if (!w.bodies[slot].shape.sensor) return failed(Error::wrong_body_type);
  // Keys ascend by (lower slot, higher slot): the visitors below the sensor's slot come first,
  // in order, then those above it, in order.
  QueryResult result;
  for (uint32_t i = 0; i < w.sensor_pair_count; ++i) {
    const uint64_t key = w.sensor_pairs[i];
    uint32_t visitor = 0;
    if (pair_slot_a(key) == slot) {
      visitor = pair_slot_b(key);
    } else if (pair_slot_b(key) == slot) {
      visitor = pair_slot_a(key);
    } else {
      continue;
    }
    ++result.found;
    if (result.count < bodies.size()) bodies[result.count++] = id_of(w, visitor);
  }
  return result;
}

QueryResult overlap(const World& world, const ShapeDef& shape, const Transform& pose,
                    const QueryFilter& filter, std::span<BodyId> bodies) {
  if (bodies.empty()) return failed(Error::invalid_argument);
  Error e = check_shape(shape, world_data(world));
  if (e != Error::none) return failed(e);
  Transform xf;
  e = check_pose(pose, &xf);
  if (e != Error::none) return failed(e);
  const WorldData& w = world_data(world);
  const QueryTree& tree = current_tree(world);
  const uint32_t capacity =
      bodies.size() < 0xffffffffu ? static_cast<uint32_t>(bodies.size()) : 0xffffffffu;
  // Grown like the bodies' boxes, so touching shapes are never cut by box rounding.
  const Vec3 a = abs_elements(xf.p);
  const float margin = 1.0e-4f + 1.0e-6f * (a.x + a.y + a.z + bounding_radius(shape, w.library()));
  const Aabb query_box = compute_aabb(shape, w.library(), xf, margin);
  QueryResult result;
  auto visit = [&](uint32_t slot) {
    if (!passes_filter(w, slot, filter)) return;
    const BodyRecord& r = w.bodies[slot];
    if (!shapes_overlap(shape, xf, r.shape, Transform{r.position, r.orientation}, w.library()))
      return;
    ++result.found;
    const BodyId id = id_of(w, slot);
    uint32_t i = result.count;
    if (i == capacity) {
      if (!(id.index1 < bodies[i - 1].index1)) return;
      --i;
    } else {
      ++result.count;
    }
    while (i > 0 && id.index1 < bodies[i - 1].index1) {
      bodies[i] = bodies[i - 1];
      --i;
    }
    bodies[i] = id;
  };
  for (uint32_t i = 0; i < tree.plane_count; ++i)
    visit(tree.planes[i]);
  walk_box(tree, query_box, visit);
  return result;
}

namespace {

// Box, capsule, hull and compound casts against one body: conservative advancement. The
// narrowphase's separation at the current pose (with a margin as long as the rest of the travel) is
// never more than the true distance, and no point of the moving shape travels more than |d| per
// unit of the fraction, so advancing by separation/|d| never passes a surface. A hit is a
// separation within kCastTolerance; a shape touching the body at the start hits at fraction 0.
constexpr float kCastTolerance = 1.0e-4f;
constexpr int kMaxCastAdvances = 64;

bool cast_shape_body(const WorldData& w, uint32_t slot, const ShapeDef& shape,
                     const Transform& start, Vec3 d, float length, RayHit* hit) {
  const BodyRecord& r = w.bodies[slot];
  const Transform body{r.position, r.orientation};
  const ShapeLibrary library = w.library();
  float t = 0.0f;
  for (int i = 0; i < kMaxCastAdvances; ++i) {
    const Transform xf{start.p + d * t, start.q};
    ManifoldPoint deepest;
    Vec3 normal{};
    if (!deepest_point(shape, xf, r.shape, body, library, (1.0f - t) * length + kCastTolerance,
                       &deepest, &normal)) {
      return false;
    }
    const float s = deepest.separation;
    const Vec3 point = deepest.position;
    if (s <= kCastTolerance) {
      hit->body = id_of(w, slot);
      hit->fraction = t;
      if (t == 0.0f && s <= 0.0f) {
        hit->point = start.p;
        hit->normal = -(d * (1.0f / length));
      } else {
        hit->point = point - normal * (0.5f * s);
        hit->normal = normal;  // from the body toward the cast shape: the body's outward normal
      }
      if (r.shape.type == ShapeType::mesh || r.shape.type == ShapeType::heightfield) {
        hit->triangle = level_feature_triangle(deepest.feature);
      }
      return true;
    }
    t += (s - 0.5f * kCastTolerance) / length;
    if (!(t <= 1.0f)) return false;
  }
  return false;
}

}  // namespace

QueryResult shape_cast(const World& world, const ShapeDef& shape, const Transform& start,
                       Vec3 translation, const QueryFilter& filter, RayHit* hit) {
  if (hit == nullptr) return failed(Error::invalid_argument);
  if (shape.type == ShapeType::plane) return failed(Error::invalid_argument);
  const WorldData& w = world_data(world);
  Error e = check_shape(shape, w);
  if (e != Error::none) return failed(e);
  Transform xf;
  e = check_pose(start, &xf);
  if (e != Error::none) return failed(e);
  Ray ray;
  e = make_ray(xf.p, translation, &ray);
  if (e != Error::none) return failed(e);
  if (shape.type == ShapeType::sphere) return closest_cast(world, ray, shape.radius, filter, hit);
  // Box, capsule or hull: every body whose box meets the swept box, the first hit kept (ties to
  // the lower slot).
  const ShapeLibrary library = w.library();
  const Aabb from = compute_aabb(shape, library, xf, 0.0f);
  const Aabb to = compute_aabb(shape, library, Transform{xf.p + translation, xf.q}, 0.0f);
  const Vec3 grow{1.0e-3f, 1.0e-3f, 1.0e-3f};
  const Aabb swept{min_elements(from.lower, to.lower) - grow,
                   max_elements(from.upper, to.upper) + grow};
  const QueryTree& tree = current_tree(world);
  bool found = false;
  RayHit best;
  auto visit = [&](uint32_t slot) {
    if (!passes_filter(w, slot, filter)) return;
    RayHit h;
    if (!cast_shape_body(w, slot, shape, xf, translation, ray.length, &h)) return;
    if (found && !hit_before(h, best)) return;
    best = h;
    found = true;
  };
  for (uint32_t i = 0; i < tree.plane_count; ++i)
    visit(tree.planes[i]);
  walk_box(tree, swept, visit);
  QueryResult result;
  *hit = found ? best : RayHit{};
  result.count = result.found = found ? 1 : 0;
  return result;
}

// ---- the query golden -------------------------------------------------------------------------

namespace {

// Feeds results to XXH3 in a canonical little-endian encoding.
class ProbeHasher {
 public:
  ProbeHasher() {
    XXH3_INITSTATE(&state_);
    XXH3_64bits_reset(&state_);
  }
  void u32(uint32_t v) {
    const uint8_t bytes[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                              static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
    XXH3_64bits_update(&state_, bytes, sizeof bytes);
  }
  void f32(float f) {
    uint32_t v;
    std::memcpy(&v, &f, sizeof v);
    u32(v);
  }
  void vec(Vec3 v) {
    f32(v.x);
    f32(v.y);
    f32(v.z);
  }
  void result(const QueryResult& r) {
    u32(static_cast<uint32_t>(r.error));
    u32(r.count);
    u32(r.found);
  }
  void hit(const RayHit& h) {
    u32(h.body.index1);
    u32(h.body.generation);
    f32(h.fraction);
    vec(h.point);
    vec(h.normal);
  }
  uint64_t digest() { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

float coord(int i) {
  return static_cast<float>(i);
}

}  // namespace

uint64_t query_probe_hash(const World& world) {
  ProbeHasher h;
  const QueryFilter all{};
  RayHit hit;
  // Straight down on a 1 m grid.
  for (int x = -10; x <= 10; ++x) {
    for (int z = -10; z <= 10; ++z) {
      h.result(ray_cast(world, {coord(x), 20, coord(z)}, {0, -21, 0}, all, &hit));
      h.hit(hit);
    }
  }
  // Across at several heights, along x and along z, every hit; and slanted rays.
  RayHit hits[32];
  for (int level = 0; level < 8; ++level) {
    const float y = 0.25f + 0.75f * coord(level);
    for (int k = -8; k <= 8; k += 2) {
      const QueryResult rx = ray_cast_all(world, {-12, y, coord(k)}, {24, 0, 0}, all, hits);
      h.result(rx);
      for (uint32_t i = 0; i < rx.count; ++i)
        h.hit(hits[i]);
      const QueryResult rz = ray_cast_all(world, {coord(k), y, -12}, {0, 0, 24}, all, hits);
      h.result(rz);
      for (uint32_t i = 0; i < rz.count; ++i)
        h.hit(hits[i]);
    }
  }
  for (int k = -8; k <= 8; ++k) {
    h.result(ray_cast(world, {-10, 12, coord(k)}, {20, -11, 0.5f * coord(k)}, all, &hit));
    h.hit(hit);
    h.result(ray_cast(world, {coord(k), 12, 10}, {-0.25f * coord(k), -11, -20}, all, &hit));
    h.hit(hit);
  }
  // Sphere casts down, and overlaps of each query shape, on a 2 m grid.
  ShapeDef sphere;
  sphere.type = ShapeType::sphere;
  sphere.radius = 0.35f;
  ShapeDef box;
  box.type = ShapeType::box;
  box.half_extents = {0.9f, 0.4f, 0.6f};
  ShapeDef capsule;
  capsule.type = ShapeType::capsule;
  capsule.radius = 0.3f;
  capsule.half_height = 0.7f;
  const Quat turned{0.2f, 0.4f, 0.1f, 0.8f};  // normalized by the queries
  BodyId found[64];
  for (int x = -8; x <= 8; x += 2) {
    for (int z = -8; z <= 8; z += 2) {
      const Transform top{{coord(x), 20, coord(z)}, Quat{}};
      h.result(shape_cast(world, sphere, top, {0.125f * coord(z), -21, 0}, all, &hit));
      h.hit(hit);
      for (const ShapeDef* shape : {&sphere, &box, &capsule}) {
        const Transform pose{{coord(x), 1.5f, coord(z)}, turned};
        const QueryResult r = overlap(world, *shape, pose, all, found);
        h.result(r);
        for (uint32_t i = 0; i < r.count; ++i) {
          h.u32(found[i].index1);
          h.u32(found[i].generation);
        }
      }
    }
  }
  return h.digest();
}

}  // namespace lockstep::sim
