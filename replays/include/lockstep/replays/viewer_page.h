// The replay viewer: one self-contained HTML page (WebGL, no network) showing a replay in 3D with
// a timeline, per-tick state hashes, and for a desync the two runs overlaid with the diff table.
// The page never simulates: the replay is re-simulated here and each tick's body poses are
// written into the page, quantised (docs/replays.md, Viewer).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/replays/replay_reader.h"

namespace lockstep::replays {

struct ViewerOptions {
  /// Bodies (slot index + 1) whose contact points are written besides the default ones: every
  /// body in worlds of up to kViewerAllContactsBodies bodies, else player-owned and differing ones.
  std::vector<uint32_t> contact_bodies;
  size_t max_fields = 200;  // rows of the diff table
  /// The box the camera frames first (x0, y0, z0, x1, y1, z1 in metres), for a game that knows
  /// its play area better; none: where the dynamic bodies went (ViewerPage::frame_lo).
  std::optional<std::array<float, 6>> frame;
};

/// Worlds with at most this many bodies get every body's contacts written.
inline constexpr uint32_t kViewerAllContactsBodies = 64;

struct ViewerPage {
  bool ok = false;
  std::string error;  // one line when !ok
  std::string html;
  uint64_t first_tick = 0, last_tick = 0;
  uint32_t bodies = 0;  // distinct bodies drawn over the window
  std::optional<uint64_t> first_divergent_tick;
  size_t fields = 0;                                               // rows of the diff table
  size_t pose_bytes = 0, other_pose_bytes = 0, contact_bytes = 0;  // before base64
  double simulate_seconds = 0;  // wall time of the re-simulations and the diff
  // The box the camera frames first (metres): where the dynamic bodies were over the whole
  // window, the 2nd to the 98th percentile per axis of their positions at every tick (so a body
  // that falls far away for a moment does not shrink the rest), grown by a body's size; without
  // dynamic bodies, the non-plane, non-sensor bodies at the first tick.
  float frame_lo[3] = {0, 0, 0}, frame_hi[3] = {0, 0, 0};
  std::string frame_from;         // "dynamic bodies over the match" or "bodies at the first tick"
  size_t game_events = 0;         // game events (World::game_events) over the window
  size_t game_state_changes = 0;  // ticks whose game state text differs from the tick before
  size_t game_messages = 0;       // clients' game messages the file holds in the window
};

/// Re-simulates `replay` (and `against`, when given, or a client file's own state after its
/// hashes leave the server's) and builds the page. !ok with a one-line error when the replay
/// cannot be re-simulated or the two files are not the same match.
ViewerPage make_viewer_page(const LoadedReplay& replay, const LoadedReplay* against,
                            const ViewerOptions& options = {});

/// The page template (replays/viewer/viewer.html, embedded at build time).
const char* viewer_page_template();

}  // namespace lockstep::replays
