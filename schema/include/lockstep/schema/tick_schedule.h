// The tick schedule of a room, shared by the server's tick clock and the client's time sync so
// both sides put tick boundaries at exactly the same instants.
//
// Tick n is due floor(n·1e9 / rate_hz) nanoseconds after tick 0. The period of most rates is not
// a whole number of nanoseconds (60 Hz: 16,666,666.67 ns); computing each due time from n, never
// by adding a rounded period, keeps the error under 1 ns forever (tick 60 at 60 Hz is due exactly
// 1 s after tick 0) instead of drifting by n × the rounding (≈ 0.67 ns per tick, 40 µs a minute).
// All math is integer: n = q·rate + r gives floor(n·1e9/rate) = q·1e9 + floor(r·1e9/rate), whose
// products stay inside int64 for every tick up to max_schedule_tick().
#pragma once

#include <cstdint>

namespace lockstep::schema {

/// Highest tick rate a room may run at (and that a Welcome may announce).
inline constexpr uint32_t kMaxTickRateHz = 1000;
inline constexpr int64_t kNanosecondsPerSecond = 1'000'000'000;

/// True for a rate the schedule supports: 1..kMaxTickRateHz.
constexpr bool valid_tick_rate(uint32_t rate_hz) {
  return rate_hz >= 1 && rate_hz <= kMaxTickRateHz;
}

/// Largest tick the schedule functions accept: 2^32 s of schedule (136 years) at `rate_hz`.
constexpr uint64_t max_schedule_tick(uint32_t rate_hz) {
  return uint64_t{rate_hz} << 32;
}

/// Nanoseconds from tick 0's due time to tick `tick`'s: floor(tick·1e9 / rate_hz).
/// `tick` ≤ max_schedule_tick(rate_hz) (larger ticks are clamped), rate_hz valid.
constexpr int64_t tick_due_offset_ns(uint64_t tick, uint32_t rate_hz) {
  if (tick > max_schedule_tick(rate_hz)) tick = max_schedule_tick(rate_hz);
  const uint64_t whole_seconds = tick / rate_hz;
  const uint64_t rest_ticks = tick % rate_hz;
  return static_cast<int64_t>(whole_seconds) * kNanosecondsPerSecond +
         static_cast<int64_t>(rest_ticks) * kNanosecondsPerSecond / rate_hz;
}

/// How many ticks (0, 1, …) are due `elapsed_ns` after tick 0's due time: the count of n with
/// tick_due_offset_ns(n) ≤ elapsed_ns. 0 for a negative elapsed time, at most
/// max_schedule_tick(rate_hz) + 1; rate_hz valid.
constexpr uint64_t ticks_due_by(int64_t elapsed_ns, uint32_t rate_hz) {
  if (elapsed_ns < 0) return 0;
  // floor(n·1e9/rate) ≤ e  ⇔  n·1e9 < (e+1)·rate  ⇔  n ≤ ((e+1)·rate − 1) / 1e9 (floor).
  // With e = a·1e9 + b: ((e+1)·rate − 1) / 1e9 = a·rate + ((b+1)·rate − 1) / 1e9.
  const uint64_t whole_seconds = static_cast<uint64_t>(elapsed_ns / kNanosecondsPerSecond);
  const uint64_t rest_ns = static_cast<uint64_t>(elapsed_ns % kNanosecondsPerSecond);
  if (whole_seconds >= (uint64_t{1} << 32)) return max_schedule_tick(rate_hz) + 1;  // all due
  const uint64_t rest_ticks =
      ((rest_ns + 1) * rate_hz - 1) / static_cast<uint64_t>(kNanosecondsPerSecond);
  return whole_seconds * rate_hz + rest_ticks + 1;
}

}  // namespace lockstep::schema
