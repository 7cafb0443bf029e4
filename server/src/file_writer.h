// The server's one file-writing thread: replay dumps (desync, shutdown) are encoded in memory by
// the room's own thread and written here, so a tick thread never waits for a disk.
//
// Jobs wait in a queue bounded in jobs; a full queue drops the job (counted in `dropped`, logged
// once). The queue's mutex is taken by a room thread only when it hands over a dump (rare), never
// per tick. stop() writes everything queued before it returns (Server::run() calls it last, so
// the shutdown dumps are on disk when run() returns).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace lockstep::server {

class FileWriter final {
 public:
  /// A job writes its file and returns false when that failed (it logs why itself).
  using Job = std::function<bool()>;

  explicit FileWriter(size_t max_jobs) : max_jobs_(max_jobs) {}
  ~FileWriter() { stop(); }
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  /// Starts the thread; idempotent.
  void start();
  /// Queues `job`; false (counted, logged once) when the queue is full or the writer stopped.
  /// `what` names the job in that log line. Thread-safe.
  bool submit(Job job, const std::string& what);
  /// Runs every queued job, then ends the thread; idempotent. Later submits are refused.
  void stop();

  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t max_jobs() const { return max_jobs_; }

 private:
  void run();

  const size_t max_jobs_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;  // under mutex_
  bool started_ = false;  // under mutex_
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<uint64_t> written_{0}, failed_{0}, dropped_{0};
  std::atomic<bool> drop_logged_{false};
};

}  // namespace lockstep::server
