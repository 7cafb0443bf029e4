// Building the queries' bounding volume hierarchy; query_tree.h has the layout and why.
#include "query_tree.h"

#include <algorithm>
#include <cfloat>

#include "world_data.h"

namespace lockstep::sim {

namespace {

// Bits per axis of the Morton code (30 bits in all, below the slot in the sort key).
constexpr float kMortonCells = 1023.0f;

// Spreads the low 10 bits of v so that two zero bits follow each one.
uint32_t spread_bits(uint32_t v) {
  v &= 0x3ffu;
  v = (v | (v << 16)) & 0x030000ffu;
  v = (v | (v << 8)) & 0x0300f00fu;
  v = (v | (v << 4)) & 0x030c30c3u;
  v = (v | (v << 2)) & 0x09249249u;
  return v;
}

uint32_t morton_cell(float v, float lower, float scale) {
  const float q = (v - lower) * scale;
  if (!(q > 0.0f)) return 0;
  return q < kMortonCells ? static_cast<uint32_t>(q) : static_cast<uint32_t>(kMortonCells);
}

// A body's box is grown a little so that the exact tests, whose rounding grows with the size of
// the coordinates, never place a point of the shape outside it.
float box_margin(const BodyRecord& r, const ShapeLibrary& library) {
  const Vec3 a = abs_elements(r.position);
  return 1.0e-4f + 1.0e-6f * (a.x + a.y + a.z + bounding_radius(r.shape, library));
}

Aabb merge(const Aabb& a, const Aabb& b) {
  return {min_elements(a.lower, b.lower), max_elements(a.upper, b.upper)};
}

// Node `index` over items [begin, end), split at the middle of the range down to leaves.
void build_range(QueryTree* tree, uint32_t index, uint32_t begin, uint32_t end, uint32_t level) {
  if (level > tree->depth) tree->depth = level;
  QueryNode& node = tree->nodes[index];
  if (end - begin <= kQueryLeafSize) {
    Aabb box = tree->items[begin].box;
    for (uint32_t i = begin + 1; i < end; ++i)
      box = merge(box, tree->items[i].box);
    node.box = box;
    node.first = begin;
    node.count = end - begin;
    return;
  }
  const uint32_t children = tree->node_count;
  tree->node_count += 2;
  const uint32_t mid = begin + (end - begin) / 2;
  build_range(tree, children, begin, mid, level + 1);
  build_range(tree, children + 1, mid, end, level + 1);
  node.box = merge(tree->nodes[children].box, tree->nodes[children + 1].box);
  node.first = children;
  node.count = 0;
}

}  // namespace

void query_tree_init(QueryTree* tree, uint32_t max_bodies) {
  // Every range longer than a leaf splits into halves of at least 2 items, so there are at most
  // max(1, n / 2) leaves and 2·leaves − 1 ≤ max(1, n) nodes.
  const uint32_t n = max_bodies > 0 ? max_bodies : 1;
  tree->items.assign(n, QueryItem{});
  tree->nodes.assign(n, QueryNode{});
  tree->keys.assign(n, 0);
  tree->boxes.assign(n, Aabb{});
  tree->planes.assign(n, 0);
  tree->item_count = tree->node_count = tree->plane_count = tree->depth = 0;
  tree->built = false;
}

void query_tree_build(QueryTree* tree, const WorldData& w) {
  tree->item_count = tree->node_count = tree->plane_count = tree->depth = 0;
  // Current boxes, and the range of their centres (doubled: lower + upper) for the Morton grid.
  Vec3 c_min{FLT_MAX, FLT_MAX, FLT_MAX}, c_max{-FLT_MAX, -FLT_MAX, -FLT_MAX};
  uint32_t n = 0;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    if (!r.alive) continue;
    if (r.shape.type == ShapeType::plane) {
      tree->planes[tree->plane_count++] = slot;
      continue;
    }
    const Aabb box = compute_aabb(r.shape, w.library(), Transform{r.position, r.orientation},
                                  box_margin(r, w.library()));
    tree->boxes[slot] = box;
    const Vec3 c = box.lower + box.upper;
    c_min = min_elements(c_min, c);
    c_max = max_elements(c_max, c);
    tree->keys[n++] = slot;
  }
  if (n == 0) return;
  const Vec3 extent = c_max - c_min;
  const Vec3 scale{extent.x > 0.0f ? kMortonCells / extent.x : 0.0f,
                   extent.y > 0.0f ? kMortonCells / extent.y : 0.0f,
                   extent.z > 0.0f ? kMortonCells / extent.z : 0.0f};
  uint64_t* keys = tree->keys.data();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = static_cast<uint32_t>(keys[i]);
    const Aabb& box = tree->boxes[slot];
    const Vec3 c = box.lower + box.upper;
    const uint32_t code = spread_bits(morton_cell(c.x, c_min.x, scale.x)) |
                          spread_bits(morton_cell(c.y, c_min.y, scale.y)) << 1 |
                          spread_bits(morton_cell(c.z, c_min.z, scale.z)) << 2;
    keys[i] = static_cast<uint64_t>(code) << 32 | slot;
  }
  std::sort(keys, keys + n);  // determinism-lint: allow (slot in the key: a total order)
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = static_cast<uint32_t>(keys[i]);
    tree->items[i] = QueryItem{tree->boxes[slot], slot, 0};
  }
  tree->item_count = n;
  tree->node_count = 1;
  build_range(tree, 0, 0, n, 1);
}

}  // namespace lockstep::sim
