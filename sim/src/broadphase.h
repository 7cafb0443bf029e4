// Broadphase: sort-and-sweep on the x axis over the live bodies' bounding boxes.
//
// Deterministic and allocation-free: the order array is kept sorted by the total order
// (aabb.lower.x, slot) with an insertion sort that starts from last step's order (coherence),
// and the output is the set of overlapping pairs sorted by key, which depends on the boxes only.
// When there are more pairs than capacity, the lowest keys are kept (a bounded max-heap), so
// the same pairs are dropped on every machine whatever order the sweep found them in.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shape.h"

namespace lockstep::sim {

/// Key of a body pair, lower slot first: slot_a << 32 | slot_b. Unique, a total order.
constexpr uint64_t pair_key(uint32_t slot_a, uint32_t slot_b) {
  return (static_cast<uint64_t>(slot_a) << 32) | slot_b;
}
constexpr uint32_t pair_slot_a(uint64_t key) {
  return static_cast<uint32_t>(key >> 32);
}
constexpr uint32_t pair_slot_b(uint64_t key) {
  return static_cast<uint32_t>(key & 0xffffffffu);
}

struct Broadphase {
  std::vector<uint32_t> order;  // live slots, sorted by (lower.x, slot) after update
  uint32_t order_count = 0;
  std::vector<uint64_t> pairs;  // candidate pair keys, ascending after update
  uint32_t pair_count = 0;
  uint32_t dropped_pairs = 0;  // pairs beyond capacity in the last update
};

/// Takes all memory: room for `max_bodies` slots and `max_pairs` candidate pairs.
void broadphase_init(Broadphase& bp, uint32_t max_bodies, uint32_t max_pairs);
/// Adds a slot to the sweep (between steps); the next update sorts it into place.
void broadphase_insert(Broadphase& bp, uint32_t slot);
/// Removes a slot from the sweep (between steps).
void broadphase_remove(Broadphase& bp, uint32_t slot);
/// Forgets every slot.
void broadphase_clear(Broadphase& bp);

/// Sorts the sweep and finds the overlapping pairs in which at least one body is dynamic.
/// `aabbs` and `dynamic` are indexed by slot.
void broadphase_update(Broadphase& bp, std::span<const Aabb> aabbs,
                       std::span<const uint8_t> dynamic);

}  // namespace lockstep::sim
