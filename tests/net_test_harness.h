// The in-process server the net tests run against, and the one way they wait.
//
// A server::Server on 127.0.0.1 and an ephemeral port, served by its own thread for the life of
// the object. Tests wait for conditions (a message arrived, a counter reached a value), never for
// a span of time, and never assert how long something took: on a machine busy with other work
// every step may take many times longer than on an idle one. The deadlines here only keep a
// broken build from hanging; a healthy run meets its condition long before them.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lockstep/schema/tick_schedule.h"
#include "lockstep/server/config.h"
#include "lockstep/server/room_rules.h"
#include "lockstep/server/server.h"

namespace lockstep::net_test {

/// Upper bound of any single wait for a condition: reached only when something is broken.
inline constexpr std::chrono::milliseconds kHangGuard{30'000};

/// Tick rate for tests that run many client worlds. Every SDK client steps its own world on the
/// thread that polls it, and one step of the `inputs` scene costs ~1 ms under AddressSanitizer:
/// four clients and their room at 240 Hz want 1.3 cores, twelve worlds 3 cores. On a busy 2-core
/// machine the polling thread then falls behind its rooms for good, and the SDK closes the
/// clients as slow consumers. At 60 Hz the same tests want a third of a core to 0.8 core.
inline constexpr uint32_t kManyWorldsTickRateHz = 60;

/// Calls `done` until it returns true (then true), sleeping `interval` between calls; false once
/// `timeout` has passed without it holding.
template <class Done>
bool eventually(Done&& done, std::chrono::milliseconds timeout = kHangGuard,
                std::chrono::milliseconds interval = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

/// A room's tick n is due n/rate after the room opened, and nothing about tick n is sent before
/// it is due. So for a room that opened after `before_open`, news of tick n read at `read_at`
/// means n/rate <= read_at - before_open, however busy the machine (load only delays). False:
/// the room ran ahead of its rate.
inline bool could_be_due(uint64_t tick, uint32_t rate_hz,
                         std::chrono::steady_clock::time_point before_open,
                         std::chrono::steady_clock::time_point read_at) {
  return schema::tick_due_offset_ns(tick, rate_hz) <= (read_at - before_open).count();
}

/// A server config for tests: loopback, an ephemeral port, no periodic stats lines, no replay
/// files (tests that want them set replay_dir), no signal handlers. Worker threads: one per core,
/// or LOCKSTEP_NET_THREADS (e.g. 1, to run the suite on one thread as before session 7).
inline server::ServerConfig loopback_config() {
  server::ServerConfig config;
  if (const char* threads = std::getenv("LOCKSTEP_NET_THREADS")) {
    config.threads = static_cast<uint32_t>(std::strtoul(threads, nullptr, 10));
  }
  config.bind_address = "127.0.0.1";
  config.port = 0;
  config.stats_log_interval = std::chrono::milliseconds(0);
  config.replay_dir = "";
  config.handle_signals = false;
  return config;
}

/// Rules that make every step of a room take `step_time` longer while `*slow` is set: the room
/// falls behind its schedule, as on an overloaded machine.
class SlowStepRules final : public server::RoomRules {
 public:
  SlowStepRules(const std::atomic<bool>* slow, std::chrono::microseconds step_time)
      : slow_(slow), step_time_(step_time) {}
  void after_step(const sim::World&, std::span<const sim::SensorEvent>,
                  server::RulesOutput&) override {
    if (slow_->load()) std::this_thread::sleep_for(step_time_);
  }

 private:
  const std::atomic<bool>* slow_;
  std::chrono::microseconds step_time_;
};

/// A RulesFactory for ServerConfig::rules = "slow-steps" (SlowStepRules); `slow` must outlive
/// the server.
inline server::RulesFactory slow_steps_factory(const std::atomic<bool>* slow,
                                               std::chrono::microseconds step_time) {
  return [slow, step_time](const std::string& name, const sim::Scene&,
                           std::string* error) -> std::unique_ptr<server::RoomRules> {
    if (name != "slow-steps") {
      *error = "unknown rules";
      return nullptr;
    }
    return std::make_unique<SlowStepRules>(slow, step_time);
  };
}

/// `count` child processes that spin on a core each until this object is destroyed: the busy
/// machine a test must still pass on, made on purpose.
class BusyProcesses final {
 public:
  explicit BusyProcesses(int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile uint64_t spin = 0;
        for (;;)
          spin = spin + 1;  // until SIGKILL
      }
      if (pid > 0) children_.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  BusyProcesses(const BusyProcesses&) = delete;
  BusyProcesses& operator=(const BusyProcesses&) = delete;
  size_t running() const { return children_.size(); }

 private:
  std::vector<pid_t> children_;
};

/// A started server and the thread running it; stopped gracefully on destruction.
class InProcessServer final {
 public:
  explicit InProcessServer(const server::ServerConfig& config, server::DesyncHook hook = nullptr,
                           server::RulesFactory rules = nullptr,
                           server::RoomCloseHook close_hook = nullptr)
      : server_(config) {
    if (hook) server_.set_desync_hook(std::move(hook));
    if (rules) server_.set_rules_factory(std::move(rules));
    if (close_hook) server_.set_room_close_hook(std::move(close_hook));
    std::string error;
    started_ = server_.start(&error);
    EXPECT_TRUE(started_) << error;
    if (started_) {
      done_ = finished_.get_future();
      thread_ = std::thread([this] {
        server_.run();
        finished_.set_value();
      });
    }
  }
  ~InProcessServer() { stop(); }
  InProcessServer(const InProcessServer&) = delete;
  InProcessServer& operator=(const InProcessServer&) = delete;

  bool started() const { return started_; }
  /// The bound port (0 when start failed).
  uint16_t port() const { return server_.port(); }

  /// Requests a graceful shutdown and waits for run() to return; true once it has. A run() that
  /// does not return within `timeout` cannot be joined: the test fails and the process aborts.
  bool stop(std::chrono::milliseconds timeout = kHangGuard) {
    if (!thread_.joinable()) return true;
    server_.request_shutdown();
    if (done_.wait_for(timeout) != std::future_status::ready) {
      ADD_FAILURE() << "Server::run() did not return within " << timeout.count() << " ms";
      std::fflush(stdout);
      std::abort();
    }
    thread_.join();
    return true;
  }

  /// Counters gathered on the server's thread (empty stats, and a failure, if it never answers).
  server::ServerStats stats() const {
    std::optional<server::ServerStats> stats = server_.collect_stats(kHangGuard);
    EXPECT_TRUE(stats.has_value()) << "the server thread did not answer";
    return stats.value_or(server::ServerStats{});
  }
  /// Polls stats until `done(stats)` holds (true) or `timeout` passes (false); *out holds the
  /// last stats read either way.
  template <class Done>
  bool stats_eventually(Done done, server::ServerStats* out,
                        std::chrono::milliseconds timeout = kHangGuard) const {
    return eventually(
        [&] {
          *out = stats();
          return done(*out);
        },
        timeout, std::chrono::milliseconds(10));
  }

  server::Server& server() { return server_; }

 private:
  server::Server server_;
  bool started_ = false;
  std::promise<void> finished_;
  std::future<void> done_;
  std::thread thread_;
};

}  // namespace lockstep::net_test
