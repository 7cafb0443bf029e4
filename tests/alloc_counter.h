// Counting global operator new/delete for the zero-allocation tests. Link alloc_counter.cpp
// into a test binary and every replaceable form of operator new is counted while an
// AllocationCounter is alive.
#pragma once

#include <cstdint>

namespace lockstep::testing {

/// Counts allocations between construction and count() (or destruction).
class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  /// Stops counting and returns the number of allocations seen.
  uint64_t count();
};

}  // namespace lockstep::testing
