// How often one client may have the server's full state sent to it for a ResyncRequest.
//
// A ResyncRequest is about ten bytes; its answer is a Snapshot of the whole world (16–31 KB for
// the demo room). Without a limit a client that asks on every frame turns the server into an
// amplifier, and an honest client whose simulation cannot follow the server's (another
// compiler's floating point) pulls a snapshot every few ticks for ever. The budget, per client:
//
// - the first `burst` resyncs are served at the next tick;
// - after them each resync waits `backoff` after the one before, doubled for each further one up
//   to `max_backoff` (1, 2, 4, 8, 16, 16… s by default); a request inside the wait is deferred to
//   its end, and requests while one is deferred or not yet sent are folded into it;
// - a client that has not been sent a resync for `forget_after` starts again with its burst;
// - every request, folded or not, takes one of `max_requests_per_minute` (a budget refilled
//   continuously, one minute deep); a request with none left is over the budget, and the
//   session closes the connection with the reason.
//
// Pure logic with the time passed in, so the tests drive it without sleeping (like TickClock).
#pragma once

#include <chrono>
#include <cstdint>

namespace lockstep::server {

struct ResyncBudgetConfig {
  uint32_t burst = 2;
  std::chrono::milliseconds backoff{1'000};
  std::chrono::milliseconds max_backoff{16'000};
  std::chrono::milliseconds forget_after{60'000};
  uint32_t max_requests_per_minute = 12;  // 0 = no limit on requests (the backoff still holds)
};

enum class ResyncVerdict : uint8_t {
  serve,        // send a snapshot at the next tick
  defer,        // send one at `due` (ResyncBudget::take_due)
  fold,         // one is already on its way or deferred: nothing more to send
  over_budget,  // too many requests: close the connection
};

class ResyncBudget final {
 public:
  using Clock = std::chrono::steady_clock;

  struct Decision {
    ResyncVerdict verdict = ResyncVerdict::serve;
    Clock::time_point due{};  // defer: when the snapshot may be sent
  };

  ResyncBudget(const ResyncBudgetConfig& config, Clock::time_point now);

  /// A ResyncRequest arrived at `now`.
  Decision request(Clock::time_point now);
  /// True (once) when a deferred request is due at `now`: send its snapshot.
  bool take_due(Clock::time_point now);

  /// The wait after the resync sent before, when `sent_in_a_row` were sent without a pause of
  /// forget_after: 0 within the burst, then backoff doubled per resync, at most max_backoff.
  std::chrono::milliseconds wait_after(uint32_t sent_in_a_row) const;
  bool deferred() const { return deferred_; }
  uint32_t sent_in_a_row() const { return sent_in_a_row_; }
  uint64_t requests() const { return requests_; }
  uint64_t sent() const { return sent_; }

 private:
  void note_sent(Clock::time_point now);

  ResyncBudgetConfig config_;
  double request_tokens_ = 0;
  Clock::time_point refilled_{};
  Clock::time_point last_sent_{};
  uint32_t sent_in_a_row_ = 0;
  bool deferred_ = false;
  Clock::time_point due_{};
  uint64_t requests_ = 0, sent_ = 0;
};

}  // namespace lockstep::server
