// TickPhases: a worker's rooms spread over the tick period (tick_phases.h).
//
// Phases are kept in units of 1/rate ns ("scaled"), in which one period is exactly 1e9: a tick n
// is due at start + floor(n·1e9/rate) ns, so two schedules keep the distance between their
// starts for ever, and a whole second holds a whole number of periods (the rate is an integer).
#include "tick_phases.h"

#include <algorithm>

namespace lockstep::server {
namespace {

constexpr int64_t kScaledPeriod = 1'000'000'000;

}  // namespace

TickPhases::TickPhases(uint32_t tick_rate_hz, Clock::time_point origin)
    : rate_(std::max<uint32_t>(tick_rate_hz, 1)), origin_(origin) {}

int64_t TickPhases::scaled_phase(Clock::time_point t) const {
  int64_t ns = (t - origin_).count() % kScaledPeriod;  // whole seconds are whole periods
  if (ns < 0) ns += kScaledPeriod;
  return ns * static_cast<int64_t>(rate_) % kScaledPeriod;
}

uint32_t TickPhases::slot_of(Clock::time_point start) const {
  // Within a few ns after its phase (place() rounds), or at worst just before the next one.
  const int64_t phase = scaled_phase(start) + kScaledPeriod / (2 * int64_t{kSlots});
  return static_cast<uint32_t>(phase % kScaledPeriod * kSlots / kScaledPeriod);
}

TickPhases::Clock::time_point TickPhases::place(Clock::time_point now) {
  const int64_t phase_now = scaled_phase(now);
  uint32_t best_slot = 0;
  int64_t best_back = -1;  // how far before now the start goes (scaled): larger = tick 1 sooner
  for (uint32_t k = 0; k < kSlots; ++k) {
    const int64_t centre = int64_t{k} * kScaledPeriod / int64_t{kSlots};  // the slot's phase
    const int64_t back = ((phase_now - centre) % kScaledPeriod + kScaledPeriod) % kScaledPeriod;
    if (best_back < 0 || rooms_[k] < rooms_[best_slot] ||
        (rooms_[k] == rooms_[best_slot] && back > best_back)) {
      best_slot = k;
      best_back = back;
    }
  }
  // Whole ns: the start lies less than 1 ns after the slot's phase, for every room of the slot.
  const int64_t rate = static_cast<int64_t>(rate_);
  const Clock::time_point start = now - std::chrono::nanoseconds(best_back / rate);
  ++rooms_[best_slot];
  return start;
}

void TickPhases::add(Clock::time_point start) {
  ++rooms_[slot_of(start)];
}

void TickPhases::remove(Clock::time_point start) {
  uint32_t& count = rooms_[slot_of(start)];
  if (count > 0) --count;
}

}  // namespace lockstep::server
