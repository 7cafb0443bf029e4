// Sort-and-sweep broadphase; see broadphase.h for the determinism argument and the layout.
#include "broadphase.h"

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>

namespace lockstep::sim {

namespace {

// Cells of the dynamic × dynamic sweep: at most kMaxCellsPerAxis along each cross axis, at most
// kMaxCells in all and one per kMinBodiesPerCell dynamic bodies (fewer, fuller cells cost less
// than the copies). cell_boxes holds kCellEntriesPerBody entries per body; a layout needing more
// falls back to a single cell.
constexpr uint32_t kMaxCellsPerAxis = 256;
constexpr uint32_t kMaxCells = 4096;
constexpr uint32_t kMinBodiesPerCell = 4;
constexpr uint32_t kCellEntriesPerBody = 4;
// Cells only pay when a plain sweep would meet more boxes than this per box.
constexpr float kMinSweepCandidatesForCells = 8.0f;
// Cell width in mean box sizes along its axis: a body covers ~1.5 cells per axis on average.
constexpr float kCellWidthInSizes = 2.0f;
// The sweep axis changes only when another axis' spread of centres is this much wider.
constexpr float kAxisSwitchRatio = 1.5f;
// Below this many pairs an insertion sort beats the two counting passes.
constexpr uint32_t kSmallPairCount = 32;

// Float → unsigned with the same order for all non-NaN values (−0 sorts just below +0, which
// the sweep does not mind: it only needs lower bounds non-decreasing along the order).
inline uint32_t ordered_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline float element_of(const Vec3& v, int axis) {
  return axis == 0 ? v.x : (axis == 1 ? v.y : v.z);
}

// Overlap on the band and other axes (the caller has the sweep axis).
inline bool overlaps_bo(const SweepBox& a, const SweepBox& b) {
  return a.lo_b <= b.hi_b && b.lo_b <= a.hi_b && a.lo_o <= b.hi_o && b.lo_o <= a.hi_o;
}

// Collects pair keys; past capacity keeps the lowest keys in a max-heap. Keys are unique, so
// which ones survive does not depend on the order they were found in.
struct PairSink {
  const uint64_t* filters = nullptr;  // per slot, packed (broadphase.h)
  uint64_t* pairs = nullptr;
  uint32_t capacity = 0;
  uint32_t count = 0;
  uint32_t dropped = 0;
  bool heap = false;

  void add(uint32_t slot_a, uint32_t slot_b) {
    if (!filters_touch(filters[slot_a], filters[slot_b])) return;
    const uint64_t key = slot_a < slot_b ? pair_key(slot_a, slot_b) : pair_key(slot_b, slot_a);
    if (count < capacity) {
      pairs[count++] = key;
      return;
    }
    add_over_capacity(key);
  }

  [[gnu::noinline]] void add_over_capacity(uint64_t key) {
    ++dropped;
    if (capacity == 0) return;
    if (!heap) {
      std::make_heap(pairs, pairs + count);
      heap = true;
    }
    if (key < pairs[0]) {
      std::pop_heap(pairs, pairs + count);
      pairs[count - 1] = key;
      std::push_heap(pairs, pairs + count);
    }
  }
};

// Sorts `keys` by (ordered lower bound, slot), starting from last step's order. Returns false
// when more than `budget` moves would be needed (the caller then sorts from scratch).
bool insertion_sort_bounded(uint64_t* keys, uint32_t n, uint64_t budget) {
  uint64_t moves = 0;
  for (uint32_t i = 1; i < n; ++i) {
    const uint64_t k = keys[i];
    uint32_t j = i;
    while (j > 0 && k < keys[j - 1]) {
      keys[j] = keys[j - 1];
      --j;
    }
    keys[j] = k;
    moves += i - j;
    if (moves > budget) return false;
  }
  return true;
}

// Sweep of one list (sorted by lo_s) against itself. In a cell list, aux bit 0 says the box's
// first cell along the band axis is this cell's, bit 1 the same along the other axis: a pair is
// reported only in the cell holding the lower corner of the two boxes' intersection, i.e. where
// the larger first cell of the two equals this cell's on both axes (both boxes cover the cell,
// so the larger first cell is this one exactly when one of the two first cells is).
template <bool kCelled>
void sweep_self(const SweepBox* boxes, uint32_t n, PairSink& sink) {
  for (uint32_t i = 0; i < n; ++i) {
    const SweepBox& a = boxes[i];
    const float hi = a.hi_s;
    for (uint32_t k = i + 1; k < n; ++k) {
      const SweepBox& b = boxes[k];
      if (b.lo_s > hi) break;
      if (kCelled && ((a.aux | b.aux) & 3u) != 3u) continue;
      if (!overlaps_bo(a, b)) continue;
      sink.add(a.slot, b.slot);
    }
  }
}

// Two-list sweep: every box of `from` against the boxes of `to` that come after it in `order`
// (larger rank), as far as their lower bound reaches its upper bound. Run both ways, it finds
// each overlapping (from, to) pair exactly once: by whichever of the two comes first.
void sweep_cross(const SweepBox* from, uint32_t n_from, const SweepBox* to, uint32_t n_to,
                 PairSink& sink) {
  uint32_t start = 0;
  for (uint32_t i = 0; i < n_from; ++i) {
    const SweepBox& a = from[i];
    while (start < n_to && to[start].aux < a.aux)
      ++start;
    const float hi = a.hi_s;
    for (uint32_t k = start; k < n_to; ++k) {
      const SweepBox& b = to[k];
      if (b.lo_s > hi) break;
      if (!overlaps_bo(a, b)) continue;
      sink.add(a.slot, b.slot);
    }
  }
}

// Ascending pair keys: two stable counting passes, by slot b then by slot a (slots < bound).
// Sorts pairs[0, count) using `scratch` and `histogram` (bound + 1 entries).
void sort_pairs(uint64_t* pairs, uint64_t* scratch, uint32_t* histogram, uint32_t count,
                uint32_t bound) {
  if (count <= kSmallPairCount) {
    insertion_sort_bounded(pairs, count, UINT64_MAX);
    return;
  }
  for (int pass = 0; pass < 2; ++pass) {
    const uint64_t* src = pass == 0 ? pairs : scratch;
    uint64_t* dst = pass == 0 ? scratch : pairs;
    const auto slot_of = [pass](uint64_t key) {
      return pass == 0 ? pair_slot_b(key) : pair_slot_a(key);
    };
    std::fill(histogram, histogram + bound + 1, 0u);
    for (uint32_t i = 0; i < count; ++i)
      ++histogram[slot_of(src[i]) + 1];
    for (uint32_t s = 0; s < bound; ++s)
      histogram[s + 1] += histogram[s];
    for (uint32_t i = 0; i < count; ++i)
      dst[histogram[slot_of(src[i])]++] = src[i];
  }
}

// The update's axes: `sweep` (the sort order), `band` and `other` (the cross axes of the cells).
struct SweepAxes {
  int sweep = 0, band = 1, other = 2;
};

// Axes from the spread of dynamic centres the previous update measured (they only steer the
// speed; the first update measures them here). The sweep axis changes only when another axis
// is much wider.
SweepAxes choose_axes(Broadphase& bp, const Aabb* aabbs, const uint8_t* dynamic) {
  const uint32_t* order = bp.order.data();
  const uint32_t n = bp.order_count;
  if (bp.axis < 0) {
    float c_min[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, c_max[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t slot = order[i];
      if (!dynamic[slot]) continue;
      const Aabb& a = aabbs[slot];
      const float c[3] = {a.lower.x + a.upper.x, a.lower.y + a.upper.y, a.lower.z + a.upper.z};
      for (int d = 0; d < 3; ++d) {
        c_min[d] = c[d] < c_min[d] ? c[d] : c_min[d];
        c_max[d] = c[d] > c_max[d] ? c[d] : c_max[d];
      }
    }
    for (int d = 0; d < 3; ++d)
      bp.spread[d] = c_max[d] > c_min[d] ? c_max[d] - c_min[d] : 0.0f;
  }
  const float* spread = bp.spread;
  int widest = 0;
  for (int d = 1; d < 3; ++d) {
    if (spread[d] > spread[widest]) widest = d;
  }
  SweepAxes axes;
  axes.sweep = bp.axis;
  if (axes.sweep < 0 || spread[widest] > kAxisSwitchRatio * spread[axes.sweep]) axes.sweep = widest;
  const int other1 = (axes.sweep + 1) % 3, other2 = (axes.sweep + 2) % 3;
  axes.band = spread[other2] > spread[other1] ? other2 : other1;
  axes.other = axes.band == other1 ? other2 : other1;
  return axes;
}

// Sorts the live slots by (lower bound along `axis`, slot) into bp.sort_keys: a coherent
// insertion sort from last update's order, else from scratch.
void sort_by_lower_bound(Broadphase& bp, const Aabb* aabbs, int axis) {
  const uint32_t* order = bp.order.data();
  const uint32_t n = bp.order_count;
  uint64_t* keys = bp.sort_keys.data();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = order[i];
    keys[i] =
        (static_cast<uint64_t>(ordered_bits(element_of(aabbs[slot].lower, axis))) << 32) | slot;
  }
  const uint64_t budget = 4ull * n + 1024;
  if (axis != bp.axis || !insertion_sort_bounded(keys, n, budget)) {
    std::sort(keys, keys + n);  // determinism-lint: allow (key is a total order)
  }
  bp.axis = axis;
}

// The sorted boxes split in two lists, and what the cells need to know of the dynamic ones.
struct SweepLists {
  SweepBox* dyn = nullptr;  // dynamic boxes in sweep order (aux = rank)
  uint32_t n_dyn = 0;
  SweepBox* stat = nullptr;  // static and kinematic boxes in sweep order (aux = rank)
  uint32_t n_stat = 0;
  uint32_t slot_bound = 0;  // one past the largest live slot
  // Dynamic boxes: range and total size along the two cross axes (band, other) and the sweep.
  float cross_lo[2] = {FLT_MAX, FLT_MAX}, cross_hi[2] = {-FLT_MAX, -FLT_MAX};
  float size_sum[2] = {0.0f, 0.0f};
  float sweep_lo = FLT_MAX, sweep_hi = -FLT_MAX, sweep_size_sum = 0.0f;
};

// Writes bp.order in sweep order and splits the boxes into dynamic and non-dynamic lists
// (dynamic from the front of sweep_boxes, the others from the back, then reversed), measuring
// the dynamic bodies on the way: centres (doubled) into bp.spread for the next update's axes,
// ranges and sizes for this update's cells.
SweepLists split_sweep_lists(Broadphase& bp, const Aabb* aabbs, const uint8_t* dynamic,
                             const SweepAxes& axes) {
  uint32_t* order = bp.order.data();
  const uint64_t* keys = bp.sort_keys.data();
  const uint32_t n = bp.order_count;
  SweepLists l;
  l.dyn = bp.sweep_boxes.data();
  SweepBox* stat_end = l.dyn + n;
  float c_min[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, c_max[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = static_cast<uint32_t>(keys[i]);
    order[i] = slot;
    l.slot_bound = slot + 1 > l.slot_bound ? slot + 1 : l.slot_bound;
    const Aabb& a = aabbs[slot];
    const float lo[3] = {a.lower.x, a.lower.y, a.lower.z};
    const float hi[3] = {a.upper.x, a.upper.y, a.upper.z};
    SweepBox box;
    box.lo_s = lo[axes.sweep];
    box.hi_s = hi[axes.sweep];
    box.lo_b = lo[axes.band];
    box.hi_b = hi[axes.band];
    box.lo_o = lo[axes.other];
    box.hi_o = hi[axes.other];
    box.slot = slot;
    box.aux = i;
    if (!dynamic[slot]) {
      *(stat_end - ++l.n_stat) = box;
      continue;
    }
    l.dyn[l.n_dyn++] = box;
    for (int d = 0; d < 3; ++d) {
      const float c = lo[d] + hi[d];
      c_min[d] = c < c_min[d] ? c : c_min[d];
      c_max[d] = c > c_max[d] ? c : c_max[d];
    }
    l.cross_lo[0] = box.lo_b < l.cross_lo[0] ? box.lo_b : l.cross_lo[0];
    l.cross_hi[0] = box.hi_b > l.cross_hi[0] ? box.hi_b : l.cross_hi[0];
    l.cross_lo[1] = box.lo_o < l.cross_lo[1] ? box.lo_o : l.cross_lo[1];
    l.cross_hi[1] = box.hi_o > l.cross_hi[1] ? box.hi_o : l.cross_hi[1];
    l.size_sum[0] += box.hi_b - box.lo_b;
    l.size_sum[1] += box.hi_o - box.lo_o;
    l.sweep_lo = box.lo_s < l.sweep_lo ? box.lo_s : l.sweep_lo;
    l.sweep_hi = box.hi_s > l.sweep_hi ? box.hi_s : l.sweep_hi;
    l.sweep_size_sum += box.hi_s - box.lo_s;
  }
  for (int d = 0; d < 3; ++d)
    bp.spread[d] = c_max[d] > c_min[d] ? c_max[d] - c_min[d] : 0.0f;
  l.stat = stat_end - l.n_stat;
  std::reverse(l.stat, stat_end);
  return l;
}

// Cells: a grid over the two cross axes, [origin + k·width, origin + (k+1)·width) per axis,
// the end rows open-ended. Any layout gives the same pairs; this one keeps cells few and full.
struct CellGrid {
  uint32_t cells[2] = {1, 1};
  float inv_width[2] = {0.0f, 0.0f};
  float origin[2] = {0.0f, 0.0f};

  uint32_t count() const { return cells[0] * cells[1]; }
  // Monotone in v (subtraction, scaling and truncation all are), so the cells of a box along an
  // axis are [cell_of(lo), cell_of(hi)], and cell_of(max(lo_a, lo_b)) = max of the first cells.
  uint32_t cell_of(int c, float v) const {
    if (cells[c] == 1) return 0;
    const float t = (v - origin[c]) * inv_width[c];
    if (!(t > 0.0f)) return 0;
    if (t >= static_cast<float>(cells[c])) return cells[c] - 1;
    const uint32_t k = static_cast<uint32_t>(t);
    return k < cells[c] ? k : cells[c] - 1;
  }
};

CellGrid plan_cells(const SweepLists& l) {
  CellGrid g;
  g.origin[0] = l.cross_lo[0];
  g.origin[1] = l.cross_lo[1];
  uint32_t cell_limit = l.n_dyn / kMinBodiesPerCell;
  cell_limit = cell_limit < kMaxCells ? cell_limit : kMaxCells;
  // A plain sweep meets about n · mean size / range boxes per box (= total size / range): when
  // that is few, the copies into cells would cost more than they save.
  if (l.sweep_size_sum < kMinSweepCandidatesForCells * (l.sweep_hi - l.sweep_lo)) cell_limit = 0;
  for (int c = 0; c < 2; ++c) {
    const float range = l.cross_hi[c] - l.cross_lo[c];
    const float width = kCellWidthInSizes * (l.size_sum[c] / static_cast<float>(l.n_dyn));
    if (!(width > 0.0f && range > 0.0f)) continue;
    const float fit = range / width;
    g.cells[c] = fit < static_cast<float>(kMaxCellsPerAxis) ? static_cast<uint32_t>(fit) + 1
                                                            : kMaxCellsPerAxis;
    g.inv_width[c] = 1.0f / width;
  }
  // Too many cells for the bodies: halve the larger count until it fits.
  while (g.cells[0] * g.cells[1] > (cell_limit > 1 ? cell_limit : 1)) {
    int c = g.cells[0] >= g.cells[1] ? 0 : 1;
    g.cells[c] = (g.cells[c] + 1) / 2;
    g.inv_width[c] = g.inv_width[c] * 0.5f;
  }
  return g;
}

// The dynamic × dynamic sweep cell by cell. False (nothing reported) when the boxes would need
// more cell entries than cell_boxes holds: the caller then sweeps them as one list.
bool sweep_dynamic_in_cells(Broadphase& bp, const CellGrid& g, const SweepBox* dyn, uint32_t n_dyn,
                            PairSink& sink) {
  const uint32_t cell_count = g.count();
  uint64_t* range_of = bp.cell_range.data();  // b0, b1, o0, o1 in 16 bits each, per dynamic box
  uint32_t* start = bp.cell_start.data();
  std::fill(start, start + cell_count + 1, 0u);
  uint64_t entries = 0;
  for (uint32_t i = 0; i < n_dyn; ++i) {
    const uint32_t b0 = g.cell_of(0, dyn[i].lo_b), b1 = g.cell_of(0, dyn[i].hi_b);
    const uint32_t o0 = g.cell_of(1, dyn[i].lo_o), o1 = g.cell_of(1, dyn[i].hi_o);
    range_of[i] = static_cast<uint64_t>(b0) << 48 | static_cast<uint64_t>(b1) << 32 |
                  static_cast<uint64_t>(o0) << 16 | o1;
    entries += static_cast<uint64_t>(b1 - b0 + 1) * (o1 - o0 + 1);
    for (uint32_t bb = b0; bb <= b1; ++bb) {
      for (uint32_t oo = o0; oo <= o1; ++oo)
        ++start[bb * g.cells[1] + oo + 1];
    }
  }
  if (entries > bp.cell_boxes.size()) return false;

  // Scatter in sweep order, so every cell stays sorted; aux = first-cell flags (sweep_self).
  for (uint32_t c = 0; c < cell_count; ++c)
    start[c + 1] += start[c];
  SweepBox* celled = bp.cell_boxes.data();
  for (uint32_t i = 0; i < n_dyn; ++i) {
    const uint64_t r = range_of[i];
    const uint32_t b0 = static_cast<uint32_t>(r >> 48);
    const uint32_t b1 = static_cast<uint32_t>(r >> 32) & 0xffffu;
    const uint32_t o0 = static_cast<uint32_t>(r >> 16) & 0xffffu;
    const uint32_t o1 = static_cast<uint32_t>(r) & 0xffffu;
    SweepBox box = dyn[i];
    for (uint32_t bb = b0; bb <= b1; ++bb) {
      for (uint32_t oo = o0; oo <= o1; ++oo) {
        box.aux = (bb == b0 ? 1u : 0u) | (oo == o0 ? 2u : 0u);
        celled[start[bb * g.cells[1] + oo]++] = box;
      }
    }
  }
  // start[c] is now the end of cell c, i.e. the start of cell c + 1.
  uint32_t begin = 0;
  for (uint32_t c = 0; c < cell_count; ++c) {
    const uint32_t end = start[c];
    if (end - begin > 1) sweep_self<true>(celled + begin, end - begin, sink);
    begin = end;
  }
  return true;
}

}  // namespace

void broadphase_init(Broadphase& bp, uint32_t max_bodies, uint32_t max_pairs) {
  bp.order.assign(max_bodies, 0);
  bp.order_count = 0;
  bp.pairs.assign(max_pairs, 0);
  bp.pair_count = 0;
  bp.dropped_pairs = 0;
  bp.axis = -1;
  bp.sort_keys.assign(max_bodies, 0);
  bp.sweep_boxes.assign(max_bodies, SweepBox{});
  bp.cell_boxes.assign(static_cast<size_t>(max_bodies) * kCellEntriesPerBody, SweepBox{});
  bp.cell_start.assign(kMaxCells + 1, 0);
  bp.cell_range.assign(max_bodies, 0);
  bp.pair_scratch.assign(max_pairs, 0);
  bp.slot_histogram.assign(static_cast<size_t>(max_bodies) + 1, 0);
  bp.filters.assign(max_bodies, kFilterAll);
}

size_t broadphase_memory_bytes(uint64_t max_bodies, uint64_t max_pairs) {
  const uint64_t per_body = sizeof(uint32_t) + 2 * sizeof(uint64_t) + sizeof(SweepBox) +
                            kCellEntriesPerBody * sizeof(SweepBox) + sizeof(uint64_t) +
                            sizeof(uint32_t) + sizeof(uint64_t);
  return static_cast<size_t>(per_body * max_bodies + 2 * sizeof(uint64_t) * max_pairs +
                             (kMaxCells + 1) * sizeof(uint32_t) + sizeof(uint32_t));
}

void broadphase_insert(Broadphase& bp, uint32_t slot, uint64_t filter) {
  if (slot < bp.filters.size()) bp.filters[slot] = filter;
  if (bp.order_count < bp.order.size()) bp.order[bp.order_count++] = slot;
}

void broadphase_remove(Broadphase& bp, uint32_t slot) {
  uint32_t n = bp.order_count;
  for (uint32_t i = 0; i < n; ++i) {
    if (bp.order[i] != slot) continue;
    for (uint32_t j = i + 1; j < n; ++j)
      bp.order[j - 1] = bp.order[j];
    bp.order_count = n - 1;
    return;
  }
}

void broadphase_clear(Broadphase& bp) {
  bp.order_count = 0;
  bp.pair_count = 0;
  bp.dropped_pairs = 0;
  bp.axis = -1;
  bp.spread[0] = bp.spread[1] = bp.spread[2] = 0.0f;
}

// Stages: axes → sort → split → dynamic × dynamic (in cells when they pay) → dynamic × the
// others, both ways → pair keys sorted.
void broadphase_update(Broadphase& bp, std::span<const Aabb> aabbs_span,
                       std::span<const uint8_t> dynamic_span) {
  const Aabb* aabbs = aabbs_span.data();
  const uint8_t* dynamic = dynamic_span.data();
  bp.pair_count = 0;
  bp.dropped_pairs = 0;

  const SweepAxes axes = choose_axes(bp, aabbs, dynamic);
  sort_by_lower_bound(bp, aabbs, axes.sweep);
  const SweepLists l = split_sweep_lists(bp, aabbs, dynamic, axes);
  if (l.n_dyn == 0) return;  // every pair needs a dynamic body

  PairSink sink;
  sink.filters = bp.filters.data();
  sink.pairs = bp.pairs.data();
  sink.capacity = static_cast<uint32_t>(bp.pairs.size());
  const CellGrid grid = plan_cells(l);
  if (grid.count() <= 1 || !sweep_dynamic_in_cells(bp, grid, l.dyn, l.n_dyn, sink)) {
    sweep_self<false>(l.dyn, l.n_dyn, sink);
  }
  if (l.n_stat > 0) {
    sweep_cross(l.dyn, l.n_dyn, l.stat, l.n_stat, sink);
    sweep_cross(l.stat, l.n_stat, l.dyn, l.n_dyn, sink);
  }

  const uint32_t count = sink.count;
  sort_pairs(bp.pairs.data(), bp.pair_scratch.data(), bp.slot_histogram.data(), count,
             l.slot_bound);
  bp.pair_count = count;
  bp.dropped_pairs = sink.dropped;
}

}  // namespace lockstep::sim
