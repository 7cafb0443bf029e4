// FileWriter: a bounded job queue drained by one thread.
#include "file_writer.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace lockstep::server {

void FileWriter::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

bool FileWriter::submit(Job job, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && jobs_.size() < max_jobs_) {
      jobs_.push_back(std::move(job));
      wake_.notify_one();
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  if (!drop_logged_.exchange(true, std::memory_order_relaxed)) {
    spdlog::error(
        "file writer: dropped {}: the queue of {} jobs is full or stopped (counted in "
        "file_writes_dropped; logged once)",
        what, max_jobs_);
  }
  return false;
}

void FileWriter::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  // Never started (start() not called): run what was queued here.
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(jobs_);
  }
  for (Job& job : left)
    (job() ? written_ : failed_).fetch_add(1, std::memory_order_relaxed);
}

void FileWriter::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and everything is written
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    (job() ? written_ : failed_).fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace lockstep::server
