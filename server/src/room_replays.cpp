// RoomReplays: a room's replay window, its dumps and its match recording.
#include "room_replays.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "file_writer.h"
#include "lockstep/replays/file_name.h"
#include "lockstep/replays/record_file.h"
#include "match_recorder.h"

namespace lockstep::server {
namespace {

bool make_replay_dir(const std::string& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = fmt::format("cannot create replay directory {}: {}", dir, ec.message());
    return false;
  }
  return true;
}

}  // namespace

RoomReplays::RoomReplays(const ServerConfig& config, FileWriter& file_writer,
                         const std::string& room, const sim::World& world, const sim::Scene& scene,
                         const std::string& builtin_scene)
    : config_(config),
      file_writer_(file_writer),
      room_(room),
      header_(replays::make_replay_header(world, builtin_scene, config.tick_rate_hz)) {
  header_.room = room;
  header_.level_meshes = scene.meshes;
  header_.level_heightfields = scene.heightfields;
  // The window's memory is all taken here; it starts with a keyframe of the world as built.
  if (!config.replay_dir.empty() && config.replay_window_seconds > 0) {
    replays::ReplayWindowConfig window;
    window.window_ticks = config.replay_window_seconds * config.tick_rate_hz;
    window.keyframe_interval_ticks = config.keyframe_interval_ticks;
    // A step never applies more than the room's input slot holds: size the ring for that.
    window.max_inputs_per_tick =
        std::min(config.max_players_per_room * config.max_inputs_per_player_per_tick,
                 world.def().max_inputs_per_tick);
    window_ = std::make_unique<replays::ReplayWindow>(world, window);
    spdlog::debug("room {}: replay window of {} ticks takes {} B", room, window.window_ticks,
                  window_->memory_bytes());
  }
  if (config.record_matches) {
    // A room that cannot record still serves its players: the failure is logged. The file is
    // created and written by the file writer's thread (match_recorder.h).
    std::string problem;
    const std::string match_path = replays::replay_file_path(config.replay_dir, "match", room, 0);
    if (make_replay_dir(config.replay_dir, &problem)) {
      auto recorder = std::make_unique<MatchRecorder>(
          file_writer, room, match_path, config.tick_rate_hz, config.record_max_pending_bytes);
      if (recorder->begin(header_, world, config.keyframe_interval_ticks)) {
        match_ = std::move(recorder);
      }
    } else {
      spdlog::error("room {}: cannot record the match: {}", room, problem);
    }
  }
}

RoomReplays::~RoomReplays() = default;

void RoomReplays::record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                              uint64_t state_hash, std::span<const sim::Command> applied_commands) {
  if (window_ != nullptr &&
      !window_->record_step(world, applied_inputs, state_hash, std::nullopt, applied_commands) &&
      !inputs_dropped_logged_) {
    // Only when a tick held more inputs than the world takes per tick, which the world refused.
    inputs_dropped_logged_ = true;
    spdlog::warn("room {}: the replay window dropped inputs at tick {} (logged once per room)",
                 room_, world.tick());
  }
  if (match_ != nullptr) match_->record_step(world, applied_inputs, state_hash, applied_commands);
}

void RoomReplays::record_game_message(uint64_t tick, uint32_t player,
                                      std::span<const uint8_t> data) {
  if (match_ != nullptr) match_->record_game_message(tick, player, data);
}

void RoomReplays::on_desync_report(const sim::World& world, const schema::DesyncReport& report,
                                   const std::string& reporter, Clock::time_point now) {
  if (window_ == nullptr) return;
  // Every player that desyncs at the same tick reports it: one file serves them all.
  if (report.tick == last_dump_report_tick_) return;
  const std::optional<uint64_t> first = window_->first_written_tick();
  const std::optional<uint64_t> last = window_->last_tick();
  if (!first || !last || report.tick < *first || report.tick > *last) {
    // Too old for the window, or a tick not stepped yet (a broken or hostile client).
    ++reports_outside_window_;
    spdlog::debug("room {}: desync report for tick {} is outside the replay window", room_,
                  report.tick);
    return;
  }
  if (dumped_ && now - last_dump_ < config_.replay_dump_interval) {
    if (dumps_suppressed_++ == 0) {
      spdlog::warn(
          "room {}: desync dumps are limited to one per {} ms; not writing one for "
          "tick {} (logged once per room)",
          room_, config_.replay_dump_interval.count(), report.tick);
    }
    return;
  }
  dumped_ = true;
  last_dump_ = now;
  last_dump_report_tick_ = report.tick;
  const std::string path = write_window("desync", world);
  if (!path.empty()) {
    spdlog::warn("room {}: desync at tick {} reported by {}: replay being written to {}", room_,
                 report.tick, reporter, path);
  }
}

std::string RoomReplays::write_window(const char* kind, const sim::World& world) {
  if (window_ == nullptr) return {};
  // Encoded here (memory only; with the live world the file ends with a keyframe of this room's
  // actual state), written by the file writer's thread.
  const Clock::time_point start = Clock::now();
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  const replays::WriteResult encoded = window_->write_bytes(bytes.get(), header_, &world);
  if (!encoded.ok) {
    ++dump_failures_;
    spdlog::error("room {}: cannot encode its replay window: {}", room_, encoded.error);
    return {};
  }
  std::string path = replays::replay_file_path(config_.replay_dir, kind, room_, world.tick());
  const uint64_t first = window_->first_written_tick().value_or(0);
  const uint64_t last = window_->last_tick().value_or(0);
  const double encode_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  auto job = [dir = config_.replay_dir, path, bytes, room = room_, first, last, encode_ms] {
    const Clock::time_point write_start = Clock::now();
    std::string problem;
    if (make_replay_dir(dir, &problem)) {
      // Re-framed through RecordWriter (as ReplayWindow::write_file does): a temporary file,
      // renamed when complete.
      replays::RecordWriter writer;
      replays::RecordReader reader(*bytes);
      std::span<const uint8_t> payload;
      bool ok = writer.open(path) == replays::RecordError::none;
      while (ok && reader.next(&payload) == replays::RecordError::none)
        ok = writer.append(payload) == replays::RecordError::none;
      if (ok) ok = writer.finish() == replays::RecordError::none;
      if (ok) {
        spdlog::info(
            "room {}: wrote replay window (ticks {}..{}) to {} (encoded in {:.1f} ms, written in "
            "{:.1f} ms)",
            room, first, last, path, encode_ms,
            std::chrono::duration<double, std::milli>(Clock::now() - write_start).count());
        return true;
      }
      problem = writer.error_text();
    }
    spdlog::error("room {}: cannot write its replay window to {}: {}", room, path, problem);
    return false;
  };
  if (!file_writer_.submit(std::move(job), fmt::format("room {}'s {} replay", room_, kind))) {
    ++dump_failures_;
    return {};
  }
  ++dumps_;
  return path;
}

void RoomReplays::finish() {
  if (match_ != nullptr) match_->finish();
  if (dumps_ + dump_failures_ + dumps_suppressed_ + reports_outside_window_ > 0) {
    spdlog::info(
        "room {}: desync replays: {} written, {} failed, {} rate-limited, {} reports outside "
        "the window",
        room_, dumps_, dump_failures_, dumps_suppressed_, reports_outside_window_);
  }
}

}  // namespace lockstep::server
