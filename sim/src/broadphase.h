// Broadphase: sort-and-sweep over the live bodies' bounding boxes.
//
// Deterministic and allocation-free. The output is the set of overlapping pairs in which at least
// one body is dynamic, sorted by key; it depends on the boxes only, never on the internal order,
// the sweep axis or the cells below (so they may change freely between steps and after a
// restore). When there are more pairs than capacity, the lowest keys are kept (a bounded
// max-heap), so the same pairs are dropped on every machine whatever order the sweep found them.
//
// How it is fast:
//  - The sweep axis is the one with the largest spread of dynamic centres (switching only when
//    another axis is clearly wider), and `order` stays sorted by (lower bound, slot) with an
//    insertion sort that starts from last step's order (coherence). A full sort replaces it when
//    the axis changes or the insertion sort would move too much.
//  - Dynamic and non-dynamic bodies are swept separately: dynamic × dynamic, and dynamic ×
//    non-dynamic as a two-list sweep. A floor or a wall spanning the scene costs one pass over
//    the dynamic list, and static × static pairs are never looked at.
//  - Dynamic × dynamic runs per cell of a grid over the two other axes: each body is copied into
//    every cell its box covers (each cell list stays in sweep order), and a pair is reported only
//    in the cell holding the lower corner of the two boxes' intersection (a cell both cover, so
//    the pair is found exactly once). A scene spread over a plane or a volume then sweeps a few
//    candidates per body instead of a whole slab of the scene. Sparse scenes, where a plain sweep
//    meets few boxes anyway, skip the cells.
//  - The pair keys are sorted by two counting passes over the slot numbers (slot b, then slot a),
//    linear in bodies + pairs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shape.h"

namespace lockstep::sim {

/// Key of a body pair, lower slot first: slot_a << 32 | slot_b << 6. The low 6 bits name a
/// manifold's children (manifold_key): a pair of compounds has a manifold per pair of children.
/// Unique, a total order: by slot a, slot b, then child a and child b.
inline constexpr int kChildKeyBits = 3;  // kMaxCompoundChildren = 8 children per side
inline constexpr uint64_t kChildKeyMask = (uint64_t{1} << (2 * kChildKeyBits)) - 1;
constexpr uint64_t pair_key(uint32_t slot_a, uint32_t slot_b) {
  return (static_cast<uint64_t>(slot_a) << 32) | (static_cast<uint64_t>(slot_b) << 6);
}
constexpr uint32_t pair_slot_a(uint64_t key) {
  return static_cast<uint32_t>(key >> 32);
}
constexpr uint32_t pair_slot_b(uint64_t key) {
  return static_cast<uint32_t>(key & 0xffffffffu) >> (2 * kChildKeyBits);
}
/// The key of the manifold between child `child_a` of slot a's shape and `child_b` of slot b's
/// (0 for a shape that is not a compound).
constexpr uint64_t manifold_key(uint64_t pair, uint32_t child_a, uint32_t child_b) {
  return pair | (static_cast<uint64_t>(child_a) << kChildKeyBits) | child_b;
}
constexpr uint32_t key_child_a(uint64_t key) {
  return static_cast<uint32_t>(key >> kChildKeyBits) & ((1u << kChildKeyBits) - 1);
}
constexpr uint32_t key_child_b(uint64_t key) {
  return static_cast<uint32_t>(key) & ((1u << kChildKeyBits) - 1);
}
/// The body pair of a manifold key.
constexpr uint64_t body_pair_key(uint64_t key) {
  return key & ~kChildKeyMask;
}
static_assert(kMaxCompoundChildren <= (1u << kChildKeyBits));

/// One box in the sweep, its axes permuted to (sweep, band, other): the grid's two axes are band
/// and other. `aux` is the rank in `order` (sweep lists) or, in a cell list, whether the cell is
/// the box's first along band (bit 0) and along other (bit 1).
struct SweepBox {
  float lo_s = 0, hi_s = 0;
  float lo_b = 0, hi_b = 0;
  float lo_o = 0, hi_o = 0;
  uint32_t slot = 0;
  uint32_t aux = 0;
};

struct Broadphase {
  std::vector<uint32_t> order;  // live slots, sorted by (lower[axis], slot) after update
  uint32_t order_count = 0;
  std::vector<uint64_t> pairs;  // candidate pair keys, ascending after update
  uint32_t pair_count = 0;
  uint32_t dropped_pairs = 0;   // pairs beyond capacity in the last update
  int axis = -1;                // sweep axis of `order`, -1 before the first update
  float spread[3] = {0, 0, 0};  // spread of dynamic centres at the last update (steers axes)
  // Per slot: the shape's collision filter, category << 32 | mask (set by broadphase_insert).
  std::vector<uint64_t> filters;

  // Scratch, sized at init (not state: rebuilt on every update).
  std::vector<uint64_t> sort_keys;       // (ordered lower bound << 32 | slot), one per live slot
  std::vector<SweepBox> sweep_boxes;     // dynamic bodies, then the others, each in sweep order
  std::vector<SweepBox> cell_boxes;      // dynamic bodies per cell, each cell in sweep order
  std::vector<uint32_t> cell_start;      // cell c is cell_boxes[cell_start[c], cell_start[c+1])
  std::vector<uint64_t> cell_range;      // first and last cell per cross axis, per dynamic box
  std::vector<uint64_t> pair_scratch;    // unsorted pairs, then the first counting pass
  std::vector<uint32_t> slot_histogram;  // counting sort of pair keys by slot
};

/// Takes all memory: room for `max_bodies` slots and `max_pairs` candidate pairs.
void broadphase_init(Broadphase& bp, uint32_t max_bodies, uint32_t max_pairs);
/// The bytes broadphase_init takes for these capacities.
size_t broadphase_memory_bytes(uint64_t max_bodies, uint64_t max_pairs);
/// A collision filter packed for the sweep: category << 32 | mask.
constexpr uint64_t pack_filter(uint32_t category, uint32_t mask) {
  return (uint64_t{category} << 32) | mask;
}
inline constexpr uint64_t kFilterAll = pack_filter(0xffffffffu, 0xffffffffu);
/// True when two packed filters let their shapes touch (each category in the other's mask).
constexpr bool filters_touch(uint64_t a, uint64_t b) {
  return ((a >> 32) & (b & 0xffffffffu)) != 0 && ((b >> 32) & (a & 0xffffffffu)) != 0;
}

/// Adds a slot to the sweep (between steps) with its shape's collision filter; the next update
/// sorts it into place, and never reports a pair whose filters do not touch.
void broadphase_insert(Broadphase& bp, uint32_t slot, uint64_t filter = kFilterAll);
/// Removes a slot from the sweep (between steps).
void broadphase_remove(Broadphase& bp, uint32_t slot);
/// Forgets every slot.
void broadphase_clear(Broadphase& bp);

/// Sorts the sweep and finds the overlapping pairs in which at least one body is dynamic and
/// whose collision filters touch.
/// `aabbs` and `dynamic` are indexed by slot; every box must have lower ≤ upper, no NaN.
void broadphase_update(Broadphase& bp, std::span<const Aabb> aabbs,
                       std::span<const uint8_t> dynamic);

}  // namespace lockstep::sim
