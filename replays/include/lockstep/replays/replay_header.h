// The header of a replay file: the format version, who wrote it, and everything needed to
// rebuild the world it was recorded in. Shared by the writers (recorder.h) and the reader
// (replay_reader.h); the file layout is described in recorder.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/version.h"
#include "lockstep/sim/world.h"

namespace lockstep::replays {

/// Format version of the replay schema this build writes; files with a larger one are refused.
/// 2: the WorldDef's sleeping fields (and the state encoding with sleep state in keyframes).
/// 3: the WorldDef's manifold reuse fields (and the state encoding with manifold references).
/// 4: inputs' target velocities (Tick.input_velocities), the WorldDef's input velocity limits.
/// 5: the commands each step applied (Tick.commands: joins, leaves, game rules); a build that
/// ignored them would re-simulate without them and report a false divergence.
/// 6: tick records hold the compact bytes of their tick's TickFrame (protocol 4) instead of a
/// FlatBuffers Tick table; files of formats 1..5 stay readable.
/// 7: a keyframe after the file's first may be a delta against the keyframe before it
/// (Keyframe.snapshot_delta); a format 6 build would find no snapshot in it.
/// 8: a tick record's inputs may be coded against the previous tick record's (only the fields
/// that changed: a player holding a direction costs a few bytes per input instead of a dozen).
/// 9: game message records (a client's message to the rules, at the tick the rules saw it); a
/// format 8 build would refuse the file at the first one, so it is told the format instead.
/// 10: the header carries the world's level geometry (Header.level), which the world is rebuilt
/// with; a format 9 build would make a world without it and refuse the first keyframe.
inline constexpr uint32_t kReplayFormatVersion = 10;
/// The first format whose tick records code their inputs against the previous tick record's.
inline constexpr uint32_t kFirstFormatWithInputReference = 8;

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
  // The simulation that recorded the ticks (sim/version.h); 0 in files older than the field.
  // Re-simulating a file of another revision is refused (make_replay_world).
  uint32_t physics_revision = sim::kPhysicsRevision;
  // The world's level geometry (sim/level.h), what World::create is given beside world_def;
  // empty when the world has none (and in files older than format 10). The writers check it
  // against the world's level digest, the reader against the digest the file carries.
  std::vector<sim::SceneMesh> level_meshes;
  std::vector<sim::SceneHeightfield> level_heightfields;
};

/// The level_digest of a header's geometry (0: none).
uint64_t replay_level_digest(const ReplayHeader& header);

/// A header for `world` (fingerprint filled); first_tick is set when the file is written. A world
/// with level geometry needs it in the header too: the writers refuse a header whose level does
/// not hash to the world's (set level_meshes and level_heightfields, e.g. from the scene).
ReplayHeader make_replay_header(const sim::World& world, std::string scene, uint32_t tick_rate_hz,
                                ReplayWriterKind writer = ReplayWriterKind::server,
                                uint32_t player_id = 0);

}  // namespace lockstep::replays
