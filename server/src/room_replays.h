// A room's replays: the always-on window of its last replay_window_seconds (memory fixed at
// creation, fed after each step with the applied inputs, commands and hash), its dumps (on a
// DesyncReport, rate-limited, and on demand at shutdown), and the whole-match recording
// (record_matches, match_recorder.h).
//
// Threads: touched only on the room's thread. Dumps are encoded here and written by the file
// writer's thread (ServerCore::file_writer); nothing here does file I/O but creating the folder.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lockstep/replays/recorder.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace lockstep::server {

class FileWriter;
class MatchRecorder;

class RoomReplays final {
 public:
  using Clock = std::chrono::steady_clock;

  /// Takes the window's memory and begins the match recording (as `config` asks) for room
  /// `room` of `world` as built; `builtin_scene` names the scene in the header ("" for a file
  /// scene: its WorldDef and keyframes carry it); `scene` is what `world` was built from, whose
  /// level geometry every header carries. A recording that cannot begin is logged; the room
  /// still runs.
  RoomReplays(const ServerConfig& config, FileWriter& file_writer, const std::string& room,
              const sim::World& world, const sim::Scene& scene, const std::string& builtin_scene);
  ~RoomReplays();
  RoomReplays(const RoomReplays&) = delete;
  RoomReplays& operator=(const RoomReplays&) = delete;

  /// Feeds the step just made to the window and the match recording.
  void record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                   uint64_t state_hash, std::span<const sim::Command> applied_commands);
  /// Records a client's game message the rules see after the step of `tick`: in the match
  /// recording only (a window dump starts mid-match, where the rules cannot be re-run).
  void record_game_message(uint64_t tick, uint32_t player, std::span<const uint8_t> data);
  /// A DesyncReport from `reporter` arrived at `now`: writes the window unless rate-limited, a
  /// tick already dumped or outside the window (each counted).
  void on_desync_report(const sim::World& world, const schema::DesyncReport& report,
                        const std::string& reporter, Clock::time_point now);
  /// Hands the window, as "<kind>-<room>-tick<T>-<time>.lsrp", to the file writer; the path, or
  /// "" when there is no window or it could not be encoded or queued (logged).
  std::string write_window(const char* kind, const sim::World& world);
  /// Publishes the match recording (idempotent) and logs what the dumps came to.
  void finish();

 private:
  const ServerConfig& config_;
  FileWriter& file_writer_;
  std::string room_;
  replays::ReplayHeader header_;
  std::unique_ptr<replays::ReplayWindow> window_;  // null: no replay_dir or window length
  std::unique_ptr<MatchRecorder> match_;           // null: not recording
  bool dumped_ = false;
  Clock::time_point last_dump_;
  uint64_t last_dump_report_tick_ = UINT64_MAX;
  uint64_t dumps_ = 0, dump_failures_ = 0, dumps_suppressed_ = 0, reports_outside_window_ = 0;
  bool inputs_dropped_logged_ = false;
};

}  // namespace lockstep::server
