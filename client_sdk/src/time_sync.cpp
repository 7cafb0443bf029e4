// Time sync: a 16-sample window kept by send time, the least-rtt sample chosen from it.
#include "lockstep/client_sdk/time_sync.h"

#include <algorithm>

#include "lockstep/schema/tick_schedule.h"

namespace lockstep::client_sdk {
namespace {

// A Pong's since_due is under one period for a server on schedule; a room catching up may
// report more. A minute is far past anything real and keeps every sum inside int64.
constexpr std::chrono::nanoseconds kMaxSinceDue = std::chrono::minutes(1);
// A schedule moved later by more than 2^31 s (68 years) is a broken server; the bound keeps
// epoch arithmetic inside int64 together with the schedule's own range (2^32 s).
constexpr std::chrono::nanoseconds kMaxMoved = std::chrono::seconds(int64_t{1} << 31);

}  // namespace

const char* sample_verdict_message(SampleVerdict verdict) {
  switch (verdict) {
    case SampleVerdict::accepted:
      return "accepted";
    case SampleVerdict::negative_rtt:
      return "rejected: pong received before its ping was sent (negative round trip)";
    case SampleVerdict::rtt_too_large:
      return "rejected: round trip over the limit";
    case SampleVerdict::bad_server_time:
      return "rejected: server tick or time since due out of range";
    case SampleVerdict::duplicate:
      return "rejected: duplicate of a sample in the window";
    case SampleVerdict::stale:
      return "rejected: older than every sample in the window";
  }
  return "unknown verdict";
}

TimeSync::TimeSync(const TimeSyncConfig& config) : config_(config) {
  config_.tick_rate_hz = std::clamp<uint32_t>(config_.tick_rate_hz, 1, schema::kMaxTickRateHz);
}

SampleVerdict TimeSync::add_sample(const TimeSample& sample) {
  const std::chrono::nanoseconds rtt = sample.client_receive - sample.client_send;
  if (rtt.count() < 0) {
    ++counters_.negative_rtt;
    return SampleVerdict::negative_rtt;
  }
  if (rtt > config_.max_rtt) {
    ++counters_.rtt_too_large;
    return SampleVerdict::rtt_too_large;
  }
  if (sample.server_since_due.count() < 0 || sample.server_since_due > kMaxSinceDue ||
      sample.server_tick > schema::max_schedule_tick(config_.tick_rate_hz) ||
      sample.server_schedule_moved.count() < 0 || sample.server_schedule_moved > kMaxMoved) {
    ++counters_.bad_server_time;
    return SampleVerdict::bad_server_time;
  }
  size_t oldest = 0;
  for (size_t i = 0; i < window_count_; ++i) {
    if (window_[i].client_send == sample.client_send) {
      ++counters_.duplicates;
      return SampleVerdict::duplicate;
    }
    if (window_[i].client_send < window_[oldest].client_send) oldest = i;
  }
  size_t slot = window_count_;
  if (window_count_ == kWindowSamples) {
    // The window holds the newest samples by send time, whatever order they arrive in.
    if (sample.client_send < window_[oldest].client_send) {
      ++counters_.stale;
      return SampleVerdict::stale;
    }
    slot = oldest;
  } else {
    ++window_count_;
  }

  const std::chrono::nanoseconds server_elapsed =
      std::chrono::nanoseconds(
          schema::tick_due_offset_ns(sample.server_tick, config_.tick_rate_hz)) +
      sample.server_since_due;
  // Every sample is kept against the schedule as it was at the room's opening, so samples from
  // before and after a move of the schedule compare; the newest move is added back when
  // estimating.
  window_[slot] = {sample.client_send, rtt,
                   sample.client_send + rtt / 2 - server_elapsed - sample.server_schedule_moved};
  choose_best();
  schedule_moved_ = std::max(schedule_moved_, sample.server_schedule_moved);

  smoothed_rtt_ = counters_.accepted == 0 ? rtt : smoothed_rtt_ + (rtt - smoothed_rtt_) / 8;
  last_rtt_ = rtt;
  ++counters_.accepted;
  return SampleVerdict::accepted;
}

void TimeSync::choose_best() {
  best_ = 0;
  for (size_t i = 1; i < window_count_; ++i) {
    const WindowSample& s = window_[i];
    const WindowSample& b = window_[best_];
    if (s.rtt < b.rtt || (s.rtt == b.rtt && s.client_send > b.client_send)) best_ = i;
  }
}

std::optional<std::chrono::nanoseconds> TimeSync::server_schedule_time(SteadyTime now) const {
  if (window_count_ == 0) return std::nullopt;
  return now - (window_[best_].server_epoch + schedule_moved_);
}

std::optional<uint64_t> TimeSync::estimated_server_tick(SteadyTime now) const {
  const std::optional<std::chrono::nanoseconds> elapsed = server_schedule_time(now);
  if (!elapsed) return std::nullopt;
  const uint64_t due = schema::ticks_due_by(elapsed->count(), config_.tick_rate_hz);
  return due > 0 ? due - 1 : 0;
}

std::optional<uint64_t> TimeSync::target_tick(SteadyTime now, uint32_t input_delay_ticks) const {
  const std::optional<uint64_t> tick = estimated_server_tick(now);
  if (!tick) return std::nullopt;
  return *tick + input_delay_ticks;
}

std::chrono::nanoseconds TimeSync::min_rtt() const {
  return window_count_ > 0 ? window_[best_].rtt : std::chrono::nanoseconds(0);
}

}  // namespace lockstep::client_sdk
