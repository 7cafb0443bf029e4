// Replay files (docs/replays.md): recording a match. Reading one back
// is declared in replay_reader.h (included here too, so code that included this header for the
// reader still builds); the header record's struct is in replay_header.h.
//
//   file      = record_file.h framing ("LSRP" header, then size + XXH3 + payload records)
//   records   = header  keyframe  (tick | keyframe)*       each payload: one schema/replay.fbs
//                                                          FlatBuffer, identifier "LSR1"
//
// Tick numbering is the server's (docs/server.md): the world's tick counts its steps. A tick
// record for tick t holds the inputs applied by the step that made tick t and the state hash of
// tick t; a keyframe for tick t is sim::World::save_snapshot of tick t (taken after that step).
// So replaying is: restore the first keyframe (tick k), then for t = k+1, k+2, ...: queue the
// record's inputs, step, compare the world's hash with the record's.
//
// Recording costs nothing per tick beyond copies: ReplayWindow takes all its memory when it is
// made (ring of tick records, ring of keyframe slots of max_snapshot_size bytes each) and never
// allocates in record_tick / record_keyframe. FlatBuffers types never leave this library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/replays/replay_header.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::replays {

/// Outcome of writing: ok, or one line saying what failed.
struct WriteResult {
  bool ok = false;
  std::string error;
};

struct ReplayWindowConfig {
  uint32_t window_ticks = 600;             // ticks always kept (600 = 10 s at 60 Hz)
  uint32_t keyframe_interval_ticks = 120;  // a keyframe every N ticks (tick % N == 0)
  uint32_t max_inputs_per_tick = 0;        // 0 = the world's WorldDef::max_inputs_per_tick
  uint32_t max_commands_per_tick = 0;      // 0 = the world's WorldDef::max_commands_per_tick
  // Bytes per keyframe slot; 0 = world.max_snapshot_size(), which always fits but is sized for a
  // full world (pile: 2.4 MB against a 136 KB actual snapshot). A smaller cap saves memory; a
  // keyframe that does not fit is skipped and counted (skipped_keyframes()).
  size_t keyframe_slot_bytes = 0;
  // Target size of a written window (write_file, write_bytes); 0 = no target. The header, the
  // first keyframe, every tick and a client's live state are always written: the replay needs
  // them. The other keyframes (the later ones of the ring, a server's live state) only spare a
  // re-simulation when seeking, so each is written, as a delta against the keyframe before it,
  // only while the file stays within this many bytes (docs/replays.md, "Window dumps").
  size_t dump_budget_bytes = 128 * 1024;
};

/// The always-on recorder of a room (or a client): the last window_ticks tick records plus the
/// newest keyframe at or before the window's start, in memory fixed at construction.
///
///   ReplayWindow window(world, {});      // before the first step; records tick world.tick()
///   per step: world.step(); window.record_step(world, applied_inputs, hash, client_hash);
///   on desync: window.write_file(path, header, &world);
class ReplayWindow final {
 public:
  /// Takes all memory now and records a keyframe of `world` as it is (the starting point).
  ReplayWindow(const sim::World& world, const ReplayWindowConfig& config);
  ~ReplayWindow();
  ReplayWindow(const ReplayWindow&) = delete;
  ReplayWindow& operator=(const ReplayWindow&) = delete;

  /// Records tick `tick` (must be the previous recorded tick + 1; otherwise the window restarts
  /// empty and waits for a keyframe). Inputs beyond max_inputs_per_tick are dropped and counted.
  /// Never allocates. False when the tick was refused or inputs were dropped.
  /// `applied_commands`: the commands the step applied (queued before it), in order.
  bool record_tick(uint64_t tick, std::span<const sim::Input> applied_inputs,
                   uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                   std::span<const sim::Command> applied_commands = {});
  /// Records a keyframe of `world` at world.tick() (normally right after record_tick of that
  /// tick). Never allocates. False when the snapshot failed (the slot is left unused).
  bool record_keyframe(const sim::World& world);
  /// record_tick(world.tick(), ...) then record_keyframe(world) when keyframe_due().
  bool record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                   uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                   std::span<const sim::Command> applied_commands = {});
  /// True when a keyframe belongs at `tick` (tick % keyframe_interval_ticks == 0).
  bool keyframe_due(uint64_t tick) const;

  /// Writes the newest keyframe at or before the window start, the later keyframes that fit
  /// dump_budget_bytes (as deltas), and every tick after it (tmp + fsync + rename). With
  /// `live_world` (at the newest recorded tick) its current state is appended as a last keyframe,
  /// so a diff sees this machine's actual state (always in a client's file, within the budget in
  /// a server's). Allocates (it is not on the tick path).
  WriteResult write_file(const std::string& path, const ReplayHeader& header,
                         const sim::World* live_world = nullptr) const;
  /// The same bytes as write_file, in memory (tests, sending elsewhere).
  WriteResult write_bytes(std::vector<uint8_t>* out, const ReplayHeader& header,
                          const sim::World* live_world = nullptr) const;

  /// Oldest tick write_file would include a record for (the keyframe's tick), if any.
  std::optional<uint64_t> first_written_tick() const;
  /// Newest recorded tick (the keyframe's tick before any record_tick).
  std::optional<uint64_t> last_tick() const;
  /// Bytes taken at construction (tick ring + input ring + keyframe slots).
  size_t memory_bytes() const;
  uint64_t dropped_inputs() const;
  uint64_t dropped_commands() const;
  /// Keyframes that failed (snapshot larger than keyframe_slot_bytes).
  uint64_t skipped_keyframes() const;
  const ReplayWindowConfig& config() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct ReplayStreamOptions {
  uint32_t flush_every_ticks = 1;        // records reach the OS every N ticks (kill -9 loses ≤ N)
  uint32_t keyframe_interval_ticks = 0;  // extra keyframes every N ticks via record_step; 0 = none
  uint32_t sync_every_ticks = 0;  // fsync every N ticks (power-cut safety); 0 = only at finish
};

/// Whole-match recording streamed to "<path>.tmp" with bounded memory; finish() publishes it.
/// A process killed mid-match leaves "<path>.tmp", readable up to its last complete record.
class ReplayStreamWriter final {
 public:
  ReplayStreamWriter();
  ~ReplayStreamWriter();  // without finish(): the temporary file is removed
  ReplayStreamWriter(const ReplayStreamWriter&) = delete;
  ReplayStreamWriter& operator=(const ReplayStreamWriter&) = delete;

  /// Opens the file and writes the header and a keyframe of `world` (first_tick = world.tick()).
  WriteResult open(const std::string& path, const ReplayHeader& header, const sim::World& world,
                   const ReplayStreamOptions& options = {});
  /// Appends one tick record (same contract as ReplayWindow::record_tick).
  WriteResult record_tick(uint64_t tick, std::span<const sim::Input> applied_inputs,
                          uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                          std::span<const sim::Command> applied_commands = {});
  /// Appends a keyframe of `world` at world.tick().
  WriteResult record_keyframe(const sim::World& world);
  /// record_tick(world.tick(), ...) then a keyframe when the options ask for one.
  WriteResult record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                          uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                          std::span<const sim::Command> applied_commands = {});
  /// Appends a client's game message that the rules saw after the step of `tick` (the tick
  /// recorded last): format 9's game message record.
  WriteResult record_game_message(uint64_t tick, uint32_t player, std::span<const uint8_t> data);
  /// Flush, fsync and rename to the final name.
  WriteResult finish();
  bool is_open() const;
  uint64_t file_bytes() const;
  const std::string& temp_path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The records of a whole-match recording encoded in memory, for a file written on another
/// thread (the server's file writer). Each call appends whole framed records to the caller's
/// buffer; RecordWriter::open(path), append_framed() of those bytes in the order they were
/// encoded, and finish() give the file ReplayStreamWriter writes for the same calls, byte for
/// byte. Nothing here touches a file.
///
///   encoder.begin(header, world, keyframe_interval_ticks, &chunk);  // header, first keyframe
///   per step: encoder.record_step(world, applied_inputs, hash, std::nullopt, commands, &chunk);
///   now and then: hand `chunk` to the writing thread and start a new one
class ReplayStreamEncoder final {
 public:
  ReplayStreamEncoder();
  ~ReplayStreamEncoder();
  ReplayStreamEncoder(const ReplayStreamEncoder&) = delete;
  ReplayStreamEncoder& operator=(const ReplayStreamEncoder&) = delete;

  /// Appends the header and a keyframe of `world` (first_tick = world.tick()); record_step adds
  /// a keyframe every keyframe_interval_ticks (0 = none).
  WriteResult begin(const ReplayHeader& header, const sim::World& world,
                    uint32_t keyframe_interval_ticks, std::vector<uint8_t>* out);
  /// Same contract as ReplayStreamWriter::record_step; appends to *out. On failure *out holds
  /// whole records still (the ones before).
  WriteResult record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                          uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                          std::span<const sim::Command> applied_commands,
                          std::vector<uint8_t>* out);
  /// Same contract as ReplayStreamWriter::record_game_message; appends to *out.
  WriteResult record_game_message(uint64_t tick, uint32_t player, std::span<const uint8_t> data,
                                  std::vector<uint8_t>* out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lockstep::replays
