// Replay files (DESIGN.md "Replay files", docs/replays.md): recording a match and reading it back.
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
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::replays {

/// Format version of the replay schema this build writes; files with a larger one are refused.
/// 2: the WorldDef's sleeping fields (and the state encoding with sleep state in keyframes).
/// 3: the WorldDef's manifold reuse fields (and the state encoding with manifold references).
inline constexpr uint32_t kReplayFormatVersion = 3;

/// The lockstep version string written into headers (the CMake project version).
const char* lockstep_version_string();

/// Who wrote a file: the server (authoritative hashes only) or a client (its own hashes too).
enum class ReplayWriterKind : uint8_t { server = 0, client = 1 };

/// Everything needed to rebuild the world a replay was recorded in.
struct ReplayHeader {
  uint32_t format_version = kReplayFormatVersion;  // written as given: leave the default
  std::string lockstep_version;                    // "" = lockstep_version_string() on write
  sim::WorldDef world_def{};
  uint64_t world_def_fingerprint = 0;  // 0 = computed from world_def on write
  uint32_t tick_rate_hz = 60;
  std::string scene;        // a built-in scene name (checked on load), or "" for a custom world
  uint64_t first_tick = 0;  // tick of the first keyframe; set by the writers
  ReplayWriterKind writer = ReplayWriterKind::server;
  uint32_t player_id = 0;  // the writing client's player (0 for the server)
  std::string room;        // free text: room name, for people reading `info`
};

/// A header for `world` (fingerprint filled); first_tick is set when the file is written.
ReplayHeader make_replay_header(const sim::World& world, std::string scene, uint32_t tick_rate_hz,
                                ReplayWriterKind writer = ReplayWriterKind::server,
                                uint32_t player_id = 0);

/// Outcome of writing: ok, or one line saying what failed.
struct WriteResult {
  bool ok = false;
  std::string error;
};

struct ReplayWindowConfig {
  uint32_t window_ticks = 600;             // ticks always kept (600 = 10 s at 60 Hz)
  uint32_t keyframe_interval_ticks = 120;  // a keyframe every N ticks (tick % N == 0)
  uint32_t max_inputs_per_tick = 0;        // 0 = the world's WorldDef::max_inputs_per_tick
  // Bytes per keyframe slot; 0 = world.max_snapshot_size(), which always fits but is sized for a
  // full world (pile: 2.4 MB against a 136 KB actual snapshot). A smaller cap saves memory; a
  // keyframe that does not fit is skipped and counted (skipped_keyframes()).
  size_t keyframe_slot_bytes = 0;
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
  bool record_tick(uint64_t tick, std::span<const sim::Input> applied_inputs,
                   uint64_t authoritative_hash, std::optional<uint64_t> client_hash);
  /// Records a keyframe of `world` at world.tick() (normally right after record_tick of that
  /// tick). Never allocates. False when the snapshot failed (the slot is left unused).
  bool record_keyframe(const sim::World& world);
  /// record_tick(world.tick(), ...) then record_keyframe(world) when keyframe_due().
  bool record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                   uint64_t authoritative_hash, std::optional<uint64_t> client_hash);
  /// True when a keyframe belongs at `tick` (tick % keyframe_interval_ticks == 0).
  bool keyframe_due(uint64_t tick) const;

  /// Writes the newest keyframe at or before the window start, the later keyframes, and every
  /// tick after it (tmp + fsync + rename). With `live_world` (at the newest recorded tick) its
  /// current state is appended as a last keyframe, so a diff sees this machine's actual state.
  /// Allocates (it is not on the tick path).
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
                          uint64_t authoritative_hash, std::optional<uint64_t> client_hash);
  /// Appends a keyframe of `world` at world.tick().
  WriteResult record_keyframe(const sim::World& world);
  /// record_tick(world.tick(), ...) then a keyframe when the options ask for one.
  WriteResult record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                          uint64_t authoritative_hash, std::optional<uint64_t> client_hash);
  /// Flush, fsync and rename to the final name.
  WriteResult finish();
  bool is_open() const;
  uint64_t file_bytes() const;
  const std::string& temp_path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---- reading ------------------------------------------------------------------------------------

struct ReplayTick {
  uint64_t tick = 0;
  uint64_t authoritative_hash = 0;
  std::optional<uint64_t> client_hash;
  std::vector<sim::Input> inputs;
  /// The hash this file's writer saw for its own world: client_hash when present.
  uint64_t writer_hash() const { return client_hash ? *client_hash : authoritative_hash; }
};

struct ReplayKeyframe {
  uint64_t tick = 0;
  uint64_t state_hash = 0;  // the world's hash when the snapshot was taken
  std::vector<uint8_t> snapshot;
};

/// A replay file read into memory. keyframes[0] is the starting point (tick header.first_tick).
struct LoadedReplay {
  ReplayHeader header;
  std::vector<ReplayKeyframe> keyframes;  // in tick order
  std::vector<ReplayTick> ticks;          // consecutive, starting at first_tick + 1
  uint64_t records = 0;                   // complete records read
  uint64_t file_bytes = 0;
  bool truncated = false;  // the file ends inside a record (crash mid-write): rest was read
  std::string integrity;   // one line: how the file ends ("intact, N records" / truncation)
  uint64_t last_tick() const { return ticks.empty() ? header.first_tick : ticks.back().tick; }
};

/// Parses a replay file in memory. False (and *error = one line, with byte offsets where they
/// apply) for a wrong identifier, a corrupt record, a future format version, a missing header or
/// keyframe, or ticks out of order. A file cut short loads up to its last complete record, with
/// truncated set.
bool load_replay(std::span<const uint8_t> bytes, LoadedReplay* out, std::string* error);
/// Reads and parses a file (a file's size is capped at 4 GiB).
bool load_replay_file(const std::string& path, LoadedReplay* out, std::string* error);

/// Makes the world of a replay at its first keyframe: checks the scene is built in (when named)
/// and the WorldDef fingerprints agree, then restores the keyframe. Null and *error on failure.
std::unique_ptr<sim::World> make_replay_world(const LoadedReplay& replay, std::string* error);
/// Re-simulates a replay up to `tick` (from its newest keyframe at or before it). Null and
/// *error when the tick is outside the replay or the world cannot be made.
std::unique_ptr<sim::World> simulate_replay_to(const LoadedReplay& replay, uint64_t tick,
                                               std::string* error);

struct VerifyOptions {
  /// Called every so often with (ticks done, ticks total) — for a progress bar.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct VerifyResult {
  bool ok = false;    // every tick's hash matched
  std::string error;  // one line when the replay could not be verified at all
  uint64_t ticks_verified = 0;
  std::optional<uint64_t> first_divergent_tick;
  uint64_t expected_hash = 0;    // at first_divergent_tick: the recorded authoritative hash
  uint64_t actual_hash = 0;      // ... and the re-simulated one
  uint32_t rejected_inputs = 0;  // recorded inputs the world refused (a sign of a bad file)
  std::optional<uint64_t> first_client_mismatch_tick;  // client files: client ≠ authoritative
  double seconds = 0;                                  // wall time of the re-simulation
};

/// Re-simulates from the first keyframe with the recorded inputs, comparing every tick's hash
/// with the recorded authoritative hash; stops at the first mismatch.
VerifyResult verify_replay(const LoadedReplay& replay, const VerifyOptions& options = {});

/// One field of one body that differs between two states.
struct FieldDiff {
  sim::BodyId body{};
  std::string field;  // "position.x", "orientation.w", "linear_velocity.y", "alive", ...
  double value_a = 0;
  double value_b = 0;
  uint64_t ulps = 0;  // distance in units in the last place (float), 0 for non-float fields
};

struct DiffResult {
  bool ok = false;    // both files could be compared (independent of whether they differ)
  std::string error;  // one line when !ok
  uint64_t common_first_tick = 0, common_last_tick = 0;
  std::optional<uint64_t> first_divergent_tick;  // first tick whose writer hashes differ
  std::optional<uint64_t> compared_tick;         // tick whose states were compared field by field
  std::string note;               // one line on how the states at compared_tick were got
  std::vector<FieldDiff> fields;  // stable order: body slot, then field order
};

/// Compares two replays of the same match: the first tick whose hashes differ, then the states at
/// that tick (each rebuilt from its own keyframes and inputs) body by body, field by field.
DiffResult diff_replays(const LoadedReplay& a, const LoadedReplay& b, size_t max_fields = 1000);

/// Compares two worlds body by body, field by field (bodies matched by handle, in slot order).
std::vector<FieldDiff> diff_worlds(const sim::World& a, const sim::World& b,
                                   size_t max_fields = 1000);

/// The full state of a world as JSON (tick, hash, every body's fields; floats exact: %.9g).
std::string dump_state_json(const sim::World& world);

/// Re-simulates the whole replay writing "tick,body,px,py,pz,qx,qy,qz,qw" lines for every body
/// at every tick (the first keyframe included). False and *error when it cannot.
bool export_csv(const LoadedReplay& replay, std::ostream& out, std::string* error);

/// Distance in float ULPs between two floats (sign-aware; 0 when equal, max for NaN).
uint64_t float_ulp_distance(float a, float b);

}  // namespace lockstep::replays
