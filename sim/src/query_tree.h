// The queries' bounding volume hierarchy over the bodies' current poses (query.cpp uses it).
//
// Why not the step's sort-and-sweep: its boxes are those of the step's start grown by the
// speculative margins, and its order is sorted only when a step sweeps. After the step the bodies
// have moved (a body pushed faster than its margin has left its box), and bodies created, moved
// or restored since have no box or an unsorted place. Queries need boxes that hold the shapes as
// they are now, so they get this tree of their own, built from the current poses on the first
// query after the state changed (at most once per tick in a game that queries every tick) and
// reused until it changes again. Built and read without allocating: every array is sized from
// WorldDef::max_bodies at world creation.
//
// Layout: bounded bodies (everything but planes) are sorted along a Morton curve of their box
// centres (ties by slot: a total order) and split at the middle of the range until at most
// kQueryLeafSize remain, so each level halves the range and a fixed stack of kQueryStackSize
// entries always suffices. Planes are unbounded; they sit in a list of their own
// that every query tests. The tree only picks candidates: every answer is an exact shape test,
// so which bodies share a leaf never changes a result.
#pragma once

#include <cstdint>
#include <vector>

#include "shape.h"

namespace lockstep::sim {

struct WorldData;

inline constexpr uint32_t kQueryLeafSize = 4;
// 2^20 bodies (the largest world) halve down to leaves of 4 in 18 splits: 19 levels. A traversal
// holds at most one pending sibling per level plus the node in hand; 64 leaves ample room.
inline constexpr uint32_t kQueryStackSize = 64;

/// A body in the tree: its box (around its current shape, a little grown) and slot. 32 bytes.
struct QueryItem {
  Aabb box{};
  uint32_t slot = 0;
  uint32_t unused = 0;
};

/// count > 0: a leaf holding items [first, first + count); count 0: children first, first + 1.
struct QueryNode {
  Aabb box{};
  uint32_t first = 0;
  uint32_t count = 0;
};

struct QueryTree {
  std::vector<QueryItem> items;  // bounded bodies in Morton order
  std::vector<QueryNode> nodes;  // nodes[0] is the root when item_count > 0
  std::vector<uint64_t> keys;    // scratch: Morton code << 32 | slot
  std::vector<Aabb> boxes;       // scratch: boxes by slot while building
  std::vector<uint32_t> planes;  // plane bodies, in slot order
  uint32_t item_count = 0;
  uint32_t node_count = 0;
  uint32_t plane_count = 0;
  uint32_t depth = 0;  // levels of the last build (a leaf root is 1)
  // What it was built from: the world's tick and state hash (see query_tree_current).
  bool built = false;
  uint64_t tick = 0;
  uint64_t state_hash = 0;
};

/// Takes all memory for a world of `max_bodies` slots.
void query_tree_init(QueryTree* tree, uint32_t max_bodies);

/// Rebuilds the tree from the world's current poses.
void query_tree_build(QueryTree* tree, const WorldData& w);

}  // namespace lockstep::sim
