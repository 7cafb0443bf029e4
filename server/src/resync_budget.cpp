// ResyncBudget: a request budget and an exponential backoff between the snapshots sent.
#include "resync_budget.h"

#include <algorithm>

namespace lockstep::server {

ResyncBudget::ResyncBudget(const ResyncBudgetConfig& config, Clock::time_point now)
    : config_(config),
      request_tokens_(static_cast<double>(config.max_requests_per_minute)),
      refilled_(now) {}

std::chrono::milliseconds ResyncBudget::wait_after(uint32_t sent_in_a_row) const {
  if (sent_in_a_row < config_.burst) return std::chrono::milliseconds(0);
  std::chrono::milliseconds wait = config_.backoff;
  for (uint32_t i = config_.burst; i < sent_in_a_row && wait < config_.max_backoff; ++i)
    wait *= 2;
  return std::min(wait, config_.max_backoff);
}

ResyncBudget::Decision ResyncBudget::request(Clock::time_point now) {
  ++requests_;
  if (config_.max_requests_per_minute > 0) {
    const double per_s = static_cast<double>(config_.max_requests_per_minute) / 60.0;
    const double elapsed_s = std::chrono::duration<double>(now - refilled_).count();
    refilled_ = now;
    request_tokens_ = std::min(static_cast<double>(config_.max_requests_per_minute),
                               request_tokens_ + std::max(0.0, elapsed_s) * per_s);
    if (request_tokens_ < 1.0) return {ResyncVerdict::over_budget, {}};
    request_tokens_ -= 1.0;
  }
  if (deferred_) return {ResyncVerdict::fold, due_};
  if (sent_in_a_row_ > 0 && now - last_sent_ >= config_.forget_after) sent_in_a_row_ = 0;
  const Clock::time_point due = sent_in_a_row_ == 0 ? now : last_sent_ + wait_after(sent_in_a_row_);
  if (due <= now) {
    note_sent(now);
    return {ResyncVerdict::serve, now};
  }
  // Inside the wait: one snapshot at its end answers this request and any until then.
  deferred_ = true;
  due_ = due;
  return {ResyncVerdict::defer, due};
}

bool ResyncBudget::take_due(Clock::time_point now) {
  if (!deferred_ || now < due_) return false;
  deferred_ = false;
  note_sent(now);
  return true;
}

void ResyncBudget::note_sent(Clock::time_point now) {
  last_sent_ = now;
  ++sent_in_a_row_;
  ++sent_;
}

}  // namespace lockstep::server
