// MatchRecorder: the room's side encodes and hands chunks over; File is the writer's side.
#include "match_recorder.h"

#include <atomic>
#include <utility>

#include <spdlog/spdlog.h>

#include "file_writer.h"
#include "lockstep/replays/record_file.h"

namespace lockstep::server {

// Touched only by the writer's thread (its steps run there one at a time), except `failed`,
// which the room reads to stop encoding for a file that can no longer be written.
struct MatchRecorder::File {
  std::string room;
  std::string path;
  replays::RecordWriter writer;
  bool opened = false;
  std::atomic<bool> failed{false};

  /// Appends one chunk (opening the file first); the records reach the OS before it returns.
  void append(const std::vector<uint8_t>& chunk) {
    if (failed.load(std::memory_order_relaxed)) return;
    replays::RecordError error = replays::RecordError::none;
    if (!opened) {
      opened = true;
      error = writer.open(path);
    }
    if (error == replays::RecordError::none) error = writer.append_framed(chunk);
    if (error == replays::RecordError::none) error = writer.flush();
    if (error != replays::RecordError::none) {
      // Disk full or the like: the room stops recording at its next hand-off.
      spdlog::error("room {}: match recording stopped: {}", room, writer.error_text());
      failed.store(true, std::memory_order_relaxed);
    }
  }
};

MatchRecorder::MatchRecorder(FileWriter& writer, std::string room, std::string path,
                             uint32_t chunk_ticks, uint64_t max_pending_bytes)
    : writer_(writer),
      room_(std::move(room)),
      path_(std::move(path)),
      chunk_ticks_(chunk_ticks == 0 ? 1 : chunk_ticks),
      max_pending_bytes_(max_pending_bytes) {}

MatchRecorder::~MatchRecorder() = default;

bool MatchRecorder::begin(const replays::ReplayHeader& header, const sim::World& world,
                          uint32_t keyframe_interval_ticks) {
  file_ = std::make_shared<File>();
  file_->room = room_;
  file_->path = path_;
  chunk_ = std::make_shared<std::vector<uint8_t>>();
  const replays::WriteResult encoded =
      encoder_.begin(header, world, keyframe_interval_ticks, chunk_.get());
  if (!encoded.ok) {
    spdlog::error("room {}: cannot record the match: {}", room_, encoded.error);
    file_.reset();
    chunk_.reset();
    return false;
  }
  active_ = true;
  spdlog::info("room {}: recording the match to {}", room_, path_);
  hand_off();  // the writer creates the file now; a refusal is retried like any other
  return true;
}

void MatchRecorder::record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                                uint64_t state_hash,
                                std::span<const sim::Command> applied_commands) {
  if (!active_) return;
  const replays::WriteResult encoded = encoder_.record_step(
      world, applied_inputs, state_hash, std::nullopt, applied_commands, chunk_.get());
  if (!encoded.ok) {
    // A record over the size cap: the file so far is whole; publish it and stop.
    spdlog::error("room {}: match recording stopped at tick {}: {}", room_, world.tick(),
                  encoded.error);
    finish();
    return;
  }
  if (file_->failed.load(std::memory_order_relaxed)) {
    finish();  // publishes nothing: the writer reports the failure
    return;
  }
  ++ticks_since_hand_off_;
  if ((ticks_since_hand_off_ >= chunk_ticks_ || chunk_->size() >= kChunkBytes) && hand_off())
    return;
  if (chunk_->size() > max_pending_bytes_) abandon(world.tick());
}

void MatchRecorder::record_game_message(uint64_t tick, uint32_t player,
                                        std::span<const uint8_t> data) {
  if (!active_) return;
  // The chunk is handed over at the next step's hand-off, with the tick record after it.
  const replays::WriteResult encoded =
      encoder_.record_game_message(tick, player, data, chunk_.get());
  if (!encoded.ok) {
    spdlog::error("room {}: match recording stopped at tick {}: {}", room_, tick, encoded.error);
    finish();
  }
}

bool MatchRecorder::hand_off() {
  if (chunk_->empty()) return true;
  // The step holds its own reference: if the queue refuses it, the chunk stays ours.
  const bool queued =
      writer_.try_submit_step([file = file_, chunk = chunk_] { file->append(*chunk); });
  if (!queued) return false;
  handed_bytes_ += chunk_->size();
  chunk_ = std::make_shared<std::vector<uint8_t>>();
  chunk_->reserve(kChunkBytes + kChunkBytes / 4);
  ticks_since_hand_off_ = 0;
  return true;
}

void MatchRecorder::finish() {
  if (!active_) return;
  active_ = false;
  handed_bytes_ += chunk_->size();
  const uint64_t file_bytes = handed_bytes_ + replays::kRecordFileHeaderBytes;
  FileWriter* writer = &writer_;
  // The last step goes in past the queue's bound: a finished match is always published.
  writer_.submit_last_step(
      [file = std::move(file_), chunk = std::move(chunk_), writer, file_bytes] {
        file->append(*chunk);
        bool ok = !file->failed.load(std::memory_order_relaxed);
        if (ok) {
          ok = file->writer.finish() == replays::RecordError::none;
          if (ok) {
            spdlog::info("room {}: match recording written to {} ({} B)", file->room, file->path,
                         file_bytes);
          } else {
            spdlog::error("room {}: cannot finish the match recording {}: {}", file->room,
                          file->path, file->writer.error_text());
          }
        }
        writer->count_result(ok);
      });
}

void MatchRecorder::abandon(uint64_t tick) {
  active_ = false;
  spdlog::warn(
      "room {}: match recording abandoned at tick {}: {} B wait for the file writer, over the "
      "bound of {} B; the temporary file is removed, the match goes on",
      room_, tick, chunk_->size(), max_pending_bytes_);
  writer_.count_abandoned();
  chunk_.reset();
  // After every chunk already queued: nothing writes to the file after it is removed.
  writer_.submit_last_step([file = std::move(file_)] { file->writer.abandon(); });
}

}  // namespace lockstep::server
