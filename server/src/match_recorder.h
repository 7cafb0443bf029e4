// A room's whole-match recording (record_matches): encoded on the room's thread, written by the
// file writer's thread.
//
// Each step's records are appended to an in-memory chunk (replays::ReplayStreamEncoder); no file is
// touched on the tick thread. A chunk is handed to the FileWriter when it holds a second of ticks
// or kChunkBytes, whichever comes first; the writer appends the chunks to "<path>.tmp" in the
// order they were handed over and, after the last one, publishes the file under its final name
// (fsync, rename), exactly as a ReplayStreamWriter would have written it.
//
// Back-pressure: a hand-off refused because the writer's queue is full leaves the chunk with the
// room, which keeps appending to it and tries again at the next hand-off. When the chunk grows
// past max_pending_bytes the room gives the recording up: the chunk is freed, the writer removes
// the temporary file (a match with a hole in it is not what a recording promises, and the disk
// that fell behind is likely short of space), a warning is logged and the FileWriter counts it
// as abandoned. The match goes on. A bound below one chunk abandons at the first tick that does
// not fill a chunk (tests use that).
//
// A process killed mid-match leaves "<path>.tmp" readable up to the last chunk the writer got
// to: at most about a second of ticks more than an unbuffered stream would lose.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/replays/recorder.h"

namespace lockstep::server {

class FileWriter;

class MatchRecorder final {
 public:
  /// A chunk is handed over once it holds this many bytes (or chunk_ticks ticks).
  static constexpr size_t kChunkBytes = 64 * 1024;

  /// Nothing is encoded or written before begin(). `room` names it in logs.
  MatchRecorder(FileWriter& writer, std::string room, std::string path, uint32_t chunk_ticks,
                uint64_t max_pending_bytes);
  ~MatchRecorder();
  MatchRecorder(const MatchRecorder&) = delete;
  MatchRecorder& operator=(const MatchRecorder&) = delete;

  /// Encodes the header and the first keyframe and hands them over (the writer creates the
  /// temporary file). false (logged) when encoding failed: nothing is recorded then.
  bool begin(const replays::ReplayHeader& header, const sim::World& world,
             uint32_t keyframe_interval_ticks);
  /// Records the step just made; hands the chunk over when one is due. Never does I/O.
  void record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                   uint64_t state_hash, std::span<const sim::Command> applied_commands);
  /// Records a client's game message the rules saw after the step of `tick` (just recorded).
  void record_game_message(uint64_t tick, uint32_t player, std::span<const uint8_t> data);
  /// Hands the last chunk over with the publishing of the file. Idempotent.
  void finish();
  /// Recording (begun, neither finished nor given up).
  bool active() const { return active_; }
  const std::string& path() const { return path_; }

  /// What the writer's thread holds of one recording (shared by its queued steps).
  struct File;

 private:
  /// Hands the pending chunk to the writer; false when its queue was full (chunk kept).
  bool hand_off();
  /// Gives the recording up (see the top of this file).
  void abandon(uint64_t tick);

  FileWriter& writer_;
  const std::string room_;
  const std::string path_;
  const uint32_t chunk_ticks_;
  const uint64_t max_pending_bytes_;
  replays::ReplayStreamEncoder encoder_;
  std::shared_ptr<std::vector<uint8_t>> chunk_;  // whole records not handed over yet
  std::shared_ptr<File> file_;
  bool active_ = false;
  uint32_t ticks_since_hand_off_ = 0;
  uint64_t handed_bytes_ = 0;  // file bytes handed over so far (header included)
};

}  // namespace lockstep::server
