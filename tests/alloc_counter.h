// Counting replacements of every global operator new/delete form, shared by the tests (the
// zero-allocation checks) and the benchmarks (how much memory a world takes). Linked into a
// program, alloc_counter.cpp counts every allocation of that program: calls, live bytes and the
// peak of live bytes. glibc's malloc_usable_size gives a block's size at free time, so no header
// is added to blocks and aligned blocks need no special case.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::testing {

struct AllocTotals {
  uint64_t allocations = 0;  // calls since program start
  int64_t live_bytes = 0;    // currently allocated (malloc_usable_size, so rounding included)
  int64_t peak_live_bytes = 0;
};

/// The counters now.
AllocTotals alloc_totals();
/// Sets the peak to the current live bytes (to measure the peak of one phase).
void reset_alloc_peak();

/// malloc and free with the same accounting, for engines with their own allocation hooks
/// (Bullet's btAlignedAllocSetCustom).
void* counted_malloc(std::size_t size);
void counted_free(void* p);

/// Counts allocations (of every thread) between construction and count().
class AllocationCounter {
 public:
  AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  /// Stops counting and returns the number of allocations seen.
  uint64_t count();

 private:
  uint64_t start_ = 0;
  uint64_t end_ = 0;
  bool stopped_ = false;
};

}  // namespace lockstep::testing
