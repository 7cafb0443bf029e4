// Tick clock and lateness histogram. Bucket layout (HdrHistogram-style, base 2): a value v ≥
// 2^10 ns lies in octave o = floor(log2 v); its sub-bucket is the 3 bits below the leading one,
// so bucket widths are 2^(o−3) and every bucket is at most 1/8 of its lower bound wide.
#include "lockstep/server/tick_clock.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "lockstep/schema/tick_schedule.h"

namespace lockstep::server {

// ---- histogram ---------------------------------------------------------------------------------

size_t LatenessHistogram::bucket_index(uint64_t duration_ns) {
  if (duration_ns < (uint64_t{1} << kMinOctave)) return 0;
  const int octave = static_cast<int>(std::bit_width(duration_ns)) - 1;
  if (octave > kMaxOctave) return kBucketCount - 1;
  const uint64_t sub = (duration_ns >> (octave - kSubBucketBits)) & ((1u << kSubBucketBits) - 1);
  return 1 + (static_cast<size_t>(octave - kMinOctave) << kSubBucketBits) + sub;
}

uint64_t LatenessHistogram::bucket_lower_ns(size_t index) {
  if (index == 0) return 0;
  if (index >= kBucketCount - 1) return uint64_t{1} << (kMaxOctave + 1);
  const int octave = kMinOctave + static_cast<int>((index - 1) >> kSubBucketBits);
  const uint64_t sub = (index - 1) & ((size_t{1} << kSubBucketBits) - 1);
  return ((uint64_t{1} << kSubBucketBits) + sub) << (octave - kSubBucketBits);
}

uint64_t LatenessHistogram::bucket_upper_ns(size_t index) {
  if (index >= kBucketCount - 1) return std::numeric_limits<uint64_t>::max();
  return bucket_lower_ns(index + 1);
}

void LatenessHistogram::record(std::chrono::nanoseconds duration) {
  const uint64_t ns = duration.count() > 0 ? static_cast<uint64_t>(duration.count()) : 0;
  ++counts_[bucket_index(ns)];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
  sum_ns_ = ns > std::numeric_limits<uint64_t>::max() - sum_ns_
                ? std::numeric_limits<uint64_t>::max()
                : sum_ns_ + ns;
}

void LatenessHistogram::merge(const LatenessHistogram& other) {
  for (size_t i = 0; i < kBucketCount; ++i)
    counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
  sum_ns_ = other.sum_ns_ > std::numeric_limits<uint64_t>::max() - sum_ns_
                ? std::numeric_limits<uint64_t>::max()
                : sum_ns_ + other.sum_ns_;
}

void LatenessHistogram::clear() {
  *this = LatenessHistogram{};
}

std::chrono::nanoseconds LatenessHistogram::mean() const {
  if (count_ == 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(sum_ns_ / count_));
}

std::chrono::nanoseconds LatenessHistogram::quantile(double q) const {
  if (count_ == 0) return std::chrono::nanoseconds(0);
  // The rank-th smallest value (1-based) is the q-quantile; rank = ceil(q·count) in [1, count].
  const double wanted = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_));
  const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(wanted), 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t last_ns = bucket_upper_ns(i) - 1;
      return std::chrono::nanoseconds(static_cast<int64_t>(std::min(last_ns, max_ns_)));
    }
  }
  return max();
}

// ---- clock -------------------------------------------------------------------------------------

const char* tick_clock_config_error(const TickClockConfig& config) {
  if (!schema::valid_tick_rate(config.tick_rate_hz)) return "tick rate must be 1..1000 Hz";
  if (config.max_catch_up_ticks < 1) return "max catch-up ticks must be at least 1";
  if (config.late_threshold.count() < 0) return "late threshold must not be negative";
  return nullptr;
}

TickClock::TickClock(const TickClockConfig& config, Clock::time_point start)
    : config_(config), start_(start) {
  config_.tick_rate_hz = std::clamp<uint32_t>(config_.tick_rate_hz, 1, schema::kMaxTickRateHz);
  config_.max_catch_up_ticks = std::max<uint32_t>(config_.max_catch_up_ticks, 1);
  config_.late_threshold = std::max(config_.late_threshold, std::chrono::nanoseconds(0));
}

TickClock::Clock::time_point TickClock::due_time(uint64_t tick) const {
  return start_ + std::chrono::nanoseconds(schema::tick_due_offset_ns(tick, config_.tick_rate_hz));
}

uint32_t TickClock::advance(Clock::time_point now) {
  if (config_.max_backlog_ticks > 0 && backlog_ticks(now) > config_.max_backlog_ticks) {
    // Move the schedule so that next_tick_ is due now: what is already late stays counted, the
    // ticks still ahead are measured from here.
    const Clock::time_point new_start = now - std::chrono::nanoseconds(schema::tick_due_offset_ns(
                                                  next_tick_, config_.tick_rate_hz));
    counters_.slipped += new_start - start_;
    ++counters_.slips;
    start_ = new_start;
  }
  uint32_t started = 0;
  for (; started < config_.max_catch_up_ticks; ++started) {
    const Clock::time_point due = due_time(next_tick_);
    if (due > now) break;
    const std::chrono::nanoseconds lateness = now - due;
    lateness_.record(lateness);
    if (lateness > config_.late_threshold) ++counters_.late_ticks;
    counters_.max_lateness = std::max(counters_.max_lateness, lateness);
    ++counters_.ticks_started;
    ++next_tick_;
  }
  if (started == config_.max_catch_up_ticks && due_time(next_tick_) <= now) {
    ++counters_.capped_wakes;
  }
  return started;
}

uint64_t TickClock::backlog_ticks(Clock::time_point now) const {
  const uint64_t due = schema::ticks_due_by((now - start_).count(), config_.tick_rate_hz);
  return due > next_tick_ ? due - next_tick_ : 0;
}

SchedulePosition TickClock::position(Clock::time_point now) const {
  const uint64_t due = schema::ticks_due_by((now - start_).count(), config_.tick_rate_hz);
  SchedulePosition result;
  result.tick = due > 0 ? due - 1 : 0;
  result.since_due = now - due_time(result.tick);
  return result;
}

}  // namespace lockstep::server
