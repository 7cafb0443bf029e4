// Counting operator new/delete (see alloc_counter.h).
#include "alloc_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace lockstep::testing {
namespace {

std::atomic<uint64_t> g_allocations{0};
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_live_bytes{0};

void account_alloc(void* p) {
  if (p == nullptr) return;
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const int64_t live = g_live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)),
                                              std::memory_order_relaxed) +
                       static_cast<int64_t>(malloc_usable_size(p));
  if (live > g_peak_live_bytes.load(std::memory_order_relaxed)) {
    g_peak_live_bytes.store(live, std::memory_order_relaxed);
  }
}

void* aligned_counted_malloc(std::size_t size, std::align_val_t align) {
  const std::size_t a = static_cast<std::size_t>(align);
  const std::size_t rounded = (size + a - 1) / a * a;
  void* p = std::aligned_alloc(a, rounded == 0 ? a : rounded);
  account_alloc(p);
  return p;
}

}  // namespace

AllocTotals alloc_totals() {
  return {g_allocations.load(std::memory_order_relaxed),
          g_live_bytes.load(std::memory_order_relaxed),
          g_peak_live_bytes.load(std::memory_order_relaxed)};
}

void reset_alloc_peak() {
  g_peak_live_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void* counted_malloc(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  account_alloc(p);
  return p;
}

// Out of line so that GCC does not pair an inlined free() with operator new and warn
// (-Wmismatched-new-delete): the replaced operators below really do use malloc/free.
[[gnu::noinline]] void counted_free(void* p) {
  if (p == nullptr) return;
  g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace lockstep::testing

using lockstep::testing::counted_free;
using lockstep::testing::counted_malloc;

void* operator new(std::size_t size) {
  void* p = counted_malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size) {
  void* p = counted_malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return counted_malloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return counted_malloc(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  void* p = lockstep::testing::aligned_counted_malloc(size, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size, std::align_val_t align) {
  void* p = lockstep::testing::aligned_counted_malloc(size, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return lockstep::testing::aligned_counted_malloc(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return lockstep::testing::aligned_counted_malloc(size, align);
}
void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}

namespace lockstep::testing {

AllocationCounter::AllocationCounter() : start_(alloc_totals().allocations) {}

uint64_t AllocationCounter::count() {
  if (!stopped_) {
    end_ = alloc_totals().allocations;
    stopped_ = true;
  }
  return end_ - start_;
}

}  // namespace lockstep::testing
