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
      jobs_.push_back([this, job = std::move(job)] { count_result(job()); });
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

bool FileWriter::try_submit_step(Step step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || jobs_.size() >= max_jobs_) return false;
  jobs_.push_back(std::move(step));
  wake_.notify_one();
  return true;
}

bool FileWriter::submit_last_step(Step step) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      jobs_.push_back(std::move(step));
      wake_.notify_one();
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("file writer: the last step of a file arrived after the writer stopped");
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
  std::deque<Step> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(jobs_);
  }
  for (Step& job : left)
    job();
}

void FileWriter::run() {
  for (;;) {
    Step job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and everything is written
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace lockstep::server
