// Reading replay files back: load (from memory or a file), re-simulate and verify every tick's
// hash, diff two replays or two worlds down to the body and field, dump a state as JSON, export
// body poses as CSV. The file layout and tick numbering are described in recorder.h.
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

#include "lockstep/replays/replay_header.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::replays {

struct ReplayTick {
  uint64_t tick = 0;
  uint64_t authoritative_hash = 0;
  std::optional<uint64_t> client_hash;
  std::vector<sim::Input> inputs;
  std::vector<sim::Command> commands;  // applied before the inputs (format 5; none before)
  /// The hash this file's writer saw for its own world: client_hash when present.
  uint64_t writer_hash() const { return client_hash ? *client_hash : authoritative_hash; }
};

/// A client's game message as the room's rules saw it (format 9): after the step that made
/// `tick`, from `player`, in the order of the file.
struct ReplayGameMessage {
  uint64_t tick = 0;
  uint32_t player = 0;
  std::vector<uint8_t> data;
};

struct ReplayKeyframe {
  uint64_t tick = 0;
  uint64_t state_hash = 0;  // the world's hash when the snapshot was taken
  std::vector<uint8_t> snapshot;
};

/// A replay file read into memory. keyframes[0] is the starting point (tick header.first_tick).
/// The tools' default budget for the world a replay needs (their --memory-budget-mb).
inline constexpr uint64_t kDefaultWorldMemoryBudgetBytes = uint64_t{512} << 20;

struct LoadedReplay {
  ReplayHeader header;
  std::vector<ReplayKeyframe> keyframes;         // in tick order
  std::vector<ReplayTick> ticks;                 // consecutive, starting at first_tick + 1
  std::vector<ReplayGameMessage> game_messages;  // by tick, then as given to the rules
  uint64_t records = 0;                          // complete records read
  uint64_t file_bytes = 0;
  bool truncated = false;  // the file ends inside a record (crash mid-write): rest was read
  std::string integrity;   // one line: how the file ends ("intact, N records" / truncation)
  uint64_t last_tick() const { return ticks.empty() ? header.first_tick : ticks.back().tick; }
};

/// Parses a replay file in memory. False (and *error = one line, with byte offsets where they
/// apply) for a wrong identifier, a corrupt record, a future format version, a missing header or
/// keyframe, or ticks out of order. A file cut short loads up to its last complete record, with
/// truncated set. A header whose WorldDef would take more than `max_world_bytes` to simulate
/// (sim::world_memory_bytes) is refused before any world is made: a file from the field cannot
/// make a tool take gigabytes.
bool load_replay(std::span<const uint8_t> bytes, LoadedReplay* out, std::string* error,
                 uint64_t max_world_bytes = kDefaultWorldMemoryBudgetBytes);
/// Reads and parses a file (a file's size is capped at 4 GiB).
bool load_replay_file(const std::string& path, LoadedReplay* out, std::string* error,
                      uint64_t max_world_bytes = kDefaultWorldMemoryBudgetBytes);

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

/// The game state of a world on one line, "score=1:3,2:0;hill_seconds=1:2,2:0;king=1": the
/// scores, then every declared field in order (a room field as one value; a player field, like
/// the scores, for every player that owns a body or has a score, ascending). lockstep-bot and
/// `lockstep-replay state` print it, so clients and a replay re-run can be compared as text.
std::string game_state_text(const sim::World& world);

/// Re-simulates the whole replay writing "tick,body,px,py,pz,qx,qy,qz,qw" lines for every body
/// at every tick (the first keyframe included). False and *error when it cannot.
bool export_csv(const LoadedReplay& replay, std::ostream& out, std::string* error);

/// Distance in float ULPs between two floats (sign-aware; 0 when equal, max for NaN).
uint64_t float_ulp_distance(float a, float b);

}  // namespace lockstep::replays
