// The compact encoding of the per-tick messages (protocol 4, replay formats 6 to 8): TickFrame
// and InputFrame on the wire, and the tick records of replay files, which hold the same bytes as
// the TickFrame of their tick — since format 8, with the inputs of every record but a file's
// first coded against the record before (kInputsAgainstPrevious). docs/protocol.md ("Compact
// bodies") describes it byte by byte; docs/replays.md the coding against the tick before.
//
// Every other message stays a FlatBuffers Envelope. The two share the frame layout and tell
// themselves apart by the body's first byte: a FlatBuffer starts with the low byte of its root
// offset, a multiple of 4 (the Verifier checks the alignment), so a compact body's first byte has
// a non-zero low two bits — the kind — and its upper bits flag the optional parts.
//
// Internal to schema and replays (beside world_codec.h); not installed. Decoding never trusts
// its bytes: truncated, overlong or non-minimal varints, values out of their field's range,
// present-but-zero fields, empty groups, counts larger than the bytes left could hold, unknown
// flag or field bits and trailing bytes are all refused with a one-line reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/sim/types.h"

namespace lockstep::schema::compact {

inline constexpr uint8_t kKindMask = 0x03;
inline constexpr uint8_t kKindTickFrame = 0x01;
inline constexpr uint8_t kKindInputFrame = 0x02;
inline constexpr uint8_t kHasInputs = 0x04;      // both kinds: input groups follow
inline constexpr uint8_t kHasCommands = 0x08;    // TickFrame: commands follow
inline constexpr uint8_t kHasClientHash = 0x10;  // TickFrame, replay files only: the client's hash
// TickFrame, replay files only (format 8): the inputs are coded against the previous tick
// record's inputs in the same file (append_tick's inputs_reference).
inline constexpr uint8_t kInputsAgainstPrevious = 0x20;

/// True when `body` is a compact body (its first byte's low two bits are not 00).
inline bool is_compact(std::span<const uint8_t> body) {
  return !body.empty() && (body[0] & kKindMask) != 0;
}

/// A TickFrame, or a replay file's tick record (then client_hash may be set).
struct Tick {
  uint64_t tick = 0;
  uint64_t state_hash = 0;
  std::optional<uint64_t> client_hash;
  std::vector<sim::Input> inputs;      // in the order applied
  std::vector<sim::Command> commands;  // applied before the inputs, in the order applied
};

struct InputFrame {
  uint64_t target_tick = 0;
  uint32_t sequence = 0;
  std::vector<sim::Input> inputs;
};

/// Appends the compact body of a tick to *out (its bytes only: no frame header).
/// `inputs_reference` (replay files only, never on the wire): the inputs of the tick record
/// written just before this one in the same file. Each input is then written against the input
/// at its place in that list (the same player's k-th), as only the fields that changed and its
/// sequence's distance from where the player's numbering left off: a player holding a direction
/// costs a few bytes per input instead of a dozen. docs/replays.md has the rule.
void append_tick(uint64_t tick, uint64_t state_hash, std::optional<uint64_t> client_hash,
                 std::span<const sim::Input> inputs, std::span<const sim::Command> commands,
                 std::vector<uint8_t>* out,
                 std::optional<std::span<const sim::Input>> inputs_reference = std::nullopt);
/// Appends the compact body of an InputFrame to *out.
void append_input_frame(uint64_t target_tick, uint32_t sequence, std::span<const sim::Input> inputs,
                        std::vector<uint8_t>* out);

/// An upper bound of the bytes append_tick / append_input_frame write (for reserving).
size_t max_body_bytes(size_t inputs, size_t commands);

/// Decodes a whole compact TickFrame body (kind 1). client_hash and inputs coded against the
/// previous tick are refused unless `allow_client_hash` (replay files); the latter also needs
/// `inputs_reference`, the inputs of the tick record before this one in the file (not a part of
/// *out: it is reset first). False with *error (one line naming the field and the byte offset)
/// when the bytes are malformed; *out is then unspecified.
bool read_tick(std::span<const uint8_t> body, bool allow_client_hash, Tick* out, std::string* error,
               std::optional<std::span<const sim::Input>> inputs_reference = std::nullopt);
/// Decodes a whole compact InputFrame body (kind 2); as read_tick.
bool read_input_frame(std::span<const uint8_t> body, InputFrame* out, std::string* error);

/// Packs bytes that are mostly zero (sim snapshots: keyframes of replay files). For each chunk of
/// 64 bytes (the last one may be shorter): one byte whose bit b says block b (bytes 8b..8b+7)
/// holds a non-zero byte; for each such block, one byte whose bit i says byte i of the block is
/// non-zero, then those bytes. The packed form starts with the unpacked size as a varint.
void append_packed(std::span<const uint8_t> bytes, std::vector<uint8_t>* out);
/// Unpacks append_packed's bytes (exactly: trailing bytes are refused) into *out, refusing a size
/// over `max_bytes`, truncation, a mask bit for a block or byte past the end, an empty block and
/// a zero byte given as non-zero (so every byte string has one packed form).
bool read_packed(std::span<const uint8_t> packed, size_t max_bytes, std::vector<uint8_t>* out,
                 std::string* error);

/// Varint primitives, exposed for the tests of their edge cases: LEB128, 7 bits per byte, least
/// significant group first, the high bit set on every byte but the last; the shortest form only.
void append_varint(uint64_t value, std::vector<uint8_t>* out);
/// Reads one varint at *offset and advances it; false with *error for a truncated, overlong
/// (more than 10 bytes or beyond 64 bits) or non-minimal (a last byte of 0 after others) varint.
bool read_varint(std::span<const uint8_t> bytes, size_t* offset, uint64_t* value,
                 std::string* error);

}  // namespace lockstep::schema::compact
