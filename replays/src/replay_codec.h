// Internal: encoding and decoding of replay records (schema/replay.fbs) to and from plain structs.
// The only place besides replay_codec.cpp that would see FlatBuffers types is nowhere: callers
// get bytes out and structs in.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/replays/recorder.h"

namespace lockstep::replays::detail {

/// Reusable encoder: one FlatBufferBuilder whose buffer is kept between records.
class RecordEncoder final {
 public:
  explicit RecordEncoder(size_t initial_bytes = 4096);
  ~RecordEncoder();
  RecordEncoder(const RecordEncoder&) = delete;
  RecordEncoder& operator=(const RecordEncoder&) = delete;

  /// Each returns the finished record's bytes, valid until the next call.
  std::span<const uint8_t> header(const ReplayHeader& header);
  /// With a non-empty `base` (the previous keyframe's snapshot in the same file) the snapshot is
  /// stored as its delta against it (format 7) when that is smaller; otherwise whole.
  std::span<const uint8_t> keyframe(uint64_t tick, uint64_t state_hash,
                                    std::span<const uint8_t> snapshot,
                                    std::span<const uint8_t> base = {});
  /// `previous`: the inputs of the tick record written just before this one in the same file
  /// (format 8 codes the inputs against them); nullopt for the file's first tick record.
  std::span<const uint8_t> tick(uint64_t tick, std::span<const sim::Input> inputs,
                                uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                                std::span<const sim::Command> commands = {},
                                std::optional<std::span<const sim::Input>> previous = std::nullopt);
  std::span<const uint8_t> game_message(uint64_t tick, uint32_t player,
                                        std::span<const uint8_t> data);

 private:
  struct Impl;
  Impl* impl_;
};

enum class RecordKind : uint8_t { header, keyframe, tick, game_message };

/// One decoded record; only the member of `kind` is filled.
struct DecodedRecord {
  RecordKind kind = RecordKind::header;
  ReplayHeader header;
  ReplayKeyframe keyframe;
  // A delta keyframe (format 7): keyframe.snapshot holds the delta bytes until
  // apply_keyframe_delta rebuilds the snapshot from the previous keyframe of the file.
  bool keyframe_is_delta = false;
  uint64_t keyframe_snapshot_xxh3 = 0;
  ReplayTick tick;
  ReplayGameMessage game_message;
};

/// Rebuilds a delta keyframe's snapshot in place from `base`, the snapshot of the keyframe before
/// it in the file, and checks it against the recorded XXH3; false with *error (one line) when the
/// result does not match (a corrupt delta, or a base other than the one it was made against).
bool apply_keyframe_delta(std::span<const uint8_t> base, DecodedRecord* record, std::string* error);

/// Verifies (identifier, Verifier with limits.h caps) and decodes one record payload; false and
/// *error (one line, without position) when it is not a valid replay record. `payload` need not
/// be aligned: it is copied into *scratch first. `previous_tick_inputs`: the inputs of the tick
/// record before this one in the file (format 8 and later), which a tick record may be coded
/// against; without it such a record is refused. It must not point into *out.
bool decode_record(std::span<const uint8_t> payload, std::vector<uint8_t>* scratch,
                   DecodedRecord* out, std::string* error,
                   const std::vector<sim::Input>* previous_tick_inputs = nullptr);

/// Frames records in memory exactly as RecordWriter does on disk (for write_bytes).
void append_file_header(std::vector<uint8_t>* out);
void append_record(std::vector<uint8_t>* out, std::span<const uint8_t> payload);

}  // namespace lockstep::replays::detail
