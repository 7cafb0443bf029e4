// The server's one file-writing thread: replay dumps (desync, shutdown) and whole-match
// recordings are encoded in memory by the room's own thread and written here, so a tick thread
// never waits for a disk.
//
// Jobs run one at a time in the order they were queued, so the steps of one file written in
// several jobs (a match recording's chunks) apply in order. Jobs wait in a queue bounded in jobs:
//   submit()        a whole file; a full queue drops it (counted in `dropped`, logged once);
//   try_submit_step() one step of a longer file; a full queue refuses it without counting (the
//                   caller keeps its data and tries again later);
//   submit_last_step() the last step of a longer file (finish or abandon); accepted past the
//                   bound, which each file in progress can do once, so the queue never exceeds
//                   the bound by more than the number of files in progress.
// The queue's mutex is taken by a room thread only when it hands over a dump or a chunk (at most
// a few times a second), never per tick. stop() runs everything queued before it returns
// (Server::run() calls it last, so the shutdown dumps and the finished recordings are on disk
// when run() returns).
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
  /// One step of a file written in several; the last step reports with count_result().
  using Step = std::function<void()>;

  explicit FileWriter(size_t max_jobs) : max_jobs_(max_jobs) {}
  ~FileWriter() { stop(); }
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  /// Starts the thread; idempotent.
  void start();
  /// Queues `job`; false (counted, logged once) when the queue is full or the writer stopped.
  /// `what` names the job in that log line. Thread-safe.
  bool submit(Job job, const std::string& what);
  /// Queues `step` unless the queue is full or the writer stopped (false, nothing counted).
  bool try_submit_step(Step step);
  /// Queues `step` even when the queue is full; false (counted as dropped) only after stop().
  bool submit_last_step(Step step);
  /// Counts a file written in steps as written or failed (from its last step).
  void count_result(bool ok) { (ok ? written_ : failed_).fetch_add(1, std::memory_order_relaxed); }
  /// Counts a file given up by its producer before it was finished (a recording that fell
  /// behind). Thread-safe.
  void count_abandoned() { abandoned_.fetch_add(1, std::memory_order_relaxed); }

  /// Runs every queued job, then ends the thread; idempotent. Later submits are refused.
  void stop();

  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t abandoned() const { return abandoned_.load(std::memory_order_relaxed); }
  size_t max_jobs() const { return max_jobs_; }

 private:
  void run();

  const size_t max_jobs_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Step> jobs_;  // under mutex_
  bool started_ = false;   // under mutex_
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<uint64_t> written_{0}, failed_{0}, dropped_{0}, abandoned_{0};
  std::atomic<bool> drop_logged_{false};
};

}  // namespace lockstep::server
