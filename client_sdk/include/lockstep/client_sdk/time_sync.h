// The client's estimate of the server's tick, from ping/pong exchanges.
//
// A Ping leaves at client time t0; the server answers with its schedule position (the last tick
// due and how long ago it was due, see server::TickClock::position); the Pong arrives at t3.
// With rtt = t3 − t0 and the reply assumed at the midpoint t0 + rtt/2, the sample gives the
// client time at which the server's tick 0 was due (the "server epoch"):
//
//   epoch = t0 + rtt/2 − (tick_due_offset(tick) + since_due)
//
// The error of that assumption is half the asymmetry of the two legs, at most rtt/2, and
// queueing only ever adds delay; so of the last kWindowSamples samples the one with the least
// rtt gives the best epoch (ties: the most recent). Keeping a window rather than the all-time
// minimum follows a route whose delay has grown, and bounds the clock drift a sample carries
// (steady clocks differ by tens of ppm: under a millisecond over a 16-second window).
// Pure logic: times are passed in; nothing here reads a clock.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace lockstep::client_sdk {

using SteadyTime = std::chrono::steady_clock::time_point;

/// One ping/pong exchange. Client times are on the client's steady clock.
struct TimeSample {
  SteadyTime client_send{};                      // the Ping left (echoed back by the Pong)
  uint64_t server_tick = 0;                      // the Pong's schedule position: last tick due…
  std::chrono::nanoseconds server_since_due{0};  // …and how long after its due time it replied
  std::chrono::nanoseconds server_schedule_moved{0};  // the Pong's schedule_moved_ns
  SteadyTime client_receive{};                        // the Pong arrived
};

/// What add_sample() did with a sample.
enum class SampleVerdict : uint8_t {
  accepted = 0,
  negative_rtt,     // arrived before it was sent: a broken echo or clock
  rtt_too_large,    // over TimeSyncConfig::max_rtt
  bad_server_time,  // since_due negative or over a minute, or a tick past the schedule's range
  duplicate,        // a sample with this send time is already in the window
  stale,            // older than every sample of a full window
};

/// One-line English description of a verdict (static storage).
const char* sample_verdict_message(SampleVerdict verdict);

struct TimeSyncConfig {
  uint32_t tick_rate_hz = 60;  // from Welcome; 1..schema::kMaxTickRateHz
  std::chrono::nanoseconds max_rtt{std::chrono::seconds(10)};
};

struct TimeSyncCounters {
  uint64_t accepted = 0;
  uint64_t negative_rtt = 0;
  uint64_t rtt_too_large = 0;
  uint64_t bad_server_time = 0;
  uint64_t duplicates = 0;
  uint64_t stale = 0;
};

class TimeSync final {
 public:
  static constexpr size_t kWindowSamples = 16;

  /// An invalid tick rate is clamped into 1..schema::kMaxTickRateHz.
  explicit TimeSync(const TimeSyncConfig& config);

  /// Checks a sample and, when sane, adds it to the window (evicting the oldest by send time).
  SampleVerdict add_sample(const TimeSample& sample);

  bool has_estimate() const { return window_count_ > 0; }
  /// Estimated time since the server's tick 0 was due, at client time `now`.
  std::optional<std::chrono::nanoseconds> server_schedule_time(SteadyTime now) const;
  /// Estimated last tick due on the server at client time `now` (0 before tick 0 is due).
  std::optional<uint64_t> estimated_server_tick(SteadyTime now) const;
  /// The tick an input sent at `now` is stamped for: estimated server tick + input delay.
  std::optional<uint64_t> target_tick(SteadyTime now, uint32_t input_delay_ticks) const;

  /// Least rtt in the window (the sample the estimate comes from); 0 without samples.
  std::chrono::nanoseconds min_rtt() const;
  /// Exponentially smoothed rtt over accepted samples (gain 1/8, as TCP's SRTT).
  std::chrono::nanoseconds smoothed_rtt() const { return smoothed_rtt_; }
  /// Most recently accepted sample's rtt.
  std::chrono::nanoseconds last_rtt() const { return last_rtt_; }
  /// Bound on the estimate's error from path asymmetry: min_rtt / 2.
  std::chrono::nanoseconds uncertainty() const { return min_rtt() / 2; }

  const TimeSyncCounters& counters() const { return counters_; }
  size_t window_size() const { return window_count_; }
  const TimeSyncConfig& config() const { return config_; }
  /// How far the server has moved its schedule later (the newest accepted sample says).
  std::chrono::nanoseconds schedule_moved() const { return schedule_moved_; }

 private:
  struct WindowSample {
    SteadyTime client_send{};
    std::chrono::nanoseconds rtt{0};
    // Client time at which the server's tick 0 was due on its schedule as it was when the room
    // opened (the sample's epoch less how far the schedule had moved by then).
    SteadyTime server_epoch{};
  };

  void choose_best();

  TimeSyncConfig config_;
  std::array<WindowSample, kWindowSamples> window_{};
  size_t window_count_ = 0;
  size_t best_ = 0;  // index into window_ of the least-rtt sample
  std::chrono::nanoseconds smoothed_rtt_{0};
  std::chrono::nanoseconds last_rtt_{0};
  std::chrono::nanoseconds schedule_moved_{0};  // the newest sample's
  TimeSyncCounters counters_;
};

}  // namespace lockstep::client_sdk
